package dedup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
)

// Marker is one event to claim; see dedupdriver.Marker for how empty fields
// are stored.
type Marker = dedupdriver.Marker

// MarkerRow is a stored marker as the queries return it.
type MarkerRow = dedupdriver.MarkerRow

// Cursor is a position in List's newest-first order.
type Cursor = dedupdriver.Cursor

// ListFilter selects markers for List; zero fields do not filter.
type ListFilter = dedupdriver.ListFilter

// StatsFilter selects consumers for Stats; Window defaults to 24h.
type StatsFilter = dedupdriver.StatsFilter

// ConsumerStats are one consumer's figures in Stats.
type ConsumerStats = dedupdriver.ConsumerStats

// Sizes are the marker table's on-disk sizes (Postgres only).
type Sizes = dedupdriver.Sizes

// Defaults for the queries.
const (
	DefaultListLimit   = 100
	DefaultStatsWindow = 24 * time.Hour
	DefaultPruneBatch  = 10_000
	// lookupChunk bounds the ids sent in one statement by Lookup and Forget.
	lookupChunk = 10_000
)

// Store is the durable marker store of one table. It is safe for concurrent
// use; transactions (Tx) are not.
type Store struct {
	drv dedupdriver.Driver
	// caps are drv's journals, checked when the store opened.
	caps          dedupdriver.Capabilities
	names         dedupdriver.Names
	customColumns bool
	// preset is the other library's table the store reads (Options.Preset), or nil.
	preset *Preset
}

// Open validates opts, picks the driver from dsn, connects and pings.
//
// dsn is sqlite:PATH or sqlite://PATH for SQLite; postgres://…,
// postgresql://… or a key=value pgx connection string for Postgres.
//
// Failures, in the order they are checked, before anything touches the
// network: *InvalidIdentifierError (opts), *InvalidDSNError (dsn); then
// *ConnectError when the database cannot be reached or refuses the
// credentials; *NoStoreError when an SQLite file does not exist and
// opts.Create is not set (nothing is then created). Connecting is bounded by the DSN's connect_timeout or else
// opts.ConnectTimeout (5s). Open does not check the schema version (so that
// `fieldwork db migrate` can run on an empty database): see Verify.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	names, err := opts.names()
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	kind, rest, err := splitDSN(dsn)
	if err != nil {
		return nil, err
	}
	preset, _ := presetOf(opts.Preset) // names() checked it
	if kind == driverSQLite && (preset != nil || shaped(names.Columns)) {
		return nil, &InvalidInputError{Field: "store", Index: -1, Value: "sqlite", Reason: "the tables of other libraries (--preset, a column a table lacks) are read on PostgreSQL"}
	}
	cfg := dedupdriver.Config{DSN: rest, Names: names, ConnectTimeout: opts.ConnectTimeout, Password: opts.Password, Create: opts.Create}
	var drv dedupdriver.Driver
	switch kind {
	case driverPostgres:
		drv, err = pgdriver.Open(ctx, cfg)
	case driverSQLite:
		drv, err = sqlitedriver.Open(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	caps, err := dedupdriver.Check(drv)
	if err != nil {
		_ = drv.Close()
		return nil, err
	}
	return &Store{drv: drv, caps: caps, names: names, customColumns: names.Columns != DefaultColumns, preset: preset}, nil
}

// shaped reports whether c says more than column names: a column absent, a unit, a path, a
// status, a done or removable column.
func shaped(c ColumnNames) bool {
	plain := c
	plain.ProcessedAtUnit, plain.EventIDPath, plain.Done, plain.Status, plain.StatusDone, plain.StatusFailed, plain.Removable = "", "", "", "", "", "", ""
	return plain != c || slices.Contains([]string{c.Consumer, c.Topic, c.Partition, c.Offset, c.AggregateID, c.AggregateVersion}, dedupdriver.Absent)
}

// Preset is the other library's table the store reads, or nil for a table of fieldwork's shape.
func (s *Store) Preset() *Preset { return s.preset }

// Found says how the table was found when it was not named (a preset's table named after an
// endpoint, Preset.Prefixed): "the one table of schema S named T or ending in _T"; "" when the
// table was named.
func (s *Store) Found() string {
	if !s.names.Prefixed {
		return ""
	}
	return fmt.Sprintf("the one table of schema %s named %s or ending in _%s", s.names.Schema, s.names.Table, s.names.Table)
}

// JournalSchema is the schema of the store's journal and migrations: fieldwork's own, also
// beside another library's table (a preset's), whatever --schema names.
func (s *Store) JournalSchema() string { return s.names.JournalSchema() }

// Absent names the logical columns (consumer, topic, partition, offset, aggregate_id,
// aggregate_version) the table lacks: read as NULL, the consumer as the table's name.
func (s *Store) Absent() []string {
	c := s.drv.Columns()
	var out []string
	for _, f := range []struct{ logical, name string }{
		{"consumer", c.Consumer}, {"topic", c.Topic}, {"partition", c.Partition}, {"offset", c.Offset},
		{"aggregate_id", c.AggregateID}, {"aggregate_version", c.AggregateVersion},
	} {
		if f.name == dedupdriver.Absent {
			out = append(out, f.logical)
		}
	}
	return out
}

// HasFailed reports whether the table keeps failed rows apart (ListFilter.Failed).
func (s *Store) HasFailed() bool { return s.drv.Columns().StatusFailed != "" }

// Close releases the connections. Open transactions must be ended first.
func (s *Store) Close() error { return s.drv.Close() }

// Driver is "postgres" or "sqlite".
func (s *Store) Driver() string { return s.drv.Name() }

// Table is the quoted, qualified marker table, as the SQL names it.
func (s *Store) Table() string { return s.drv.Table() }

// TableLabel is the marker table as reports and JSON name it: Table without SQL's quotes
// (fieldwork.processed_events on PostgreSQL, fieldwork_processed_events on SQLite).
func (s *Store) TableLabel() string { return unquoteTable(s.drv.Table()) }

// VersionsTable is the quoted, qualified table of the version guard beside the marker table
// (ClaimVerdicts): the highest version claimed per consumer and aggregate.
func (s *Store) VersionsTable() string { return s.drv.VersionsTable() }

// Begin opens a transaction. On SQLite it takes the database's write lock at
// once (BEGIN IMMEDIATE), waiting up to the busy timeout for another writer.
func (s *Store) Begin(ctx context.Context) (*Tx, error) {
	tx, err := s.drv.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin transaction on %s: %w", s.Table(), err)
	}
	return &Tx{store: s, tx: tx}, nil
}

