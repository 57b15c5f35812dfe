package output

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles are the few text styles fieldwork uses. Without colour they render text unchanged.
type Styles struct {
	Header Style
	Title  Style
	OK     Style
	Warn   Style
	Bad    Style
	Dim    Style

	color bool
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

// NewStyles builds styles that write to w, with colour only when color is true.
func NewStyles(w io.Writer, color bool) Styles {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	style := func(ls lipgloss.Style) Style {
		if !color {
			return Style{}
		}
		// The sequences lipgloss writes around one character are the style's.
		on, off, ok := strings.Cut(ls.Render("x"), "x")
		if !ok {
			return Style{}
		}
		return Style{on: strings.ReplaceAll(on, "\x1b", ownMark), off: strings.ReplaceAll(off, "\x1b", ownMark)}
	}
	return Styles{
		Header: style(r.NewStyle().Bold(true)),
		Title:  style(r.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))),
		OK:     style(r.NewStyle().Foreground(lipgloss.Color("10"))),
		Warn:   style(r.NewStyle().Foreground(lipgloss.Color("11"))),
		Bad:    style(r.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))),
		Dim:    style(r.NewStyle().Faint(true)),
		color:  color,
	}
}
