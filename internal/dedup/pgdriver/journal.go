package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.Journal = (*Driver)(nil)

// journalTables are the replay journal's tables in the store's schema
// (migration 002), quoted and qualified.
type journalTables struct {
	schema      string
	runs        string
	checkpoints string
	batches     string
	targets     string // replay_target_counts of migration 004
	topics      string // replay_run_topics of migration 006
	actions     string // marker_actions of migration 007
	groups      string // group_actions of migration 008
	workers     string // replay_workers of migration 013
}

func (d *Driver) journal() journalTables {
	s := d.names.JournalSchema()
	return journalTables{
		schema:      s,
		runs:        qualify(s, "replay_runs"),
		checkpoints: qualify(s, "replay_checkpoints"),
		batches:     qualify(s, "replay_send_batches"),
		targets:     qualify(s, "replay_target_counts"),
		topics:      qualify(s, "replay_run_topics"),
		actions:     qualify(s, "marker_actions"),
		groups:      qualify(s, "group_actions"),
		workers:     qualify(s, "replay_workers"),
	}
}

// templateData adds the journal's names to the migrations' template data.
// Index names are unqualified: an index lives in its table's schema.
func (j journalTables) templateData(m map[string]string) {
	dedupdriver.JournalTemplateData(m, func(name string) string { return qualify(j.schema, name) },
		func(table, suffix string) string { return quote(table + suffix) })
}

// classify names the journal's runs table when the journal is missing.
func (j journalTables) classify(err error) error { return classifyMissing(j.runs, err) }

// classifyActions names the actions table (migration 007) when it is missing.
func (j journalTables) classifyActions(err error) error { return classifyMissing(j.actions, err) }

// classifyGroups names the group actions table (migration 008) when it is missing.
func (j journalTables) classifyGroups(err error) error { return classifyMissing(j.groups, err) }

// classifyMissing is err as dedupdriver.NotMigrated naming table when a table or the schema is
// missing.
func classifyMissing(table string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") {
		return dedupdriver.NotMigrated(table, err)
	}
	return err
}

// runColumns are the columns scanRun reads from the runs table, the run's topic IDs as
// topic=id pairs among them (topic names and IDs hold neither = nor ,).
func (j journalTables) runColumns() string {
	return `id, operator, reason, selection, source_topics, target, status, COALESCE(owner, ''), COALESCE(error, ''),
selected, sent, quarantined, skipped, created_at, updated_at, finished_at,
COALESCE((SELECT string_agg(t.topic || '=' || t.topic_id, ',' ORDER BY t.topic) FROM ` + j.topics + ` t WHERE t.run_id = ` + j.runs + `.id), '')`
}

func scanRun(r pgx.Row) (dedupdriver.ReplayRun, error) {
	var run dedupdriver.ReplayRun
	var sources, topicIDs string
	err := r.Scan(&run.ID, &run.Operator, &run.Reason, &run.Selection, &sources, &run.Target, &run.Status, &run.Owner, &run.Error,
		&run.Selected, &run.Sent, &run.Quarantined, &run.Skipped, &run.CreatedAt, &run.UpdatedAt, &run.FinishedAt, &topicIDs)
	if err != nil {
		return run, err
	}
	run.Sources = splitTopics(sources)
	run.SourceTopicIDs = dedupdriver.ParseTopicIDs(topicIDs)
	run.CreatedAt, run.UpdatedAt = run.CreatedAt.UTC(), run.UpdatedAt.UTC()
	if run.FinishedAt != nil {
		t := run.FinishedAt.UTC()
		run.FinishedAt = &t
	}
	return run, nil
}

func splitTopics(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().UTC()
	}
	return t.UTC()
}

