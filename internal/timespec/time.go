package timespec

import (
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zone names (Europe/Paris) read the same on a host without a zone database

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// DateLayout is the layout of a date alone, read as midnight UTC of that day.
const DateLayout = "2006-01-02"

// TimeLayout is how fieldwork writes a point in time, in tables, messages, plans and
// journals alike: RFC 3339 in UTC, to the millisecond (Kafka's precision).
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeLayout, in UTC. ParseTime reads it back.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// timeHint ends every time error: what would be accepted.
const timeHint = "want an RFC 3339 time (2026-12-01T15:04:05Z), a local time and its zone (2026-12-01 15:04 Europe/Paris), epoch milliseconds (1764601445000), a date (2026-12-01, midnight UTC) or a duration ago (2h, 7d)"

// minEpochMillisDigits is the fewest digits read as epoch milliseconds: 12 is 1973 on; a
// shorter number is a duration without its unit (90), refused as such.
const minEpochMillisDigits = 12

// localLayouts are the forms of a local time given with its zone's name.
var localLayouts = []string{
	"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04", DateLayout,
}

// ParseTime reads a point in time: an RFC 3339 time (its zone kept), a local time followed by
// its zone's name (2026-12-01 15:04 Europe/Paris, or UTC), epoch milliseconds (twelve digits or
// more: 1764601445000), a date (2026-12-01: midnight UTC at the start of that day), or a
// positive duration as ParseDuration reads it, meaning that long before now (2h: now minus two
// hours). Surrounding spaces are ignored. Empty text, a zero or negative duration, a date or
// time that does not exist (2026-02-30), a time without a zone, an unknown zone, and anything
// else are usage errors, each of the one form `"TEXT" is not a time: WHY (WANT)`. So is a time
// before the Unix epoch (1969-12-31, or 3000w ago): Kafka's timestamps
// count milliseconds from it, and a negative one asked of the broker is one of its special
// offsets (-1 the end, -2 the start) or refused, never that time.
func ParseTime(text string, now time.Time) (time.Time, error) {
	t, err := parseTime(text, now)
	if err == nil && t.Before(time.UnixMilli(0)) {
		return time.Time{}, fwerr.Usagef("%q is not a time: %s is before the Unix epoch (1970-01-01T00:00:00Z), where Kafka's timestamps begin (%s)",
			text, t.UTC().Format(time.RFC3339Nano), timeHint)
	}
	return t, err
}

func parseTime(text string, now time.Time) (time.Time, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return time.Time{}, fwerr.Usagef("empty time: %s", timeHint)
	}
	if len(s) >= minEpochMillisDigits && strings.Trim(s, "0123456789") == "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fwerr.Usagef("%q is not a time: too many digits for epoch milliseconds (%s)", text, timeHint)
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	if i := strings.LastIndexByte(s, ' '); i > 0 && looksLikeDate(s) && zoneName(s[i+1:]) {
		return parseLocal(text, s[:i], s[i+1:])
	}
	if looksLikeDate(s) {
		if len(s) == len(DateLayout) {
			t, err := time.Parse(DateLayout, s)
			if err != nil {
				return time.Time{}, fwerr.Usagef("%q is not a time: not a date: %s (%s)", text, parseReason(err), timeHint)
			}
			return t, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fwerr.Usagef("%q is not a time: not RFC 3339: %s (%s)", text, parseReason(err), timeHint)
		}
		return t, nil
	}
	if s[0] == '-' {
		return time.Time{}, fwerr.Usagef("%q is not a time: a duration here means that long before now and is never negative; for a time after now give an RFC 3339 time (%s)", text, timeHint)
	}
	d, err := ParseDuration(s)
	if err != nil {
		if !startsLikeDuration(s) {
			return time.Time{}, fwerr.Usagef("%q is not a time: %s", text, timeHint)
		}
		return time.Time{}, fwerr.Usagef("%q is not a time: %v (%s)", text, err, timeHint)
	}
	if d == 0 {
		return time.Time{}, fwerr.Usagef("%q is not a time: a duration here means that long before now and must be more than 0 (%s)", text, timeHint)
	}
	return now.Add(-d), nil
}

// looksLikeDate reports whether s starts as a date does, four digits and a dash: it is then
// judged as a date or an RFC 3339 time, so that its error says what is wrong with it.
func looksLikeDate(s string) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for i := range 4 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// startsLikeDuration reports whether s starts with a number, so that ParseDuration's own
// error is more telling than a list of what is accepted.
func startsLikeDuration(s string) bool {
	c := s[0]
	if c == '+' && len(s) > 1 {
		c = s[1]
	}
	return c == '.' || '0' <= c && c <= '9'
}

// parseReason turns a *time.ParseError into its telling part ("day out of range", `extra
// text: "x"`, "missing the zone: add Z or +02:00").
func parseReason(err error) string {
	pe, ok := err.(*time.ParseError)
	if !ok {
		return err.Error()
	}
	switch {
	case pe.Message != "":
		return strings.TrimPrefix(pe.Message, ": ")
	case pe.LayoutElem == "Z07:00":
		return "missing the zone: add Z (UTC) or an offset such as +02:00"
	case pe.ValueElem == "":
		return "it stops short"
	}
	return "unexpected " + `"` + pe.ValueElem + `"`
}

// zoneName says whether s reads as a zone's name: UTC, or an IANA name (Europe/Paris).
func zoneName(s string) bool { return s == "UTC" || strings.Contains(s, "/") }

// parseLocal reads local, a time without a zone, in the zone named zone.
func parseLocal(text, local, zone string) (time.Time, error) {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.Time{}, fwerr.Usagef("%q is not a time: unknown time zone %q (%s)", text, zone, timeHint)
	}
	local = strings.TrimSpace(local)
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, local, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fwerr.Usagef("%q is not a time: %q is not a local time such as 2026-12-01 15:04 (%s)", text, local, timeHint)
}
