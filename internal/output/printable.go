package output

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/fieldwork/fieldwork/internal/printable"
)

// Printable returns s as it may be written to a terminal, by the one rule of
// internal/printable (docs/design.md §4.1): bytes that are not UTF-8, control characters but
// tab and newline, DEL, the C1 controls and Unicode's bidirectional controls are written as
// escapes (\x1b, \a, \u009b, \u202e…). Every escape sequence a record carries is escaped, a
// colour too.
//
// With keepColor, fieldwork's own colours are kept: the sequences its Styles wrote, which
// carry a mark made anew by each process and so cannot be forged by data (ownMark). A
// command may concatenate styled text and record data in one cell; the data is escaped, the
// styles become colour. Text that needs no escape is returned as it is, without allocating.
func Printable(s string, keepColor bool) string {
	if !keepColor || !strings.Contains(s, ownMark) {
		return printable.Escape(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, ownMark)
		if i < 0 {
			printable.EscapeTo(&b, s)
			return b.String()
		}
		printable.EscapeTo(&b, s[:i])
		s = s[i+len(ownMark):]
		if n := sgrLen(s); n > 0 {
			b.WriteByte(0x1b)
			b.WriteString(s[:n])
			s = s[n:]
		}
	}
}

// TextWriter returns a writer to w that writes each Write's text as Printable makes it, with
// fieldwork's own colours kept when color is true: for the messages and narration written to
// a stream directly rather than through a Printer (errors and warnings on stderr, the
// banners of dev and demo). One Write must be one whole message, as each fmt.Fprint call is.
func TextWriter(w io.Writer, color bool) io.Writer { return textWriter{w: w, color: color} }

// WrappingTextWriter is TextWriter with each line wrapped to width columns (0: left whole), as
// ErrText wraps stderr on a terminal: for narration written to a terminal (dev's banner, the
// demo's story).
func WrappingTextWriter(w io.Writer, color bool, width int) io.Writer {
	return textWriter{w: w, color: color, width: width}
}

type textWriter struct {
	w     io.Writer
	color bool
	width int // each line wrapped to it; 0: left whole
}

func (t textWriter) Write(b []byte) (int, error) {
	text := Printable(string(b), t.color)
	if t.width > 0 {
		text = wrapLines(text, t.width)
	}
	if _, err := io.WriteString(t.w, text); err != nil {
		return 0, err
	}
	return len(b), nil
}

// wrapLines wraps each line of text wider than width (Wrap), its continuation lines under
// the line's own indentation; the other lines, and the line ends, stay as they are. A command
// a message gives to run ("fieldwork replay resume RUN") is kept on one line, so that it is
// copied whole.
func wrapLines(text string, width int) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if ansi.StringWidth(l) <= width {
			continue
		}
		body := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(body)]
		if len(indent) > width/2 {
			indent = ""
		}
		var parts []string
		if isCommandLine(ansi.Strip(body)) {
			parts = WrapCommand(body, width-len(indent))
		} else {
			parts = Wrap(keepCommands(body), width-len(indent))
		}
		for j := range parts {
			parts[j] = indent + strings.ReplaceAll(parts[j], commandBlank, " ")
		}
		lines[i] = strings.Join(parts, "\n")
	}
	return strings.Join(lines, "\n")
}

// JSONWriter returns a writer to w for JSON documents written by another encoder (the JSON
// log lines of consume): each Write is escaped as fieldwork's own JSON output is (escapeJSON),
// so that no DEL, C1 or bidirectional control reaches a terminal. One Write must be whole
// documents, as a log handler writes one line per record.
func JSONWriter(w io.Writer) io.Writer { return jsonWriter{w} }

