package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/printable"
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
		// A record's colour is escaped even where fieldwork's own colours are kept.
		{"red \x1b[31mX\x1b[0m", `red \x1b[31mX\x1b[0m`, true},
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

// TestPrintableKeepsOwnColours: with colour, what the styles rendered becomes colour and what
// a record carried inside or beside it is escaped, the same sequence too.
func TestPrintableKeepsOwnColours(t *testing.T) {
	st := NewStyles(&bytes.Buffer{}, true)
	red := st.Bad.Render("bad")
	got := Printable(red+" \x1b[31mX\x1b[0m "+st.Warn.Render("w\x1b]0;t\a"), true)
	on, off := ownSequences(st.Bad), ownSequences(st.Warn)
	want := on[0] + "bad" + on[1] + ` \x1b[31mX\x1b[0m ` + off[0] + `w\x1b]0;t\a` + off[1]
	if got != want {
		t.Fatalf("Printable = %q, want %q", got, want)
	}
	if !strings.HasPrefix(on[0], "\x1b[") || !strings.HasSuffix(on[0], "m") {
		t.Fatalf("the bad style starts with %q, not a colour", on[0])
	}
	// Without colour the styles write nothing of their own.
	plain := NewStyles(&bytes.Buffer{}, false)
	if s := plain.Bad.Render("a", "b\nc"); s != "a b\nc" {
		t.Fatalf("uncoloured Render = %q", s)
	}
	// Printed without keepColor, a styled text shows no escape sequence at all.
	if s := Printable(red, false); strings.ContainsRune(s, 0x1b) {
		t.Fatalf("Printable(styled, false) = %q", s)
	}
}

// ownSequences is the style's start and end as they reach the terminal.
func ownSequences(s Style) [2]string {
	return [2]string{strings.ReplaceAll(s.on, ownMark, "\x1b"), strings.ReplaceAll(s.off, ownMark, "\x1b")}
}

func TestTextWriter(t *testing.T) {
	var b bytes.Buffer
	st := NewStyles(&b, true)
	w := TextWriter(&b, true)
	if _, err := w.Write([]byte(st.Bad.Render("error: ") + "topic \x1b[2Jt\x9b\n")); err != nil {
		t.Fatal(err)
	}
	bad := ownSequences(st.Bad)
	if want := bad[0] + "error: " + bad[1] + `topic \x1b[2Jt\x9b` + "\n"; b.String() != want {
		t.Fatalf("TextWriter wrote %q, want %q", b.String(), want)
	}
}

