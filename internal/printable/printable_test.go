package printable

import (
	"bytes"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"task-7", "task-7"},
		{"tab\tand\nnewline stay", "tab\tand\nnewline stay"},
		{"title \x1b]0;owned\a!", `title \x1b]0;owned\a!`},
		{"red \x1b[31mX\x1b[0m", `red \x1b[31mX\x1b[0m`},
		{"cr\rbs\bdel\x7fnul\x00ff\fvt\v", `cr\rbs\bdel\x7fnul\x00ff\fvt\v`},
		{"not utf-8 \xff\xfe", `not utf-8 \xff\xfe`},
		{"raw csi \x9b31m", `raw csi \x9b31m`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil\u2066\u2069\u200f\u061c", `bidi \u202eevil\u2066\u2069\u200f\u061c`},
		{"ünïcödé ✓ \uFFFD", "ünïcödé ✓ \uFFFD"},
		{`a \x1b backslash stays`, `a \x1b backslash stays`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if Is(tc.in) != (tc.in == tc.want) {
			t.Errorf("Is(%q) = %v", tc.in, Is(tc.in))
		}
	}
}

// TestText: record bytes are text in JSON when printable, else their exact bytes come too;
// valid UTF-8 that is not printable (a Confluent-framed value, a title sequence) is not text.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		in    []byte
		text  string
		exact bool
	}{
		{[]byte("task-1"), "task-1", false},
		{[]byte{}, "", false},
		{[]byte("multi\nline\ttext"), "multi\nline\ttext", false},
		{[]byte("\x00\x00\x00\x00\x07{\"a\":1}"), "\x00\x00\x00\x00\x07{\"a\":1}", true},
		{[]byte("\x1b]0;owned\a"), "\x1b]0;owned\a", true},
		{[]byte("crlf\r\n"), "crlf\r\n", true},
		{[]byte("\u202eevil"), "\u202eevil", true},
		{[]byte{0xff, 'a'}, "\uFFFDa", true},
	} {
		text, exact := Text(tc.in)
		if text == nil || *text != tc.text || (exact != nil) != tc.exact {
			t.Errorf("Text(%q) = %v, %q; want %q, exact %v", tc.in, text, exact, tc.text, tc.exact)
			continue
		}
		if back := FromText(text, exact); !bytes.Equal(back, tc.in) || back == nil {
			t.Errorf("FromText(Text(%q)) = %q", tc.in, back)
		}
	}
	if text, exact := Text(nil); text != nil || exact != nil || FromText(nil, nil) != nil {
		t.Error("nil bytes are not null")
	}
}

func TestInvalidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"\xff":           "not valid UTF-8 at byte offset 0",
		"ord\xffers":     "not valid UTF-8 at byte offset 3",
		"é\xc3":          "not valid UTF-8 at byte offset 2", // a sequence cut short
		"ab\xed\xa0\x80": "not valid UTF-8 at byte offset 2", // a surrogate
	} {
		if got := InvalidUTF8([]byte(in)); got != want {
			t.Errorf("InvalidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
