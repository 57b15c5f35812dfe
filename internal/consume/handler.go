package consume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Handler applies one event's side effects inside the consumer's transaction.
//
// The engine calls Handle once per fresh event (one whose marker it has just claimed), in
// offset order within a partition, inside a savepoint of tx. Everything the handler writes
// through tx commits together with the marker, or not at all. A handler must therefore:
//   - write only through tx (never through another connection), so that a rollback undoes it;
//   - give any side effect outside the database (an HTTP call, an email) an idempotency key
//     derived from (consumer, event id), because the engine may call Handle again for the same
//     event after a crash, a rebalance or a retry: see IdempotencyKey;
//   - not keep tx or rec after it returns, and not use tx concurrently.
//
// Handle reports what happened with its error:
//   - nil: the event is handled (Applied) or deliberately ignored (Stale, e.g. an older
//     version of an aggregate); either way it stays marked;
//   - Permanent(err) or Unsupported(err): the event can never be handled; it is dead-lettered
//     at once (reason rejected or unsupported) and its marker is removed;
//   - Retryable(err): a temporary failure of this event (a 503 from a provider); the engine
//     rolls back to the savepoint and calls Handle again after a backoff, up to MaxAttempts
//     attempts in all, then dead-letters the event (reason exhausted);
//   - an unmarked error for which dedup.IsTransient is true (the database is unreachable, a
//     serialization failure, a deadlock): an infrastructure failure; the engine rolls the
//     whole batch back and retries it; it is never dead-lettered;
//   - any other unmarked error is treated as Retryable.
//
// A mark wins over dedup.IsTransient: a webhook marks an HTTP timeout (a net.Error, which
// IsTransient counts as infrastructure) Retryable so that it is exhausted after MaxAttempts
// instead of holding the partition forever. A handler must therefore not wrap a database
// error in Permanent or Retryable.
//
// A panic in Handle is recovered and treated as Permanent.
type Handler interface {
	// Name is the handler's name, written into dead letters (fw.dlq.handler) and logs.
	Name() string
	// Migrate creates the handler's tables in tx if they do not exist. It must be idempotent.
	// The engine runs it only when asked to migrate (fieldwork consume --migrate).
	Migrate(ctx context.Context, tx *dedup.Tx) error
	// Handle applies ev, decoded from rec, inside tx. See the type's documentation.
	Handle(ctx context.Context, tx *dedup.Tx, ev envelope.Event, rec *kgo.Record) (Outcome, error)
}

// BatchHandler is implemented by handlers that can apply a whole batch's fresh events in a
// few statements instead of one call (and one savepoint) per event (docs/design.md §3.5).
// The engine uses HandleBatch by default when the handler implements it (Options.PerEvent
// turns it off); Handle stays required: the engine falls back to it, event by event under
// savepoints, whenever a batch cannot be applied whole.
//
// HandleBatch applies evs — fresh events of one partition, in offset order, their markers
// claimed in tx — inside tx, with the obligations of Handle (write only through tx, give
// external effects an idempotency key, keep nothing after returning). The result must be
// the one calling Handle on each event in order would give: an event newer than what came
// before it is Applied even when a later event of the batch supersedes it, an older one is
// Stale.
//
// It reports in two ways:
//   - res: res.Outcomes[i] is the outcome of evs[i] for a prefix of evs. When the prefix is
//     shorter than evs, res.Err is the failure of the event right after it, which must have
//     written nothing: the engine treats res.Err as that event's first attempt at Handle
//     (dead letter, retry, or, when infrastructure, the whole batch again), then calls
//     HandleBatch again with the events after it. The events of the prefix are kept.
//   - err: the batch failed as a whole (a statement failed; tx may be unusable). The engine
//     rolls the transaction back; an infrastructure error (dedup.IsTransient) is retried as
//     any, anything else makes the engine apply that batch again, claim included, event by
//     event with Handle under savepoints, so that a poison event is found and
//     dead-lettered alone.
//
// A panic in HandleBatch is treated as a failure of the batch (not infrastructure).
type BatchHandler interface {
	Handler
	HandleBatch(ctx context.Context, tx *dedup.Tx, evs []BatchEvent) (res BatchResult, err error)
}

// BatchEvent is one event of a batch given to BatchHandler.HandleBatch.
type BatchEvent struct {
	Event  envelope.Event
	Record *kgo.Record
}

// BatchResult is what HandleBatch did: see BatchHandler.
type BatchResult struct {
	// Outcomes are the outcomes of the first len(Outcomes) events, in order.
	Outcomes []Outcome
	// Err is the failure of the event after them; nil when every event is in Outcomes.
	Err error
}

