package handlers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// ProjectionTypes are the event types the projection applies; any other type is
// dead-lettered as unsupported.
var ProjectionTypes = []string{sample.TypeCreated, sample.TypeAssigned, sample.TypeStarted, sample.TypeCompleted, sample.TypeReopened}

// projection keeps the current state of each task: one row per (consumer, aggregate_id)
// in task_state. Events carry the task's whole state after the event (event-carried state
// transfer), so applying an event is replacing the row — but only when the event's
// version is newer than the stored one. An older or equal version is a no-op for the state
// (the event is still marked processed, and the row's stale_events counter records it). A
// version more than one ahead of the stored one is applied and counted as a gap
// (version_gaps, the metric fieldwork_consume_projection_gaps_total, a warning in the log):
// events in between were lost, are still to come out of order, or were dead-lettered.
//
// applied_events and stale_events count the events that reached the projection: with
// durable dedup each distinct event counts exactly once, which is what the crash test
// checks.
type projection struct {
	consumer string
	d        dialect
	table    string
	log      *slog.Logger
	gaps     prometheus.Counter
	types    map[string]bool

	batchWith, batchSelect string // upsertBatch's statement: its expressions and its query
	// ClaimedBatch's part: its expressions, its query and its fallback (projectionClaimedSQL)
	claimedWith, claimedSelect, claimedFallback string
}

func newProjection(cfg Config, d dialect) *projection {
	p := &projection{
		consumer: cfg.Consumer, d: d, table: d.table(TableTaskState), log: cfg.Logger,
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fieldwork_consume_projection_gaps_total",
			Help: "Events applied by the projection whose version skipped versions after the stored one.",
		}),
		types: map[string]bool{},
	}
	p.batchWith, p.batchSelect = projectionBatchSQL(d.table(TableTaskState))
	p.claimedWith, p.claimedSelect, p.claimedFallback = projectionClaimedSQL(d.table(TableTaskState))
	for _, t := range ProjectionTypes {
		p.types[t] = true
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.gaps)
	}
	return p
}

func (p *projection) Name() string { return NameProjection }

func (p *projection) Migrate(ctx context.Context, tx *inbox.Tx) error {
	ts := p.d.timestamp()
	return exec(ctx, tx, `CREATE TABLE IF NOT EXISTS `+p.table+` (
	consumer       text    NOT NULL,
	aggregate_id   text    NOT NULL,
	aggregate_type text    NOT NULL DEFAULT '',
	version        bigint  NOT NULL,
	event_id       text    NOT NULL,
	event_type     text    NOT NULL,
	status         text    NOT NULL DEFAULT '',
	data           text    NOT NULL DEFAULT '',
	event_time     `+ts+`,
	applied_events bigint  NOT NULL DEFAULT 0,
	stale_events   bigint  NOT NULL DEFAULT 0,
	version_gaps   bigint  NOT NULL DEFAULT 0,
	updated_at     `+ts+` NOT NULL,
	PRIMARY KEY (consumer, aggregate_id)
)`+p.d.updatedInPlace())
}

func (p *projection) Check(ctx context.Context, tx *inbox.Tx) error {
	return checkTables(ctx, tx, p.table)
}

// taskData is the part of the event data the projection reads beyond storing it whole.
type taskData struct {
	Status string `json:"status"`
}

func (p *projection) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	data, err := p.check(m.Event)
	if err != nil {
		return 0, err
	}
	return p.apply(ctx, tx, m.Event, m.Record, data)
}

// HandleBatch applies the batch's events (consumer.BatchHandler): on PostgreSQL with one
// statement (upsertBatch), on SQLite, whose statements cost no round trip, event after
// event as Handle does. The first event the projection rejects ends the prefix it reports.
func (p *projection) HandleBatch(ctx context.Context, tx *inbox.Tx, evs []*consumer.Message) (consumer.BatchResult, error) {
	data := make([]taskData, 0, len(evs))
	var rejected error
	for _, be := range evs {
		d, err := p.check(be.Event)
		if err != nil {
			rejected = err
			break
		}
		data = append(data, d)
	}
	evs = evs[:len(data)]
	res := consumer.BatchResult{Err: rejected}
	if p.d.arrays {
		outs, err := p.upsertBatch(ctx, tx, evs, data)
		if err != nil {
			return consumer.BatchResult{}, err
		}
		res.Outcomes = outs
		return res, nil
	}
	res.Outcomes = make([]consumer.Outcome, 0, len(evs))
	for i, be := range evs {
		out, err := p.apply(ctx, tx, be.Event, be.Record, data[i])
		if err != nil {
			return consumer.BatchResult{}, err
		}
		res.Outcomes = append(res.Outcomes, out)
	}
	return res, nil
}

