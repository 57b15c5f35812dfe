package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
)

// Middleware wraps a Handler in another: the runner calls the outermost one for each fresh
// event, and each step decides whether, when and how often to call the next. The option
// Chain sets the chain, applied outermost first; DefaultMiddleware is the chain the
// runner uses without it.
//
// A middleware of a team's own sees the message's Event, Record and Attempt. What it
// returns is what the steps outside it see: an error it swallows is a success to them (and
// the event stays marked, its effects written), an error it returns goes on up the chain.
type Middleware func(next Handler) Handler

// DefaultMiddleware is the chain the runner uses unless the option Chain replaces it,
// outermost first:
//
//   - DeadLetter: settles what the steps inside it give up on (a Permanent, Unsupported or
//     exhausted error) as a dead letter, so that nothing it lets through stalls the partition;
//     it is outermost so that every failure reaches it, retries done;
//   - Retry: calls the chain inside it again after a Retryable (or unmarked) error, up to
//     MaxAttempts attempts, each after a backoff; outside Metrics so that every attempt is
//     counted and timed;
//   - Metrics: counts each attempt's error by class (fieldwork_consume_handler_errors_total)
//     and times each call of the handler (fieldwork_consume_handler_duration_seconds);
//   - Recover: innermost, so that a panic of the handler becomes a Permanent error that
//     every step above sees as any other failure.
//
// A team adds its own steps where they belong — Timeout between Retry and Metrics bounds
// each attempt, Trace outermost spans the whole event — or drops one: without Retry every
// failure is final at once; without DeadLetter an event the handler rejects is retried as
// an infrastructure failure is (the whole batch, with InfraBackoff, up to MaxInfraRetries),
// and the log says that the handler chain has no dead-letter step.
func DefaultMiddleware() []Middleware {
	return []Middleware{DeadLetter(), Retry(), Metrics(), Recover()}
}

// Chain replaces the runner's handler chain (default: DefaultMiddleware()), applied
// outermost first. To add a step to the default chain, build the list from
// DefaultMiddleware(). Chain() with no step calls the handler bare: every failure leaves
// the chain, and is retried as an infrastructure failure is.
func Chain(mw ...Middleware) Opt {
	return optFunc(func(c *config) { c.Middleware, c.MiddlewareSet = mw, true })
}

// chain is h wrapped in mw, outermost first.
func chain(h Handler, mw []Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			h = mw[i](h)
		}
	}
	return h
}

// Recover turns a panic of the steps inside it into a Permanent error: the event is
// dead-lettered (reason rejected) instead of the process crashing.
func Recover() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (out Outcome, err error) {
			defer func() {
				if p := recover(); p != nil {
					out, err = 0, Permanent(fmt.Errorf("handler %s panicked: %v", m.handlerName(), p))
				}
			}()
			return next.Handle(ctx, tx, m)
		})
	}
}

// Retry calls the steps inside it again after a Retryable or unmarked error (one that is
// not infrastructure: inbox.IsTransient): it rolls back what the failed attempt wrote (to
// the event's savepoint), waits a backoff (the option RetryBackoff), and calls again with
// Attempt one more, up to MaxAttempts attempts in all. The last attempt's error goes up
// marked exhausted (DeadLetter dead-letters it with reason exhausted). Permanent,
// Unsupported and infrastructure errors go up at once.
func Retry() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
			for {
				out, err := next.Handle(ctx, tx, m)
				if err == nil || m.ev == nil || ctx.Err() != nil || classify(err) != classRetryable {
					return out, err
				}
				if m.Attempt >= m.ev.e.o.MaxAttempts {
					return 0, &exhaustedError{err}
				}
				if err := m.ev.retry(ctx, err); err != nil {
					return 0, err
				}
			}
		})
	}
}

