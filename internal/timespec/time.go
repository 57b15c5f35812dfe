package timespec

import (
	"strings"
	"time"

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
const timeHint = "want an RFC 3339 time (2026-12-01T15:04:05Z), a date (2026-12-01, midnight UTC) or a duration ago (2h, 7d)"

// ParseTime reads a point in time: an RFC 3339 time (its zone kept), a date (2026-12-01:
// midnight UTC at the start of that day), or a positive duration as ParseDuration reads it,
// meaning that long before now (2h: now minus two hours). Surrounding spaces are ignored.
// Empty text, a zero or negative duration, a date or time that does not exist (2026-02-30),
// a time without a zone, and anything else are usage errors.
func ParseTime(text string, now time.Time) (time.Time, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return time.Time{}, fwerr.Usagef("empty time: %s", timeHint)
	}
	if looksLikeDate(s) {
		if len(s) == len(DateLayout) {
			t, err := time.Parse(DateLayout, s)
			if err != nil {
				return time.Time{}, fwerr.Usagef("%q is not a date: %s (%s)", text, parseReason(err), timeHint)
			}
			return t, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fwerr.Usagef("%q is not an RFC 3339 time: %s (%s)", text, parseReason(err), timeHint)
		}
		return t, nil
	}
	if s[0] == '-' {
		return time.Time{}, fwerr.Usagef("%q: a duration here means that long before now and is never negative; for a time after now give an RFC 3339 time (%s)", text, timeHint)
	}
	d, err := ParseDuration(s)
	if err != nil {
		if !startsLikeDuration(s) {
			return time.Time{}, fwerr.Usagef("%q is not a time: %s", text, timeHint)
		}
		return time.Time{}, fwerr.Usagef("%q is not a time: %v (%s)", text, err, timeHint)
	}
	if d == 0 {
		return time.Time{}, fwerr.Usagef("%q: a duration here means that long before now and must be more than 0 (%s)", text, timeHint)
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