type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(b []byte) (int, error) {
	if _, err := j.w.Write(escapeJSON(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// ownMark stands for ESC in the Select Graphic Rendition sequences fieldwork's Styles write:
// random, made once per process, in the Private Use Area, so that no record can carry it and
// Printable tells the styles' colours from a record's escape sequences.
var ownMark = func() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "\uE000" + hex.EncodeToString(b[:]) + "\uE001"
}()

// sgrLen is the length of the Select Graphic Rendition sequence s starts with after its ESC
// ([ then digits and semicolons, then m), or 0.
func sgrLen(s string) int {
	if len(s) < 2 || s[0] != '[' {
		return 0
	}
	for i := 1; i < len(s); i++ {
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

// escapeJSON writes DEL, the C1 controls and the bidirectional controls in encoded JSON as \u
// escapes (encoding/json escapes the C0 controls itself but writes these as they are), and a
// byte that is not UTF-8 as \ufffd (a value passed on as JSON, value_json, may hold one):
// JSON on a terminal shows them instead of acting on them, and the document means the same.
// They can only stand inside strings, where \uXXXX is the same character.
func escapeJSON(b []byte) []byte {
	i := firstJSONEscape(b)
	if i == len(b) {
		return b
	}
	return escapeJSONFrom(b, i)
}

// firstJSONEscape is the index of the first byte of b that escapeJSON changes, len(b) when
// there is none.
func firstJSONEscape(b []byte) int {
	i := 0
	for i < len(b) {
		// Thirty-two bytes at a time, then eight, while they are ASCII other than DEL: the
		// whole of nearly every line, which a stream of a million dead letters sends through
		// here.
		for ; i+32 <= len(b); i += 32 {
			q := b[i : i+32 : i+32]
			if notPlainASCII(binary.LittleEndian.Uint64(q))|notPlainASCII(binary.LittleEndian.Uint64(q[8:]))|
				notPlainASCII(binary.LittleEndian.Uint64(q[16:]))|notPlainASCII(binary.LittleEndian.Uint64(q[24:])) != 0 {
				break
			}
		}
		for ; i+8 <= len(b); i += 8 {
			if notPlainASCII(binary.LittleEndian.Uint64(b[i:])) != 0 {
				break
			}
		}
		if i == len(b) {
			break
		}
		if c := b[i]; c < utf8.RuneSelf && c != 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || printable.Unprintable(r) {
			break
		}
		i += size
	}
	return i
}

// notPlainASCII is not 0 when one of the eight bytes of w is not ASCII or is DEL: a byte of 0x80
// or more has its high bit set, and DEL has it once 1 is added (a byte below DEL does not, and
// carries into the next byte only out of a byte of 0xff, itself marked).
func notPlainASCII(w uint64) uint64 {
	return (w | (w + 0x0101010101010101)) & 0x8080808080808080
}

// escapeJSONFrom is escapeJSON of b whose first byte to change is at i.
func escapeJSONFrom(b []byte, i int) []byte {
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case printable.Unprintable(r):
			out = append(out, `\u`...)
			out = append(out, hex4(r)...)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf]})
}

// commandBlank stands for a blank inside a command while a line is wrapped (keepCommands): a
// rune of the Private Use Area, one column wide, that no message carries.
const commandBlank = "\uE002"

// keepCommands joins the words of each command in s ("fieldwork " up to the end, or to the
// first "; ", " (" or ", ") with commandBlank, so that Wrap does not break it.
func keepCommands(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "fieldwork ")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		end := len(s)
		for _, stop := range []string{"; ", " (", ", "} {
			if j := strings.Index(s, stop); j >= 0 && j < end {
				end = j
			}
		}
		b.WriteString(strings.ReplaceAll(s[:end], " ", commandBlank))
		s = s[end:]
	}
}

// isCommandLine says whether a line is a command to run, as a narration shows one ("$
// fieldwork dlq list", "fieldwork replay …", "export FIELDWORK_BROKERS=…").
func isCommandLine(s string) bool {
	for _, p := range []string{"$ ", "fieldwork ", "export ", "kcat "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// WrapCommand breaks a shell command into lines of at most width columns at blanks, each but
// the last ended with " \\" and the next indented by four blanks, so that it is still the same
// command pasted into a shell; never inside quotes. A word longer than a line is left whole.
func WrapCommand(cmd string, width int) []string {
	if width <= 0 || ansi.StringWidth(cmd) <= width {
		return []string{cmd}
	}
	const cont, indent = " \\", "    "
	var lines []string
	line := ""
	for _, word := range shellWords(cmd) {
		switch {
		case line == "" || strings.TrimSpace(line) == "":
			line += word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word)+len(cont) > width:
			lines = append(lines, line+cont)
			line = indent + word
		default:
			line += " " + word
		}
	}
	return append(lines, line)
}

// shellWords splits a command at the blanks outside single and double quotes.
func shellWords(cmd string) []string {
	var words []string
	var quote rune
	start := 0
	for i, r := range cmd {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		case quote == 0 && r == ' ':
			words = append(words, cmd[start:i])
			start = i + 1
		}
	}
	return append(words, cmd[start:])
}