// DeadLetter settles the errors of the steps inside it that retrying will not cure — a
// Permanent, an Unsupported or an exhausted error, and a Retryable or unmarked one that no
// Retry step retried — as a dead letter: it rolls back what the event wrote (to its
// savepoint), removes its marker in the transaction, queues the dead letter (written after
// the transaction commits, with fieldwork's headers: reason rejected, unsupported or
// exhausted) and returns nil, the event settled. Infrastructure errors go up, for the batch
// to be retried.
func DeadLetter() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
			out, err := next.Handle(ctx, tx, m)
			if err == nil || m.ev == nil || ctx.Err() != nil || classify(err) == classInfra {
				return out, err
			}
			if err := m.ev.deadLetter(ctx, err); err != nil {
				return 0, err
			}
			return 0, nil
		})
	}
}

// Timeout bounds each call of the steps inside it to d: their context is cancelled after d,
// and an attempt that fails after its deadline passed fails Retryable (unless the handler
// marked its error itself), so that Retry tries it again and DeadLetter dead-letters it as
// exhausted in the end. d ≤ 0 bounds nothing. A handler's work in tx must honour the
// context; on PostgreSQL a statement cancelled mid-way makes the transaction unusable, and
// the whole batch is then retried as after any database failure.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		if d <= 0 {
			return next
		}
		return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
			actx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			out, err := next.Handle(actx, tx, m)
			if err != nil && ctx.Err() == nil && actx.Err() != nil {
				if _, marked := explicitClass(err); !marked {
					err = Retryable(fmt.Errorf("handler attempt timed out after %s: %w", d, err))
				}
			}
			return out, err
		})
	}
}

// Metrics counts the errors of each call of the steps inside it by class (retryable,
// permanent, unsupported, infra: fieldwork_consume_handler_errors_total) and times each
// call that runs the handler (fieldwork_consume_handler_duration_seconds), in the runner's
// Registerer.
func Metrics() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
			if m.ev == nil {
				return next.Handle(ctx, tx, m)
			}
			start := time.Now()
			out, err := next.Handle(ctx, tx, m)
			mt := m.ev.e.m
			if !m.ev.given {
				mt.handlerSeconds.Observe(time.Since(start).Seconds())
			}
			if err != nil && ctx.Err() == nil {
				mt.handlerErrors.WithLabelValues(classify(err).label()).Inc()
			}
			return out, err
		})
	}
}

// Trace calls start before the steps inside it, with the message, and passes on the context
// it returns (a span's, say); then it calls the function start returned, when not nil, with
// the error those steps returned (nil: handled, or settled as a dead letter by a DeadLetter
// inside it).
func Trace(start func(ctx context.Context, m *Message) (context.Context, func(err error))) Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
			sctx, end := start(ctx, m)
			if sctx == nil {
				sctx = ctx
			}
			out, err := next.Handle(sctx, tx, m)
			if end != nil {
				end(err)
			}
			return out, err
		})
	}
}

// exhaustedError is a Retryable error of the last attempt Retry allowed.
type exhaustedError struct{ err error }

func (e *exhaustedError) Error() string { return e.err.Error() }
func (e *exhaustedError) Unwrap() error { return e.err }

// noDeadLetterError is a handler failure that left the chain: no step settled it.
type noDeadLetterError struct{ err error }

func (e *noDeadLetterError) Error() string {
	return "the handler chain has no dead-letter step (DeadLetter): " + e.err.Error()
}
func (e *noDeadLetterError) Unwrap() error { return e.err }

// eventRun is the runner's side of one event going through the chain: what the built-in
// steps reach through the message (rollback to the savepoint, unclaim, the dead letter).
type eventRun struct {
	e   *Runner
	tx  *dedup.Tx
	sp  *savepoints
	msg *Message
	// first is the failure HandleBatch reported for the event, its first attempt; given
	// says that the attempt now running is that one (the handler is not called).
	first error
	given bool
	// firstFailed and lastFailed are when attempts failed, for the dead letter.
	firstFailed, lastFailed time.Time
	dl                      *deadLetter
	// waits are Retry's backoff, started at the first retry.
	waits *retries
	// broken is a failure of the transaction itself in a step (a rollback to the savepoint,
	// the unclaim): the transaction is abandoned.
	broken error
}

