package output

import (
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		color    bool
	}{
		{"task-7", "task-7", false},
		{"tab\tand\nnewline stay", "tab\tand\nnewline stay", false},
		{"title \x1b]0;owned\a!", `title \x1b]0;owned\a!`, false},
		{"red \x1b[31mX\x1b[0m", `red \x1b[31mX\x1b[0m`, false},
		{"red \x1b[31mX\x1b[0m", "red \x1b[31mX\x1b[0m", true},
		{"move \x1b[2J\x1b[H", `move \x1b[2J\x1b[H`, true},
		{"cr\rbs\bdel\x7fnul\x00", `cr\rbs\bdel\x7fnul\x00`, false},
		{"not utf-8 \xff\xfe", `not utf-8 \xff\xfe`, false},
		{"c1 \u009b31m", `c1 \u009b31m`, false},
		{"bidi \u202eevil", `bidi \u202eevil`, false},
		{"ünïcödé ✓", "ünïcödé ✓", false},
		{"\x1b[", `\x1b[`, true},
	} {
		if got := Printable(tc.in, tc.color); got != tc.want {
			t.Errorf("Printable(%q, %v) = %q, want %q", tc.in, tc.color, got, tc.want)
		}
	}
}

// TestPrinterEscapesCells: tables and detail views escape what records carry, in every cell,
// field and text, whatever the command put there.
func TestPrinterEscapesCells(t *testing.T) {
	s, _, out, _ := Test()
	p := NewPrinter(s, FormatTable)
	if err := p.Table([]string{"key"}, [][]string{{"k\x1b]0;owned\a"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Object(nil, []Section{{Title: "T\x1b[2J", Fields: [][2]string{{"h\xff", "v\x1b[H"}}, Text: "x\x9by"}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []byte(out.String()) {
		if b == 0x1b || b == 0x07 || b == 0xff || b == 0xc2 {
			t.Fatalf("raw control byte %#x in %q", b, out.String())
		}
	}
	if !strings.Contains(out.String(), `k\x1b]0;owned\a`) || !strings.Contains(out.String(), `v\x1b[H`) {
		t.Fatalf("escapes missing: %q", out.String())
	}
}
