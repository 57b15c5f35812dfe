package pgdriver

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// The statements that find markers by a list of event ids (probe, exists, byProbe) are
// written as a probe of the primary key per id, which the planner keeps whatever its
// statistics say of the consumer (docs/design.md, "Cost grows with the work, not the store").
// One thing the statement cannot say: that the table is not to be read whole for each id. A
// table whose markers were mostly deleted (processed prune or forget, a consumer retired)
// keeps its pages, and its primary key its pages, until a VACUUM FULL; with a few rows left,
// the planner costs a probe of that index at its pages per row (9,155 pages for 8 rows: 1,145
// pages a probe) and reads the heap instead, once per id: 0.15 ms an id for 14 MB of empty
// pages, seconds for a table of gigabytes. The same costing puts the probes of 1,000 ids at
// millions, far above jit_above_cost, so PostgreSQL compiled each such statement to machine
// code before running it (20-130 ms, each of the first five runs of a statement on every
// connection, for a statement that runs in 1 ms): a second of PostgreSQL's CPU in every
// replay of 100,000 dead letters against such a table. So these statements run with
// sequential and bitmap scans and JIT compilation off (scansOff, local to the transaction),
// sent in one pipeline with the statement: one round trip, whose statements PostgreSQL runs as
// one implicit transaction, ended (and the settings with it) at the pipeline's end, committed
// or, on an error, rolled back, the connection left idle. In the caller's transaction the
// settings are saved before and put back after (scansSaved, scansBack).
const (
	scansOff   = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true)`
	scansSaved = `SELECT set_config('fieldwork.enable_seqscan', current_setting('enable_seqscan'), true), set_config('fieldwork.enable_bitmapscan', current_setting('enable_bitmapscan'), true), set_config('fieldwork.jit', current_setting('jit'), true)`
	scansBack  = `SELECT set_config('enable_seqscan', current_setting('fieldwork.enable_seqscan'), true), set_config('enable_bitmapscan', current_setting('fieldwork.enable_bitmapscan'), true), set_config('jit', current_setting('fieldwork.jit'), true)`
)

// byIDs runs query, a statement of markers found by their ids, with args, as the comment above
// says: in tx, or in the pipeline's own transaction when tx is nil. read, when not nil, reads
// the statement's rows. The error is the statement's, unclassified.
func (d *Driver) byIDs(ctx context.Context, tx dedupdriver.Tx, read func(pgx.Rows) error, query string, args ...any) error {
	on, err := d.on(tx)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	if tx != nil {
		b.Queue(scansSaved)
	}
	b.Queue(scansOff)
	q := b.Queue(query, args...)
	if read != nil {
		q.Query(read)
	}
	if tx != nil {
		b.Queue(scansBack)
	}
	return on.SendBatch(ctx, b).Close()
}

// collectByIDs is byIDs, outside a transaction, of a statement whose rows collect reads into
// its result. The error is the statement's, unclassified.
func collectByIDs[T any](ctx context.Context, d *Driver, collect func(pgx.Rows) (T, error), query string, args ...any) (T, error) {
	var out T
	err := d.byIDs(ctx, nil, func(rows pgx.Rows) (err error) {
		out, err = collect(rows)
		return err
	}, query, args...)
	return out, err
}

// markersByIDs is collectByIDs of a statement that returns markers, its error classified.
func (d *Driver) markersByIDs(ctx context.Context, query string, args ...any) ([]dedupdriver.MarkerRow, error) {
	out, err := collectByIDs(ctx, d, collectMarkers, query, args...)
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}
