package cmd

import (
	"fmt"
	"sync"
	"time"

	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// scanProgress returns a progress callback that keeps one line on stderr up to date, at most
// every 200ms, and a function that erases it. Off the terminal both do nothing: progress is
// for a person watching, never for a log or a pipe.
func scanProgress(s *output.Streams, label string) (inspect.ProgressFunc, func()) {
	if !s.ErrTTY {
		return nil, func() {}
	}
	var (
		mu    sync.Mutex
		last  time.Time
		shown bool
	)
	fn := func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if now.Sub(last) < 200*time.Millisecond && done != total {
			return
		}
		last, shown = now, true
		pct := int64(100)
		if total > 0 {
			pct = min(100, done*100/total)
		}
		fmt.Fprintf(s.ErrOut, "\r\x1b[K%s: %d of %d records (%d%%)", label, done, total, pct)
	}
	clear := func() {
		mu.Lock()
		defer mu.Unlock()
		if shown {
			fmt.Fprint(s.ErrOut, "\r\x1b[K")
		}
	}
	return fn, clear
}
