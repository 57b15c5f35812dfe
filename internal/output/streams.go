// Package output renders what commands return: tables on a terminal, JSON, JSON Lines or CSV
// for scripts. Data goes to Out; progress, warnings and logs go to ErrOut. Nothing here knows
// about Kafka or the dedup store.
package output

import (
	"bytes"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-isatty"
)

// Streams are the process's standard streams and what is known about them.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	InTTY  bool
	OutTTY bool
	ErrTTY bool

	// NoColor is set when the NO_COLOR environment variable is present (any value).
	NoColor bool

	// Width is the terminal's width in columns when stdout is one (tables are fitted to it,
	// Printer.TableWidth), 0 otherwise: unlimited.
	Width int
	// ErrWidth is the same for stderr: prompts are fitted to it.
	ErrWidth int
}

// System returns the process's streams.
func System() *Streams {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &Streams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		InTTY:    isTerminal(os.Stdin),
		OutTTY:   isTerminal(os.Stdout),
		ErrTTY:   isTerminal(os.Stderr),
		NoColor:  noColor,
		Width:    terminalWidth(os.Stdout),
		ErrWidth: terminalWidth(os.Stderr),
	}
}

// terminalWidth is f's width in columns when it is a terminal that knows its size, else 0.
func terminalWidth(f *os.File) int {
	if !isTerminal(f) {
		return 0
	}
	w, _, err := term.GetSize(f.Fd())
	if err != nil || w <= 0 {
		return 0
	}
	return w
}

// Test returns streams backed by buffers, all non-terminal, for tests.
func Test() (s *Streams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &Streams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// ColorEnabled reports whether stdout may carry colour: only on a terminal, never with NO_COLOR.
func (s *Streams) ColorEnabled() bool { return s.OutTTY && !s.NoColor }

// ErrColor reports whether stderr may carry colour: only on a terminal, never with NO_COLOR.
func (s *Streams) ErrColor() bool { return s.ErrTTY && !s.NoColor }

// ErrStyles are the styles of messages written to stderr.
func (s *Streams) ErrStyles() Styles { return NewStyles(s.ErrOut, s.ErrColor()) }

// ErrText is stderr for messages that carry data (errors, warnings, notes naming topics or
// records): a TextWriter, so that nothing in them acts on the terminal. On a terminal each
// line of a message is wrapped to its width (at blanks, under its own indentation): a
// message never runs past the right margin.
func (s *Streams) ErrText() io.Writer {
	if s.ErrTTY && s.ErrWidth > 0 {
		return textWriter{w: s.ErrOut, color: s.ErrColor(), width: s.ErrWidth}
	}
	return TextWriter(s.ErrOut, s.ErrColor())
}

// Interactive reports whether a person can answer a prompt: stdin and stderr are terminals.
func (s *Streams) Interactive() bool { return s.InTTY && s.ErrTTY }

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
