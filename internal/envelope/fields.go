package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/fieldwork/fieldwork/internal/printable"
)

// maxShown bounds how much of an offending value a Reason quotes.
const maxShown = 64

// object is a JSON object's members in the order written: a record value holds a dozen or so,
// so a scan finds one faster than a map would, and an object costs no allocation of its own
// (decode keeps its members on the stack, objectMembers of them).
type object []member

// member is one member of an object: its name (without quotes) and its value as written.
type member struct {
	name []byte
	raw  json.RawMessage
}

// objectMembers is how many members an object holds before its slice grows on the heap.
const objectMembers = 16

// get is the value of the member name, nil when absent; of members of the same name, the
// last, as encoding/json decodes them.
func (o object) get(name string) json.RawMessage {
	for i := len(o) - 1; i >= 0; i-- {
		if string(o[i].name) == name {
			return o[i].raw
		}
	}
	return nil
}

// has reports whether the object has a member name.
func (o object) has(name string) bool {
	for i := range o {
		if string(o[i].name) == name {
			return true
		}
	}
	return false
}

// parseObject parses a record value that must be one JSON object (UTF-8, RFC 8259), appending
// its members to dst. It returns them, or a Reason saying what is wrong with the whole value.
// The members alias value: what outlives the record (an Event's strings and data) is copied
// out of them.
func parseObject(value []byte, dst object) (object, string) {
	if value == nil {
		// A record whose value is null, not empty: what a compacted topic's producer (a CDC
		// connector after a delete) writes to have the key's earlier records removed.
		return nil, TombstoneReason
	}
	if len(value) == 0 {
		return nil, "empty value"
	}
	if !utf8.Valid(value) {
		return nil, "invalid JSON: " + printable.InvalidUTF8(value)
	}
	if obj, ok := quickSplitObject(value, dst); ok {
		return obj, ""
	}
	trimmed := bytes.TrimLeft(value, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] != '{' && validJSON(value) {
		return nil, "not a JSON object: got " + jsonKind(trimmed)
	}
	if validJSON(value) {
		if obj, ok := splitObject(value, dst); ok {
			return obj, ""
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(value, &m); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			msg := strings.Replace(se.Error(), "unexpected end of JSON input", "unexpected end of input", 1)
			return nil, fmt.Sprintf("invalid JSON: %s at byte %d", msg, se.Offset)
		}
		return nil, "invalid JSON: " + err.Error()
	}
	if m == nil { // unreachable: a valid non-object was caught above; kept for safety.
		return nil, "not a JSON object"
	}
	obj := dst[:0]
	for k, v := range m {
		obj = append(obj, member{name: []byte(k), raw: v})
	}
	return obj, ""
}

// splitObject splits a value that json.Valid accepts and that is an object into its members,
// in one pass without reflection (the consumer decodes every record, and a reflective decode
// into a map was most of its CPU time), appending them to dst. value must be valid UTF-8
// (parseObject checks it first). It returns false, leaving the value to json.Unmarshal, when
// a member name holds an escape (it would need unquoting).
func splitObject(value []byte, dst object) (object, bool) {
	i := skipSpace(value, 0)
	if i >= len(value) || value[i] != '{' {
		return nil, false
	}
	obj := dst[:0]
	i = skipSpace(value, i+1)
	if value[i] == '}' {
		return obj, true
	}
	for {
		end := stringEnd(value, i)
		name := value[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false
		}
		i = skipSpace(value, skipSpace(value, end)+1) // past the colon
		start := i
		i = valueEnd(value, i)
		obj = append(obj, member{name: name, raw: value[start:i:i]})
		i = skipSpace(value, i)
		if value[i] == '}' {
			return obj, true
		}
		i = skipSpace(value, i+1) // past the comma
	}
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] ('"'), in valid JSON.
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index just past the value starting at b[i], in valid JSON.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) { // a number or a literal
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// jsonKind names the kind of a valid JSON value from its first byte.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "a JSON object"
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string"
	case 't', 'f':
		return "a JSON boolean"
	case 'n':
		return "JSON null"
	}
	return "a JSON number"
}

// describe renders a JSON value for a Reason: strings quoted, numbers and literals as written,
// objects and arrays by kind; long text is cut short.
func describe(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{', '[':
		return jsonKind(raw)
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return quote(s)
		}
	}
	return truncate(string(raw))
}

// quote renders text for a Reason: Go-quoted (so control bytes and invalid UTF-8 are escaped)
// and cut short.
func quote(s string) string { return strconv.Quote(truncate(s)) }

// truncate cuts s to at most maxShown bytes on a rune boundary, marking the cut with "…".
func truncate(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// isNull reports whether a member is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// checkText is the rule for every string an Event carries: valid UTF-8, no NUL bytes.
func checkText(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8: " + quote(s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains a NUL byte: " + quote(s)
	}
	return ""
}

// checkID is the rule for an event id: text that is not empty or only white space.
func checkID(s string) string {
	if s == "" {
		return "empty"
	}
	if strings.TrimSpace(s) == "" {
		return "only white space: " + quote(s)
	}
	return checkText(s)
}

