package output

import (
	"bytes"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/timespec"
)

// JSON output gives every time one way: RFC 3339 in UTC with exactly three digits of
// fraction (timespec.TimeLayout, 2026-12-01T10:00:00.120Z), as the tables show it. Go's
// encoder writes a time.Time with as many digits as it has, trailing zeros trimmed
// (nanoseconds from a clock, none at all on a whole second), so the writers of this package
// rewrite it: a string that is an RFC 3339 time, the value of a member whose name says it is
// a time (IsTimeField), outside the members that carry a record's own data (JSONDataField).
// A program that compares or sorts the text of two times then compares the instants.

// IsTimeField reports whether a JSON member named name holds a time: `timestamp`, `time`,
// `at`, `now`, `since`, `until`, `oldest`, `newest`, `first`, `last`, and every name that ends in
// `_at`, `_timestamp` or `_before`. docs/json.md lists them.
func IsTimeField(name string) bool {
	switch name {
	case "at", "timestamp", "time", "now", "since", "until", "oldest", "newest", "first", "last":
		return true
	}
	return strings.HasSuffix(name, "_at") || strings.HasSuffix(name, "_timestamp") || strings.HasSuffix(name, "_before")
}

// JSONDataField reports whether a JSON member named name holds data fieldwork carries, not
// its own fields (a record's value as JSON, an event's data, a decoded payload): its times are
// the producer's text and are shown as they are.
func JSONDataField(name string) bool {
	switch name {
	case "value_json", "key_json", "data", "decoded":
		return true
	}
	return false
}

// normalizeJSONTimes rewrites the times of b, JSON as encoding/json writes it (valid, strings
// with Go's escapes), in timespec.TimeLayout. It returns b itself when nothing changes.
func normalizeJSONTimes(b []byte) []byte {
	var out []byte // nil until the first rewrite
	copied := 0    // b[:copied] is in out
	// skip is the depth of the data member being passed over (0: none); depth counts the
	// containers open.
	depth, skip := 0, 0
	var key []byte // the name of the member whose value comes next, nil in an array
	inObject := make([]bool, 0, 8)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			depth++
			inObject = append(inObject, c == '{')
			if skip == 0 && key != nil && JSONDataField(string(key)) {
				skip = depth
			}
			key = nil
		case '}', ']':
			if skip == depth {
				skip = 0
			}
			depth--
			inObject = inObject[:len(inObject)-1]
			key = nil
		case ',':
			key = nil
		case '"':
			end := stringEnd(b, i)
			s := b[i+1 : end]
			isKey := len(inObject) > 0 && inObject[len(inObject)-1] && key == nil && nextNonSpace(b, end+1) == ':'
			switch {
			case isKey:
				key = s
			case skip == 0 && key != nil && IsTimeField(string(key)):
				if t, ok := rfc3339(s); ok {
					if canonical := timespec.FormatTime(t); canonical != string(s) {
						out = append(append(out, b[copied:i+1]...), canonical...)
						copied = end
					}
				}
				key = nil
			default:
				key = nil
			}
			i = end
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[copied:]...)
}

// stringEnd is the index of the quote that closes the JSON string opened at b[start].
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b) - 1
}

func nextNonSpace(b []byte, i int) byte {
	for ; i < len(b); i++ {
		if c := b[i]; c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			return c
		}
	}
	return 0
}

// rfc3339 parses s, the inside of a JSON string with no escapes in it, as an RFC 3339 time.
func rfc3339(s []byte) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' || s[10] != 'T' || bytes.IndexByte(s, '\\') >= 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	return t, err == nil
}