func (d *Driver) CreateReplayRun(ctx context.Context, run dedupdriver.ReplayRun, cps []dedupdriver.ReplayCheckpoint) error {
	j := d.journal()
	return j.classify(pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		// Runs are recorded one at a time (a lock of the journal's own, held to the commit),
		// each at the database's time once it holds the lock: a run recorded later by that
		// time is recorded after every run before it is committed, so that each run that
		// reads the journal once it is recorded sees every run recorded before it (two
		// replays of one topic started at once see which came first: replay.LaterGivesWay).
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp() FROM pg_advisory_xact_lock(hashtext($1))`, j.runs).Scan(&now); err != nil {
			return fmt.Errorf("lock the journal's runs: %w", err)
		}
		at := run.CreatedAt
		if at.IsZero() {
			at = now
		}
		at = at.UTC()
		_, err := tx.Exec(ctx, `INSERT INTO `+j.runs+` (id, operator, reason, selection, source_topics, target, status, owner, error,
  selected, sent, quarantined, skipped, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), NULLIF($9, ''), $10, $11, $12, $13, $14, $14)`,
			run.ID, run.Operator, run.Reason, run.Selection, strings.Join(run.Sources, ","), run.Target, run.Status, run.Owner, run.Error,
			run.Selected, run.Sent, run.Quarantined, run.Skipped, at)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if len(run.SourceTopicIDs) > 0 {
			var topics, ids []string
			for t, id := range run.SourceTopicIDs {
				topics, ids = append(topics, t), append(ids, id)
			}
			_, err = tx.Exec(ctx, `INSERT INTO `+j.topics+` (run_id, topic, topic_id) SELECT $1, u.t, u.i FROM unnest($2::text[], $3::text[]) AS u(t, i)`,
				run.ID, topics, ids)
			if err != nil {
				return fmt.Errorf("insert topic IDs: %w", err)
			}
		}
		if len(cps) == 0 {
			return nil
		}
		topics, parts, starts, ends, acked := make([]string, len(cps)), make([]int32, len(cps)), make([]int64, len(cps)), make([]int64, len(cps)), make([]int64, len(cps))
		for i, c := range cps {
			topics[i], parts[i], starts[i], ends[i], acked[i] = c.Topic, c.Partition, c.Start, c.End, c.AckedThrough
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+j.checkpoints+` (run_id, topic, partition, start_offset, end_offset, acked_through)
SELECT $1, u.t, u.p, u.s, u.e, u.a FROM unnest($2::text[], $3::int4[], $4::int8[], $5::int8[], $6::int8[]) AS u(t, p, s, e, a)`,
			run.ID, topics, parts, starts, ends, acked)
		if err != nil {
			return fmt.Errorf("insert checkpoints: %w", err)
		}
		if cps[0].Worker == nil {
			return nil
		}
		// A run shared by workers: a row per partition, held by none.
		_, err = tx.Exec(ctx, `INSERT INTO `+j.workers+` (run_id, topic, partition, updated_at)
SELECT $1, u.t, u.p, $4 FROM unnest($2::text[], $3::int4[]) AS u(t, p)`, run.ID, topics, parts, at)
		if err != nil {
			return fmt.Errorf("insert the partitions' workers: %w", err)
		}
		return nil
	}))
}

// SaveReplayProgress writes the flush in one round trip: its statements are sent as one
// pipeline, which PostgreSQL runs as one implicit transaction. As separate statements a flush
// waited for nine round trips: with the database 1 ms away the journal took at most 70,000
// sends a second (BenchmarkJournal), which bounded the replay. The first statement updates the
// run where p.Owner still owns it; every later one writes only where the run has that owner,
// which it keeps until the commit (the update holds the run's row lock), so a flush of a run
// that was taken over writes nothing. The sends are one statement whatever their batches (a
// row each, its sends packed); its check that the flush was not written before sees the
// database as it was before that statement.
func (d *Driver) SaveReplayProgress(ctx context.Context, p dedupdriver.ReplayProgress) (bool, error) {
	if p.Partitioned {
		return d.savePartitioned(ctx, p)
	}
	j := d.journal()
	now := orNow(p.Now)
	var finished *time.Time
	if p.Finished {
		finished = &now
	}
	owned := `EXISTS (SELECT 1 FROM ` + j.runs + ` r WHERE r.id = $1 AND r.owner = $2)`
	b := &pgx.Batch{}
	what := []string{"update run"} // each statement queued, for its error
	b.Queue(`UPDATE `+j.runs+` SET status = $3, error = NULLIF($4, ''),
  selected = $5, sent = $6, quarantined = $7, skipped = $8, updated_at = $9, finished_at = $10
WHERE id = $1 AND owner = $2`,
		p.RunID, p.Owner, p.Status, p.Error, p.Counts.Selected, p.Counts.Sent, p.Counts.Quarantined, p.Counts.Skipped, now, finished)
	if len(p.Sends) > 0 {
		j.queueSends(b, p, owned)
		what = append(what, fmt.Sprintf("journal %d sends", len(p.Sends)))
	}
	if n := len(p.Checkpoints); n > 0 {
		topics, parts, acked := make([]string, n), make([]int32, n), make([]int64, n)
		for i, c := range p.Checkpoints {
			topics[i], parts[i], acked[i] = c.Topic, c.Partition, c.AckedThrough
		}
		b.Queue(`UPDATE `+j.checkpoints+` AS c SET acked_through = GREATEST(c.acked_through, u.a)
FROM unnest($3::text[], $4::int4[], $5::int8[]) AS u(t, p, a)
WHERE c.run_id = $1 AND c.topic = u.t AND c.partition = u.p AND `+owned,
			p.RunID, p.Owner, topics, parts, acked)
		what = append(what, "update checkpoints")
	}
	br := d.pool.SendBatch(ctx, b)
	var took bool // the run's update matched: p.Owner owns the run
	for i, w := range what {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return false, j.classify(fmt.Errorf("%s: %w", w, err))
		}
		if i == 0 {
			took = tag.RowsAffected() == 1
		}
	}
	if err := br.Close(); err != nil {
		return false, j.classify(err)
	}
	return took, nil
}

// queueSends queues the statement that journals p's sends (once per FlushID) and adds them to
// the counts per target partition, where guard holds.
func (j journalTables) queueSends(b *pgx.Batch, p dedupdriver.ReplayProgress, guard string) {
	{ // one statement whatever the batches
		g := batchRowsOf(dedupdriver.GroupSends(p.Sends))
		counts := dedupdriver.CountTargets(p.Sends)
		ctopics, cparts, crecs := make([]string, len(counts)), make([]int32, len(counts)), make([]int64, len(counts))
		for i, c := range counts {
			ctopics[i], cparts[i], crecs[i] = c.Topic, c.Partition, c.Records
		}
		// A flush retried under the same FlushID (its first commit may have landed) stores its
		// sends and adds to the counts once.
		notWritten := `TRUE`
		if p.FlushID != "" {
			notWritten = `NOT EXISTS (SELECT 1 FROM ` + j.batches + ` w WHERE w.run_id = $1 AND w.flush_id = $3)`
		}
		b.Queue(`WITH ins AS (
  INSERT INTO `+j.batches+` (run_id, flush_id, source_topic, source_partition, first_offset, last_offset,
    target_topic, records, sends, sent_at)
  SELECT $1, $3, g.st, g.sp, g.first, g.last, g.tt, g.n, g.sends, g.at
  FROM unnest($4::text[], $5::int4[], $6::text[], $7::int8[], $8::int8[], $9::int4[], $10::bytea[], $11::timestamptz[])
    AS g(st, sp, tt, first, last, n, sends, at)
  WHERE `+guard+` AND `+notWritten+`
  RETURNING 1
)
INSERT INTO `+j.targets+` AS c (run_id, target_topic, target_partition, records)
SELECT $1, u.t, u.p, u.n FROM unnest($12::text[], $13::int4[], $14::int8[]) AS u(t, p, n)
WHERE EXISTS (SELECT 1 FROM ins)
ON CONFLICT (run_id, target_topic, target_partition) DO UPDATE SET records = c.records + EXCLUDED.records`,
			p.RunID, p.Owner, p.FlushID, g.sourceTopics, g.sourceParts, g.targetTopics, g.first, g.last, g.records, g.sends, g.at,
			ctopics, cparts, crecs)
	}
}

// savePartitioned writes a flush of a worker of a run shared by workers
// (ReplayProgress.Partitioned) as one pipeline, one implicit transaction. Its first statement
// takes the run's row lock, so that the flushes of the run's workers follow one another and
// the run's counts, summed last, see every partition's as committed.
func (d *Driver) savePartitioned(ctx context.Context, p dedupdriver.ReplayProgress) (bool, error) {
	j := d.journal()
	now := orNow(p.Now)
	b := &pgx.Batch{}
	what := []string{"lock run"}
	b.Queue(`UPDATE `+j.runs+` SET updated_at = $2 WHERE id = $1`, p.RunID, now)
	if len(p.Sends) > 0 {
		j.queueSends(b, p, `$2::text IS NOT NULL`)
		what = append(what, fmt.Sprintf("journal %d sends", len(p.Sends)))
	}
	n := len(p.Checkpoints)
	if n > 0 {
		topics, parts, acked := make([]string, n), make([]int32, n), make([]int64, n)
		sel, sent, quar, skip := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		for i, c := range p.Checkpoints {
			topics[i], parts[i], acked[i] = c.Topic, c.Partition, c.AckedThrough
			if w := c.Worker; w != nil {
				sel[i], sent[i], quar[i], skip[i] = w.Counts.Selected, w.Counts.Sent, w.Counts.Quarantined, w.Counts.Skipped
			}
		}
		held := `EXISTS (SELECT 1 FROM ` + j.workers + ` w WHERE w.run_id = $1 AND w.topic = u.t AND w.partition = u.p AND w.owner = $2)`
		b.Queue(`UPDATE `+j.checkpoints+` AS c SET acked_through = GREATEST(c.acked_through, u.a)
FROM unnest($3::text[], $4::int4[], $5::int8[]) AS u(t, p, a)
WHERE c.run_id = $1 AND c.topic = u.t AND c.partition = u.p AND `+held,
			p.RunID, p.Owner, topics, parts, acked)
		what = append(what, "update checkpoints")
		b.Queue(`UPDATE `+j.workers+` AS w SET selected = u.sel, sent = u.sent, quarantined = u.q, skipped = u.skip, updated_at = $9
FROM unnest($3::text[], $4::int4[], $5::int8[], $6::int8[], $7::int8[], $8::int8[]) AS u(t, p, sel, sent, q, skip)
WHERE w.run_id = $1 AND w.topic = u.t AND w.partition = u.p AND w.owner = $2`,
			p.RunID, p.Owner, topics, parts, sel, sent, quar, skip, now)
		what = append(what, "update the partitions' counts")
		b.Queue(`UPDATE `+j.runs+` AS r SET selected = s.sel, sent = s.sent, quarantined = s.q, skipped = s.skip
FROM (SELECT COALESCE(sum(selected), 0) AS sel, COALESCE(sum(sent), 0) AS sent, COALESCE(sum(quarantined), 0) AS q,
  COALESCE(sum(skipped), 0) AS skip FROM `+j.workers+` WHERE run_id = $1) AS s
WHERE r.id = $1`, p.RunID)
		what = append(what, "sum the run's counts")
	}
	br := d.pool.SendBatch(ctx, b)
	held := true
	for _, w := range what {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return false, j.classify(fmt.Errorf("%s: %w", w, err))
		}
		if w == "update the partitions' counts" {
			held = tag.RowsAffected() == int64(n)
		}
	}
	if err := br.Close(); err != nil {
		return false, j.classify(err)
	}
	return held, nil
}

func (d *Driver) TakeReplayPartitions(ctx context.Context, id, owner string, parts []dedupdriver.ReplayCheckpoint, now time.Time) error {
	j := d.journal()
	now = orNow(now)
	topics, ps := make([]string, len(parts)), make([]int32, len(parts))
	for i, c := range parts {
		topics[i], ps[i] = c.Topic, c.Partition
	}
	return j.classify(pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE `+j.runs+` SET status = CASE WHEN status = 'completed' THEN status ELSE 'running' END,
  finished_at = CASE WHEN status = 'completed' THEN finished_at END, updated_at = $2 WHERE id = $1`, id, now); err != nil {
			return fmt.Errorf("mark run running: %w", err)
		}
		_, err := tx.Exec(ctx, `UPDATE `+j.workers+` AS w SET owner = $2, updated_at = $5
FROM unnest($3::text[], $4::int4[]) AS u(t, p) WHERE w.run_id = $1 AND w.topic = u.t AND w.partition = u.p`, id, owner, topics, ps, now)
		if err != nil {
			return fmt.Errorf("take partitions: %w", err)
		}
		return nil
	}))
}

