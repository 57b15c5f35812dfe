package output

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/fieldwork/fieldwork/internal/printable"
)

// Progress is the one progress line of a long command (a scan, a replay, a prune), on stderr:
//
//	scanning tasks.dlq: 1200 of 5000 records (24%), 850 records/s, ETA 4s
//	replaying: 120 of 500 records (24%), 3 quarantined, 1 skipped, 2.0 records/s, ETA 3m10s
//	checking tasks for billing: 1200 records, 850 records/s, 1m12s elapsed
//
// It is drawn only when stderr is a terminal (Streams.ErrTTY), for a person watching; on a
// pipe or in a log it writes nothing at all, ever. It is redrawn by a ticker, every Interval,
// whatever the rate of the counts: a replay at --rate 2 shows its line, its rate and the time
// it has run from the first tick, not after the first few hundred records. The counts are
// atomics, so Add, Set and Update cost a few nanoseconds and may be called for every record
// and from several goroutines; the work of formatting and writing is the ticker's.
//
// The rate is that of the last ten seconds (RateWindow), so that it follows a change of pace
// (a throttle, a slow partition) instead of averaging the whole run; the ETA is the rest of
// the total at that rate. Both are left out until the rate is known, and the ETA when the
// total is not.
//
// The callbacks of the domain packages take it directly: Update is a func(done, total
// int64), which is inspect.ProgressFunc, replay.ProgressFunc and dlq.ScanOptions.Progress;
// Set is the func(n int64) of dedup.Store.Prune.
//
// The line always fits the terminal (the width stderr has at each redraw, one column spared):
// a line that wrapped would be redrawn below itself at every tick. When it is too wide, the
// figures least needed go first (the rate, then the ETA or the time elapsed, then the note's
// parts from its last), and a label and counts still too wide are cut with the ellipsis.
//
// A nil *Progress is valid and does nothing.
type Progress struct {
	s     *Streams // nil when nothing is drawn
	opts  ProgressOptions
	done  atomic.Int64
	total atomic.Int64

	mu      sync.Mutex // the note, the samples and every write to stderr
	note    string
	shown   bool
	start   time.Time
	samples []progressSample

	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// ProgressOptions describe a Progress. The zero value (besides a Label) is fine.
type ProgressOptions struct {
	// Label is what the command does, first on the line ("scanning tasks.dlq").
	Label string
	// Unit names what is counted, in the plural (default "records").
	Unit string
	// Total is how many there are to do; 0 when it is not known (no percentage, no ETA). It
	// can be set later with SetTotal or Update.
	Total int64
	// Estimate says that Total is an estimate ("of about 5000").
	Estimate bool
	// Interval is the time between two redraws: DefaultProgressInterval when 0, and never
	// more than MaxProgressInterval.
	Interval time.Duration
	// Clock is the time source (SystemClock when nil); tests pass a fake one.
	Clock Clock

	afterDraw func() // tests: called after each tick's draw
}

const (
	// DefaultProgressInterval is how often a progress line is redrawn: often enough to look
	// alive, seldom enough to cost nothing.
	DefaultProgressInterval = 200 * time.Millisecond
	// MaxProgressInterval is the longest a line goes without a redraw.
	MaxProgressInterval = 500 * time.Millisecond
	// RateWindow is the span the rate is measured over.
	RateWindow = 10 * time.Second
)

type progressSample struct {
	at   time.Time
	done int64
}

// NewProgress starts a progress line on s's stderr, redrawn from the first tick on. Off a
// terminal it returns a Progress that counts and draws nothing. Stop it when the work ends
// (defer p.Stop() is fine: Stop is idempotent).
func NewProgress(s *Streams, opts ProgressOptions) *Progress {
	if s == nil || !s.ErrTTY {
		return &Progress{}
	}
	if opts.Unit == "" {
		opts.Unit = "records"
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultProgressInterval
	}
	opts.Interval = min(opts.Interval, MaxProgressInterval)
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	p := &Progress{s: s, opts: opts, stop: make(chan struct{}), stopped: make(chan struct{})}
	p.total.Store(opts.Total)
	p.start = opts.Clock.Now()
	p.samples = []progressSample{{at: p.start}}
	tick, stopTicker := opts.Clock.NewTicker(opts.Interval)
	go p.run(tick, stopTicker)
	return p
}

func (p *Progress) run(tick <-chan time.Time, stopTicker func()) {
	defer close(p.stopped)
	defer stopTicker()
	for {
		select {
		case <-p.stop:
			return
		case <-tick:
			p.draw()
			if p.opts.afterDraw != nil {
				p.opts.afterDraw()
			}
		}
	}
}

// active reports whether p draws anything.
func (p *Progress) active() bool { return p != nil && p.s != nil }

// Add counts n more done.
func (p *Progress) Add(n int64) {
	if p.active() {
		p.done.Add(n)
	}
}

// Set says how many are done in all.
func (p *Progress) Set(done int64) {
	if p.active() {
		p.done.Store(done)
	}
}

// SetTotal says how many there are to do (0: not known).
func (p *Progress) SetTotal(total int64) {
	if p.active() {
		p.total.Store(total)
	}
}

// Update says how many are done of how many: the shape of the scans' progress callbacks.
func (p *Progress) Update(done, total int64) {
	if p.active() {
		p.done.Store(done)
		p.total.Store(total)
	}
}

// SetNote sets what the line says after the counts ("3 quarantined, 1 skipped").
func (p *Progress) SetNote(note string) {
	if !p.active() {
		return
	}
	p.mu.Lock()
	p.note = note
	p.mu.Unlock()
}

// Clear erases the line now, before something else is written to the terminal; the next
// tick draws it again, below what was written.
func (p *Progress) Clear() {
	if !p.active() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
}

// Stop stops the ticker, waits until it has stopped and erases the line: after Stop returns,
// nothing more is written to stderr. Calling it again does nothing.
func (p *Progress) Stop() {
	if !p.active() {
		return
	}
	p.once.Do(func() {
		close(p.stop)
		<-p.stopped
		p.Clear()
	})
}

func (p *Progress) erase() {
	if p.shown {
		fmt.Fprint(p.s.ErrOut, "\r\x1b[K")
		p.shown = false
	}
}

func (p *Progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := p.line(p.opts.Clock.Now(), p.width())
	fmt.Fprint(p.s.ErrOut, "\r\x1b[K"+line)
	p.shown = true
}

// width is the room of the line: the terminal's width now (it may have been resized since the
// streams were made), less one column, so that the cursor never waits at the right margin;
// 0 when it is not known.
func (p *Progress) width() int {
	w := p.s.ErrWidth
	if f, ok := p.s.ErrOut.(*os.File); ok {
		if now := terminalWidth(f); now > 0 {
			w = now
		}
	}
	return max(w-1, 0)
}

// line formats the line at now, fitted to width columns (0: any), and takes a rate sample;
// p.mu is held.
func (p *Progress) line(now time.Time, width int) string {
	done, total := p.done.Load(), p.total.Load()
	p.samples = append(p.samples, progressSample{at: now, done: done})
	for len(p.samples) > 2 && !p.samples[1].at.After(now.Add(-RateWindow)) {
		p.samples = p.samples[1:]
	}
	first := p.samples[0]

	var head string
	if p.opts.Label != "" {
		head = printable.Escape(p.opts.Label) + ": "
	}
	if total > 0 {
		about := ""
		if p.opts.Estimate {
			about = "about "
		}
		head += fmt.Sprintf("%d of %s%d %s (%d%%)", done, about, total, p.opts.Unit, min(100, done*100/total))
	} else {
		head += fmt.Sprintf("%d %s", done, p.opts.Unit)
	}
	var note []string
	if p.note != "" {
		note = strings.Split(printable.Escape(p.note), ", ")
	}
	var rate, tail string
	if span := now.Sub(first.at); span > 0 {
		r := float64(done-first.done) / span.Seconds()
		if r < 10 {
			rate = fmt.Sprintf("%.1f %s/s", r, p.opts.Unit)
		} else {
			rate = fmt.Sprintf("%.0f %s/s", r, p.opts.Unit)
		}
		if total > 0 && done < total && r > 0 {
			tail = "ETA " + compactDuration(time.Duration(float64(total-done)/r*float64(time.Second)))
		} else if done < total || total <= 0 {
			tail = compactDuration(now.Sub(p.start)) + " elapsed"
		}
	}
	return fitProgress(width, head, note, rate, tail)
}

// fitProgress joins a progress line, ", " between its parts: head, the note's parts, the rate
// and the tail (ETA or time elapsed); "" parts are left out. While it is wider than width
// (0: any), it leaves out the rate, then the tail, then the note's parts from the last; a
// head still too wide is cut with the ellipsis.
func fitProgress(width int, head string, note []string, rate, tail string) string {
	join := func() string {
		parts := append([]string{head}, note...)
		for _, s := range []string{rate, tail} {
			if s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	}
	line := join()
	for width > 0 && ansi.StringWidth(line) > width {
		switch {
		case rate != "":
			rate = ""
		case tail != "":
			tail = ""
		case len(note) > 0:
			note = note[:len(note)-1]
		default:
			return Truncate(line, width)
		}
		line = join()
	}
	return line
}

// compactDuration writes d in whole seconds the short way: 42s, 3m05s, 2h07m (at least 1s).
func compactDuration(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	s = max(s, 1)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}
