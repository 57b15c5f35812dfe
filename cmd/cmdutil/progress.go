package cmdutil

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// Every command's progress line is output.Progress. What follows is kept for replay alone,
// which draws its progress in these shapes, until it calls output.Progress itself: nothing
// else may use it.

// ScanProgress is an output.Progress line for a scan of records, in the shape of the
// callback a scan takes and the function that ends the line (replay's plan).
func ScanProgress(s *output.Streams, label string) (inspect.ProgressFunc, func()) {
	p := output.NewProgress(s, output.ProgressOptions{Label: label})
	return p.Update, p.Stop
}

// progressInterval is how often a ProgressLine is redrawn at most.
const progressInterval = 200 * time.Millisecond

// ProgressLine is one free-form line on stderr, redrawn when told, at most every 200ms, and
// erased at the end; NewProgressLine returns nil off a terminal. It is replay's flow view's
// (see above): output.Progress draws counts, rate and ETA from a ticker instead.
type ProgressLine struct {
	w     io.Writer
	mu    sync.Mutex
	last  time.Time
	shown bool
}

// NewProgressLine returns a progress line on s's stderr, or nil when stderr is not a terminal.
func NewProgressLine(s *output.Streams) *ProgressLine {
	if !s.ErrTTY {
		return nil
	}
	return &ProgressLine{w: s.ErrOut}
}

// Show redraws the line with the formatted text, unless it was drawn less than 200ms ago and
// force is false.
func (l *ProgressLine) Show(force bool, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.last) < progressInterval && !force {
		return
	}
	l.last, l.shown = now, true
	fmt.Fprintf(l.w, "\r\x1b[K"+format, args...)
}

// Clear erases the line if it was ever drawn.
func (l *ProgressLine) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
	}
}
