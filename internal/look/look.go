// Package look is how fieldwork shows text on a terminal, declared once for the command
// tables (internal/output, through cmd) and the triage console (internal/tui): the tones text
// is shown in with their one palette, and the symbols for a value that is absent, a cell cut to
// fit, the cursor's row and a marked row. It imports lipgloss and nothing of fieldwork, so
// that the output layer and domain packages alike may use it; how a dead letter's status
// looks is in look/status.
//
// A tone's colours are the 16 basic ANSI colours (the bright half), which every colour
// terminal has and each user's theme tunes; with NO_COLOR neither the tables nor the console
// draw any of them.
package look

import "charm.land/lipgloss/v2"

// Tone is the emphasis a text is shown with.
type Tone int

const (
	// Plain is text as it is.
	Plain Tone = iota
	// Header is a table's column titles: bold.
	Header
	// Title is a section's or a screen's title: bold bright blue.
	Title
	// OK is what went well or is settled: bright green.
	OK
	// Warn is what needs the operator's attention: bright yellow.
	Warn
	// Bad is what failed: bold bright red.
	Bad
	// Dim is what matters less (hints, a filter's note): faint.
	Dim
	// Cursor is the row the console's cursor is on: reversed.
	Cursor
)

// Style is the tone's lipgloss style (the zero style for Plain).
func (t Tone) Style() lipgloss.Style {
	s := lipgloss.NewStyle()
	switch t {
	case Header:
		return s.Bold(true)
	case Title:
		return s.Bold(true).Foreground(lipgloss.BrightBlue)
	case OK:
		return s.Foreground(lipgloss.BrightGreen)
	case Warn:
		return s.Foreground(lipgloss.BrightYellow)
	case Bad:
		return s.Bold(true).Foreground(lipgloss.BrightRed)
	case Dim:
		return s.Faint(true)
	case Cursor:
		return s.Reverse(true)
	}
	return s
}

// The symbols every view uses.
const (
	// Absent stands for a value that is not there (no event id, a status not looked up).
	Absent = "-"
	// Ellipsis ends a text cut to fit.
	Ellipsis = "…"
	// CursorMark starts the console's cursor row, so that it shows without colour too.
	CursorMark = "› "
	// MarkedMark starts a row the operator marked (for a replay of the set).
	MarkedMark = "* "
)

// OrAbsent is s, or Absent when s is empty.
func OrAbsent(s string) string {
	if s == "" {
		return Absent
	}
	return s
}
