// Package dedupdriver is the seam between the driver-agnostic dedup core
// (package dedup) and its drivers (pgdriver for PostgreSQL through pgx/v5,
// sqlitedriver for SQLite through modernc.org/sqlite).
//
// The layering follows River's riverdriver: the core imports the drivers and
// this package; the drivers import only this package. Nothing here runs SQL.
// Callers outside internal/dedup use the aliases that package dedup
// re-exports and never import this package directly.
//
// Contract for drivers: every identifier a driver puts into SQL comes from
// Names, which the core has validated against ^[A-Za-z_][A-Za-z0-9_]{0,62}$
// before the driver is constructed, and the driver still double-quotes it.
// Values always travel as bind parameters.
package dedupdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Names are the validated identifiers a driver builds its SQL from.
type Names struct {
	Schema  string
	Table   string
	Columns Columns
	// Journal is the schema of the journal and the migrations table when it is not Schema:
	// fieldwork's own, beside another library's table.
	Journal string
	// Library is the library whose table it is (a preset's), for messages; "" for a table of
	// fieldwork's shape or one named by a column mapping.
	Library string
	// Prefixed says Table is the name after an endpoint's prefix (NServiceBus's
	// <Endpoint>_OutboxData): the table read is the one of Schema named Table or ending in
	// "_"+Table, found when the store opens (one, or a *AmbiguousTableError naming them).
	Prefixed bool
}

// JournalSchema is the schema of the journal and the migrations table.
func (n Names) JournalSchema() string {
	if n.Journal != "" {
		return n.Journal
	}
	return n.Schema
}

// Columns maps the logical marker columns to the column names of the table, and says what
// else a table of another library is (docs/design.md §3.4): the fields after the eight names
// are empty for fieldwork's own table. A column the table lacks is Absent ("-"): read as NULL
// (the consumer, as the table's name: such a table holds one endpoint's markers).
type Columns struct {
	Consumer         string
	EventID          string
	ProcessedAt      string
	Topic            string
	Partition        string
	Offset           string
	AggregateID      string
	AggregateVersion string

	// ProcessedAtUnit is how an integer processed-at column counts time since the epoch:
	// "ms" (the default) or "s". A timestamp column is read as it is; one without a time zone
	// holds UTC.
	ProcessedAtUnit string
	// EventIDPath, when set, is where the event id is inside the JSON of the EventID column:
	// keys separated by "/" (CAP keeps it in its Content's Headers/cap-msg-id).
	EventIDPath string
	// Done is a column that is NULL until the row is processed (MassTransit's Consumed): rows
	// where it is NULL are not markers.
	Done string
	// Status, StatusDone and StatusFailed: a status column whose value StatusDone marks the
	// processed rows, StatusFailed the failed ones (CAP's StatusName Succeeded, Failed).
	Status       string
	StatusDone   string
	StatusFailed string
	// Removable is a column that must be true, or not NULL, for a row to be deleted (its
	// outgoing messages delivered: MassTransit's Delivered, NServiceBus's Dispatched).
	Removable string
}

// Absent names a column the table does not have.
const Absent = "-"

// DefaultColumns are the column names created by the migrations (docs/design.md §3.4).
var DefaultColumns = Columns{
	Consumer:         "consumer",
	EventID:          "event_id",
	ProcessedAt:      "processed_at",
	Topic:            "topic",
	Partition:        "partition",
	Offset:           "offset",
	AggregateID:      "aggregate_id",
	AggregateVersion: "aggregate_version",
}

// Config is what the core hands a driver's Open.
type Config struct {
	// DSN is the driver's own connection string: a pgx connection string for
	// Postgres, a file path (with optional ?query) for SQLite.
	DSN string
	// Names are validated identifiers.
	Names Names
	// ConnectTimeout bounds connecting and the first ping when the DSN sets
	// no timeout of its own.
	ConnectTimeout time.Duration
	// Password is used when the DSN holds none (Postgres only).
	Password string
	// Create lets SQLite create a database file that does not exist. Without it a missing
	// file is a *NoStoreError and nothing is created (docs/design.md §3.4).
	Create bool
}

