package envelope

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// validJSON is json.Valid for a value already known to be UTF-8 (parseObject checks that
// first), answered by one pass of a plain recursive-descent check: encoding/json's scanner
// calls a function per byte, and was a tenth of a reader's CPU time. Whatever the pass does not
// accept (invalid JSON, nesting deeper than maxQuickDepth) goes to json.Valid, which gives the
// answer: the pass only ever says yes where json.Valid does (FuzzValidJSON).
func validJSON(b []byte) bool {
	if i, ok := quickValue(b, skipSpace(b, 0), 0); ok && skipSpace(b, i) == len(b) {
		return true
	}
	return json.Valid(b)
}

// maxQuickDepth bounds the nesting quickValue follows (encoding/json allows 10,000).
const maxQuickDepth = 512

// quickValue checks the JSON value starting at b[i] and returns the index just past it.
func quickValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return quickContainer(b, i, depth, '}')
	case c == '[':
		return quickContainer(b, i, depth, ']')
	case c == '"':
		return quickString(b, i)
	case c == '-' || '0' <= c && c <= '9':
		return quickNumber(b, i)
	case c == 't':
		return quickLiteral(b, i, "true")
	case c == 'f':
		return quickLiteral(b, i, "false")
	case c == 'n':
		return quickLiteral(b, i, "null")
	}
	return i, false
}

// quickContainer checks the object (end '}') or array (end ']') starting at b[i].
func quickContainer(b []byte, i, depth int, end byte) (int, bool) {
	if depth >= maxQuickDepth {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if end == '}' {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = quickString(b, i); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = quickValue(b, i, depth+1); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// quickString checks the string starting at b[i] ('"').
func quickString(b []byte, i int) (int, bool) {
	for i++; ; i++ {
		if i = stringSpecial(b, i); i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		}
		i++ // past the backslash
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(b) {
				return i, false
			}
			for _, h := range b[i+1 : i+5] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return i, false
				}
			}
			i += 4
		default:
			return i, false
		}
	}
}

// stringSpecial returns the index of the first byte at or after i that a JSON string does not
// hold as it is: '"', '\\' or a control byte (below 0x20); len(b) when there is none. It reads
// eight bytes at a time: most of a record's value is the text of strings.
func stringSpecial(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q, bs := w^(ones*'"'), w^(ones*'\\')
		// (x - ones) &^ x has a high bit set where x has a zero byte (exact as to whether there
		// is one); (w - ones*0x20) &^ w likewise where w has a byte below 0x20.
		if ((w-ones*0x20)&^w|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return len(b)
}

// quickNumber checks the number starting at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func quickNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

// digits returns the index of the first byte at or after i that is not an ASCII digit.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// quickLiteral checks that b holds lit at i.
func quickLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// quickSplitObject is validJSON then splitObject in the one pass of quickValue, for a value
// already known to be UTF-8: it returns the value's members (appended to dst) and true only
// when the quick pass accepts the whole value, it is an object and no member name holds an
// escape. false says nothing about the value: parseObject then takes its slower way.
func quickSplitObject(value []byte, dst object) (object, bool) {
	i := skipSpace(value, 0)
	if i >= len(value) || value[i] != '{' {
		return nil, false
	}
	obj := dst[:0]
	i = skipSpace(value, i+1)
	if i < len(value) && value[i] == '}' {
		return obj, skipSpace(value, i+1) == len(value)
	}
	for {
		if i >= len(value) || value[i] != '"' {
			return nil, false
		}
		end, ok := quickString(value, i)
		if !ok {
			return nil, false
		}
		name := value[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false
		}
		if i = skipSpace(value, end); i >= len(value) || value[i] != ':' {
			return nil, false
		}
		start := skipSpace(value, i+1)
		if i, ok = quickValue(value, start, 1); !ok {
			return nil, false
		}
		obj = append(obj, member{name: name, raw: value[start:i:i]})
		if i = skipSpace(value, i); i >= len(value) {
			return nil, false
		}
		switch value[i] {
		case ',':
			i = skipSpace(value, i+1)
		case '}':
			if skipSpace(value, i+1) != len(value) {
				return nil, false
			}
			return obj, true
		default:
			return nil, false
		}
	}
}
