package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
)

func init() {
	inboxlink.NewStore = func(s *dedup.Store) any { return &Store{s: s} }
	inboxlink.Store = func(s any) *dedup.Store { return s.(*Store).s }
	inboxlink.NewTx = func(tx *dedup.Tx) any { return &Tx{t: tx} }
	inboxlink.Tx = func(tx any) *dedup.Tx { return tx.(*Tx).t }
}

// Store is a marker table: fieldwork.processed_events by default, the table every fieldwork
// command reads. It is safe for concurrent use; a Tx is not.
type Store struct {
	s *dedup.Store
}

// An Option configures Open.
type Option func(*openOptions)

// openOptions are the store's options as Open gathers them.
type openOptions struct{ dedup.Options }

// Schema sets the PostgreSQL schema of the marker table (default "fieldwork"). On SQLite,
// which has no schemas, it is a prefix of the table's name (fieldwork_processed_events).
func Schema(name string) Option { return func(o *openOptions) { o.Schema = name } }

// TableName sets the marker table's name (default "processed_events").
func TableName(name string) Option { return func(o *openOptions) { o.Table = name } }

// Open connects to the store the DSN names: postgres://… (or postgresql://…) for PostgreSQL,
// sqlite:path for an SQLite file, which Open creates when it does not exist.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	o := openOptions{dedup.Options{Create: true}}
	for _, opt := range opts {
		opt(&o)
	}
	s, err := dedup.Open(ctx, dsn, o.Options)
	if err != nil {
		return nil, err
	}
	return &Store{s: s}, nil
}

// Close closes the store's connections.
func (s *Store) Close() error { return s.s.Close() }

// Driver is "postgres" or "sqlite".
func (s *Store) Driver() string { return s.s.Driver() }

// Migrate creates the marker table and fieldwork's other tables, or brings them up to date.
// It is idempotent and safe to run from several processes at once.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.s.Migrate(ctx, false)
	return err
}

// Begin opens a transaction on the store's database.
func (s *Store) Begin(ctx context.Context) (*Tx, error) {
	tx, err := s.s.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{t: tx}, nil
}

// InTx runs fn in a transaction: it commits when fn returns nil and rolls back when fn
// returns an error or panics.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	return s.s.InTx(ctx, func(tx *dedup.Tx) error { return fn(&Tx{t: tx}) })
}

// Event is what a claim needs of an event.
type Event struct {
	// ID is the event's stable id: the same for every delivery of the event, and never reused
	// for another. Required.
	ID string
	// Topic, Partition and Offset are where the event was read (kept in the marker, shown by
	// fieldwork processed). Optional.
	Topic     string
	Partition int32
	Offset    int64
	// AggregateID and Version are the event's aggregate and its version in that aggregate
	// (kept in the marker when AggregateID is set).
	AggregateID string
	Version     int64
	// HasVersion says Version is the event's version, which the version guard compares
	// (GuardVersions); an event without one, or without an AggregateID, is never stale.
	HasVersion bool
}

// Verdict is what a claim found for one event.
type Verdict int

const (
	// Fresh: the event was not processed by this consumer before; apply it, in the claim's
	// transaction.
	Fresh Verdict = iota
	// Duplicate: the event was processed already (or occurs earlier in the same claim); do
	// nothing.
	Duplicate
	// Stale (only with GuardVersions): the consumer already has this version of the event's
	// aggregate or a newer one; the event is marked, its marker's outcome stale, and the caller
	// applies nothing.
	Stale
)

var verdictNames = [...]string{Fresh: "fresh", Duplicate: "duplicate", Stale: "stale"}

