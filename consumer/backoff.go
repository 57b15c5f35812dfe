package consumer

import (
	"context"
	"time"

	expbackoff "github.com/cenkalti/backoff/v5"
)

// backoff is a capped exponential backoff with jitter (the options RetryBackoff and
// InfraBackoff): the n-th wait of a retry loop (n from 1) is drawn uniformly from [d/2, d]
// where d = min(Max, Initial·2^(n-1)). The jitter spreads the retries of many partitions
// (and many consumers) that failed at the same moment, so a database that comes back is
// not hit by all of them at once.
type backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// retries are the waits of one retry loop, the runner's one backoff: backoff/v5's
// exponential backoff, its interval 3/4 of d, doubling up to 3/4 of Max, and its
// randomization factor 1/3, so that each wait, 3/4·d·(1 ± 1/3), falls in [d/2, d].
type retries struct {
	b expbackoff.ExponentialBackOff
	// n is how many waits were drawn: the retries made, once waited.
	n int
}

// start begins a retry loop.
func (b backoff) start() *retries {
	initial, ceiling := b.Initial, b.Max
	if initial <= 0 {
		initial = 100 * time.Millisecond
	}
	if ceiling < initial {
		ceiling = initial
	}
	r := &retries{b: expbackoff.ExponentialBackOff{
		InitialInterval:     initial * 3 / 4,
		RandomizationFactor: 1.0 / 3,
		Multiplier:          2,
		MaxInterval:         ceiling * 3 / 4,
	}}
	r.b.Reset()
	return r
}

// next draws the next wait.
func (r *retries) next() time.Duration {
	r.n++
	return r.b.NextBackOff()
}

// infraRetry is the one rule of the runner's infrastructure retries (the schema registry,
// the database transaction, producing dead letters), after a failure err of a step that r
// counts the retries of: once MaxInfraRetries retries were made it returns stop(retries),
// the error Run ends with; else it counts the retry (fieldwork_consume_infra_retries_total
// by stage), logs msg with args, the retry's number, its wait and err, and waits, or
// returns ctx.Err() when ctx ends first.
func (e *Runner) infraRetry(ctx context.Context, r *retries, stop func(retries int) error, stage, msg string, err error, args ...any) error {
	if e.o.MaxInfraRetries > 0 && r.n >= e.o.MaxInfraRetries {
		return stop(r.n)
	}
	d := r.next()
	e.c.infraRetries.Add(1)
	e.m.infraRetries.WithLabelValues(stage).Inc()
	e.log.Warn(msg, append(args, "attempt", r.n, "backoff", d.Round(time.Millisecond).String(), "error", err)...)
	return sleep(ctx, d)
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