// TestJSONEscapesControls: JSON output carries no control character, C1 and bidirectional
// controls included (encoding/json writes those as they are), and means the same.
func TestJSONEscapesControls(t *testing.T) {
	s, _, out, _ := Test()
	v := map[string]string{"k": "\x1b[31m \u009b \u202e \u2066 \x00 \x7f é ✓"}
	if err := NewPrinter(s, FormatJSON).Object(v, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x2066 {
			t.Fatalf("raw %U in %q", r, out.String())
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["k"] != v["k"] {
		t.Fatalf("JSON %q reads back as %q (%v)", out.String(), back["k"], err)
	}
}

// TestJSONWriter: JSON written by another encoder (a log handler) is escaped alike; a byte
// that is not UTF-8 (JSON passed on as it is may hold one) becomes U+FFFD.
func TestJSONWriter(t *testing.T) {
	var b bytes.Buffer
	if _, err := JSONWriter(&b).Write([]byte("{\"msg\":\"\u009b2J \u202e \x7f \x9b\xff é\"}\n")); err != nil {
		t.Fatal(err)
	}
	if want := `{"msg":"\u009b2J \u202e \u007f \ufffd\ufffd é"}` + "\n"; b.String() != want {
		t.Fatalf("JSONWriter wrote %q, want %q", b.String(), want)
	}
}

// TestPrinterEscapesCells: tables and detail views escape what records carry, in every cell,
// field and text, whatever the command put there.
func TestPrinterEscapesCells(t *testing.T) {
	for _, color := range []bool{false, true} {
		s, _, out, _ := Test()
		s.OutTTY = color
		p := NewPrinter(s, FormatTable)
		if err := p.Table([]string{"key"}, [][]string{{"k\x1b]0;owned\a" + p.Styles.Bad.Render("\x1b[31m")}}); err != nil {
			t.Fatal(err)
		}
		if err := p.Object(nil, []Section{{Title: "T\x1b[2J", Fields: [][2]string{{"h\xff", "v\x1b[H"}}, Text: "x\x9by"}}); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, seq := range []Style{p.Styles.Bad, p.Styles.Header, p.Styles.Title} {
			own := ownSequences(seq)
			got = strings.ReplaceAll(strings.ReplaceAll(got, own[0], ""), own[1], "")
		}
		for _, b := range []byte(got) {
			if b == 0x1b || b == 0x07 || b == 0xff || b == 0xc2 {
				t.Fatalf("colour %v: raw control byte %#x in %q", color, b, out.String())
			}
		}
		if !strings.Contains(got, `k\x1b]0;owned\a\x1b[31m`) || !strings.Contains(got, `v\x1b[H`) {
			t.Fatalf("colour %v: escapes missing: %q", color, out.String())
		}
	}
}

// FuzzPrintable: for any input, the terminal form is valid UTF-8 and holds no C0 control but
// tab and newline, no DEL, no C1 control, no bidirectional control; it is the input itself
// exactly when the input is printable, it does not change when escaped again, and it gives the
// input back (so distinct inputs never look alike) when the input holds no backslash, the one
// character it leaves as it is although escapes start with it. With colour, a record's bytes
// are escaped alike; only the styles' own sequences become escape sequences.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "task-1", "\x1b]0;owned\a", "\x1b[31mred\x1b[0m", "\x00\x00\x00\x00\x07\x0c{}",
		"\xff\xfe\x9b31m", "\u009b31m", "\u202eevil", "ok\rFAIL\bX\x7f", `C:\x1b`, "é\u2066✓\n\t"} {
		f.Add(s)
	}
	st := NewStyles(&bytes.Buffer{}, true)
	own := ownSequences(st.Bad)
	f.Fuzz(func(t *testing.T, s string) {
		e := Printable(s, false)
		checkTerminalSafe(t, s, e)
		if again := Printable(e, false); again != e {
			t.Fatalf("Printable is not idempotent on %q: %q, then %q", s, e, again)
		}
		if (e == s) != printableText(s) {
			t.Fatalf("Printable(%q) = %q, but the input is printable: %v", s, e, printableText(s))
		}
		if !strings.Contains(s, `\`) {
			if back, err := unescape(e); err != nil || back != s {
				t.Fatalf("Printable(%q) = %q reads back as %q (%v)", s, e, back, err)
			}
		}
		if c := Printable(s, true); c != e {
			t.Fatalf("with colour, Printable(%q) = %q, want %q", s, c, e)
		}
		c := Printable(st.Bad.Render("x")+s, true)
		if !strings.HasPrefix(c, own[0]+"x"+own[1]) {
			t.Fatalf("the style's colour is lost: %q", c)
		}
		checkTerminalSafe(t, s, strings.TrimPrefix(c, own[0]+"x"+own[1]))
	})
}

// printableText is what the terminal may show as it is, spelled out apart from the code.
func printableText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unsafeRune(r) {
			return false
		}
	}
	return true
}

func unsafeRune(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

func checkTerminalSafe(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Printable(%q) = %q is not UTF-8", in, out)
	}
	for _, r := range out {
		if unsafeRune(r) {
			t.Fatalf("Printable(%q) = %q holds %U", in, out, r)
		}
	}
}

// unescape reads the escapes Printable writes.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", strconv.ErrSyntax
		}
		switch c := s[i+1]; c {
		case 'a', 'b', 'f', 'r', 'v':
			b.WriteByte(map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'r': '\r', 'v': '\v'}[c])
			i++
		case 'x', 'u':
			n := 2
			if c == 'u' {
				n = 4
			}
			if i+2+n > len(s) {
				return "", strconv.ErrSyntax
			}
			v, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32)
			if err != nil {
				return "", err
			}
			if c == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i += 1 + n
		default:
			return "", strconv.ErrSyntax
		}
	}
	return b.String(), nil
}

// escapeJSONByRune is escapeJSON with the first byte to change found one rune at a time, the
// reference its eight-byte skip is held to.
func escapeJSONByRune(b []byte) []byte {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || r >= 0x7f && printable.Unprintable(r) {
			return escapeJSONFrom(b, i)
		}
		i += size
	}
	return b
}

// TestEscapeJSONSkip checks escapeJSON against the rune-by-rune reference on lines that put
// DEL, C1 and bidirectional controls, other non-ASCII text and bytes that are not UTF-8 at
// every offset of the eight-byte words it skips.
func TestEscapeJSONSkip(t *testing.T) {
	pieces := []string{"\x7f", "\u0085", "\u202e", "é", "日", "\xff", "\xc3", "\t", `\n`, `"`, "\x01", "\x7f\u0085"}
	for n := 0; n < 80; n++ {
		for _, p := range pieces {
			for at := 0; at <= n; at++ {
				line := []byte(strings.Repeat("a", at) + p + strings.Repeat("b", n-at))
				if got, want := escapeJSON(line), escapeJSONByRune(line); !bytes.Equal(got, want) {
					t.Fatalf("escapeJSON(%q) = %q, want %q", line, got, want)
				}
			}
		}
		plain := []byte(strings.Repeat("x", n))
		if got := escapeJSON(plain); !bytes.Equal(got, plain) {
			t.Fatalf("escapeJSON(%q) = %q", plain, got)
		}
	}
}

// TestErrTextWrapsOnATerminal: on a terminal every line of a message written to stderr is
// wrapped to its width, under its own indentation; off a terminal it is left whole.
func TestErrTextWrapsOnATerminal(t *testing.T) {
	s, _, _, errOut := Test()
	msg := "showing the first 5 dead letters: more remain (raise --limit, 0 for no limit, or narrow the filters)\n" +
		"  tasks.dlq/0/0: the message of the dead letter is longer than the terminal is wide, by far\nshort\n"
	fmt.Fprint(s.ErrText(), msg)
	if errOut.String() != msg {
		t.Errorf("off a terminal: %q", errOut.String())
	}
	errOut.Reset()
	s.ErrTTY, s.ErrWidth = true, 40
	fmt.Fprint(s.ErrText(), msg)
	lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	for _, l := range lines {
		if len(l) > 40 {
			t.Errorf("a line %d wide: %q", len(l), l)
		}
	}
	if lines[0] != "showing the first 5 dead letters: more" || lines[3] != "  tasks.dlq/0/0: the message of the dead" || lines[len(lines)-1] != "short" {
		t.Errorf("wrapped:\n%s", errOut.String())
	}
}

// TestErrTextKeepsCommandsWhole: a command a message gives to run is wrapped to a line of its
// own, never broken, so that it is copied whole.
func TestErrTextKeepsCommandsWhole(t *testing.T) {
	s, _, _, errOut := Test()
	s.ErrTTY, s.ErrWidth = true, 60
	fmt.Fprintln(s.ErrText(), "run 20261202-110737-12c8b5 is interrupted; continue it with: fieldwork replay resume 20261202-110737-12c8b5 (it keeps --rate 2)")
	if !strings.Contains(errOut.String(), "\nfieldwork replay resume 20261202-110737-12c8b5") {
		t.Errorf("the command is broken:\n%s", errOut.String())
	}
}

// TestWrapCommand: a command wider than the terminal is broken at blanks outside quotes, with
// a shell's line continuation, so that it pastes as the same command.
func TestWrapCommand(t *testing.T) {
	cmd := "$ fieldwork replay --topic tasks.dlq --dlq-reason rejected --execute --yes --reason 'projection 1.5 accepts task.reopened' --dsn sqlite:/tmp/fieldwork-demo.db"
	lines := WrapCommand(cmd, 60)
	for i, l := range lines {
		if len(l) > 60 || i < len(lines)-1 && !strings.HasSuffix(l, " \\") {
			t.Errorf("line %d: %q", i, l)
		}
	}
	joined := strings.ReplaceAll(strings.Join(lines, "\n"), " \\\n    ", " ")
	if joined != cmd || !strings.Contains(strings.Join(lines, "\n"), "'projection 1.5 accepts task.reopened'") {
		t.Errorf("not the same command:\n%s", strings.Join(lines, "\n"))
	}
}

// BenchmarkEscapeJSON measures escapeJSON on a line of a listing of dead letters: some 2 KB of
// ASCII, nothing to change.
func BenchmarkEscapeJSON(b *testing.B) {
	line := []byte(`{"topic":"tasks.dlq","partition":0,"offset":0,"value":"{\"specversion\":\"1.0\",\"data\":{\"note\":\"` +
		strings.Repeat("x", 1900) + `\"}}","headers":[]}` + "\n")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if len(escapeJSON(line)) != len(line) {
			b.Fatal("changed")
		}
	}
}
