// Package printable is the one rule for which text may reach a terminal as it is, how the
// rest is written there, and how record bytes are given in JSON (docs/design.md §4.1). Records
// are written by anyone: a key, a header, a value or an error message can carry a sequence that
// sets the window title, moves the cursor, rewrites what was printed before, or shows text in
// another order than it is stored. Domain packages use Text for the JSON of record bytes;
// internal/output builds the terminal form on Escape.
package printable

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Is reports whether s may be written to a terminal as it is: valid UTF-8 with no rune that
// Escape escapes.
func Is(s string) bool { return first(s) < 0 }

// Escape returns s as it may be written to a terminal: every byte that could make the terminal
// do something rather than show something is written as an escape instead.
//
//   - Bytes that are not UTF-8 become \xNN.
//   - Control characters other than tab and newline become \a, \b, \f, \r, \v or \xNN (ESC
//     is \x1b), DEL is \x7f, and the C1 controls U+0080–U+009F become \u0080…\u009f.
//   - Unicode's bidirectional overrides, embeddings, isolates and marks (U+202A–U+202E,
//     U+2066–U+2069, U+200E, U+200F, U+061C) become \u202e and so on, so that text cannot be
//     shown in another order than it is stored.
//
// A backslash is left as it is (JSON values are full of them), so the escaped form is
// reversible for text without one; record bytes that are not printable are shown as base64
// instead (Text), never only escaped. Text that needs no escape is returned as it is, without
// allocating.
func Escape(s string) string {
	i := first(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	EscapeTo(&b, s[i:])
	return b.String()
}

// EscapeTo writes Escape(s) to b.
func EscapeTo(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case Unprintable(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// Text is how record bytes (keys, values, header keys and values) are given in JSON: as text
// when they are printable (Is), so that an operator can read them; otherwise the exact bytes
// are returned too, for a sibling *_base64 field that marks them, and the text is only a
// reading aid, with U+FFFD in place of bytes that are not UTF-8. nil is JSON null.
func Text(b []byte) (text *string, exact []byte) {
	if b == nil {
		return nil, nil
	}
	s := string(b)
	if Is(s) {
		return &s, nil
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return &s, b
}

// FromText inverts Text.
func FromText(text *string, exact []byte) []byte {
	if exact != nil {
		return exact
	}
	if text == nil {
		return nil
	}
	return []byte(*text)
}

// first is the index of the first byte Escape must escape, or -1.
func first(s string) int {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || Unprintable(r) {
			return i
		}
		i += size
	}
	return -1
}

// Unprintable reports whether the rune r must be escaped (bytes that are not UTF-8 always
// are).
func Unprintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

func escapeRune(r rune) string {
	switch r {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\r':
		return `\r`
	case '\v':
		return `\v`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// Header is one record header in JSON: its key and value by Text (the key is never null).
type Header struct {
	Key         string  `json:"key"`
	KeyBase64   []byte  `json:"key_base64,omitempty"`
	Value       *string `json:"value"`
	ValueBase64 []byte  `json:"value_base64,omitempty"`
}

// HeaderOf is the JSON of the header key: value.
func HeaderOf(key string, value []byte) Header {
	k, kexact := Text([]byte(key))
	h := Header{Key: *k, KeyBase64: kexact}
	h.Value, h.ValueBase64 = Text(value)
	return h
}

// Bytes inverts HeaderOf.
func (h Header) Bytes() (key string, value []byte) {
	return string(FromText(&h.Key, h.KeyBase64)), FromText(h.Value, h.ValueBase64)
}

// InvalidUTF8 says where b, which is not valid UTF-8, stops being so: "not valid UTF-8 at
// byte offset N", N counted from 0 (as xxd and od count) to the first byte that does not
// start a valid sequence. It is the one wording of every decoder's message (dead-letter
// headers, envelopes), which said it two ways, one counting from 1.
func InvalidUTF8(b []byte) string {
	at := -1
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			at = i
			break
		}
		i += size
	}
	return fmt.Sprintf("not valid UTF-8 at byte offset %d", at)
}