// handlerName is the runner's name for its handler.
func (m *Message) handlerName() string {
	if m.ev == nil {
		return "handler"
	}
	return m.ev.e.o.Name
}

// failed notes a failed attempt and rolls back what it wrote.
func (r *eventRun) failed(ctx context.Context) error {
	now := time.Now()
	if r.firstFailed.IsZero() {
		r.firstFailed = now
	}
	r.lastFailed = now
	if err := r.sp.rollback(ctx); err != nil {
		r.broken = err
		return err
	}
	return nil
}

// retry rolls the failed attempt back, waits the backoff and counts the next attempt.
func (r *eventRun) retry(ctx context.Context, herr error) error {
	if err := r.failed(ctx); err != nil {
		return err
	}
	m, e := r.msg, r.e
	if r.waits == nil {
		r.waits = e.o.RetryBackoff.start()
	}
	d := r.waits.next()
	e.log.Warn("handler failed; retrying the event", "topic", m.Record.Topic, "partition", m.Record.Partition,
		"offset", m.Record.Offset, "event_id", m.Event.ID, "attempt", m.Attempt, "max_attempts", e.o.MaxAttempts,
		"backoff", d.Round(time.Millisecond).String(), "error", herr)
	if err := sleep(ctx, d); err != nil {
		return err
	}
	m.Attempt++
	return nil
}

// deadLetter rolls the event back, removes its marker (claimed before the savepoint, so
// the rollback kept it; deleted in the transaction, after the savepoint, so that the event
// commits unmarked) and queues its dead letter.
func (r *eventRun) deadLetter(ctx context.Context, herr error) error {
	if err := r.failed(ctx); err != nil {
		return err
	}
	m, e := r.msg, r.e
	if _, err := e.o.Store.Unclaim(ctx, r.tx, e.o.Consumer, m.Event.ID); err != nil {
		r.broken = err
		return err
	}
	r.sp.keep()
	reason := dlq.ReasonExhausted
	switch classify(herr) {
	case classPermanent:
		reason = dlq.ReasonRejected
	case classUnsupported:
		reason = dlq.ReasonUnsupported
	}
	attempts := m.Attempt
	if dc := int(m.Record.DeliveryCount()); dc > 1 {
		attempts += dc - 1 // a share group's earlier deliveries, one attempt each at least
	}
	r.dl = &deadLetter{rec: m.Record, meta: e.meta(m.Record, reason, m.Event.ID, unwrapExhausted(herr), attempts, r.firstFailed, r.lastFailed)}
	// A share group's record that failed retryably before its last delivery is released, for
	// the broker to deliver it again (to any member), not dead-lettered.
	r.dl.release = reason == dlq.ReasonExhausted && e.releasable(m.Record)
	return nil
}

// unwrapExhausted is err without Retry's exhausted mark, as the dead letter shows it.
func unwrapExhausted(err error) error {
	if x, ok := err.(*exhaustedError); ok {
		return x.err
	}
	return err
}

// terminal is the innermost step: the handler's Handle, or, for the first attempt of an
// event HandleBatch reported failed, that failure.
func (e *Runner) terminal() Handler {
	return HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
		if r := m.ev; r != nil {
			r.given = false
			if r.first != nil {
				err := r.first
				r.first, r.given = nil, true
				return 0, err
			}
		}
		return e.o.Handler.Handle(ctx, tx, m)
	})
}

// errNoDeadLetter reports whether err is a handler failure no step of the chain settled.
func errNoDeadLetter(err error) bool {
	var nd *noDeadLetterError
	return errors.As(err, &nd)
}
