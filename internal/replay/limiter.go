package replay

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// limiter caps --rate with a token bucket (golang.org/x/time/rate): each record takes a token,
// tokens come back at the rate, and the bucket holds burst of them. The bucket's schedule is
// absolute, so the error of each sleep does not add up: over any long stretch the rate is the
// cap. The burst is 50ms of records (at least one): enough to make up for a late wake-up or a
// short stall on a busy machine, small enough that a short replay does not start with a
// second's worth at once (2,000 records at 1,000/s run 2% fast at most).
type limiter struct{ bucket *rate.Limiter }

// newLimiter caps at perSecond records per second; nil (no cap) when perSecond <= 0.
func newLimiter(perSecond float64) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{bucket: rate.NewLimiter(rate.Limit(perSecond), burst(perSecond))}
}

// burst is the bucket's size at perSecond: 50ms of records, at least one.
func burst(perSecond float64) int { return max(1, int(perSecond/20)) }

// setRate changes the cap to perSecond (above 0) records per second, as newLimiter would
// set it; it may be called while another goroutine waits.
func (l *limiter) setRate(perSecond float64) {
	l.bucket.SetLimit(rate.Limit(perSecond))
	l.bucket.SetBurst(burst(perSecond))
}

// wait blocks until one more record may go, or ctx ends (an interruption). Unlike
// rate.Limiter.Wait it does not give up early when ctx has a deadline the wait would pass: the
// record waits until then, as a replay cancelled at that deadline expects.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	r := l.bucket.Reserve() // always OK: the burst is at least one token
	d := r.Delay()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		r.Cancel() // the record did not go: its token is not spent
		return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
	case <-t.C:
		return nil
	}
}
