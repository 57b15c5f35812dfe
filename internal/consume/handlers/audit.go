package handlers

import (
	"context"
	"time"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
)

// audit is an append-only activity feed: one row in audit_log per event, of any type, with
// where it was read from. It has no unique constraint on the event id on purpose: the
// markers are what keeps an event from being recorded twice, and a second row for one
// event is the visible proof that they failed (the crash test counts them). It has no key
// and no index: it is written at the consumer's rate and read by the operator alone, in the
// order its rows were recorded (recorded_at, then topic, partition and offset). Its earlier
// surrogate key and its index on the event id were most of what PostgreSQL spent on an audit
// row beside its marker (docs/design.md §3.5). A table an earlier version created keeps its id
// column and key; the inserts leave both to their defaults.
type audit struct {
	consumer string
	d        dialect
	table    string
}

func newAudit(cfg Config, d dialect) *audit {
	return &audit{consumer: cfg.Consumer, d: d, table: d.table(TableAuditLog)}
}

func (a *audit) Name() string { return NameAudit }

func (a *audit) Migrate(ctx context.Context, tx *inbox.Tx) error {
	ts := a.d.timestamp()
	return exec(ctx, tx, `CREATE TABLE IF NOT EXISTS `+a.table+` (
	consumer          text    NOT NULL,
	event_id          text    NOT NULL,
	event_type        text    NOT NULL DEFAULT '',
	source            text    NOT NULL DEFAULT '',
	aggregate_type    text    NOT NULL DEFAULT '',
	aggregate_id      text    NOT NULL DEFAULT '',
	aggregate_version bigint,
	topic             text    NOT NULL,
	"partition"       integer NOT NULL,
	"offset"          bigint  NOT NULL,
	occurred_at       `+ts+`,
	data              text    NOT NULL DEFAULT '',
	recorded_at       `+ts+` NOT NULL
)`,
		// No index: nothing reads the feed but the operator, and every index is written at the
		// consumer's rate. The indexes earlier versions made on the event id (event_idx, a
		// B-tree on (consumer, event_id), then event_id, a hash index) go; an operator's own
		// index, of any other name, stays (docs/design.md §3.5).
		`DROP INDEX IF EXISTS `+a.d.qualifiedIndex(TableAuditLog, "event_idx"),
		`DROP INDEX IF EXISTS `+a.d.qualifiedIndex(TableAuditLog, "event_id"))
}

func (a *audit) Check(ctx context.Context, tx *inbox.Tx) error {
	return checkTables(ctx, tx, a.table)
}

// HandleBatch records the batch (consumer.BatchHandler): on PostgreSQL with one multi-row
// INSERT … SELECT FROM unnest, on SQLite one INSERT per event as Handle does.
func (a *audit) HandleBatch(ctx context.Context, tx *inbox.Tx, evs []*consumer.Message) (consumer.BatchResult, error) {
	outs := make([]consumer.Outcome, len(evs)) // all Applied
	if !a.d.arrays {
		for _, be := range evs {
			if _, err := a.Handle(ctx, tx, be); err != nil {
				return consumer.BatchResult{}, err
			}
		}
		return consumer.BatchResult{Outcomes: outs}, nil
	}
	stmt, args := a.batch(evs)
	if _, err := tx.Exec(ctx, `INSERT INTO `+a.table+stmt, args...); err != nil {
		return consumer.BatchResult{}, err
	}
	return consumer.BatchResult{Outcomes: outs}, nil
}

// ClaimedBatch records the batch in the claim's statement (consumer.ClaimingBatchHandler):
// on PostgreSQL, the rows HandleBatch inserts.
func (a *audit) ClaimedBatch(evs []*consumer.Message) (consumer.ClaimedBatch, bool) {
	if !a.d.arrays {
		return consumer.ClaimedBatch{}, false
	}
	stmt, args := a.batch(evs)
	return consumer.ClaimedBatch{With: `fw_audit AS (INSERT INTO ` + a.table + stmt + `)`, Args: args}, true
}

// batch is the batch's INSERT on PostgreSQL after "INSERT INTO table", and its arguments. The
// events of a batch are one partition's: its topic and partition go once ($8, $9), as arrays
// only when they differ.
func (a *audit) batch(evs []*consumer.Message) (string, []any) {
	n := len(evs)
	one := n > 0
	for _, m := range evs {
		if m.Record.Topic != evs[0].Record.Topic || m.Record.Partition != evs[0].Record.Partition {
			one = false
			break
		}
	}
	var (
		ids, types, sources, aggTypes, aggIDs, datas = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		versions                                     = make([]*int64, n)
		offsets                                      = make([]int64, n)
		times                                        = make([]*time.Time, n)
		topics                                       []string
		parts                                        []int32
	)
	if !one {
		topics, parts = make([]string, n), make([]int32, n)
	}
	for i := range evs {
		ev, rec := &evs[i].Event, evs[i].Record
		ids[i], types[i], sources[i], aggTypes[i], aggIDs[i], datas[i] = ev.ID, ev.Type, ev.Source, ev.AggregateType, ev.AggregateID, string(ev.Data)
		offsets[i] = rec.Offset
		if !one {
			topics[i], parts[i] = rec.Topic, rec.Partition
		}
		if ev.HasVersion {
			versions[i] = &ev.Version
		}
		if !ev.Time.IsZero() {
			times[i] = &ev.Time
		}
	}
	const cols = ` (consumer, event_id, event_type, source, aggregate_type, aggregate_id,
	aggregate_version, topic, "partition", "offset", occurred_at, data, recorded_at)
`
	if one {
		return cols + `SELECT $1, e.event_id, e.event_type, e.source, e.aggregate_type, e.aggregate_id, e.aggregate_version, $8, $9,
	e.off, e.occurred_at, e.data, $13
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $10::bigint[], $11::timestamptz[], $12::text[])
	AS e(event_id, event_type, source, aggregate_type, aggregate_id, aggregate_version, off, occurred_at, data)`,
			[]any{a.consumer, ids, types, sources, aggTypes, aggIDs, versions, evs[0].Record.Topic, evs[0].Record.Partition, offsets, times, datas, nowUTC()}
	}
	return cols + `SELECT $1, e.* , $13 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
	$9::integer[], $10::bigint[], $11::timestamptz[], $12::text[]) AS e`,
		[]any{a.consumer, ids, types, sources, aggTypes, aggIDs, versions, topics, parts, offsets, times, datas, nowUTC()}
}

func (a *audit) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	ev, rec := &m.Event, m.Record
	var version any
	if ev.HasVersion {
		version = ev.Version
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+a.table+` (consumer, event_id, event_type, source, aggregate_type, aggregate_id,
	aggregate_version, topic, "partition", "offset", occurred_at, data, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		a.consumer, ev.ID, ev.Type, ev.Source, ev.AggregateType, ev.AggregateID, version,
		rec.Topic, rec.Partition, rec.Offset, a.d.ts(ev.Time), string(ev.Data), a.d.ts(nowUTC()))
	if err != nil {
		return 0, err
	}
	return consumer.Applied, nil
}