// InTx runs fn in a transaction: it commits when fn returns nil and rolls
// back when fn returns an error or panics (the panic is re-raised). When the
// commit fails nothing fn did is durable, except when the commit reached the
// database but its acknowledgement was lost with the connection.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	tx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *Store) driverTx(tx *Tx) (dedupdriver.Tx, error) {
	if tx == nil || tx.store != s {
		return nil, ErrForeignTx
	}
	return tx.tx, nil
}

// Claim marks events as processed by consumer inside tx and returns the ids
// that were not marked before (fresh), in the order of events. The caller
// then applies exactly the fresh events in the same transaction.
//
// The batch is deduplicated in memory first (the first occurrence of an id
// wins), then inserted with one statement (on SQLite one per 4,000 markers)
// that skips existing markers: a marker that exists never raises an error,
// so the transaction stays usable. An empty batch runs no SQL.
//
// Guarantees under failure: the markers become durable only with the
// commit of tx; after a rollback (or a failed commit) none of them exists.
// When a concurrent transaction has inserted the same (consumer, id) and not
// yet committed, Claim waits for it: if it commits, the id is not fresh
// here; if it rolls back, the id is fresh here. So of any number of
// concurrent claimers exactly one gets each id. An *InvalidInputError (bad
// consumer or id) comes before any SQL and leaves tx untouched; any other
// error leaves tx in an unknown state: roll it back.
func (s *Store) Claim(ctx context.Context, tx *Tx, consumer string, events []Marker) ([]string, error) {
	verdicts, err := s.ClaimVerdicts(ctx, tx, consumer, events, false)
	if err != nil {
		return nil, err
	}
	fresh := make([]string, 0, len(events))
	for i, v := range verdicts {
		if v == Fresh {
			fresh = append(fresh, events[i].EventID)
		}
	}
	return fresh, nil
}

// Verdict is what a claim found for one event.
type Verdict int

