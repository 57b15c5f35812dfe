package output

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles are the few text styles fieldwork uses. Without colour they render text unchanged.
type Styles struct {
	Header lipgloss.Style
	Title  lipgloss.Style
	OK     lipgloss.Style
	Warn   lipgloss.Style
	Bad    lipgloss.Style
	Dim    lipgloss.Style

	color bool
}

// Color reports whether the styles colour their text (and so write SGR sequences that
// Printable keeps).
func (s Styles) Color() bool { return s.color }

// NewStyles builds styles that write to w, with colour only when color is true.
func NewStyles(w io.Writer, color bool) Styles {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return Styles{
		Header: r.NewStyle().Bold(true),
		Title:  r.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		OK:     r.NewStyle().Foreground(lipgloss.Color("10")),
		Warn:   r.NewStyle().Foreground(lipgloss.Color("11")),
		Bad:    r.NewStyle().Bold(true).Foreground(lipgloss.Color("9")),
		Dim:    r.NewStyle().Faint(true),
		color:  color,
	}
}