func (d *Driver) ReleaseReplayPartitions(ctx context.Context, id, owner string, now time.Time) (bool, error) {
	j := d.journal()
	now = orNow(now)
	var completed bool
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if owner != "" {
			if _, err := tx.Exec(ctx, `UPDATE `+j.workers+` SET owner = NULL, updated_at = $3 WHERE run_id = $1 AND owner = $2`, id, owner, now); err != nil {
				return fmt.Errorf("release partitions: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE `+j.runs+` SET status = 'completed', owner = NULL, finished_at = $2, updated_at = $2
WHERE id = $1 AND status <> 'completed' AND NOT EXISTS (SELECT 1 FROM `+j.checkpoints+` c WHERE c.run_id = $1 AND c.acked_through < c.end_offset)`, id, now); err != nil {
			return fmt.Errorf("complete run: %w", err)
		}
		return tx.QueryRow(ctx, `SELECT status = 'completed' FROM `+j.runs+` WHERE id = $1`, id).Scan(&completed)
	})
	return completed, j.classify(err)
}

// batchRows are GroupSends' batches as the columns of their rows, the sends of each packed
// (dedupdriver.SendBatch.Pack) into one buffer.
type batchRows struct {
	sourceTopics, targetTopics []string
	sourceParts, records       []int32
	first, last                []int64
	sends                      [][]byte
	at                         []time.Time
}

func batchRowsOf(batches []dedupdriver.SendBatch) batchRows {
	var r batchRows
	var buf []byte
	for i := range batches {
		b := &batches[i]
		n := len(b.SourceOffsets)
		r.sourceTopics = append(r.sourceTopics, b.SourceTopic)
		r.sourceParts = append(r.sourceParts, b.SourcePartition)
		r.targetTopics = append(r.targetTopics, b.TargetTopic)
		r.first = append(r.first, b.SourceOffsets[0])
		r.last = append(r.last, b.SourceOffsets[n-1])
		r.records = append(r.records, int32(n))
		start := len(buf)
		buf = b.Pack(buf)
		r.sends = append(r.sends, buf[start:len(buf):len(buf)])
		r.at = append(r.at, orNow(b.At))
	}
	return r
}

func (d *Driver) TakeReplayRun(ctx context.Context, id, fromStatus, fromOwner, owner string, selection dedupdriver.JSONText, now time.Time) (bool, error) {
	j := d.journal()
	tag, err := d.pool.Exec(ctx, `UPDATE `+j.runs+` SET status = 'running', owner = $4, updated_at = $5, finished_at = NULL, error = NULL,
  selection = COALESCE(NULLIF($6::text, ''), selection)
WHERE id = $1 AND status = $2 AND owner IS NOT DISTINCT FROM NULLIF($3, '')`, id, fromStatus, fromOwner, owner, orNow(now), string(selection))
	if err != nil {
		return false, j.classify(err)
	}
	return tag.RowsAffected() == 1, nil
}

func (d *Driver) GetReplayRun(ctx context.Context, id string) (*dedupdriver.ReplayRun, []dedupdriver.ReplayCheckpoint, error) {
	j := d.journal()
	run, err := scanRun(d.pool.QueryRow(ctx, `SELECT `+j.runColumns()+` FROM `+j.runs+` WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, j.classify(err)
	}
	rows, err := d.pool.Query(ctx, `SELECT c.topic, c.partition, c.start_offset, c.end_offset, c.acked_through,
  w.run_id IS NOT NULL, COALESCE(w.owner, ''), COALESCE(w.selected, 0), COALESCE(w.sent, 0), COALESCE(w.quarantined, 0),
  COALESCE(w.skipped, 0), COALESCE(w.updated_at, c_run.updated_at)
FROM `+j.checkpoints+` c JOIN `+j.runs+` c_run ON c_run.id = c.run_id
LEFT JOIN `+j.workers+` w ON w.run_id = c.run_id AND w.topic = c.topic AND w.partition = c.partition
WHERE c.run_id = $1 ORDER BY c.topic, c.partition`, id)
	if err != nil {
		return nil, nil, j.classify(err)
	}
	cps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.ReplayCheckpoint, error) {
		var c dedupdriver.ReplayCheckpoint
		var shared bool
		var w dedupdriver.PartitionWorker
		err := r.Scan(&c.Topic, &c.Partition, &c.Start, &c.End, &c.AckedThrough, &shared, &w.Owner,
			&w.Counts.Selected, &w.Counts.Sent, &w.Counts.Quarantined, &w.Counts.Skipped, &w.UpdatedAt)
		if shared {
			w.UpdatedAt = w.UpdatedAt.UTC()
			c.Worker = &w
		}
		return c, err
	})
	if err != nil {
		return nil, nil, j.classify(err)
	}
	return &run, cps, nil
}