const (
	// Fresh: not processed by the consumer before; apply it.
	Fresh Verdict = iota
	// Duplicate: processed already, or earlier in the same claim; do nothing.
	Duplicate
	// Stale (the version guard only): marked now, with outcome stale, and not to be applied:
	// the consumer already has this version of the event's aggregate or a newer one.
	Stale
)

// ClaimVerdicts is Claim returning a verdict for each of events, in their order. With guard it
// is also the version guard: each event that is Versioned and has an AggregateID is compared
// with the highest version of its aggregate the consumer claimed before (in a committed
// transaction, in tx, or earlier in events: their order is the offset order) and is Stale when
// its version is not higher. A stale event is marked all the same, its marker's outcome
// OutcomeStale, so that it is never handled; the highest version stays stored per consumer and
// aggregate (the table <marker table>_versions, migration 011), raised by the same
// transaction. The guard costs one statement per batch beside the claim's (on SQLite one per
// chunk), run first: it locks the batch's aggregates, in order, so that a concurrent
// transaction guarding one of them is waited for and what it committed counts. Without guard
// the claim runs exactly Claim's one statement.
func (s *Store) ClaimVerdicts(ctx context.Context, tx *Tx, consumer string, events []Marker, guard bool) ([]Verdict, error) {
	dtx, err := s.driverTx(tx)
	if err != nil {
		return nil, fmt.Errorf("claim batch for %q: %w", consumer, err)
	}
	order, sorted, err := claimBatch(consumer, events)
	if err != nil || len(events) == 0 {
		return nil, err
	}
	var stale map[string]bool
	if guard {
		if stale, err = s.guard(ctx, dtx, consumer, events, order); err != nil {
			return nil, err
		}
		for i := range sorted {
			if stale[sorted[i].EventID] {
				sorted[i].Outcome = OutcomeStale
			}
		}
	}
	inserted, err := s.drv.Claim(ctx, dtx, consumer, sorted)
	if err != nil {
		return nil, fmt.Errorf("claim batch of %d for %q in %s: %w", len(sorted), consumer, s.Table(), err)
	}
	got := make(map[string]bool, len(inserted))
	for _, k := range inserted {
		got[k] = true
	}
	out := make([]Verdict, len(events))
	next := 0 // order holds the first occurrences, in the order of events
	for i := range events {
		out[i] = Duplicate
		if next < len(order) && order[next].index == i {
			k := order[next].key
			switch {
			case got[k] && stale[k]:
				out[i] = Stale
			case got[k]:
				out[i] = Fresh
			}
			next++
		}
	}
	return out, nil
}

// claimBatch checks a claim's consumer and its events' keys and lays the events out for the
// driver (dedupeMarkers): their first occurrences in the order of events, and one marker per
// key sorted by key. No events give nothing.
func claimBatch(consumer string, events []Marker) (order []keyedMarker, sorted []Marker, err error) {
	if err := checkText("consumer", -1, consumer, MaxConsumerBytes); err != nil {
		return nil, nil, fmt.Errorf("claim batch for %q: %w", consumer, err)
	}
	if len(events) == 0 {
		return nil, nil, nil
	}
	if order, sorted, err = dedupeMarkers(events); err != nil {
		return nil, nil, fmt.Errorf("claim batch for %q: %w", consumer, err)
	}
	return order, sorted, nil
}

// ClaimedPart is a caller's part of a claim's statement (Store.ClaimWith): common table
// expressions that write the claimed events' effects in the statement that inserts their
// markers. With is one or more expressions ("name AS (…), …"), which may read fw_claimed, the
// storage keys (event_id) the claim inserted; Select, when set, is a query over them whose
// rows Row reads; Fallback, when set, a query over them that returns a row when the statement
// must not be kept. Their positional parameters are $1… of Args.
type ClaimedPart = dedupdriver.ClaimedPart

// ErrNoClaimWith is returned by ClaimWith on a driver that cannot run a caller's part in the
// claim's statement (SQLite): claim with ClaimVerdicts and write the effects after.
var ErrNoClaimWith = errors.New("the store's driver cannot write effects in the claim's statement")

// ErrClaimFallback is ClaimWith's error when an event was claimed before or the part's
// Fallback returned a row: nothing of the statement was written.
var ErrClaimFallback = dedupdriver.ErrClaimFallback

