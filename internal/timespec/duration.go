package timespec

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// Day and Week are the units ParseDuration adds to Go's: always 24 and 168 hours.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// durationHint ends every duration error: what would be accepted.
const durationHint = "want a duration such as 90m, 36h, 7d, 2w or 1d12h"

// units are the unit suffixes ParseDuration knows, in nanoseconds.
var units = map[string]uint64{
	"ns": uint64(time.Nanosecond),
	"us": uint64(time.Microsecond),
	"µs": uint64(time.Microsecond), // U+00B5, as Go writes it
	"μs": uint64(time.Microsecond), // U+03BC
	"ms": uint64(time.Millisecond),
	"s":  uint64(time.Second),
	"m":  uint64(time.Minute),
	"h":  uint64(time.Hour),
	"d":  uint64(Day),
	"w":  uint64(Week),
}

// maxDuration is the longest duration there is, as Format writes it, for the overflow error.
var maxDuration = Format(math.MaxInt64)

// ParseDuration reads a non-negative duration: Go's units plus d (24h) and w (7d), e.g. 90m,
// 36h, 7d, 2w, 1d12h, 1w2d, 1.5h; "0" alone is zero. Surrounding spaces are ignored. Empty
// text, a sign of minus, a number without a unit, an unknown unit, anything that is not
// number-unit pairs, and a total beyond about 292 years are usage errors.
//
// It is Go's time.ParseDuration with two more units: the same algorithm, so any text Go
// accepts without a minus sign reads to the same value here.
func ParseDuration(text string) (time.Duration, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, fwerr.Usagef("empty duration: %s", durationHint)
	}
	if s[0] == '-' {
		return 0, fwerr.Usagef("negative duration %q: durations here are lengths of time, never negative (%s)", text, durationHint)
	}
	if s[0] == '+' {
		s = s[1:]
	}
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, fwerr.Usagef("invalid duration %q: %s", text, durationHint)
	}
	var total uint64
	for s != "" {
		v, rest, err := durationTerm(text, s)
		if err != nil {
			return 0, err
		}
		s = rest
		total += v
		if total > 1<<63 {
			return 0, durationTooLong(text)
		}
	}
	if total > 1<<63-1 {
		return 0, durationTooLong(text)
	}
	return time.Duration(total), nil
}

// durationTooLong is the error for a duration text beyond the longest there is.
func durationTooLong(text string) error {
	return fwerr.Usagef("duration %q is too long: the longest is %s (about 292 years)", text, maxDuration)
}

// durationTerm reads the number-unit pair that s, the rest of the duration text, starts with:
// its length in nanoseconds (at most 1<<63) and what follows it.
func durationTerm(text, s string) (v uint64, rest string, err error) {
	if c := s[0]; c != '.' && (c < '0' || c > '9') {
		return 0, "", fwerr.Usagef("invalid duration %q: expected a number at %q (%s)", text, s, durationHint)
	}
	// The integer part.
	before := len(s)
	v, s, ok := leadingInt(s)
	if !ok {
		return 0, "", durationTooLong(text)
	}
	hasInt := len(s) != before
	// The fraction, if any.
	var frac uint64
	scale, hasFrac := 1.0, false
	if s != "" && s[0] == '.' {
		s = s[1:]
		before := len(s)
		frac, scale, s = leadingFraction(s)
		hasFrac = len(s) != before
	}
	if !hasInt && !hasFrac {
		return 0, "", fwerr.Usagef("invalid duration %q: a lone %q is not a number (%s)", text, ".", durationHint)
	}
	// The unit: everything up to the next number.
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c == '.' || '0' <= c && c <= '9' {
			break
		}
	}
	if i == 0 {
		return 0, "", fwerr.Usagef("missing unit in duration %q: say 90m or 36h, not 90 (units: ns, us, ms, s, m, h, d, w)", text)
	}
	u := s[:i]
	s = s[i:]
	unit, known := units[u]
	if !known {
		if strings.ContainsAny(u, " \t") {
			return 0, "", fwerr.Usagef("invalid duration %q: no spaces inside a duration (write 1h30m, not 1h 30m)", text)
		}
		return 0, "", fwerr.Usagef("unknown unit %q in duration %q: units are ns, us, ms, s, m, h, d (24h) and w (7d)", u, text)
	}
	if v > 1<<63/unit {
		return 0, "", durationTooLong(text)
	}
	v *= unit
	if frac > 0 {
		// float64 is needed to stay exact enough with a fraction of many digits, as in Go.
		v += uint64(float64(frac) * (float64(unit) / scale))
		if v > 1<<63 {
			return 0, "", durationTooLong(text)
		}
	}
	return v, s, nil
}

// leadingInt consumes the leading digits of s; ok is false on overflow.
func leadingInt(s string) (x uint64, rest string, ok bool) {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			break
		}
		if x > 1<<63/10 {
			return 0, "", false
		}
		x = x*10 + uint64(c-'0')
		if x > 1<<63 {
			return 0, "", false
		}
	}
	return x, s[i:], true
}

// leadingFraction consumes the leading digits of s as a fraction x/scale; digits beyond what
// fits are dropped (they are below a nanosecond).
func leadingFraction(s string) (x uint64, scale float64, rest string) {
	i := 0
	scale = 1
	overflow := false
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			break
		}
		if overflow {
			continue
		}
		if x > (1<<63-1)/10 {
			overflow = true
			continue
		}
		y := x*10 + uint64(c-'0')
		if y > 1<<63 {
			overflow = true
			continue
		}
		x = y
		scale *= 10
	}
	return x, scale, s[i:]
}

// Format writes d the one way fieldwork shows a duration: days, hours, minutes and seconds,
// leaving out the units that are zero. 24h is 1d, 168h is 7d (weeks are read, never written:
// 7d says more at a glance than 1w), 36h is 1d12h, 90m is 1h30m, 1h0m5s is 1h5s; under a
// second it is Go's (500ms, 0s). ParseDuration reads every result back to d.
func Format(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			return d.String()
		}
		return "-" + Format(-d)
	}
	if d < time.Second {
		return d.String()
	}
	var b []byte
	for _, u := range []struct {
		n    time.Duration
		name byte
	}{{Day, 'd'}, {time.Hour, 'h'}, {time.Minute, 'm'}} {
		if n := d / u.n; n > 0 {
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, u.name)
			d -= n * u.n
		}
	}
	if d > 0 {
		// Seconds with their fraction (5s, 5.25s), or under a second what Go writes (500ms).
		b = append(b, d.String()...)
	}
	return string(b)
}
