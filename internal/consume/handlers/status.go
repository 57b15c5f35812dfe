package handlers

import (
	"bytes"
	"unicode/utf8"
)

// statusOf reads the task's status from data, one JSON object (consumer.Event.Data is one
// valid JSON value), as json.Unmarshal into taskData does: the last top-level member whose
// name is "status" in any case, a string, or null, which leaves it as it was. It walks the
// object's top level once, where json.Unmarshal first validates the whole value and then
// decodes it by reflection (the projection's largest cost per event after the envelope). It
// returns false, leaving the value to json.Unmarshal, for anything but the plain case: a
// member name or a status with an escape or a byte outside ASCII in the name, a status of
// another type (json.Unmarshal's error says which), or bytes that are not valid JSON.
func statusOf(data []byte) (string, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return "", false
	}
	status := ""
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return status, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return "", false
		}
		end := stringEnd(data, i)
		if end < 0 {
			return "", false
		}
		name := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return "", false
		}
		i = skipSpace(data, i+1)
		start := i
		if i = valueEnd(data, i); i < 0 {
			return "", false
		}
		switch match, ok := isStatus(name); {
		case !ok:
			return "", false
		case match:
			v := data[start:i]
			switch {
			case string(v) == "null":
			case len(v) >= 2 && v[0] == '"' && noEscape(v[1:len(v)-1]) && utf8.Valid(v):
				status = string(v[1 : len(v)-1])
			default:
				return "", false
			}
		}
		i = skipSpace(data, i)
		switch {
		case i < len(data) && data[i] == '}':
			if skipSpace(data, i+1) != len(data) {
				return "", false
			}
			return status, true
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		default:
			return "", false
		}
	}
}

// isStatus reports whether a member name is "status" as encoding/json matches a field name
// (ASCII letters in any case); ok is false for a name it would have to unquote or fold beyond
// ASCII.
func isStatus(name []byte) (match, ok bool) {
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return false, false
		}
	}
	const want = "status"
	if len(name) != len(want) {
		return false, true
	}
	for k, c := range name {
		if c|0x20 != want[k] {
			return false, true
		}
	}
	return true, true
}

// noEscape reports whether a string's contents hold no escape.
func noEscape(b []byte) bool {
	return bytes.IndexByte(b, '\\') < 0
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] ('"'), or -1 when it
// does not end. It jumps from quote to quote: a quote preceded by an odd number of
// backslashes is escaped.
func stringEnd(b []byte, i int) int {
	content := i + 1
	for i = content; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		j := i + q
		k := j - 1
		for k >= content && b[k] == '\\' {
			k--
		}
		if (j-1-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}

// valueEnd returns the index just past the value starting at b[i], or -1 when it is not a
// value that ends (a member's value: it must be followed by ',' or '}').
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// A number or a literal: up to the next delimiter.
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
