// Package sqlitedriver is the SQLite driver of the dedup store: the embedded
// default (fieldwork dev, demo, small single-node consumers). It uses
// modernc.org/sqlite through database/sql: pure Go, no cgo.
//
// # Naming: schemas become prefixes
//
// SQLite has no schemas inside one database file (ATTACH would put tables in
// other files, which defeats claiming markers in the same transaction as the
// consumer's own tables). So the store's schema becomes a table-name prefix:
// with the defaults (schema "fieldwork", table "processed_events") the
// tables are
//
//	fieldwork_processed_events          the markers
//	fieldwork_fieldwork_migrations      the migrations table (base name fieldwork_migrations, as on Postgres)
//	fieldwork_processed_events_processed_at_idx   the index on processed_at
//
// The prefix keeps fieldwork's tables apart from the application's tables
// in the same file, the way the schema does on Postgres. The schema "main"
// (SQLite's own name for the main database) means no prefix: with schema
// "main" and table "seen_events" the queries read the table seen_events,
// which is how to point the read-only queries at an existing table.
//
// # Connections, locking, durability
//
// Every connection runs with journal_mode=WAL (readers never block the
// writer), busy_timeout=5000 (a writer waits up to 5s for another one
// instead of failing with SQLITE_BUSY), synchronous=FULL (SQLite's default:
// a commit survives power loss, which at-least-once needs because the Kafka
// offset is committed after it), and _txlock=immediate: every transaction
// takes the write lock when it begins, so two claimers of the same ids
// serialise at BEGIN and neither fails on a lock upgrade. Double-quoted
// string literals are switched off (_dqs=0), so a quoted name that is not a
// column is an error rather than a string. A DSN query
// setting one of these (sqlite:PATH?_pragma=busy_timeout(20000)) wins.
//
// # Time
//
// Every time is TEXT in UTC in one layout, TimeLayout (2006-01-02T15:04:05.000000Z:
// microseconds, what PostgreSQL's timestamptz keeps), in the store's tables and in the
// bundled handlers' (dedup.TimeArg); the default is the time of the statement. Comparisons
// round the given instant up to the microsecond, which makes "strictly before T" exact for
// stored values. Stores made before migration 010 held milliseconds
// (2006-01-02T15:04:05.000Z), which do not sort among microsecond texts: migration 010
// rewrites them, and every reader still parses them.
//
// TableName is the one rule of a table's name in a schema, used for the store's tables and,
// through dedup.TableName and dedup.IndexName, for the tables that live beside them.
package sqlitedriver