// ClaimWith claims events as Claim does and runs part in the same statement, so that the
// markers and the effects part writes cost one round trip; with a nil tx the statement is a
// transaction of its own (no BEGIN, no COMMIT). It keeps the statement only when every event
// is fresh and part's Fallback returns no row: otherwise it fails with ErrClaimFallback, having
// written nothing, and the caller claims with ClaimVerdicts (in a transaction) instead. A
// marker's Outcome is written as in ClaimVerdicts; the version guard is not run. Errors are
// ClaimVerdicts'; an error from part's SQL is returned as the driver gave it.
func (s *Store) ClaimWith(ctx context.Context, tx *Tx, consumer string, events []Marker, part ClaimedPart) error {
	var dtx dedupdriver.Tx
	if tx != nil {
		var err error
		if dtx, err = s.driverTx(tx); err != nil {
			return fmt.Errorf("claim batch for %q: %w", consumer, err)
		}
	}
	cw, ok := s.drv.(dedupdriver.ClaimWither)
	if !ok {
		return ErrNoClaimWith
	}
	order, sorted, err := claimBatch(consumer, events)
	if err != nil || len(events) == 0 {
		return err
	}
	if len(order) != len(events) { // a repeated id: not every event can be fresh
		return ErrClaimFallback
	}
	if err := cw.ClaimWith(ctx, dtx, consumer, sorted, part); err != nil {
		return fmt.Errorf("claim batch of %d for %q in %s with its effects: %w", len(sorted), consumer, s.Table(), err)
	}
	return nil
}

// guard is the version guard of ClaimVerdicts: it raises the stored versions of the aggregates
// of events' first occurrences (order, from dedupeMarkers: a repeat is a duplicate, whatever
// its version) and returns the keys of the stale events.
func (s *Store) guard(ctx context.Context, dtx dedupdriver.Tx, consumer string, events []Marker, order []keyedMarker) (map[string]bool, error) {
	if !s.recordsOutcomes() {
		return nil, fmt.Errorf("claim batch for %q: the version guard needs fieldwork's own marker table, not %s", consumer, s.Table())
	}
	type versioned struct {
		key, agg string
		version  int64
	}
	var evs []versioned
	highest := map[string]int64{}
	for _, o := range order {
		m := events[o.index]
		if !m.Versioned || m.AggregateID == "" {
			continue
		}
		evs = append(evs, versioned{o.key, m.AggregateID, m.AggregateVersion})
		if v, ok := highest[m.AggregateID]; !ok || m.AggregateVersion > v {
			highest[m.AggregateID] = m.AggregateVersion
		}
	}
	if len(evs) == 0 {
		return nil, nil
	}
	raise := make([]dedupdriver.AggregateVersion, 0, len(highest))
	for agg, v := range highest {
		raise = append(raise, dedupdriver.AggregateVersion{AggregateID: agg, Version: v})
	}
	slices.SortFunc(raise, func(a, b dedupdriver.AggregateVersion) int { return strings.Compare(a.AggregateID, b.AggregateID) })
	have, err := s.drv.RaiseVersions(ctx, dtx, consumer, raise)
	if err != nil {
		return nil, fmt.Errorf("guard the versions of %d aggregates for %q: %w", len(raise), consumer, err)
	}
	stale := map[string]bool{}
	for _, e := range evs {
		if v, ok := have[e.agg]; ok && e.version <= v {
			stale[e.key] = true
			continue
		}
		have[e.agg] = e.version
	}
	return stale, nil
}

// Unclaim deletes consumer's marker for eventID inside tx and reports
// whether there was one. Rolling back to a savepoint taken after Claim does
// not remove a marker that Claim inserted before it; Unclaim does, so that a
// consumer can leave a dead-lettered event unmarked. Like Claim, it takes
// effect only with the commit of tx. When the version guard raised the event's aggregate to
// the event's version, Unclaim puts back the version the aggregate had before that claim, so
// that the event, read again (replayed), is not stale for its own version.
func (s *Store) Unclaim(ctx context.Context, tx *Tx, consumer, eventID string) (bool, error) {
	dtx, err := s.driverTx(tx)
	if err == nil {
		err = errors.Join(checkText("consumer", -1, consumer, MaxConsumerBytes), ValidateEventID(eventID))
	}
	if err != nil {
		return false, fmt.Errorf("unclaim %q for %q: %w", eventID, consumer, err)
	}
	ok, agg, err := s.drv.Unclaim(ctx, dtx, consumer, EventKey(eventID))
	if err != nil {
		return false, fmt.Errorf("unclaim %q for %q in %s: %w", eventID, consumer, s.Table(), err)
	}
	if agg != nil && s.recordsOutcomes() {
		if err := s.drv.LowerVersion(ctx, dtx, consumer, *agg); err != nil {
			return false, fmt.Errorf("unclaim %q for %q: put back the version of aggregate %q: %w", eventID, consumer, agg.AggregateID, err)
		}
	}
	return ok, nil
}