// jsonText reads a member that must be a JSON string as json.Unmarshal into a string does;
// false when it is not one. The text is its own, never aliasing raw.
func jsonText(raw json.RawMessage) (string, bool) {
	if !utf8.Valid(raw) {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	s, ok := jsonTextView(raw)
	return strings.Clone(s), ok
}

// jsonTextView is jsonText for UTF-8 text (a member of a value parseObject accepted), without
// the copy: a string without escapes, the common case, is the text between its quotes, taken
// without a second parse and without an allocation, as a string that aliases raw
// (unsafe.String). raw is a member of a record's value, which is not changed while the record
// is read; the view must not outlive that. The decoders use views to check and parse and keep
// them as the Event's text, which Decode and DecodeRecord copy (Event.own) and
// DecodeRecordView hands out as views; what goes into a Reason is copied by quote.
func jsonTextView(raw json.RawMessage) (string, bool) {
	raw = trimJSONSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; raw[len(raw)-1] == '"' && stringSpecial(inner, 0) == len(inner) {
		return unsafe.String(unsafe.SliceData(inner), len(inner)), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// trimJSONSpace is bytes.Trim(b, " \t\r\n"): without JSON's white space around it.
func trimJSONSpace(b []byte) []byte {
	i := skipSpace(b, 0)
	j := len(b)
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\r' || b[j-1] == '\n') {
		j--
	}
	return b[i:j]
}

// jsonString reads an optional string member; absent, null and "" all give "".
func jsonString(raw json.RawMessage) (string, string) {
	if isNull(raw) {
		return "", ""
	}
	s, ok := jsonTextView(raw)
	if !ok {
		return "", "not a string: " + describe(raw)
	}
	return s, checkText(s)
}

// jsonID reads a required id member.
func jsonID(obj object, name string) (string, string) {
	raw := obj.get(name)
	if raw == nil {
		return "", "missing"
	}
	if isNull(raw) {
		return "", "missing: null"
	}
	s, ok := jsonTextView(raw)
	if !ok {
		return "", "not a string: " + describe(raw)
	}
	return s, checkID(s)
}

// jsonTime reads an optional RFC 3339 time member; absent, null and "" give the zero time.
func jsonTime(raw json.RawMessage) (time.Time, string) {
	if isNull(raw) {
		return time.Time{}, ""
	}
	s, ok := jsonTextView(raw)
	if !ok {
		return time.Time{}, "not an RFC 3339 timestamp: " + describe(raw)
	}
	return parseTime(s)
}

// parseTime parses RFC 3339 text (fractional seconds allowed; "t" and "z" in either case, as
// RFC 3339 permits); "" is absent. It refuses what time.Parse would let through but RFC 3339
// does not (a comma before the fraction) and offsets of 24 hours or more, which
// time.Time.MarshalJSON cannot render.
func parseTime(s string) (time.Time, string) {
	if s == "" {
		return time.Time{}, ""
	}
	upper := s
	if strings.IndexByte(s, 't') >= 0 || strings.IndexByte(s, 'z') >= 0 {
		upper = strings.Map(upperTZ, s)
	}
	t, err := time.Parse(time.RFC3339Nano, upper) // t keeps nothing of the text
	if err != nil || strings.IndexByte(s, ',') >= 0 {
		return time.Time{}, "not an RFC 3339 timestamp: " + quote(s)
	}
	if _, offset := t.Zone(); offset <= -24*60*60 || offset >= 24*60*60 {
		return time.Time{}, "time zone offset out of range: " + quote(s)
	}
	return t, ""
}

// upperTZ upper-cases the only letters an RFC 3339 timestamp holds.
func upperTZ(r rune) rune {
	switch r {
	case 't':
		return 'T'
	case 'z':
		return 'Z'
	}
	return r
}

// jsonVersion reads an optional aggregate version member: a JSON integer or a string holding a
// decimal integer. Absent, null and "" are no version.
func jsonVersion(raw json.RawMessage) (v int64, ok bool, reason string) {
	if isNull(raw) {
		return 0, false, ""
	}
	raw = bytes.TrimSpace(raw)
	switch c := raw[0]; {
	case c == '"':
		s, ok := jsonTextView(raw)
		if !ok {
			return 0, false, "not an integer: " + describe(raw)
		}
		return parseVersion(s)
	case c == '-' || ('0' <= c && c <= '9'):
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			if isRangeError(err) {
				return 0, false, "out of range for a 64-bit integer: " + truncate(string(raw))
			}
			return 0, false, "not an integer: " + truncate(string(raw))
		}
		return n, true, ""
	}
	return 0, false, "not an integer: " + describe(raw)
}

// parseVersion parses a version held as text, allowing surrounding white space; "" is absent.
func parseVersion(s string) (int64, bool, string) {
	t := strings.TrimSpace(s)
	if t == "" {
		if s == "" {
			return 0, false, ""
		}
		return 0, false, "not an integer: " + quote(s)
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		if isRangeError(err) {
			return 0, false, "out of range for a 64-bit integer: " + quote(s)
		}
		return 0, false, "not an integer: " + quote(s)
	}
	return n, true, ""
}

func isRangeError(err error) bool {
	ne, ok := errors.AsType[*strconv.NumError](err)
	return ok && ne.Err == strconv.ErrRange
}

// jsonData returns a data member as it is written, a view of the record's value (decode's
// callers copy it, ownData); absent and null are no data.
func jsonData(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return raw
}