// Marker is one event to claim for a consumer.
//
// Topic, Partition and Offset record where the event was read; when Topic is
// empty the three are stored as NULL. AggregateID and AggregateVersion are
// stored as NULL when AggregateID is empty. A zero ProcessedAt means the
// database's current time (now(): the transaction's start on Postgres).
type Marker struct {
	EventID          string
	Topic            string
	Partition        int32
	Offset           int64
	AggregateID      string
	AggregateVersion int64
	ProcessedAt      time.Time
	// Outcome is recorded in the marker's outcome column when the marker is inserted
	// (OutcomeStale: the version guard found the event stale); "" leaves it NULL. A claim
	// whose markers all have none runs the statement without the column.
	Outcome string
	// Versioned says AggregateVersion is the event's version, which the version guard compares
	// (the core's; a driver stores AggregateVersion whenever AggregateID is set).
	Versioned bool
}

// AggregateVersion is an aggregate's version to raise (Driver.RaiseVersions).
type AggregateVersion struct {
	AggregateID string
	Version     int64
}

// Dialect is what differs between the drivers in the SQL of the tables that live beside the
// markers (the bundled handlers', a team's own): each driver provides its value (pgdriver.Dialect,
// sqlitedriver.Dialect), and nothing outside the drivers asks which driver it runs on to write it.
type Dialect struct {
	// Timestamp is the column type of a time: timestamptz on PostgreSQL; text on SQLite, which
	// holds a time as UTC text in one layout (dedup.TimeArg formats the bind values).
	Timestamp string
	// UpdatedInPlace is the storage clause (with its leading space, or empty) of a table whose
	// rows are rewritten often and whose indexed columns never change: on PostgreSQL pages keep
	// room for the new version of a row, so that an update stays on its page and adds no index
	// entry (a HOT update); SQLite has no such clause.
	UpdatedInPlace string
	// Arrays says the driver binds a Go slice as one array parameter (PostgreSQL's unnest), so
	// that a batch is one statement of a fixed text; without it a batch is a statement per row
	// or a VALUES list.
	Arrays bool
	// IsMissingTable reports whether err says that a table (or its schema) does not exist,
	// from the driver's own error type: PostgreSQL's SQLSTATE 42P01 and 3F000, SQLite's
	// SQLITE_ERROR for "no such table".
	IsMissingTable func(err error) bool
}

// OutcomeStale is the outcome column's value for an event the consumer marked but
// deliberately did not apply: older than what it already had (consumer.Stale). NULL means
// applied, or not known (a marker written before the column existed).
const OutcomeStale = "stale"

// MarkerRow is a stored marker. A column that is NULL in the table (or that the table lacks)
// is nil, JSON null (docs/design.md §4: an absent value is null, never a zero time or number):
// ProcessedAt too, which another library's table may leave NULL (Eventuate's rows written
// before creation_time existed, NServiceBus's outbox rows not yet dispatched). EventID is the
// stored key: see dedup.EventKey for ids longer than dedup.MaxInlineEventIDBytes.
type MarkerRow struct {
	Consumer         string     `json:"consumer"`
	EventID          string     `json:"event_id"`
	ProcessedAt      *time.Time `json:"processed_at"`
	Topic            *string    `json:"topic"`
	Partition        *int32     `json:"partition"`
	Offset           *int64     `json:"offset"`
	AggregateID      *string    `json:"aggregate_id"`
	AggregateVersion *int64     `json:"aggregate_version"`
}