func (d *Driver) ListReplayRuns(ctx context.Context, f dedupdriver.ReplayRunFilter) ([]dedupdriver.ReplayRun, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT `+j.runColumns()+` FROM `+j.runs+`
WHERE ($1 = '' OR status = $1) ORDER BY created_at DESC, id DESC LIMIT $2`, f.Status, f.Limit)
	if err != nil {
		return nil, j.classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.ReplayRun, error) { return scanRun(r) })
	return out, j.classify(err)
}

// batchColumns are the columns collectBatches reads from a send batch b, with the topic ID its
// run journaled for its source topic (t, replay_run_topics LEFT JOINed by batchTopicJoin).
const batchColumns = `b.id, b.run_id, COALESCE(t.topic_id, ''), b.source_topic, b.source_partition, b.target_topic, b.sends,
  b.source_offsets, b.event_ids, b.target_partitions, b.target_offsets, b.sent_at`

func (j journalTables) batchTopicJoin() string {
	return ` LEFT JOIN ` + j.topics + ` t ON t.run_id = b.run_id AND t.topic = b.source_topic`
}

// collectBatches reads rows of batchColumns: the sends packed (migration 005; with their
// source timestamps from migration 006), or in the four arrays of a row written before.
func collectBatches(rows pgx.Rows, err error) ([]dedupdriver.SendBatch, []dedupdriver.BatchRun, error) {
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out []dedupdriver.SendBatch
	var runs []dedupdriver.BatchRun
	for rows.Next() {
		var b dedupdriver.SendBatch
		var run dedupdriver.BatchRun
		var packed []byte
		if err := rows.Scan(&run.Batch, &run.ID, &run.SourceTopicID, &b.SourceTopic, &b.SourcePartition, &b.TargetTopic, &packed,
			&b.SourceOffsets, &b.EventIDs, &b.TargetPartitions, &b.TargetOffsets, &b.At); err != nil {
			return nil, nil, err
		}
		if packed != nil {
			if err := b.Unpack(packed); err != nil {
				return nil, nil, fmt.Errorf("replay run %s: a send batch of %s/%d: %w", run.ID, b.SourceTopic, b.SourcePartition, err)
			}
		}
		if !b.Valid() {
			return nil, nil, fmt.Errorf("replay run %s: a send batch of %s/%d has arrays of unequal length", run.ID, b.SourceTopic, b.SourcePartition)
		}
		b.At = b.At.UTC()
		out = append(out, b)
		runs = append(runs, run)
	}
	return out, runs, rows.Err()
}

func (d *Driver) ReplaySendsAfterCheckpoint(ctx context.Context, id string) ([]dedupdriver.ReplaySend, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT `+batchColumns+`
FROM `+j.batches+` b JOIN `+j.checkpoints+` c
  ON c.run_id = b.run_id AND c.topic = b.source_topic AND c.partition = b.source_partition`+j.batchTopicJoin()+`
WHERE b.run_id = $1 AND b.last_offset > c.acked_through
ORDER BY b.id`, id)
	batches, _, err := collectBatches(rows, err)
	if err != nil {
		return nil, j.classify(err)
	}
	_, cps, err := d.GetReplayRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return sendsAfter(batches, cps), nil
}

