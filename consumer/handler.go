package consumer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Handler applies one event's side effects inside the consumer's transaction.
//
// The runner calls Handle once per fresh event (one whose marker it has just claimed), in
// offset order within a partition, inside a savepoint of tx. Everything the handler writes
// through tx commits together with the marker, or not at all. A handler must therefore:
//   - write only through tx (never through another connection, and only to the database of
//     the inbox.Store the runner was given), so that a rollback undoes it;
//   - give any side effect outside the database (an HTTP call, an email) an idempotency key
//     derived from (consumer, event id), because the runner may call Handle again for the
//     same event after a crash, a rebalance or a retry: see IdempotencyKey;
//   - not keep tx or m after it returns, and not use tx concurrently.
//
// Handle reports what happened with its error:
//   - nil: the event is handled (Applied) or deliberately ignored (Stale, e.g. an older
//     version of an aggregate); either way it stays marked;
//   - Permanent(err) or Unsupported(err): the event can never be handled; it is dead-lettered
//     at once (reason rejected or unsupported) and its marker is removed;
//   - Retryable(err): a temporary failure of this event (a 503 from a provider); the runner
//     rolls back to the savepoint and calls Handle again after a backoff, up to MaxAttempts
//     attempts in all, then dead-letters the event (reason exhausted);
//   - an unmarked error for which inbox.IsTransient is true (the database is unreachable, a
//     serialization failure, a deadlock): an infrastructure failure; the runner rolls the
//     whole batch back and retries it; it is never dead-lettered;
//   - any other unmarked error is treated as Retryable.
//
// A mark wins over inbox.IsTransient: a webhook marks an HTTP timeout (a net.Error, which
// IsTransient counts as infrastructure) Retryable so that it is exhausted after MaxAttempts
// instead of holding the partition forever. A handler must therefore not wrap a database
// error in Permanent or Retryable.
//
// A panic in Handle is recovered and treated as Permanent (Recover, in the default chain).
type Handler interface {
	Handle(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error)
}

// HandlerFunc is a function as a Handler.
type HandlerFunc func(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, tx *inbox.Tx, m *Message) (Outcome, error) {
	return f(ctx, tx, m)
}

// Namer is implemented by a handler that names itself. The name is written into dead
// letters (fw.dlq.handler) and logs. A handler that is not a Namer is named by the option
// Name.
type Namer interface {
	Name() string
}

// Migrator is implemented by a handler that has tables of its own: Migrate creates them in
// tx if they do not exist, and must be idempotent. The runner calls it only when asked to
// migrate (Migrate; fieldwork consume --migrate).
type Migrator interface {
	Migrate(ctx context.Context, tx *inbox.Tx) error
}

// Checker is implemented by handlers that can tell, before consuming starts, whether their
// tables exist. It is called at start when the store is not migrated by the same call, so
// that a missing table stops the consumer with a clear message instead of dead-lettering
// every event.
type Checker interface {
	Check(ctx context.Context, tx *inbox.Tx) error
}

// BatchHandler is implemented by handlers that can apply a whole batch's fresh events in a
// few statements instead of one call (and one savepoint) per event (docs/design.md §3.5).
// The runner uses HandleBatch when the handler implements it; Handle stays required: the
// runner falls back to it, event by event under savepoints, whenever a batch cannot be
// applied whole.
//
// HandleBatch applies ms — fresh events of one partition, in offset order, their markers
// claimed in tx — inside tx, with the obligations of Handle (write only through tx, give
// external effects an idempotency key, keep nothing after returning). The result must be
// the one calling Handle on each event in order would give: an event newer than what came
// before it is Applied even when a later event of the batch supersedes it, an older one is
// Stale.
//
// It reports in two ways:
//   - res: res.Outcomes[i] is the outcome of ms[i] for a prefix of ms. When the prefix is
//     shorter than ms, res.Err is the failure of the event right after it, which must have
//     written nothing: the runner treats res.Err as that event's first attempt at Handle
//     (through the middleware: dead letter, retry, or, when infrastructure, the whole batch
//     again), then calls HandleBatch again with the events after it. The events of the
//     prefix are kept.
//   - err: the batch failed as a whole (a statement failed; tx may be unusable). The runner
//     rolls the transaction back; an infrastructure error (inbox.IsTransient) is retried as
//     any, anything else makes the runner apply that batch again, claim included, event by
//     event with Handle under savepoints, so that a poison event is found and
//     dead-lettered alone.
//
// A panic in HandleBatch is treated as a failure of the batch (not infrastructure).
type BatchHandler interface {
	HandleBatch(ctx context.Context, tx *inbox.Tx, ms []*Message) (res BatchResult, err error)
}

