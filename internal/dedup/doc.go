// Package dedup is fieldwork's durable deduplication core: the store of
// processed-event markers (consumer, event_id) that a consumer writes in its
// own database, in the same transaction as its side effects (docs/design.md §1, §3.4).
//
// # Layout (the driver seam)
//
// Following River, the core is driver-agnostic and each database has a
// driver package with its own SQL and migrations:
//
//	internal/dedup                   Store, Tx, Options, typed errors, Open (picks the driver from the DSN)
//	internal/dedup/dedupdriver       the Driver interface and the shared types (imported by both sides)
//	internal/dedup/pgdriver          PostgreSQL, pgx/v5 + pgxpool (production)
//	internal/dedup/sqlitedriver      SQLite, modernc.org/sqlite via database/sql (embedded, no cgo)
//	internal/dedup/dedupconformance  the conformance suite both drivers' tests run
//
// Drivers import only dedupdriver; dedup imports the drivers, so Open can
// choose one explicitly from the DSN without a registry: sqlite:PATH or
// sqlite://PATH → SQLite; postgres://, postgresql:// or key=value → Postgres.
//
// # Using it
//
//	st, err := dedup.Open(ctx, dsn, dedup.Options{})   // *InvalidIdentifierError, *InvalidDSNError, *ConnectError, *NoStoreError
//	err = st.Verify(ctx)                                // ErrNotMigrated, *VersionMismatchError
//	err = st.InTx(ctx, func(tx *dedup.Tx) error {
//		fresh, err := st.Claim(ctx, tx, "billing", markers)
//		// apply exactly the fresh events with tx.Exec / tx.Pgx() / tx.SQL(),
//		// each under tx.Savepoint so one failure rolls back only itself
//		return err
//	})
//
// # Decisions
//
// Names. Schema (default "fieldwork"), table (default "processed_events")
// and every mapped column are validated against
// ^[A-Za-z_][A-Za-z0-9_]{0,62}$ before any SQL runs and are double-quoted in
// the SQL; values are always bind parameters. Migration SQL is templated
// with those validated names only.
//
// SQLite naming. SQLite has no schemas, so the schema becomes a table-name
// prefix: fieldwork_processed_events, fieldwork_fieldwork_migrations; the
// schema "main" means no prefix (for existing tables). Details in the
// sqlitedriver package documentation.
//
// Migrations. One migration line for every driver (dedupdriver.Line): version N is the
// same schema change on PostgreSQL and on SQLite, so a store's version means one thing. Each
// driver embeds one numbered .sql file per step (pgdriver/migrations,
// sqlitedriver/migrations); a step a driver needs nothing for is a file of comments saying
// why (SQLite's 005_replay_packed_sends, PostgreSQL's 010_sqlite_microsecond_times), recorded
// as applied like any other. They are recorded in the table fieldwork_migrations of the
// schema, keyed by (line, version) where line is the marker table's name, so several stores
// can share a schema. All pending migrations apply in one transaction under a lock. SQLite
// stores made before the one line recorded their steps from replay_record_identity on one
// version lower: the driver reads them in the line's numbering and renumbers the table when
// it migrates (sqlitedriver/legacy.go).
//
// Capabilities. The journals a driver keeps (dedupdriver.Journal, ActionJournal,
// GroupJournal) are checked once, when the store opens (dedupdriver.Check): a driver without
// one is refused there, naming what it lacks.
//
// Long event ids. PostgreSQL cannot index a key of more than about 2.7 KB,
// so ids longer than MaxInlineEventIDBytes (1 KB) are stored as
// "fw-sha256:<hex>" (EventKey), on both drivers. Callers always pass the
// original ids; only rows read back show the key.
//
// Lock order. Claim sorts each batch by key before inserting, so concurrent
// claimers of overlapping batches take row locks in the same order and wait
// for each other rather than deadlock.
//
// Replay journal. Migrations 002 to 006 add the journal of `fieldwork
// replay` (journal.go): replay_runs (who, why, the selection as JSON, source
// topics, target, status, counts, times, the owning process),
// replay_checkpoints (per source partition: the inclusive range fixed at
// plan time and the acknowledged-through offset of its contiguous done
// prefix) and replay_send_batches (every acknowledged send: source
// topic/partition/offset, event id, target topic/partition/offset, ack
// time). Sends are stored a batch per row (one per flush, source partition
// and target topic): a row per record capped a replay at the database's
// insert rate. The per-record positions are parallel arrays (SQLite: JSON);
// on PostgreSQL, from migration 005, one packed value
// (dedupdriver.SendBatch.Pack) that the database stores uncompressed and never
// parses (encoding the arrays was the journal's largest cost on both sides),
// rows written before keeping their arrays. replay_target_counts keeps the
// sends per run and target partition, added to with every flush. The tables belong to
// the schema and are shared by its marker tables, so the migrations create
// only what is missing. Progress (sends, checkpoints, counts, status) is
// written in one transaction per flush, and only by the process that owns
// the run; ReplayedSources answers "was this dead letter replayed, when,
// where to".
//
// Journal of marker actions. Migration 007 adds marker_actions
// (journal.go): every executed `processed prune` and `processed forget`, its operator, reason,
// selection and counts as JSON, the markers it deleted and the marker table, shared by the
// schema's marker tables like the replay journal.
//
// Version guard. Migration 011 adds <table>_versions beside each marker table: per
// consumer and aggregate the highest version claimed. ClaimVerdicts with guard raises it with
// one upsert per batch (Driver.RaiseVersions, which returns what each row held before, and
// locks the aggregates in sorted order) before the marker insert, which then writes the stale
// events' markers with outcome stale; Claim without the guard never touches the table.
// Unclaim puts back what the claim raised (Driver.LowerVersion).
//
// The caller's transaction. Store.Adopt wraps the caller's own pgx.Tx or *sql.Tx
// (Driver.Adopt); the core refuses Commit and Rollback on it (ErrAdopted).
//
// Dialect. Each driver provides what the SQL of the tables beside the markers writes its own
// way (dedupdriver.Dialect: time and auto-increment column types, a storage clause, array
// batches, IsMissingTable from its own error codes); DialectOf and Store.Dialect give it.
//
// Column mapping. Options.Columns lets every query (and Claim) run on an
// existing table of the same shape with other column names; Migrate refuses
// a mapping because it creates the default columns.
package dedup