// sendsAfter expands the sends of batches beyond their partition's checkpoint, ordered by
// source topic, partition and offset, each source record once.
func sendsAfter(batches []dedupdriver.SendBatch, cps []dedupdriver.ReplayCheckpoint) []dedupdriver.ReplaySend {
	acked := map[string]int64{}
	for _, c := range cps {
		acked[fmt.Sprintf("%s/%d", c.Topic, c.Partition)] = c.AckedThrough
	}
	var out []dedupdriver.ReplaySend
	for i := range batches {
		b := &batches[i]
		through, ok := acked[fmt.Sprintf("%s/%d", b.SourceTopic, b.SourcePartition)]
		if !ok {
			continue
		}
		for k, o := range b.SourceOffsets {
			if o > through {
				out = append(out, b.Send(k))
			}
		}
	}
	return dedupdriver.SortSends(out)
}

func (d *Driver) ReplayTargetCounts(ctx context.Context, id string) ([]dedupdriver.TargetCount, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT target_topic, target_partition, records FROM `+j.targets+`
WHERE run_id = $1 ORDER BY 1, 2`, id)
	if err != nil {
		return nil, j.classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.TargetCount, error) {
		var c dedupdriver.TargetCount
		err := r.Scan(&c.Topic, &c.Partition, &c.Records)
		return c, err
	})
	return out, j.classify(err)
}

// ReplayedSpans reads the span of every source partition of topic from the batches (their
// source index: topic, partition, last offset).
func (d *Driver) ReplayedSpans(ctx context.Context, topic string) (map[int32]dedupdriver.OffsetSpan, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT source_partition, min(first_offset), max(last_offset) FROM `+j.batches+`
WHERE source_topic = $1 GROUP BY source_partition`, topic)
	if err != nil {
		return nil, j.classify(err)
	}
	out := map[int32]dedupdriver.OffsetSpan{}
	var (
		p    int32
		span dedupdriver.OffsetSpan
	)
	_, err = pgx.ForEachRow(rows, []any{&p, &span.First, &span.Last}, func() error {
		out[p] = span
		return nil
	})
	if err != nil {
		return nil, j.classify(err)
	}
	return out, nil
}

