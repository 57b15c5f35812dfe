package output

import (
	"io"
	"strings"

	"github.com/fieldwork/fieldwork/internal/look"
)

// Styles are the few text styles fieldwork uses, look's tones (one palette for the tables and
// the triage console). Without colour they render text unchanged.
type Styles struct {
	Header Style
	Title  Style
	OK     Style
	Warn   Style
	Bad    Style
	Dim    Style

	color bool
	tones map[look.Tone]Style // the styles above by their tone
}

// Style is one text style. With colour, Render wraps text in the style's Select Graphic
// Rendition sequences, written with ownMark in place of ESC: text a style rendered becomes
// colour only where it passes Printable with keepColor (every table, detail view and message
// fieldwork prints does), and a record's own escape sequences inside it are escaped there.
type Style struct {
	on, off string // the marked sequences that start and end the style; "" without colour
}

// Render joins strs with blanks and styles each line of the result.
func (s Style) Render(strs ...string) string {
	t := strings.Join(strs, " ")
	if s.on == "" {
		return t
	}
	lines := strings.Split(t, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = s.on + l + s.off
		}
	}
	return strings.Join(lines, "\n")
}

// Color reports whether the styles colour their text (and so write sequences that Printable
// with keepColor turns into colour).
func (s Styles) Color() bool { return s.color }

// Of is the style of one of look's tones (Plain, and Cursor, which only the console draws,
// leave text unchanged).
func (s Styles) Of(t look.Tone) Style { return s.tones[t] }

// sgrReset ends every style: the reset a table's line keeps at its end (Printer.table).
const sgrReset = "\x1b[0m"

// NewStyles builds the styles of text written to a writer, with colour only when color is
// true (the writer no longer matters: look's styles are the same for every one).
func NewStyles(_ io.Writer, color bool) Styles {
	style := func(t look.Tone) Style {
		if !color {
			return Style{}
		}
		// The sequence lipgloss writes before one character is the tone's; it spells the reset
		// after it ESC[m, the tables ESC[0m (the same reset).
		on, _, ok := strings.Cut(t.Style().Render("x"), "x")
		if !ok || on == "" {
			return Style{}
		}
		return Style{on: strings.ReplaceAll(on, "\x1b", ownMark), off: strings.ReplaceAll(sgrReset, "\x1b", ownMark)}
	}
	st := Styles{color: color, tones: map[look.Tone]Style{}}
	for t, f := range map[look.Tone]*Style{look.Header: &st.Header, look.Title: &st.Title, look.OK: &st.OK, look.Warn: &st.Warn, look.Bad: &st.Bad, look.Dim: &st.Dim} {
		*f = style(t)
		st.tones[t] = *f
	}
	return st
}