// Get returns the markers of eventID, one per consumer that processed it
// (only consumer's when consumer is not empty), ordered by consumer. No
// marker is an empty result, not an error.
func (s *Store) Get(ctx context.Context, eventID, consumer string) ([]MarkerRow, error) {
	if err := ValidateEventID(eventID); err != nil {
		return nil, fmt.Errorf("get markers of %q: %w", eventID, err)
	}
	rows, err := s.drv.Get(ctx, EventKey(eventID), consumer)
	if err != nil {
		return nil, fmt.Errorf("get markers of %q in %s: %w", eventID, s.Table(), err)
	}
	return rows, nil
}

// ListPage is one page of List. Next is set when more rows may follow; pass
// it as ListFilter.Before to read them.
type ListPage struct {
	Rows []MarkerRow
	Next *Cursor
}

// List returns markers newest first (processed_at, then consumer, then
// event_id, descending), at most f.Limit of them (default 100).
func (s *Store) List(ctx context.Context, f ListFilter) (ListPage, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultListLimit
	}
	if f.Failed && !s.HasFailed() {
		return ListPage{}, &InvalidInputError{Field: "status", Index: -1, Value: "failed", Reason: "the table " + s.Table() + " keeps no failed rows: only " + s.presetLibrary() + "processed ones"}
	}
	if f.AggregateID != "" && slices.Contains(s.Absent(), "aggregate_id") {
		return ListPage{}, &InvalidInputError{Field: "aggregate", Index: -1, Value: f.AggregateID, Reason: "the table " + s.Table() + " has no aggregate column to filter by"}
	}
	limit := f.Limit
	f.Limit++ // one more tells whether there is a next page
	rows, err := s.drv.List(ctx, f)
	if err != nil {
		return ListPage{}, fmt.Errorf("list markers in %s: %w", s.Table(), err)
	}
	page := ListPage{Rows: rows}
	if len(rows) > limit {
		page.Rows = rows[:limit]
		last := page.Rows[limit-1]
		page.Next = &Cursor{Consumer: last.Consumer, EventID: last.EventID}
		if last.ProcessedAt != nil {
			page.Next.ProcessedAt = *last.ProcessedAt
		}
	}
	return page, nil
}

// Stats are the figures of `fieldwork processed stats`.
type Stats struct {
	Window    time.Duration
	Consumers []ConsumerStats
	// Sizes is nil on SQLite.
	Sizes *Sizes
}

// Stats returns, per consumer (ordered by name), the marker count, the first
// and last processed_at, and the markers per hour over the window ending
// now (default 24h); on Postgres also the table and index sizes. It reads the
// whole table (or the consumer's part of it).
func (s *Store) Stats(ctx context.Context, f StatsFilter) (Stats, error) {
	if f.Window <= 0 {
		f.Window = DefaultStatsWindow
	}
	cs, sizes, err := s.drv.Stats(ctx, f, time.Now())
	if err != nil {
		return Stats{}, fmt.Errorf("stats of %s: %w", s.Table(), err)
	}
	return Stats{Window: f.Window, Consumers: cs, Sizes: sizes}, nil
}

