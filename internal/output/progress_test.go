package output

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// fakeClock is a Clock whose time moves, and whose one ticker ticks, only when a test says.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	interval time.Duration
	tickers  int
	ch       chan time.Time
	stopped  bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), ch: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interval = d
	c.tickers++
	return c.ch, func() {
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
	}
}

// progressRig is a Progress on a terminal stderr with a fake clock; tick moves the clock,
// ticks, and returns once the line has been drawn.
type progressRig struct {
	t      *testing.T
	s      *Streams
	errOut *bytes.Buffer
	clock  *fakeClock
	drawn  chan struct{}
	p      *Progress
}

func newProgressRig(t *testing.T, opts ProgressOptions) *progressRig {
	t.Helper()
	s, _, _, errOut := Test()
	s.ErrTTY = true
	r := &progressRig{t: t, s: s, errOut: errOut, clock: newFakeClock(), drawn: make(chan struct{})}
	opts.Clock = r.clock
	opts.afterDraw = func() { r.drawn <- struct{}{} }
	r.p = NewProgress(s, opts)
	t.Cleanup(r.p.Stop)
	return r
}

// tick advances the clock by d, delivers one tick and waits for its draw (bounded: a draw
// that never comes fails the test instead of hanging it).
func (r *progressRig) tick(d time.Duration) string {
	r.t.Helper()
	r.clock.mu.Lock()
	r.clock.now = r.clock.now.Add(d)
	now := r.clock.now
	r.clock.mu.Unlock()
	select {
	case r.clock.ch <- now:
	case <-time.After(time.Minute):
		r.t.Fatal("the progress did not take its tick")
	}
	select {
	case <-r.drawn:
	case <-time.After(time.Minute):
		r.t.Fatal("the progress did not draw on its tick")
	}
	return r.line()
}

// line is what the terminal shows now: what follows the last erase.
func (r *progressRig) line() string {
	out := r.errOut.String()
	if i := strings.LastIndex(out, "\r\x1b[K"); i >= 0 {
		return out[i+len("\r\x1b[K"):]
	}
	return out
}

func TestProgressLine(t *testing.T) {
	type step struct {
		after  time.Duration
		do     func(p *Progress)
		expect string
	}
	cases := []struct {
		name  string
		opts  ProgressOptions
		steps []step
	}{{
		name: "known total",
		opts: ProgressOptions{Label: "scanning tasks.dlq", Total: 5000},
		steps: []step{
			{time.Second, func(p *Progress) { p.Add(1000) }, "scanning tasks.dlq: 1000 of 5000 records (20%), 1000 records/s, ETA 4s"},
			{time.Second, func(p *Progress) { p.Add(500) }, "scanning tasks.dlq: 1500 of 5000 records (30%), 750 records/s, ETA 5s"},
			{3 * time.Second, func(p *Progress) { p.Set(5000) }, "scanning tasks.dlq: 5000 of 5000 records (100%), 1000 records/s"},
		},
	}, {
		name: "unknown total",
		opts: ProgressOptions{Label: "checking tasks for billing"},
		steps: []step{
			{0, nil, "checking tasks for billing: 0 records"},
			{2 * time.Second, func(p *Progress) { p.Add(30) }, "checking tasks for billing: 30 records, 15 records/s, 2s elapsed"},
			{70 * time.Second, nil, "checking tasks for billing: 30 records, 0.0 records/s, 1m12s elapsed"},
		},
	}, {
		name: "estimate, unit",
		opts: ProgressOptions{Label: "pruning", Unit: "markers", Total: 40000, Estimate: true},
		steps: []step{
			{2 * time.Second, func(p *Progress) { p.Set(10000) }, "pruning: 10000 of about 40000 markers (25%), 5000 markers/s, ETA 6s"},
			{2 * time.Second, func(p *Progress) { p.Set(45000) }, "pruning: 45000 of about 40000 markers (100%), 11250 markers/s"},
		},
	}, {
		name: "note, total set later, slow",
		opts: ProgressOptions{Label: "replaying"},
		steps: []step{
			{time.Second, func(p *Progress) { p.Update(2, 500); p.SetNote("3 quarantined, 1 skipped") }, "replaying: 2 of 500 records (0%), 3 quarantined, 1 skipped, 2.0 records/s, ETA 4m09s"},
			{time.Hour, func(p *Progress) { p.SetTotal(1_000_000) }, "replaying: 2 of 1000000 records (0%), 3 quarantined, 1 skipped, 0.0 records/s, 1h00m elapsed"},
		},
	}, {
		name:  "no label",
		opts:  ProgressOptions{Total: 10},
		steps: []step{{time.Second, func(p *Progress) { p.Add(4) }, "4 of 10 records (40%), 4.0 records/s, ETA 2s"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newProgressRig(t, c.opts)
			for i, s := range c.steps {
				if s.do != nil {
					s.do(r.p)
				}
				if got := r.tick(s.after); got != s.expect {
					t.Errorf("step %d:\n got %q\nwant %q", i, got, s.expect)
				}
			}
		})
	}
}

// TestProgressRedrawsWithoutCounts is the slow replay: no count comes for a long time, and
// every tick still redraws the line, with the time it has been running.
func TestProgressRedrawsWithoutCounts(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "replaying", Total: 100})
	var lines []string
	for range 3 {
		lines = append(lines, r.tick(500*time.Millisecond))
	}
	want := []string{
		"replaying: 0 of 100 records (0%), 0.0 records/s, 1s elapsed",
		"replaying: 0 of 100 records (0%), 0.0 records/s, 1s elapsed",
		"replaying: 0 of 100 records (0%), 0.0 records/s, 2s elapsed",
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("tick %d: %q, want %q", i, lines[i], want[i])
		}
	}
	if n := strings.Count(r.errOut.String(), "\r\x1b[K"); n != 3 {
		t.Errorf("%d draws for 3 ticks", n)
	}
}

