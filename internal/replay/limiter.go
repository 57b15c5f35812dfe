package replay

import (
	"context"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// limiter caps a rate with a token bucket kept as a virtual schedule (GCRA): each record is
// due one interval after the previous one, and at most burst records may run ahead of the
// schedule. The schedule is absolute, so the error of each sleep does not add up: over any
// long stretch the rate is the cap. The burst is 50ms of records (at least one): enough to
// make up for a late wake-up or a short stall on a busy machine, small enough that a short
// replay does not start with a second's worth at once (2,000 records at 1,000/s run 2% fast
// at most).
type limiter struct {
	interval time.Duration
	slack    time.Duration // how far ahead of schedule a record may run
	next     time.Time     // when the next record is due
}

// newLimiter caps at perSecond records per second; nil (no cap) when perSecond <= 0.
func newLimiter(perSecond float64) *limiter {
	if perSecond <= 0 {
		return nil
	}
	interval := time.Duration(float64(time.Second) / perSecond)
	burst := max(1, int(perSecond/20))
	return &limiter{interval: interval, slack: time.Duration(burst-1) * interval}
}

// wait blocks until one more record may go, or ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	now := time.Now()
	if l.next.IsZero() || l.next.Before(now.Add(-l.slack)) {
		// Idle (or just started): the bucket is full, not more.
		l.next = now.Add(-l.slack)
	}
	due := l.next
	l.next = l.next.Add(l.interval)
	if d := due.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
