package consumer

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is a capped exponential backoff with jitter: the n-th wait (n from 1) is drawn
// uniformly from [d/2, d] where d = min(Max, Initial·2^(n-1)). The jitter spreads the retries
// of many partitions (and many consumers) that failed at the same moment, so a database that
// comes back is not hit by all of them at once.
type backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// Delay returns the wait before retry n (n ≥ 1).
func (b backoff) Delay(n int) time.Duration {
	initial, ceiling := b.Initial, b.Max
	if initial <= 0 {
		initial = 100 * time.Millisecond
	}
	if ceiling < initial {
		ceiling = initial
	}
	d := initial
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// sleep waits d or until ctx is done, and returns ctx.Err() in the latter case.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
