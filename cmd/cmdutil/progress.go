package cmdutil

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// progressInterval is how often a progress line is redrawn at most.
const progressInterval = 200 * time.Millisecond

// ProgressLine is one line on stderr kept up to date, at most every 200ms, and erased at the
// end. NewProgressLine returns nil off the terminal: progress is for a person watching, never
// for a log or a pipe.
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

// ScanProgress returns a progress callback for a scan of records, and a function that erases
// its line. Off the terminal the callback is nil and the function does nothing.
func ScanProgress(s *output.Streams, label string) (inspect.ProgressFunc, func()) {
	l := NewProgressLine(s)
	if l == nil {
		return nil, func() {}
	}
	fn := func(done, total int64) {
		pct := int64(100)
		if total > 0 {
			pct = min(100, done*100/total)
		}
		// The last step is always drawn, so that the line ends at 100%.
		l.Show(done == total, "%s: %d of %d records (%d%%)", label, done, total, pct)
	}
	return fn, l.Clear
}

// CountProgress keeps one line on stderr up to date with a running count of deleted markers;
// off a terminal the callback is nil and the function does nothing.
func CountProgress(s *output.Streams, label string, expected int64) (func(n int64), func()) {
	l := NewProgressLine(s)
	if l == nil {
		return nil, func() {}
	}
	return func(n int64) { l.Show(false, "%s: %d of about %d markers deleted", label, n, expected) }, l.Clear
}