// check rejects what the projection cannot apply and reads the task's status.
func (p *projection) check(ev consumer.Event) (taskData, error) {
	var data taskData
	if !p.types[ev.Type] {
		return data, consumer.Unsupportedf("the projection has no code for event type %q", ev.Type)
	}
	if ev.AggregateType != "" && ev.AggregateType != sample.AggregateType {
		return data, consumer.Unsupportedf("the projection has no code for aggregate type %q", ev.AggregateType)
	}
	if ev.AggregateID == "" {
		return data, consumer.Permanentf("event %s has no aggregate id", ev.ID)
	}
	if !ev.HasVersion {
		return data, consumer.Permanentf("event %s has no aggregate version; the projection orders events by it", ev.ID)
	}
	if len(ev.Data) == 0 || ev.Data[0] != '{' {
		return data, consumer.Permanentf("event %s: data is not a JSON object with the task's state", ev.ID)
	}
	if status, ok := statusOf(ev.Data); ok {
		data.Status = status
		return data, nil
	}
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return data, consumer.Permanentf("event %s: data: %v", ev.ID, err)
	}
	return data, nil
}

// apply applies one checked event.
func (p *projection) apply(ctx context.Context, tx *inbox.Tx, ev consumer.Event, rec *kgo.Record, data taskData) (consumer.Outcome, error) {
	if p.d.arrays {
		return p.upsert(ctx, tx, ev, rec, data)
	}
	var stored int64
	err := tx.QueryRow(ctx, `SELECT version FROM `+p.table+` WHERE consumer = $1 AND aggregate_id = $2`,
		p.consumer, ev.AggregateID).Scan(&stored)
	found := err == nil
	if err != nil && !isNoRows(err) {
		return 0, err
	}
	now := p.d.ts(time.Now())
	if found && ev.Version <= stored {
		_, err := tx.Exec(ctx, `UPDATE `+p.table+` SET stale_events = stale_events + 1 WHERE consumer = $1 AND aggregate_id = $2`,
			p.consumer, ev.AggregateID)
		return consumer.Stale, err
	}
	var gap int64
	if p.gap(ev, rec, stored) {
		gap = 1
	}
	if !found {
		_, err = tx.Exec(ctx, `INSERT INTO `+p.table+` (consumer, aggregate_id, aggregate_type, version, event_id, event_type,
	status, data, event_time, applied_events, stale_events, version_gaps, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 0, $10, $11)`,
			p.consumer, ev.AggregateID, ev.AggregateType, ev.Version, ev.ID, ev.Type,
			data.Status, string(ev.Data), p.d.ts(ev.Time), gap, now)
	} else {
		_, err = tx.Exec(ctx, `UPDATE `+p.table+` SET aggregate_type = $3, version = $4, event_id = $5, event_type = $6,
	status = $7, data = $8, event_time = $9, applied_events = applied_events + 1,
	version_gaps = version_gaps + $10, updated_at = $11
WHERE consumer = $1 AND aggregate_id = $2`,
			p.consumer, ev.AggregateID, ev.AggregateType, ev.Version, ev.ID, ev.Type,
			data.Status, string(ev.Data), p.d.ts(ev.Time), gap, now)
	}
	if err != nil {
		return 0, err
	}
	return consumer.Applied, nil
}