// Checker is implemented by handlers that can tell, before consuming starts, whether their
// tables exist. The engine calls Check at start when it does not migrate, so that a missing
// table stops the consumer with a clear message instead of dead-lettering every event.
type Checker interface {
	Check(ctx context.Context, tx *dedup.Tx) error
}

// Outcome is what a successful Handle did.
type Outcome int

const (
	// Applied means the event's effect was written.
	Applied Outcome = iota
	// Stale means the event was deliberately not applied (an older version than the one
	// already applied). It is still marked processed.
	Stale
)

func (o Outcome) String() string {
	if o == Stale {
		return "stale"
	}
	return "applied"
}

// class is how the engine treats a handler error.
type class int

const (
	classRetryable class = iota
	classPermanent
	classUnsupported
	classInfra
)

type classifiedError struct {
	class class
	err   error
}

func (e *classifiedError) Error() string { return e.err.Error() }
func (e *classifiedError) Unwrap() error { return e.err }

// Permanent marks err as a permanent failure of one event: it is dead-lettered at once with
// reason "rejected". A nil err stays nil.
func Permanent(err error) error { return wrapClass(classPermanent, err) }

// Retryable marks err as a temporary failure of one event: the engine retries it in place
// with backoff and dead-letters it with reason "exhausted" after MaxAttempts attempts. A nil
// err stays nil.
func Retryable(err error) error { return wrapClass(classRetryable, err) }

// Unsupported marks err as "this handler has no code for this event" (an unknown type or
// schema): dead-lettered at once with reason "unsupported". A nil err stays nil.
func Unsupported(err error) error { return wrapClass(classUnsupported, err) }

// Unsupportedf is Unsupported(fmt.Errorf(format, args...)).
func Unsupportedf(format string, args ...any) error {
	return Unsupported(fmt.Errorf(format, args...))
}

// Permanentf is Permanent(fmt.Errorf(format, args...)).
func Permanentf(format string, args ...any) error {
	return Permanent(fmt.Errorf(format, args...))
}

func wrapClass(c class, err error) error {
	if err == nil {
		return nil
	}
	return &classifiedError{class: c, err: err}
}

// IsPermanent reports whether err was marked with Permanent or Unsupported.
func IsPermanent(err error) bool {
	c, ok := explicitClass(err)
	return ok && (c == classPermanent || c == classUnsupported)
}

// IsRetryable reports whether err was marked with Retryable.
func IsRetryable(err error) bool {
	c, ok := explicitClass(err)
	return ok && c == classRetryable
}

// explicitClass finds the outermost Permanent/Retryable/Unsupported mark in err's chain.
func explicitClass(err error) (class, bool) {
	var ce *classifiedError
	if errors.As(err, &ce) {
		return ce.class, true
	}
	return 0, false
}

// classedError names the class of a failure for its dead letter.
type classedError struct {
	class string
	err   error
}

func (e *classedError) Error() string { return e.err.Error() }
func (e *classedError) Unwrap() error { return e.err }

// WithErrorClass gives err a class, a short machine-readable word that its dead letter
// carries as fw.dlq.error_class (the webhook handler's http_422; docs/design.md §3.2), for
// `dlq stats --group-by error_class` and `--error` filters. It does not change how the
// engine treats err: mark that with Permanent, Retryable or Unsupported. A nil err stays nil.
func WithErrorClass(class string, err error) error {
	if err == nil {
		return nil
	}
	return &classedError{class: class, err: err}
}

// ErrorClass is the class WithErrorClass gave err (the outermost), "" when none.
func ErrorClass(err error) string {
	var ce *classedError
	if errors.As(err, &ce) {
		return ce.class
	}
	return ""
}

// classify decides how the engine treats a handler error. A handler's own mark wins (an HTTP
// timeout is a net.Error, which dedup.IsTransient would call infrastructure, but a webhook
// marks it Retryable so that it is exhausted after MaxAttempts, not retried forever); an
// unmarked error is an infrastructure failure when dedup.IsTransient says so, else retryable.
func classify(err error) class {
	if c, ok := explicitClass(err); ok {
		return c
	}
	if dedup.IsTransient(err) {
		return classInfra
	}
	return classRetryable
}

// IdempotencyKey is the key a handler gives an external side effect of an event: the hex
// SHA-256 of the consumer name, a NUL byte and the event id (neither can hold a NUL, so
// different pairs never share the input). It is the same on every attempt, redelivery and
// replay of the event for that consumer, and differs between consumers, so that two
// consumers of one event each get their own effect.
func IdempotencyKey(consumer, eventID string) string {
	sum := sha256.Sum256([]byte(consumer + "\x00" + eventID))
	return hex.EncodeToString(sum[:])
}