// Lookup returns consumer's markers among eventIDs, keyed by the ids as
// given; an id without a marker is absent from the map. It sends one query
// per 10,000 distinct ids; callers checking millions of events send chunks
// (of about 1,000) and keep memory bounded.
func (s *Store) Lookup(ctx context.Context, consumer string, eventIDs []string) (map[string]MarkerRow, error) {
	byKey := map[string]MarkerRow{}
	batch, err := s.byChunks(consumer, eventIDs, func(chunk []string) error {
		rows, err := s.drv.Lookup(ctx, consumer, chunk)
		if err != nil {
			return err
		}
		for _, r := range rows {
			byKey[r.EventID] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]MarkerRow, len(byKey))
	for i, id := range eventIDs {
		if r, ok := byKey[batch.keyOf(i)]; ok {
			out[id] = r
		}
	}
	return out, nil
}

// Marked reports, for each of eventIDs in the order given, whether consumer has a marker of
// it: Lookup reading only that the marker is there, a probe per id as Lookup's, for a check of
// millions of events. One query per 10,000 distinct ids.
func (s *Store) Marked(ctx context.Context, consumer string, eventIDs []string) ([]bool, error) {
	var found []bool // of the keys, in their order
	batch, err := s.byChunks(consumer, eventIDs, func(chunk []string) error {
		marked, err := s.drv.Marked(ctx, consumer, chunk)
		if err != nil {
			return err
		}
		if len(marked) != len(chunk) {
			return fmt.Errorf("the store answered for %d of %d ids", len(marked), len(chunk))
		}
		found = append(found, marked...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(eventIDs))
	for i, k := range batch.of {
		out[i] = found[k]
	}
	return out, nil
}

// NewestVersions returns, by aggregate, the highest version among consumer's markers of each
// of aggregates (an aggregate with no versioned marker is absent): one read of the consumer's
// markers for all of them, as no index serves an aggregate (docs/design.md §3.4).
func (s *Store) NewestVersions(ctx context.Context, consumer string, aggregates []string) (map[string]int64, error) {
	if err := checkText("consumer", -1, consumer, MaxConsumerBytes); err != nil {
		return nil, err
	}
	if absent := s.Absent(); slices.Contains(absent, "aggregate_id") || slices.Contains(absent, "aggregate_version") {
		return nil, &InvalidInputError{Field: "aggregate", Index: -1, Reason: "the table " + s.Table() + " has no aggregate version to compare"}
	}
	if len(aggregates) == 0 {
		return map[string]int64{}, nil
	}
	out, err := s.drv.NewestVersions(ctx, consumer, aggregates)
	if err != nil {
		return nil, fmt.Errorf("read the aggregates' versions in %s: %w", s.Table(), err)
	}
	return out, nil
}

// byChunks is what Lookup and Marked share: consumer and eventIDs checked, and their distinct
// storage keys, sorted (keysOf), handed to each lookupChunk at a time, in order; it returns
// them, with each id's. each's error ends it, wrapped.
func (s *Store) byChunks(consumer string, eventIDs []string, each func(chunk []string) error) (keyedIDs, error) {
	if err := checkText("consumer", -1, consumer, MaxConsumerBytes); err != nil {
		return keyedIDs{}, fmt.Errorf("look up markers for %q: %w", consumer, err)
	}
	batch, err := keysOf(eventIDs)
	if err != nil {
		return keyedIDs{}, fmt.Errorf("look up markers for %q: %w", consumer, err)
	}
	keys := batch.keys
	for from := 0; from < len(keys); from += lookupChunk {
		chunk := keys[from:min(from+lookupChunk, len(keys))]
		if err := each(chunk); err != nil {
			return keyedIDs{}, fmt.Errorf("look up %d markers for %q in %s: %w", len(chunk), consumer, s.Table(), err)
		}
	}
	return batch, nil
}

// OutcomeStale is a marker's outcome when its consumer marked the event but deliberately did
// not apply it (older than what it already had: consumer.Stale). A marker without an outcome
// was applied, or written before the store recorded outcomes.
const OutcomeStale = dedupdriver.OutcomeStale

// recordsOutcomes reports whether the store's table is fieldwork's own, which has the outcome
// column once migrated: another library's table (a preset) or one read with columns of its
// own never records one.
func (s *Store) recordsOutcomes() bool { return s.preset == nil && !s.customColumns }

// SetOutcome records outcome (OutcomeStale) on consumer's markers of eventIDs inside tx: the
// markers tx claimed for events the handler did not apply. On a table that does not record
// outcomes (a preset, custom columns) it does nothing; on one not migrated to the outcome
// column it fails (and leaves tx to be rolled back): the consumer verifies the store first.
func (s *Store) SetOutcome(ctx context.Context, tx *Tx, consumer string, eventIDs []string, outcome string) error {
	dtx, err := s.driverTx(tx)
	if err != nil {
		return fmt.Errorf("record outcome %s for %q: %w", outcome, consumer, err)
	}
	if len(eventIDs) == 0 || !s.recordsOutcomes() {
		return nil
	}
	batch, err := keysOf(eventIDs)
	if err != nil {
		return fmt.Errorf("record outcome %s for %q: %w", outcome, consumer, err)
	}
	keys := batch.keys
	for start := 0; start < len(keys); start += lookupChunk {
		chunk := keys[start:min(start+lookupChunk, len(keys))]
		if err := s.drv.SetOutcome(ctx, dtx, consumer, chunk, outcome); err != nil {
			return fmt.Errorf("record outcome %s of %d markers for %q in %s: %w", outcome, len(chunk), consumer, s.Table(), err)
		}
	}
	return nil
}

// Outcomes returns the outcomes recorded on consumer's markers among eventIDs, keyed by the
// ids as given; an id whose marker has none (applied, or not known), or that has no marker,
// is absent. A table that records no outcomes (a preset, custom columns, a table not
// migrated to the outcome column) gives an empty map, not an error.
func (s *Store) Outcomes(ctx context.Context, consumer string, eventIDs []string) (map[string]string, error) {
	out := map[string]string{}
	if len(eventIDs) == 0 || !s.recordsOutcomes() {
		return out, nil
	}
	batch, err := keysOf(eventIDs)
	if err != nil {
		return nil, fmt.Errorf("look up outcomes for %q: %w", consumer, err)
	}
	keys, byKey := batch.keys, map[string]string{}
	for start := 0; start < len(keys); start += lookupChunk {
		chunk := keys[start:min(start+lookupChunk, len(keys))]
		m, err := s.drv.Outcomes(ctx, consumer, chunk)
		if errors.Is(err, dedupdriver.ErrNoOutcome) {
			return map[string]string{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("look up outcomes of %d markers for %q in %s: %w", len(chunk), consumer, s.Table(), err)
		}
		maps.Copy(byKey, m)
	}
	for i, id := range eventIDs {
		if o, ok := byKey[batch.keyOf(i)]; ok {
			out[id] = o
		}
	}
	return out, nil
}

// Prune deletes the markers with processed_at strictly before olderThan
// (only consumer's when consumer is not empty), batchSize rows at a time
// (default 10,000), each batch in its own transaction, and calls progress
// (when not nil) with the running total after each batch.
//
// Under failure or cancellation the batches already deleted stay deleted:
// the count returned with the error is how many rows are gone. Whether a
// window is safe to prune (the replay horizon) is the caller's decision.
func (s *Store) Prune(ctx context.Context, consumer string, olderThan time.Time, batchSize int, progress func(deleted int64)) (int64, error) {
	if batchSize <= 0 {
		batchSize = DefaultPruneBatch
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("prune %s after %d markers: %w", s.Table(), total, err)
		}
		n, err := s.drv.PruneBatch(ctx, consumer, olderThan.UTC(), batchSize)
		if err != nil {
			return total, fmt.Errorf("prune %s after %d markers: %w", s.Table(), total, err)
		}
		total += n
		if progress != nil && n > 0 {
			progress(total)
		}
		if n < int64(batchSize) {
			return total, nil
		}
	}
}

// TopicCount is how many markers recorded one source topic ("" when none was recorded).
type TopicCount = dedupdriver.TopicCount

// PruneCandidates counts, per recorded source topic, the markers Prune would delete for the
// same consumer and bound, so that a caller can check the topics' retention (the replay
// horizon) before pruning. One GROUP BY on the processed_at index.
func (s *Store) PruneCandidates(ctx context.Context, consumer string, olderThan time.Time) ([]TopicCount, error) {
	out, err := s.drv.PruneCandidates(ctx, consumer, olderThan.UTC())
	if err != nil {
		return nil, fmt.Errorf("find the source topics of the markers in %s: %w", s.Table(), err)
	}
	return out, nil
}

// Forget deletes consumer's markers of eventIDs (every consumer's when
// consumer is empty) in one transaction and returns the rows it removed, so
// that the events are processed again when redelivered or replayed. Either
// all the listed markers are removed or, on error, none.
func (s *Store) Forget(ctx context.Context, consumer string, eventIDs []string) ([]MarkerRow, error) {
	batch, err := keysOf(eventIDs)
	if err != nil {
		return nil, fmt.Errorf("forget markers for %q: %w", consumer, err)
	}
	keys := batch.keys
	if len(keys) == 0 {
		return nil, nil
	}
	if err := s.checkForget(ctx, consumer, keys); err != nil {
		return nil, err
	}
	rows, err := s.drv.Forget(ctx, consumer, keys)
	if err != nil {
		return nil, fmt.Errorf("forget %d markers for %q in %s: %w", len(keys), consumer, s.Table(), err)
	}
	// By consumer and event id, as the primary key orders them: the order a DELETE returns
	// its rows in is the plan's.
	slices.SortFunc(rows, func(a, b MarkerRow) int {
		return cmp.Or(strings.Compare(a.Consumer, b.Consumer), strings.Compare(a.EventID, b.EventID))
	})
	return rows, nil
}

// CheckForget refuses, with a usage error saying why, to forget markers of a table that makes
// it unsafe: a preset whose library does not skip by its rows (CAP), or markers whose outgoing
// messages are not yet delivered (MassTransit's Delivered, NServiceBus's Dispatched): deleting
// them would lose those messages.
func (s *Store) CheckForget(ctx context.Context, consumer string, eventIDs []string) error {
	batch, err := keysOf(eventIDs)
	if err != nil && (s.preset == nil || s.preset.NoForget == "") {
		return err // a preset's refusal comes before the ids' problems
	}
	return s.checkForget(ctx, consumer, batch.keys)
}

// checkForget is CheckForget of the event ids' keys (keysOf).
func (s *Store) checkForget(ctx context.Context, consumer string, keys []string) error {
	if s.preset != nil && s.preset.NoForget != "" {
		return &InvalidInputError{Field: "forget", Index: -1, Value: s.preset.Name, Reason: "refusing to forget in " + s.Table() + ": " + s.preset.NoForget}
	}
	if len(keys) == 0 {
		return nil
	}
	blocked, err := s.drv.Unremovable(ctx, consumer, keys)
	if err != nil {
		return fmt.Errorf("forget markers in %s: %w", s.Table(), err)
	}
	if len(blocked) > 0 {
		return &InvalidInputError{Field: "forget", Index: -1, Value: strings.Join(blocked, ", "),
			Reason: fmt.Sprintf("refusing to forget in %s: the outgoing messages of these markers are not yet delivered (%s is not set), and deleting them would lose those messages; forget them once they are delivered",
				s.Table(), s.drv.Columns().Removable)}
	}
	return nil
}

// presetLibrary is "LIBRARY " of the store's preset, or "".
func (s *Store) presetLibrary() string {
	if s.preset == nil {
		return ""
	}
	return s.preset.Library + " "
}

// consumersProbed bounds the consumers UnknownConsumer reads: past that many it cannot
// tell cheaply, and says nothing.
const consumersProbed = 1000

// consumersNamed is how many consumers UnknownConsumer's message names.
const consumersNamed = 20

// Consumers returns up to limit names of consumers that have markers, in order, with one
// index probe per consumer (not a table scan).
func (s *Store) Consumers(ctx context.Context, limit int) ([]string, error) {
	names, err := s.drv.Consumers(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("consumers in %s: %w", s.Table(), err)
	}
	return names, nil
}

// UnknownConsumer explains a consumer that has no markers at all, usually a mistyped
// --consumer (docs/design.md §4): "" when consumer has markers (or the table holds more
// than consumersProbed consumers, too many to tell cheaply), else a sentence naming the
// consumers that do, for a warning on stderr.
func (s *Store) UnknownConsumer(ctx context.Context, consumer string) (string, error) {
	names, err := s.Consumers(ctx, consumersProbed)
	if err != nil {
		return "", err
	}
	if len(names) >= consumersProbed || slices.Contains(names, consumer) {
		return "", nil
	}
	if len(names) == 0 {
		return fmt.Sprintf("consumer %q has no markers in %s: the table holds no markers at all", consumer, s.Table()), nil
	}
	shown := names[:min(len(names), consumersNamed)]
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return fmt.Sprintf("consumer %q has no markers in %s; consumers with markers: %s%s", consumer, s.Table(), strings.Join(shown, ", "), more), nil
}
