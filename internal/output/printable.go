package output

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s as it may be written to a terminal: every byte that could make the
// terminal do something rather than show something is written as an escape instead. Records
// are written by anyone, and a key, a header or an error message can carry a sequence that
// sets the window title, moves the cursor, rewrites what was printed before, or hides text.
//
//   - Bytes that are not UTF-8 become \xNN.
//   - Control characters other than tab and newline become \a, \b, \f, \r, \v or \xNN (ESC
//     is \x1b), DEL is \x7f, and the C1 controls U+0080–U+009F become \u0080…\u009f.
//   - Unicode's bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) become
//     \u202e and so on, so that text cannot be shown in another order than it is stored.
//   - With keepColor, a Select Graphic Rendition sequence (ESC [ digits and semicolons m) is
//     kept: fieldwork's own colours are such sequences, and they can do no more than colour.
//
// Text that needs no escape is returned as it is, without allocating.
func Printable(s string, keepColor bool) string {
	i := firstUnprintable(s, keepColor)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		if keepColor {
			if n := sgrLen(s[i:]); n > 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unprintable(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnprintable is the index of the first byte Printable must escape, or -1.
func firstUnprintable(s string, keepColor bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if keepColor {
			if n := sgrLen(s[i:]); n > 0 {
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unprintable(r) {
			return i
		}
		i += size
	}
	return -1
}

// unprintable reports whether r must be escaped (a valid rune; invalid bytes are handled by
// the caller).
func unprintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
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

// sgrLen is the length of the Select Graphic Rendition sequence s starts with (ESC [ then
// digits and semicolons, then m), or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'm':
			return i + 1
		case c == ';' || (c >= '0' && c <= '9'):
		default:
			return 0
		}
	}
	return 0
}