// ClaimingBatchHandler is a BatchHandler that can also write a batch's effects in the
// statement that claims the batch's events, on PostgreSQL: that statement is then the batch's
// whole transaction (no BEGIN, no COMMIT, one round trip instead of four: docs/design.md §3.5).
// The runner asks for it when it would call HandleBatch with every event of the batch (the
// version guard off).
//
// ClaimedBatch returns the part that applies ms as HandleBatch would when every event of ms
// is fresh and Applied, or false when it cannot (an event HandleBatch would reject, a store
// that is not PostgreSQL): the runner then claims first and calls HandleBatch. The statement
// is kept only when every event of ms was claimed by it and the part's Fallback returns no
// row (an event that would be Stale, say); otherwise nothing of it is written and the runner
// applies the batch again with the claim first and HandleBatch. The markers are inserted
// without ON CONFLICT, so any unique violation in the statement (a marker claimed before, or
// a row of the part's that meets a unique key) is such a fallback too; HandleBatch then meets
// the part's row as it should. Any other failure of the statement is a failure of
// HandleBatch as a whole (see BatchHandler).
type ClaimingBatchHandler interface {
	BatchHandler
	ClaimedBatch(ms []*Message) (ClaimedBatch, bool)
}

// ClaimedBatch is a ClaimingBatchHandler's part of the claim's statement.
type ClaimedBatch struct {
	// With is one or more common table expressions ("name AS (…), …") that write the
	// batch's effects; they follow fw_claimed, the expression that inserts the markers
	// (its rows' event_id are the markers' keys), and may read it.
	With string
	// Select, when set, is a query over With's expressions; Row reads each of its rows.
	Select string
	// Fallback, when set, is a query over With's expressions that returns a row when the
	// statement must not be kept: then nothing of it is written, and the runner applies
	// the batch with the claim first and HandleBatch.
	Fallback string
	// Args are the values of the positional parameters $1… of With, Select and Fallback.
	Args []any
	// Row reads one row of Select: scan fills dest as pgx's Rows.Scan does.
	Row func(scan func(dest ...any) error) error
	// Committed, when set, is called once the statement is kept (every event Applied).
	Committed func()
}

// Message is one event given to a handler: the event decoded from the record, the record,
// and which attempt at handling it this is.
type Message struct {
	Event Event
	// Record is the Kafka record the event was read from. Do not modify it.
	Record *kgo.Record
	// Attempt is 1 for the first call of Handle for the event in this transaction, 2 for
	// the first retry (Retry), and so on.
	Attempt int

	// ev is the runner's state of the event in the chain, nil outside it.
	ev *eventRun
}

// Event is an event's envelope as the runner decoded it from a record (CloudEvents binary
// or structured, or plain JSON: docs/design.md §3.1).
type Event struct {
	// ID is the globally unique event id. Never empty.
	ID string
	// Type is the event type; Source and Subject are the CloudEvents ones (empty for plain
	// JSON).
	Type    string
	Source  string
	Subject string
	// Time is when the event occurred; zero when absent.
	Time time.Time
	// AggregateType, AggregateID and Version are the event's aggregate and its version in
	// it; Version is meaningful only when HasVersion is true.
	AggregateType string
	AggregateID   string
	Version       int64
	HasVersion    bool
	// Data is the event's data as one JSON value, empty when there is none.
	Data json.RawMessage
	// Format is the envelope the event was decoded from: cloudevents-binary,
	// cloudevents-structured or plain-json.
	Format string
}

// eventOf is ev as the public Event.
func eventOf(ev envelope.Event) Event {
	return Event{ID: ev.ID, Type: ev.Type, Source: ev.Source, Subject: ev.Subject, Time: ev.Time,
		AggregateType: ev.AggregateType, AggregateID: ev.AggregateID, Version: ev.Version, HasVersion: ev.HasVersion,
		Data: ev.Data, Format: string(ev.Format)}
}

// envelope is e as the envelope package's Event.
func (e Event) envelope() envelope.Event {
	return envelope.Event{ID: e.ID, Type: e.Type, Source: e.Source, Subject: e.Subject, Time: e.Time,
		AggregateType: e.AggregateType, AggregateID: e.AggregateID, Version: e.Version, HasVersion: e.HasVersion,
		Data: e.Data, Format: envelope.Format(e.Format)}
}

// MarshalJSON writes the event as fieldwork writes decoded events everywhere (snake_case
// fields, aggregate_version null when the event has no version).
func (e Event) MarshalJSON() ([]byte, error) { return json.Marshal(e.envelope()) }

// BatchResult is what HandleBatch did: see BatchHandler.
type BatchResult struct {
	// Outcomes are the outcomes of the first len(Outcomes) events, in order.
	Outcomes []Outcome
	// Err is the failure of the event after them; nil when every event is in Outcomes.
	Err error
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

// class is how the runner treats a handler error.
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

// Retryable marks err as a temporary failure of one event: the runner retries it in place
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

// classify decides how the runner treats a handler error. A handler's own mark wins (an HTTP
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
