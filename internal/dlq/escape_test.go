package dlq

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/printable"
)

// FuzzEscape holds the string escapers (appendJSONString, appendPrintable, which skip plain
// bytes eight at a time) to the byte-at-a-time ones they replaced (appendJSONStringRef,
// appendPrintableRef), byte for byte, and appendJSONString to encoding/json.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x01\x1f\x7f",
		"line\u2028para\u2029", "é 日本 🎉", "bad \xff\xfe utf8 \xc3", "trunc \xf0\x9f\x8e", "c1 \u0085 bidi \u202e",
		`{"specversion":"1.0","id":"evt-00000007","data":{"note":"` + strings.Repeat("x", 40) + `"}}`,
		strings.Repeat("abcdefg", 9) + "\x7f" + strings.Repeat("0123456789", 3) + "!#$%'()*+,-./:;=?@[]^_`{|}~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := appendJSONStringRef([]byte("p"), s)
		if got := appendJSONString([]byte("p"), s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
		if got := appendJSONString([]byte("p"), []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString([]byte(%q)) = %s, want %s", s, got, want)
		}
		if j, err := json.Marshal(s); err != nil || !bytes.Equal(want[1:], j) {
			t.Fatalf("encoding/json wrote %s (%v), want %s", j, err, want[1:])
		}
		got, ok := appendPrintable([]byte("p"), []byte(s))
		wantP, wantOK := appendPrintableRef([]byte("p"), []byte(s))
		if ok != wantOK || !bytes.Equal(got, wantP) {
			t.Fatalf("appendPrintable(%q) = %s %v, want %s %v", s, got, ok, wantP, wantOK)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("appendPrintable(%q) = %s, appendJSONString %s", s, got, want)
		}
		if n := plainRun(s); n > len(s) || strings.IndexFunc(s[:n], func(r rune) bool { return r >= utf8.RuneSelf || !plainJSON[r] }) >= 0 ||
			n < len(s) && s[n] < utf8.RuneSelf && plainJSON[s[n]] {
			t.Fatalf("plainRun(%q) = %d", s, n)
		}
	})
}

// The escapers as they were, one byte at a time: the reference FuzzEscape holds the others to.

func appendPrintableRef(b, v []byte) ([]byte, bool) {
	n := len(b)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if plainJSON[c] {
				i++
				continue
			}
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				return b[:n], false
			}
			b = appendEscapedASCII(append(b, v[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(v[i:])
		if r == utf8.RuneError && size == 1 || printable.Unprintable(r) {
			return b[:n], false
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, v[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			start = i + size
		}
		i += size
	}
	b = append(b, v[start:]...)
	return append(b, '"'), true
}

func appendJSONStringRef[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainJSON[c] || c == 0x7f {
				i++
				continue
			}
			b = appendEscapedASCII(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// BenchmarkEscapeRef is BenchmarkEscape through the reference escapers, for a ratio from the
// same run.
func BenchmarkEscapeRef(b *testing.B) {
	d := benchDeadLetter()
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		if o, ok := appendPrintableRef(out[:0], d.Value); ok {
			out = o
		}
		for _, h := range d.Headers {
			out = appendJSONStringRef(out, h.Key)
			if o, ok := appendPrintableRef(out, h.Value); ok {
				out = o
			}
		}
	}
	b.SetBytes(int64(len(out)))
}