// Instant is t, or nil for the zero time: how a driver gives a time column that may be NULL.
func Instant(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// Text is s, or nil for the empty string: how a driver gives a text column that may be NULL.
func Text(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Cursor is a position in the newest-first order of List: rows strictly
// older than it (by processed_at, then consumer, then event_id, all
// descending) come next. A zero ProcessedAt is a row without a processed time,
// which List orders after every row that has one.
type Cursor struct {
	ProcessedAt time.Time
	Consumer    string
	EventID     string
}

// ListFilter selects markers for List. Zero values do not filter.
type ListFilter struct {
	Consumer string
	// Failed lists the failed rows (Columns.StatusFailed) instead of the markers.
	Failed      bool
	Since       time.Time // processed_at >= Since
	Until       time.Time // processed_at < Until
	AggregateID string
	Limit       int
	Before      *Cursor
}

// StatsFilter selects the consumers for Stats; Window is the span, ending
// now, over which the per-hour rate is computed.
type StatsFilter struct {
	Consumer string
	Window   time.Duration
}

// ConsumerStats are one consumer's figures. First and Last are nil (null) when none of the
// consumer's markers has a processed time.
type ConsumerStats struct {
	Consumer string     `json:"consumer"`
	Count    int64      `json:"count"`
	First    *time.Time `json:"first_processed_at"`
	Last     *time.Time `json:"last_processed_at"`
	InWindow int64      `json:"in_window"`
	PerHour  float64    `json:"rate_per_hour"`
}

// Sizes are the on-disk sizes of the marker table, in bytes.
type Sizes struct {
	TableBytes int64 `json:"table_bytes"`
	IndexBytes int64 `json:"index_bytes"`
	TotalBytes int64 `json:"total_bytes"`
}

// Migration is one embedded migration, rendered with the store's names.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// AppliedMigration is a row of the migrations table.
type AppliedMigration struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

// Rows is the common subset of pgx.Rows and *sql.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is the common subset of pgx.Row and *sql.Row.
type Row interface {
	Scan(dest ...any) error
}

// Tx is an open transaction of a driver. Both drivers accept $1-style
// positional placeholders.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	Commit(ctx context.Context) error
	// Rollback is a no-op returning nil once the transaction has ended.
	Rollback(ctx context.Context) error
	// Unwrap returns the driver's transaction: pgx.Tx or *sql.Tx.
	Unwrap() any
}

// Driver is implemented by pgdriver and sqlitedriver. Event ids handed to a
// driver are already validated, deduplicated and mapped to their storage key
// by the core.
type Driver interface {
	// Name is "postgres" or "sqlite".
	Name() string
	// Table is the quoted, qualified marker table name, for messages.
	Table() string
	// VersionsTable is the quoted, qualified table of the version guard (migration 011).
	VersionsTable() string
	Close() error

	Begin(ctx context.Context) (Tx, error)
	// Adopt returns a Tx over the caller's own transaction of the driver's kind (pgx.Tx,
	// *sql.Tx), or an error naming what it was given. Commit and Rollback of the Tx end the
	// caller's transaction: the core refuses them on an adopted one (the caller ends it).
	Adopt(tx any) (Tx, error)
	// Dialect is what the SQL of the tables beside the markers writes differently on this driver.
	Dialect() Dialect

	// Migrations are the driver's embedded migrations, rendered, in order.
	Migrations() ([]Migration, error)
	// BeginMigration begins a transaction holding the store's migration
	// lock, so that concurrent migrators apply each migration once.
	BeginMigration(ctx context.Context) (Tx, error)
	// AppliedMigrations reads the migrations table, through tx when it is
	// not nil; it returns no rows and no error when the table is absent.
	AppliedMigrations(ctx context.Context, tx Tx) ([]AppliedMigration, error)
	RecordMigration(ctx context.Context, tx Tx, m Migration) error

	// Claim inserts the markers in one statement (or, on SQLite, one per
	// chunk of bind variables) and returns the keys that were inserted. A marker's Outcome is
	// written with it; when no marker has one the statement leaves the column alone.
	Claim(ctx context.Context, tx Tx, consumer string, markers []Marker) ([]string, error)
	// RaiseVersions raises consumer's stored version of each aggregate to the one given when
	// that is higher (storing it when there is none), in one statement (on SQLite one per chunk
	// of bind variables), and returns the version each aggregate had before it: absent when
	// there was none. The aggregates are distinct and sorted (the order rows are locked in). A
	// concurrent transaction raising the same aggregate is waited for, and what it committed is
	// what this one compares with. ErrNotMigrated when the versions table is missing.
	RaiseVersions(ctx context.Context, tx Tx, consumer string, versions []AggregateVersion) (map[string]int64, error)
	// Unclaim deletes consumer's marker of key and reports whether there was one and, when the
	// marker recorded an aggregate version, that aggregate and version (else nil).
	Unclaim(ctx context.Context, tx Tx, consumer, key string) (bool, *AggregateVersion, error)
	// LowerVersion undoes what a claim's RaiseVersions did for an event Unclaim removed: when
	// consumer's stored version of v.AggregateID is v.Version, it becomes the version the row
	// held before that claim (the row is deleted when it had none). Anything else is left.
	LowerVersion(ctx context.Context, tx Tx, consumer string, v AggregateVersion) error
	// SetOutcome records outcome (OutcomeStale) on consumer's markers of keys inside tx, in
	// one statement (on SQLite one per chunk); ErrNoOutcome when the table has no outcome
	// column.
	SetOutcome(ctx context.Context, tx Tx, consumer string, keys []string, outcome string) error
	// Outcomes returns the outcomes recorded on consumer's markers among keys, by key (a
	// marker without one is absent); ErrNoOutcome when the table has no outcome column.
	Outcomes(ctx context.Context, consumer string, keys []string) (map[string]string, error)

	Get(ctx context.Context, key, consumer string) ([]MarkerRow, error)
	List(ctx context.Context, f ListFilter) ([]MarkerRow, error)
	Stats(ctx context.Context, f StatsFilter, now time.Time) ([]ConsumerStats, *Sizes, error)
	Lookup(ctx context.Context, consumer string, keys []string) ([]MarkerRow, error)
	// Marked says, for each of keys (distinct), whether consumer has a marker of it, in keys'
	// order: Lookup's probe per key, reading the key only (an index-only read where the table
	// allows it), and no key sent back.
	Marked(ctx context.Context, consumer string, keys []string) ([]bool, error)
	// NewestVersions returns, by aggregate, the highest aggregate version among consumer's
	// markers of each of aggregates (distinct); an aggregate with no versioned marker is
	// absent. No index serves an aggregate (docs/design.md §3.4): it is one read of
	// consumer's markers for all of aggregates, never one per aggregate.
	NewestVersions(ctx context.Context, consumer string, aggregates []string) (map[string]int64, error)
	PruneBatch(ctx context.Context, consumer string, olderThan time.Time, n int) (int64, error)
	// PruneCandidates counts, per recorded topic, the markers PruneBatch would delete for
	// the same consumer and bound (all consumers' when consumer is empty).
	PruneCandidates(ctx context.Context, consumer string, olderThan time.Time) ([]TopicCount, error)
	Forget(ctx context.Context, consumer string, keys []string) ([]MarkerRow, error)
	// Unremovable returns up to 10 of keys whose markers of consumer ("": every consumer's)
	// may not be deleted (Columns.Removable): Forget would leave them.
	Unremovable(ctx context.Context, consumer string, keys []string) ([]string, error)
	// Columns are the columns read: the mapping, with Absent for the columns the table lacks.
	Columns() Columns
	// Consumers returns up to limit distinct consumer names that have markers, in order,
	// without reading every row (ConsumersSQL).
	Consumers(ctx context.Context, limit int) ([]string, error)

	// IsTransient reports whether err is worth retrying (connection lost,
	// serialization failure, deadlock, database busy).
	IsTransient(err error) bool
}

// TopicCount is how many markers recorded one source topic ("" when none was recorded).
type TopicCount struct {
	Topic   string `json:"topic"`
	Markers int64  `json:"markers"`
}

// ConsumersSQL is the query of Driver.Consumers, the same in both dialects: the consumers of
// ConsumerWalk, $1 of them at most, so that naming the consumers costs as many probes as there
// are consumers, not a table scan. table and consumer are quoted identifiers.
func ConsumersSQL(table, consumer string) string {
	return ConsumerWalk(table, consumer) + `
SELECT consumer FROM c WHERE consumer IS NOT NULL LIMIT $1`
}

// ConsumerWalk is a WITH clause, the same in both dialects, that names c(consumer) the distinct
// consumers of table: a loose index scan over the primary key (consumer, event_id), one index
// probe per distinct consumer. Its last row is NULL, which no join on the consumer matches. A
// lookup of event ids across every consumer joins it to probe (consumer, event_id) for each.
// table and consumer are quoted identifiers; inside, the table is t, so that its own name
// never hides c.
func ConsumerWalk(table, consumer string) string {
	return fmt.Sprintf(`WITH RECURSIVE c(consumer) AS (
  SELECT (SELECT %[2]s FROM %[1]s AS t ORDER BY %[2]s LIMIT 1)
  UNION ALL
  SELECT (SELECT %[2]s FROM %[1]s AS t WHERE %[2]s > c.consumer ORDER BY %[2]s LIMIT 1) FROM c WHERE c.consumer IS NOT NULL
)`, table, consumer)
}

// ScanStrings reads one text column from every row of rows (pgx.Rows or *sql.Rows; the caller
// closes them and classifies the error).
func ScanStrings(rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}) ([]string, error) {
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// MarkedOf is Driver.Marked's answer from the keys a query found among keys: whether each of
// keys is among found, in keys' order.
func MarkedOf(keys, found []string) []bool {
	in := make(map[string]struct{}, len(found))
	for _, k := range found {
		in[k] = struct{}{}
	}
	out := make([]bool, len(keys))
	for i, k := range keys {
		_, out[i] = in[k]
	}
	return out
}

// Capabilities are the journals a driver keeps beside its markers, each an interface of its
// own: checked once, when the store opens (Check), and held from then on, so that no caller
// asserts them later.
type Capabilities struct {
	Journal Journal       // the replay journal
	Actions ActionJournal // the journal of prunes and forgets
	Groups  GroupJournal  // the journal of group skips, resets and undos
}

// Check returns d's capabilities, or an error naming every one d lacks: every driver keeps
// every journal, and a driver that does not is refused when the store opens, not when a
// command first reaches for it.
func Check(d Driver) (Capabilities, error) {
	var c Capabilities
	var ok bool
	var missing []string
	if c.Journal, ok = d.(Journal); !ok {
		missing = append(missing, "the replay journal (dedupdriver.Journal)")
	}
	if c.Actions, ok = d.(ActionJournal); !ok {
		missing = append(missing, "the marker action journal (dedupdriver.ActionJournal)")
	}
	if c.Groups, ok = d.(GroupJournal); !ok {
		missing = append(missing, "the group action journal (dedupdriver.GroupJournal)")
	}
	if len(missing) > 0 {
		return Capabilities{}, fmt.Errorf("the %s store driver lacks %s", d.Name(), strings.Join(missing, ", "))
	}
	return c, nil
}

// ClaimedPart is a caller's part of a claim's statement (ClaimWither): common table
// expressions that write the claimed events' effects beside the markers, in the same
// statement. With is one or more expressions ("name AS (…), …"); they may read fw_claimed,
// the keys (event_id) the claim inserted. Select, when set, is a query over them whose rows
// Row reads. Fallback, when set, is a query over them that returns a row when the statement
// must not be kept. Their positional parameters are $1… of Args.
type ClaimedPart struct {
	With     string
	Select   string
	Fallback string
	Args     []any
	// Row reads one row of Select: scan fills dest as Rows.Scan does.
	Row func(scan func(dest ...any) error) error
}

// ErrClaimFallback is ClaimWith's error when a marker existed already or the part's Fallback
// returned a row: the statement failed, and nothing of it was written.
var ErrClaimFallback = errors.New("the claim's statement fell back: an event was claimed before, or its part refused the batch")

// ClaimWither is implemented by a driver that can claim markers and run a ClaimedPart in one
// statement (pgdriver), in tx or, when tx is nil, in a transaction of its own. The statement
// fails with ErrClaimFallback unless every marker is inserted and the part's Fallback returns
// no row.
type ClaimWither interface {
	ClaimWith(ctx context.Context, tx Tx, consumer string, markers []Marker, part ClaimedPart) error
}