// TestProgressRateWindow checks that the rate is the last ten seconds', not the run's.
func TestProgressRateWindow(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "x"})
	for range 10 { // 10 s at 100/s
		r.p.Add(100)
		r.tick(time.Second)
	}
	var got string
	for range 10 { // then 10 s at 10/s
		r.p.Add(10)
		got = r.tick(time.Second)
	}
	if !strings.Contains(got, ", 10 records/s") {
		t.Errorf("rate after the change of pace: %q", got)
	}
}

func TestProgressStop(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "scanning"})
	r.p.Add(5)
	r.tick(time.Second)
	r.p.Stop()
	out := r.errOut.String()
	if !strings.HasSuffix(out, "\r\x1b[K") || r.line() != "" {
		t.Fatalf("Stop left the line: %q", out)
	}
	r.clock.mu.Lock()
	stopped := r.clock.stopped
	r.clock.mu.Unlock()
	if !stopped {
		t.Fatal("Stop left the ticker running")
	}
	r.p.Stop()
	r.p.Clear()
	r.p.Add(1)
	if r.errOut.String() != out {
		t.Fatalf("wrote after Stop: %q", strings.TrimPrefix(r.errOut.String(), out))
	}
}

func TestProgressStopBeforeAnyTick(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "scanning"})
	r.p.Stop()
	if r.errOut.Len() != 0 {
		t.Fatalf("a progress never drawn wrote %q", r.errOut)
	}
}

func TestProgressClear(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "scanning"})
	r.tick(time.Second)
	r.p.Clear()
	if r.line() != "" {
		t.Fatalf("Clear left %q", r.line())
	}
	n := r.errOut.Len()
	r.p.Clear() // nothing shown: nothing to erase
	if r.errOut.Len() != n {
		t.Fatal("a second Clear wrote")
	}
	if got := r.tick(time.Second); !strings.HasPrefix(got, "scanning: 0 records") {
		t.Fatalf("not drawn again after Clear: %q", got)
	}
}

// TestProgressOffTerminal checks that off a terminal nothing is started and nothing written.
func TestProgressOffTerminal(t *testing.T) {
	s, _, _, errOut := Test()
	clock := newFakeClock()
	p := NewProgress(s, ProgressOptions{Label: "scanning", Total: 10, Clock: clock})
	p.Add(3)
	p.Update(4, 10)
	p.Set(5)
	p.SetTotal(20)
	p.SetNote("x")
	p.Clear()
	p.Stop()
	p.Stop()
	if errOut.Len() != 0 || clock.tickers != 0 {
		t.Fatalf("off a terminal: wrote %q, started %d tickers", errOut, clock.tickers)
	}
	var nilP *Progress
	nilP.Add(1)
	nilP.Update(1, 2)
	nilP.SetNote("x")
	nilP.Clear()
	nilP.Stop()
}

func TestProgressInterval(t *testing.T) {
	for _, c := range []struct{ ask, want time.Duration }{
		{0, DefaultProgressInterval},
		{100 * time.Millisecond, 100 * time.Millisecond},
		{5 * time.Second, MaxProgressInterval},
	} {
		r := newProgressRig(t, ProgressOptions{Interval: c.ask})
		if r.clock.interval != c.want {
			t.Errorf("Interval %v: ticker every %v, want %v", c.ask, r.clock.interval, c.want)
		}
	}
}

// TestProgressConcurrentAdd adds from several goroutines while the ticker draws.
func TestProgressConcurrentAdd(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "x", Total: 8000})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				r.p.Add(1)
			}
		})
	}
	for range 5 {
		r.tick(time.Millisecond)
	}
	wg.Wait()
	if got := r.tick(time.Second); !strings.HasPrefix(got, "x: 8000 of 8000 records (100%)") {
		t.Fatalf("after 8×1000 Adds: %q", got)
	}
}

func TestCompactDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                 "1s",
		300 * time.Millisecond:            "1s",
		42 * time.Second:                  "42s",
		59*time.Second + time.Millisecond: "1m00s",
		3*time.Minute + 5*time.Second:     "3m05s",
		2*time.Hour + 7*time.Minute:       "2h07m",
		50 * time.Hour:                    "50h00m",
	} {
		if got := compactDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

// TestProgressFitsTheTerminal: the line is never wider than the terminal less one column, so
// that a redraw never wraps: the rate goes first, then the time, then the note's parts from
// the last; a label too wide alone is cut with the ellipsis.
func TestProgressFitsTheTerminal(t *testing.T) {
	cases := []struct {
		width int
		want  string
	}{
		{0, "replaying: 10219 sent, 0 quarantined, 0 skipped, read 10%, 5110 sent/s, 2s elapsed"},
		{80, "replaying: 10219 sent, 0 quarantined, 0 skipped, read 10%, 2s elapsed"},
		{60, "replaying: 10219 sent, 0 quarantined, 0 skipped, read 10%"},
		{40, "replaying: 10219 sent, 0 quarantined"},
		{16, "replaying: 102…"},
	}
	for _, c := range cases {
		r := newProgressRig(t, ProgressOptions{Label: "replaying", Unit: "sent"})
		r.s.ErrWidth = c.width
		r.p.Set(10219)
		r.p.SetNote("0 quarantined, 0 skipped, read 10%")
		got := r.tick(2 * time.Second)
		if got != c.want {
			t.Errorf("%d columns:\n got %q\nwant %q", c.width, got, c.want)
		}
		if c.width > 0 && ansi.StringWidth(got) > c.width-1 {
			t.Errorf("%d columns: the line is %d wide", c.width, ansi.StringWidth(got))
		}
	}
}