// String is "fresh", "duplicate" or "stale".
func (v Verdict) String() string {
	if v >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// A ClaimOption changes what Claim does.
type ClaimOption func(*claimOptions)

type claimOptions struct{ guard bool }

// GuardVersions makes Claim the version guard too: an event with HasVersion and an
// AggregateID whose version is not higher than the highest version of its aggregate this
// consumer claimed before (in a committed transaction, earlier in the same transaction, or
// earlier in the same claim: evs are in offset order) is Stale. The highest version is kept
// per consumer and aggregate in a table beside the marker table (<table>_versions), raised in
// the claim's transaction: it commits, or rolls back, with the markers. The guard costs one
// statement per claim beside the marker insert; a claim without it costs none.
func GuardVersions() ClaimOption { return func(o *claimOptions) { o.guard = true } }

// Claim marks evs as processed by consumer inside tx and says, for each, whether it is fresh
// (apply it, in tx), a duplicate (do nothing) or, with GuardVersions, stale (do nothing: it
// stays marked as stale). evs are in the order they were read (offset order); an id repeated
// in evs is a duplicate after its first occurrence. When another transaction holds an
// uncommitted marker of the same event, Claim waits for it: the event is a duplicate here if
// that transaction commits, fresh if it rolls back. An error other than a bad consumer or id
// leaves tx to be rolled back.
func (s *Store) Claim(ctx context.Context, tx *Tx, consumer string, evs []Event, opts ...ClaimOption) ([]Verdict, error) {
	if tx == nil {
		return nil, errors.New("claim: no transaction")
	}
	var o claimOptions
	for _, opt := range opts {
		opt(&o)
	}
	markers := make([]dedup.Marker, len(evs))
	for i, ev := range evs {
		markers[i] = dedup.Marker{EventID: ev.ID, Topic: ev.Topic, Partition: ev.Partition, Offset: ev.Offset,
			AggregateID: ev.AggregateID, AggregateVersion: ev.Version, Versioned: ev.HasVersion}
	}
	vs, err := s.s.ClaimVerdicts(ctx, tx.t, consumer, markers, o.guard)
	if err != nil {
		return nil, err
	}
	out := make([]Verdict, len(vs))
	for i, v := range vs {
		switch v {
		case dedup.Fresh:
			out[i] = Fresh
		case dedup.Stale:
			out[i] = Stale
		default:
			out[i] = Duplicate
		}
	}
	return out, nil
}

// Unclaim removes consumer's marker of eventID inside tx, so that the event is handled when
// it is read again. It reports whether there was one. When the version guard raised the
// event's aggregate to the event's version, Unclaim puts back the version it had before, so
// that the event read again is not stale.
func (s *Store) Unclaim(ctx context.Context, tx *Tx, consumer, eventID string) (bool, error) {
	if tx == nil {
		return false, errors.New("unclaim: no transaction")
	}
	return s.s.Unclaim(ctx, tx.t, consumer, eventID)
}

// MarkStale records, inside tx, that consumer's markers of ids are of events it deliberately
// did not apply (the marker's outcome column says stale): for a handler that decides
// staleness itself rather than with GuardVersions. The events must be claimed already (in tx
// or before); ids without a marker are left alone.
func (s *Store) MarkStale(ctx context.Context, tx *Tx, consumer string, ids []string) error {
	if tx == nil {
		return errors.New("mark stale: no transaction")
	}
	return s.s.SetOutcome(ctx, tx.t, consumer, ids, dedup.OutcomeStale)
}

// Table is the quoted name of the caller's own table name in the store's schema, for the SQL
// of tables that live beside the markers: "schema"."name" on PostgreSQL, "schema_name" on
// SQLite (which has no schemas), as the store names its own. name is an identifier
// ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes): Table panics on anything else, as
// regexp.MustCompile does on a bad expression, for it is a name written in the caller's code.
func (s *Store) Table(name string) string {
	if err := dedup.ValidateIdentifier("table", name); err != nil {
		panic("inbox: Table: " + err.Error())
	}
	return dedup.TableName(s.s.Driver(), s.s.Schema(), name)
}

// IsMissingTable reports whether err (from a statement on the store's database) says that a
// table or its schema does not exist, by the driver's own error codes: PostgreSQL's SQLSTATE
// 42P01 or 3F000, SQLite's "no such table". A team's Check or Migrate step uses it to say
// "run the migration" rather than fail on an unknown error.
func (s *Store) IsMissingTable(err error) bool { return s.s.Dialect().IsMissingTable(err) }

// IsTransient reports whether err is worth retrying with backoff: the database unreachable
// or restarting, a broken connection, a serialization failure or deadlock, SQLite busy. An
// error of the caller's own code is not, nor a usage error, a missing table or refused
// credentials.
func IsTransient(err error) bool { return dedup.IsTransient(err) }

// ErrAdopted is returned by Commit and Rollback of a Tx of Adopt: the transaction is the
// caller's, and the caller ends it.
var ErrAdopted = dedup.ErrAdopted

// Adopt returns a Tx over the caller's own open transaction, so that Claim, Unclaim and
// MarkStale work inside it: a pgx.Tx (of a pgx.Conn or pgxpool.Pool) on a PostgreSQL store,
// a *sql.Tx on an SQLite store; anything else is an error. The transaction must be on the
// store's database (the markers are written where the transaction writes). The caller commits
// or rolls it back, as it would without the store: Commit and Rollback of the returned Tx do
// nothing and return ErrAdopted, so that a Tx of Adopt never ends what it did not begin.
func (s *Store) Adopt(tx any) (*Tx, error) {
	t, err := s.s.Adopt(tx)
	if err != nil {
		return nil, err
	}
	return &Tx{t: t}, nil
}

// Tx is an open transaction on the store's database: the consumer's markers and its own
// side effects commit together in it. A Tx is not safe for concurrent use.
type Tx struct {
	t *dedup.Tx
}

// Driver is "postgres" or "sqlite".
func (t *Tx) Driver() string { return t.t.Driver() }

// Exec runs a statement and returns the number of rows it affected. Both drivers take
// $1-style placeholders.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return t.t.Exec(ctx, sql, args...)
}

// Rows are the rows of Query; Close them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is the row of QueryRow.
type Row interface{ Scan(dest ...any) error }

// Query runs a query; the caller closes the rows.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	return t.t.Query(ctx, sql, args...)
}

// QueryRow runs a query expected to return at most one row.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) Row {
	return t.t.QueryRow(ctx, sql, args...)
}

// Commit makes the transaction's markers and side effects durable together. On a Tx of
// Adopt it does nothing and returns ErrAdopted: the caller commits its own transaction.
func (t *Tx) Commit(ctx context.Context) error { return t.t.Commit(ctx) }

// Rollback discards the transaction; after Commit it does nothing and returns nil, so that
// `defer tx.Rollback(ctx)` is safe. On a Tx of Adopt it does nothing and returns ErrAdopted.
func (t *Tx) Rollback(ctx context.Context) error { return t.t.Rollback(ctx) }

// Pgx is the pgx transaction underneath, on PostgreSQL.
func (t *Tx) Pgx() (pgx.Tx, bool) { return t.t.Pgx() }

// SQL is the database/sql transaction underneath, on SQLite.
func (t *Tx) SQL() (*sql.Tx, bool) { return t.t.SQL() }
