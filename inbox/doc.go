// Package inbox claims events inside the caller's own database transaction: the
// processed-event markers of fieldwork, for a Go service's own consumer. It is the store
// fieldwork's CLI reads and its reference consumer writes, on PostgreSQL (pgx) and SQLite.
//
// # Markers
//
// A marker is one row of the marker table (fieldwork.processed_events by default; on SQLite,
// which has no schemas, the table fieldwork_processed_events) saying that a consumer processed
// an event: the consumer's name and the event's id (the key), when, where the event was read
// (topic, partition, offset), its aggregate and version, and an outcome: empty when the event
// was applied, stale when the consumer marked it without applying it. Claim writes the markers
// of a batch in one statement and says, for each event, whether it is Fresh (no marker was
// there: apply it) or a Duplicate (it was processed before, or occurs earlier in the batch: do
// nothing).
//
// # The guarantee
//
// The markers are written in the transaction the caller applies the events in, so that the
// marker and the event's effects commit together or not at all: after a crash, a rollback or a
// failed commit, neither exists and the event is fresh when it is read again; after the
// commit, both exist and the event is a duplicate from then on. Of any number of transactions
// claiming the same event at once, exactly one gets it fresh: the others wait for it, and get
// a duplicate when it commits, or the event fresh when it rolls back.
//
// # What the caller must do
//
//   - Same transaction: claim in the transaction that applies the effects (Store.Begin,
//     Store.InTx, or the caller's own through Store.Adopt), and commit once, after both.
//   - Same database: the effects must be writes to the store's database; a side effect
//     elsewhere (an HTTP call, a message) is not undone by a rollback and may happen twice, so
//     it carries an idempotency key of its own. Store.Table names the caller's tables beside
//     the markers, on both drivers.
//   - Apply only Fresh events; a Duplicate or Stale event changes nothing.
//   - Keep event ids stable: the same id for every delivery of an event (a redelivery, a
//     replay of its dead letter), and never the same id for two events. Keep the consumer
//     name stable too: markers are per consumer.
//   - Roll back on an error of Claim (other than a bad consumer or id, which runs no SQL) and
//     try the batch again when IsTransient says the error is worth retrying.
//   - Run Store.Migrate (or fieldwork db migrate) once before consuming.
//
// # The version guard
//
// With the GuardVersions claim option, Claim also drops events older than what the consumer
// has: an event with HasVersion and an AggregateID whose version is not higher than the
// highest version of its aggregate the consumer claimed before (in a committed transaction,
// earlier in the same transaction, or earlier in the same batch, in offset order) is Stale.
// It is marked all the same, its marker's outcome stale, so that it is never handled; the
// caller applies nothing. The highest version per consumer and aggregate is kept in a table
// beside the marker table (processed_events_versions, created by migration 011), raised in
// the claim's transaction: it commits or rolls back with the markers, and a concurrent
// transaction guarding the same aggregate waits for it. The guard costs one statement per
// batch beside the claim's; claims without it run none. Unclaim of an event whose claim raised
// its aggregate's version puts back the version the aggregate had, so that the event, read
// again (its dead letter replayed), is not stale for its own version. A handler that decides
// staleness itself records it with Store.MarkStale.
//
// # The caller's own transaction
//
// Store.Adopt takes a transaction the service began itself: a pgx.Tx (of its own pgx.Conn or
// pgxpool.Pool) on a PostgreSQL store, a *sql.Tx on an SQLite store, on the store's database.
// Claims in it commit or roll back with the caller's commit or rollback. The caller ends the
// transaction: Commit and Rollback of the adopted Tx do nothing and return ErrAdopted. On
// SQLite, open the service's own handle with _txlock=immediate (as the store's are), so that a
// transaction takes the write lock when it begins; importing this package registers the
// database/sql driver "sqlite".
//
// # How fieldwork's CLI sees the table
//
// The markers are fieldwork's: every fieldwork command reads them, with the same schema and
// table (--schema and --table, as the options Schema and TableName):
//
//	$ fieldwork processed list --dsn sqlite:./orders.db --consumer order-view -o table
//	CONSUMER    EVENT ID  PROCESSED AT              TOPIC   PARTITION  OFFSET  AGGREGATE ID  AGGREGATE VERSION
//	order-view  evt-4     2026-12-02T06:53:00.949Z  orders  0          42      order-7       4
//	order-view  evt-3     2026-12-02T06:53:00.949Z  orders  0          40      order-7       3
//	order-view  evt-2     2026-12-02T06:53:00.949Z  orders  0          41      order-7       2
//
// (evt-2 was claimed with the guard after evt-3: stale, and marked.) fieldwork processed get
// EVENT-ID shows which consumers processed an event; processed check --topic T --consumer C
// reads the topic and reports the events that have no marker; processed stats, prune and
// forget count, age out and remove markers; db status and db migrate report and apply the
// migrations; dlq list tells a dead letter whose replay the consumer applied from one it
// marked stale.
package inbox
