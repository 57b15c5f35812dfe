package inbox

import (
	"context"
	"database/sql"
	"errors"

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
type Option func(*dedup.Options)

// Schema sets the PostgreSQL schema of the marker table (default "fieldwork"). On SQLite,
// which has no schemas, it is a prefix of the table's name (fieldwork_processed_events).
func Schema(name string) Option { return func(o *dedup.Options) { o.Schema = name } }

// TableName sets the marker table's name (default "processed_events").
func TableName(name string) Option { return func(o *dedup.Options) { o.Table = name } }

// Open connects to the store the DSN names: postgres://… (or postgresql://…) for PostgreSQL,
// sqlite:path for an SQLite file, which Open creates when it does not exist.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	o := dedup.Options{Create: true}
	for _, opt := range opts {
		opt(&o)
	}
	s, err := dedup.Open(ctx, dsn, o)
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
	// ID is the event's stable id. Required.
	ID string
	// Topic, Partition and Offset are where the event was read (kept in the marker, shown by
	// fieldwork processed). Optional.
	Topic     string
	Partition int32
	Offset    int64
	// AggregateID and Version are the event's aggregate and its version in that aggregate.
	AggregateID string
	Version     int64
}

// Verdict is what a claim found for one event.
type Verdict int

const (
	// Fresh: the event was not processed by this consumer before; apply it.
	Fresh Verdict = iota
	// Duplicate: the event was processed already (or occurs earlier in the same claim); do
	// nothing.
	Duplicate
)

// Claim marks evs as processed by consumer inside tx and says, for each, whether it is fresh
// (apply it, in tx) or a duplicate (do nothing).
func (s *Store) Claim(ctx context.Context, tx *Tx, consumer string, evs []Event) ([]Verdict, error) {
	if tx == nil {
		return nil, errors.New("claim: no transaction")
	}
	markers := make([]dedup.Marker, len(evs))
	for i, ev := range evs {
		markers[i] = dedup.Marker{EventID: ev.ID, Topic: ev.Topic, Partition: ev.Partition, Offset: ev.Offset,
			AggregateID: ev.AggregateID, AggregateVersion: ev.Version}
	}
	fresh, err := s.s.Claim(ctx, tx.t, consumer, markers)
	if err != nil {
		return nil, err
	}
	isFresh := make(map[string]bool, len(fresh))
	for _, id := range fresh {
		isFresh[id] = true
	}
	out := make([]Verdict, len(evs))
	for i, ev := range evs {
		if isFresh[ev.ID] {
			out[i] = Fresh
			delete(isFresh, ev.ID)
		} else {
			out[i] = Duplicate
		}
	}
	return out, nil
}

// Unclaim removes consumer's marker of eventID inside tx, so that the event is handled when
// it is read again. It reports whether there was one.
func (s *Store) Unclaim(ctx context.Context, tx *Tx, consumer, eventID string) (bool, error) {
	return s.s.Unclaim(ctx, tx.t, consumer, eventID)
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

// Commit makes the transaction's markers and side effects durable together.
func (t *Tx) Commit(ctx context.Context) error { return t.t.Commit(ctx) }

// Rollback discards the transaction; after Commit it does nothing and returns nil.
func (t *Tx) Rollback(ctx context.Context) error { return t.t.Rollback(ctx) }

// Pgx is the pgx transaction underneath, on PostgreSQL.
func (t *Tx) Pgx() (pgx.Tx, bool) { return t.t.Pgx() }

// SQL is the database/sql transaction underneath, on SQLite.
func (t *Tx) SQL() (*sql.Tx, bool) { return t.t.SQL() }