// gap counts and logs a version gap: ev is more than one version ahead of stored (0: none).
func (p *projection) gap(ev consumer.Event, rec *kgo.Record, stored int64) bool {
	want := stored + 1
	if ev.Version <= want {
		return false
	}
	p.gaps.Inc()
	p.log.Warn("projection: version gap", "aggregate_id", ev.AggregateID, "stored_version", stored,
		"event_version", ev.Version, "missing", ev.Version-want, "event_id", ev.ID,
		"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset)
	return true
}

// upsert is Handle's PostgreSQL path: one statement instead of a read and a write. The
// update applies only to an older stored version; the subquery in RETURNING reads the
// statement's snapshot, so it returns the version stored before (NULL when the row is new).
// No row returned means the event is stale; the stale counter is then bumped.
func (p *projection) upsert(ctx context.Context, tx *inbox.Tx, ev consumer.Event, rec *kgo.Record, data taskData) (consumer.Outcome, error) {
	firstGap := int64(0) // version_gaps of a new row: its first version is not 1
	if ev.Version > 1 {
		firstGap = 1
	}
	var before *int64
	err := tx.QueryRow(ctx, `INSERT INTO `+p.table+` AS s (consumer, aggregate_id, aggregate_type, version, event_id, event_type,
	status, data, event_time, applied_events, stale_events, version_gaps, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 0, $11, $10)
ON CONFLICT (consumer, aggregate_id) DO UPDATE SET aggregate_type = excluded.aggregate_type, version = excluded.version,
	event_id = excluded.event_id, event_type = excluded.event_type, status = excluded.status, data = excluded.data,
	event_time = excluded.event_time, applied_events = s.applied_events + 1,
	version_gaps = s.version_gaps + CASE WHEN excluded.version > s.version + 1 THEN 1 ELSE 0 END,
	updated_at = excluded.updated_at
WHERE s.version < excluded.version
RETURNING (SELECT o.version FROM `+p.table+` o WHERE o.consumer = $1 AND o.aggregate_id = $2)`,
		p.consumer, ev.AggregateID, ev.AggregateType, ev.Version, ev.ID, ev.Type,
		data.Status, string(ev.Data), p.d.ts(ev.Time), p.d.ts(time.Now()), firstGap).Scan(&before)
	if isNoRows(err) {
		_, err := tx.Exec(ctx, `UPDATE `+p.table+` SET stale_events = stale_events + 1 WHERE consumer = $1 AND aggregate_id = $2`,
			p.consumer, ev.AggregateID)
		return consumer.Stale, err
	}
	if err != nil {
		return 0, err
	}
	stored := int64(0)
	if before != nil {
		stored = *before
	}
	p.gap(ev, rec, stored)
	return consumer.Applied, nil
}

// upsertBatch is HandleBatch's PostgreSQL path: one statement for the whole batch, with the
// result of applying the events one after the other (docs/design.md §3.5). Each event is
// judged against the newest version before it, the stored one or an earlier event's of the
// batch, whichever is newer: applied when newer (or when the task has no row yet), stale
// otherwise, a gap when more than one ahead. What is known from the batch alone is worked out
// here: each event's newest earlier version in the batch, and per task the event that is
// written when anything of the task is applied (its newest version, the first event with
// it). The statement reads the stored versions, judges, writes per task that event with the
// counters added (or only the stale count when nothing was applied), and returns the events
// that were stale or gaps; the others were applied. The stored rows are read, not locked:
// one task's events are one partition's, applied by one transaction at a time (the markers
// make a second owner of the partition wait for the first's claim), and the update still
// writes only over an older version, as Handle's does.
func (p *projection) upsertBatch(ctx context.Context, tx *inbox.Tx, evs []*consumer.Message, data []taskData) ([]consumer.Outcome, error) {
	if len(evs) == 0 {
		return []consumer.Outcome{}, nil
	}
	r := p.batchOf(evs, data)
	rows, err := tx.Query(ctx, "WITH "+p.batchWith+"\n"+p.batchSelect, r.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		if err := r.row(rows.Scan); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return r.outcomes(), nil
}

// ClaimedBatch applies the batch in the claim's statement (consumer.ClaimingBatchHandler) on
// PostgreSQL, when the projection can apply every event of evs: with the statement of
// projectionClaimedSQL, which writes what upsertBatch's would when no event is stale. Within
// the batch that is known here: a task's events in offset order must have rising versions
// (else ClaimedBatch returns false, and HandleBatch judges them); against the stored rows the
// statement's Fallback refuses the batch when a task's first event is not newer than its row.
func (p *projection) ClaimedBatch(evs []*consumer.Message) (consumer.ClaimedBatch, bool) {
	if !p.d.arrays || len(evs) == 0 {
		return consumer.ClaimedBatch{}, false
	}
	data := make([]taskData, len(evs))
	for i, be := range evs {
		d, err := p.check(be.Event)
		if err != nil {
			return consumer.ClaimedBatch{}, false
		}
		data[i] = d
	}
	r, ok := p.claimedOf(evs, data)
	if !ok {
		return consumer.ClaimedBatch{}, false
	}
	return consumer.ClaimedBatch{With: p.claimedWith, Select: p.claimedSelect, Fallback: p.claimedFallback, Args: r.args, Row: r.row,
		Committed: func() { r.outcomes() }}, true
}

// claimedOf works out ClaimedBatch's arguments for evs (see projectionClaimedSQL), or false
// when an event of evs is stale against an earlier one of its task. The gaps between a task's
// events of the batch are known here and kept for outcomes; the gap before a task's first
// event is the statement's to find.
func (p *projection) claimedOf(evs []*consumer.Message, data []taskData) (*projectionBatch, bool) {
	type task struct{ first, last, n, gaps int }
	var (
		tasks = make(map[string]*task, len(evs))
		order []*task
		gaps  []gapAt
	)
	for i := range evs {
		ev := &evs[i].Event
		t, seen := tasks[ev.AggregateID]
		if !seen {
			t = &task{first: i, last: i}
			tasks[ev.AggregateID] = t
			order = append(order, t)
		} else {
			prev := evs[t.last].Event.Version
			if ev.Version <= prev {
				return nil, false // stale: HandleBatch judges it
			}
			if ev.Version > prev+1 {
				t.gaps++
				gaps = append(gaps, gapAt{i: i, prev: prev})
			}
			t.last = i
		}
		t.n++
	}
	written := make([]int, len(order))
	firsts, applied, taskGaps, ords := make([]int64, len(order)), make([]int64, len(order)), make([]int64, len(order)), make([]int64, len(order))
	for k, t := range order {
		written[k] = t.last
		firsts[k], applied[k], taskGaps[k], ords[k] = evs[t.first].Event.Version, int64(t.n), int64(t.gaps), int64(t.first+1)
	}
	args := append([]any{p.consumer}, writtenColumns(evs, data, written)...)
	return &projectionBatch{p: p, evs: evs, gaps: gaps, args: append(args, firsts, applied, taskGaps, ords, time.Now())}, true
}

// gapAt is a gap between two events of a task in one batch: the later event's index, and the
// earlier event's version.
type gapAt struct {
	i    int
	prev int64
}

// projectionBatch is one batch of upsertBatch's statement: its arguments, and the rows read.
type projectionBatch struct {
	p    *projection
	evs  []*consumer.Message
	args []any
	// judged are the rows read: the stale events and the gaps.
	judged []judgedRow
	// gaps are the gaps ClaimedBatch's batch knew before its statement (claimedOf).
	gaps []gapAt
}

// judgedRow is a row of upsertBatch's statement.
type judgedRow struct {
	ord     int64
	applied bool
	before  *int64
}

// batchOf works out upsertBatch's arguments for evs (see upsertBatch).
func (p *projection) batchOf(evs []*consumer.Message, data []taskData) *projectionBatch {
	n := len(evs)
	var (
		aggIDs   = make([]string, n)
		versions = make([]int64, n)
		prev     = make([]*int64, n)
		newest   = make(map[string]int, n) // task → index in evs of the event written
		order    []int                     // newest's values in order of the tasks' first events
	)
	for i := range evs {
		ev := &evs[i].Event
		aggIDs[i], versions[i] = ev.AggregateID, ev.Version
		j, seen := newest[ev.AggregateID]
		if !seen {
			newest[ev.AggregateID] = i
			order = append(order, i)
			continue
		}
		before := evs[j].Event.Version
		prev[i] = &before
		if ev.Version > before {
			newest[ev.AggregateID] = i
		}
	}
	written := make([]int, len(order))
	for k, first := range order {
		written[k] = newest[evs[first].Event.AggregateID]
	}
	args := append([]any{p.consumer, aggIDs, versions, prev}, writtenColumns(evs, data, written)...)
	return &projectionBatch{p: p, evs: evs, args: append(args, time.Now())}
}

// writtenColumns are the task_state columns of the events written, evs[i] for each i of
// written (one a task), as both batch statements take them: arrays of the aggregate ids,
// aggregate types, versions, event ids, event types, statuses, data and event times.
func writtenColumns(evs []*consumer.Message, data []taskData, written []int) []any {
	m := len(written)
	var (
		aggIDs, aggTypes, ids, types, statuses, datas = make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m)
		versions                                      = make([]int64, m)
		times                                         = make([]*time.Time, m)
	)
	for k, i := range written {
		ev := &evs[i].Event
		aggIDs[k], aggTypes[k], ids[k], types[k], statuses[k], datas[k] = ev.AggregateID, ev.AggregateType, ev.ID, ev.Type, data[i].Status, string(ev.Data)
		versions[k] = ev.Version
		if !ev.Time.IsZero() {
			times[k] = &ev.Time
		}
	}
	return []any{aggIDs, aggTypes, versions, ids, types, statuses, datas, times}
}

// row reads one row of the statement.
func (b *projectionBatch) row(scan func(dest ...any) error) error {
	var r judgedRow
	if err := scan(&r.ord, &r.applied, &r.before); err != nil {
		return err
	}
	if i := int(r.ord - 1); i < 0 || i >= len(b.evs) {
		return fmt.Errorf("projection batch: row for event %d of %d", r.ord, len(b.evs))
	}
	b.judged = append(b.judged, r)
	return nil
}

// outcomes are the events' outcomes from the rows read; it counts and logs the gaps.
func (b *projectionBatch) outcomes() []consumer.Outcome {
	outs := make([]consumer.Outcome, len(b.evs))
	for _, r := range b.judged {
		i := int(r.ord - 1)
		if !r.applied {
			outs[i] = consumer.Stale
			continue
		}
		stored := int64(0)
		if r.before != nil {
			stored = *r.before
		}
		b.p.gap(b.evs[i].Event, b.evs[i].Record, stored)
	}
	for _, g := range b.gaps {
		b.p.gap(b.evs[g.i].Event, b.evs[g.i].Record, g.prev)
	}
	return outs
}

// projectionBatchSQL is upsertBatch's statement on table t, its expressions (after WITH) and
// its query: $1 the consumer; $2…$4 per
// event in offset order its task, version and the newest earlier version of its task in the
// batch (NULL for the task's first); $5…$12 per task the columns of the event written;
// $13 updated_at.
//
// It finds a task's row by its key alone, whatever the planner's statistics say of the
// consumer (docs/design.md, "Cost grows with the work, not the store"): the stored versions by
// a probe of the primary key per task (a LATERAL subquery kept apart by OFFSET 0, not
// "aggregate_id = ANY(…)", which with statistics gathered before the consumer wrote read all
// of its rows for each batch), and every write, a task's stale events included, through the
// insert's conflict on that key: a task whose events were all stale conflicts with its row,
// which keeps its columns and counts them (before, a separate UPDATE joined its stale tasks
// with the consumer's rows, and compared every pair of them: 36 s for a batch of 1,000 stale
// events against 200,000 rows).
func projectionBatchSQL(t string) (with, query string) {
	return `e AS (
	SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS e(aggregate_id, version, prev, ord)
), n AS (
	SELECT * FROM unnest($5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::timestamptz[])
		AS n(aggregate_id, aggregate_type, version, event_id, event_type, status, data, event_time)
), stored AS (
	SELECT k.aggregate_id, s.version FROM unnest($5::text[]) AS k(aggregate_id)
	CROSS JOIN LATERAL (SELECT s.version FROM ` + t + ` s WHERE s.consumer = $1 AND s.aggregate_id = k.aggregate_id OFFSET 0) s
), judged AS (
	SELECT e.ord, e.aggregate_id, e.version, greatest(stored.version, e.prev) AS before
	FROM e LEFT JOIN stored USING (aggregate_id)
), marked AS (
	SELECT ord, aggregate_id, before, before IS NULL OR version > before AS applied,
		(before IS NULL OR version > before) AND version > coalesce(before, 0) + 1 AS gap
	FROM judged
), per AS (
	SELECT aggregate_id, count(*) FILTER (WHERE applied) AS applied_n, count(*) FILTER (WHERE NOT applied) AS stale_n,
		count(*) FILTER (WHERE gap) AS gaps_n
	FROM marked GROUP BY aggregate_id
), upserted AS (
	INSERT INTO ` + t + ` AS s (consumer, aggregate_id, aggregate_type, version, event_id, event_type,
		status, data, event_time, applied_events, stale_events, version_gaps, updated_at)
	SELECT $1, n.aggregate_id, n.aggregate_type, n.version, n.event_id, n.event_type, n.status, n.data, n.event_time,
		per.applied_n, per.stale_n, per.gaps_n, $13
	FROM n JOIN per USING (aggregate_id)
	ON CONFLICT (consumer, aggregate_id) DO UPDATE SET
		aggregate_type = CASE WHEN s.version < excluded.version THEN excluded.aggregate_type ELSE s.aggregate_type END,
		version = greatest(s.version, excluded.version),
		event_id = CASE WHEN s.version < excluded.version THEN excluded.event_id ELSE s.event_id END,
		event_type = CASE WHEN s.version < excluded.version THEN excluded.event_type ELSE s.event_type END,
		status = CASE WHEN s.version < excluded.version THEN excluded.status ELSE s.status END,
		data = CASE WHEN s.version < excluded.version THEN excluded.data ELSE s.data END,
		event_time = CASE WHEN s.version < excluded.version THEN excluded.event_time ELSE s.event_time END,
		updated_at = CASE WHEN s.version < excluded.version THEN excluded.updated_at ELSE s.updated_at END,
		applied_events = s.applied_events + excluded.applied_events,
		stale_events = s.stale_events + excluded.stale_events, version_gaps = s.version_gaps + excluded.version_gaps
)`, `SELECT ord, applied, before FROM marked WHERE NOT applied OR gap`
}

// projectionClaimedSQL is ClaimedBatch's part on table t: upsertBatch's statement for a batch
// with no stale event, whose tasks' events rise in version (claimedOf). Its expressions: $1
// the consumer; per task $2…$9 the columns of its newest event, $10 its first event's version,
// $11 its events, $12 the gaps between them, $13 the first event's place in the batch (from
// 1); $14 updated_at. Only a task's first event is judged against the stored row, read by a
// probe of the primary key as upsertBatch's is: its fallback refuses the batch when that event
// is not newer than the row (the batch is then judged by upsertBatch's statement, and the
// stale events recorded), and its query returns the first events that are gaps, with the
// version stored before. Every event being applied, a task's row takes its newest event's
// columns and the counts of its events and gaps: no per-event rows and no CASE per column,
// which the full statement needs to judge stale events.
func projectionClaimedSQL(t string) (with, query, fallback string) {
	return `n AS (
	SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[],
		$10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[])
		AS n(aggregate_id, aggregate_type, version, event_id, event_type, status, data, event_time, first_version, applied_n, gaps_n, ord)
), stored AS (
	SELECT k.aggregate_id, s.version FROM n AS k
	CROSS JOIN LATERAL (SELECT s.version FROM ` + t + ` s WHERE s.consumer = $1 AND s.aggregate_id = k.aggregate_id OFFSET 0) s
), judged AS (
	SELECT n.*, stored.version AS before, n.first_version > coalesce(stored.version, 0) + 1 AS gap
	FROM n LEFT JOIN stored USING (aggregate_id)
), upserted AS (
	INSERT INTO ` + t + ` AS s (consumer, aggregate_id, aggregate_type, version, event_id, event_type,
		status, data, event_time, applied_events, stale_events, version_gaps, updated_at)
	SELECT $1, aggregate_id, aggregate_type, version, event_id, event_type, status, data, event_time,
		applied_n, 0, gaps_n + CASE WHEN gap THEN 1 ELSE 0 END, $14
	FROM judged
	ON CONFLICT (consumer, aggregate_id) DO UPDATE SET aggregate_type = excluded.aggregate_type, version = excluded.version,
		event_id = excluded.event_id, event_type = excluded.event_type, status = excluded.status, data = excluded.data,
		event_time = excluded.event_time, updated_at = excluded.updated_at,
		applied_events = s.applied_events + excluded.applied_events, version_gaps = s.version_gaps + excluded.version_gaps
	WHERE s.version < excluded.version
)`, `SELECT ord, true, before FROM judged WHERE gap`, `SELECT 1 FROM judged WHERE before >= first_version`
}

// isNoRows matches "no rows" from pgx and from database/sql.
func isNoRows(err error) bool {
	return errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows)
}