// ReplayedSources finds the batches that may hold each record (same source partition, the
// offset within the batch's first and last) and resolves the records in the latest of them
// (dedupdriver.ResolveLatest).
func (d *Driver) ReplayedSources(ctx context.Context, recs []dedupdriver.SourceRecord) (map[dedupdriver.SourceRef]dedupdriver.ReplayRef, error) {
	j := d.journal()
	// In two steps (dedupdriver.SourceWindows): the spans of the batches near the records, then
	// the latest batches that hold them (dedupdriver.ResolveLatest).
	ws := dedupdriver.SourceWindows(recs)
	topics, parts, lows, highs := make([]string, len(ws)), make([]int32, len(ws)), make([]int64, len(ws)), make([]int64, len(ws))
	for i, w := range ws {
		topics[i], parts[i], lows[i], highs[i] = w.Topic, w.Partition, w.Low, w.High
	}
	// A batch that holds an offset of the window ends within the window's width plus the widest
	// batch of its partition (migration 014's index: one probe) from the window's start: the read
	// of the index is bounded by the window, not by the batches after it.
	rows, err := d.pool.Query(ctx, `SELECT c.id, c.source_topic, c.source_partition, c.first_offset, c.last_offset, c.sent_at, c.run_id
FROM unnest($1::text[], $2::int4[], $3::int8[], $4::int8[]) AS w(t, p, lo, hi)
CROSS JOIN LATERAL (SELECT max(b.last_offset - b.first_offset) AS width FROM `+j.batches+` b WHERE b.source_topic = w.t AND b.source_partition = w.p) m
JOIN `+j.batches+` c ON c.source_topic = w.t AND c.source_partition = w.p AND c.last_offset >= w.lo AND c.last_offset <= w.hi + m.width
  AND c.first_offset <= w.hi`,
		topics, parts, lows, highs)
	if err != nil {
		return nil, j.classify(err)
	}
	spans, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.BatchSpan, error) {
		var s dedupdriver.BatchSpan
		err := r.Scan(&s.ID, &s.Topic, &s.Partition, &s.First, &s.Last, &s.At, &s.RunID)
		return s, err
	})
	if err != nil {
		return nil, j.classify(err)
	}
	out, err := dedupdriver.ResolveLatest(recs, spans, func(ids []int64) ([]dedupdriver.SendBatch, []dedupdriver.BatchRun, error) {
		return collectBatches(d.pool.Query(ctx, `SELECT `+batchColumns+` FROM `+j.batches+` b`+j.batchTopicJoin()+` WHERE b.id = ANY($1::int8[])`, ids))
	})
	if err != nil {
		return nil, j.classify(err)
	}
	return out, nil
}
