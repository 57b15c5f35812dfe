package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.Journal = (*Driver)(nil)

// journalTables are the journal's tables (dedupdriver.JournalTemplateData), named with the
// store's schema prefix like every other table, quoted.
type journalTables struct {
	schema                     string
	runs, checkpoints, batches string
	targets                    string // replay_target_counts of migration 004
	topics, times              string // replay_run_topics and replay_send_times of migration 006
	actions                    string // marker_actions of migration 007
	groups                     string // group_actions of migration 008
	workers                    string // replay_workers of migration 013
}

func (d *Driver) journal() journalTables {
	s := d.names.Schema
	t := func(name string) string { return quote(TableName(s, name)) }
	return journalTables{schema: s, runs: t("replay_runs"), checkpoints: t("replay_checkpoints"), batches: t("replay_send_batches"),
		targets: t("replay_target_counts"), topics: t("replay_run_topics"), times: t("replay_send_times"),
		actions: t("marker_actions"), groups: t("group_actions"), workers: t("replay_workers")}
}

// templateData adds the journal's names to the migrations' template data.
// SQLite index names are global in the file, so they carry the prefix too.
func (j journalTables) templateData(m map[string]string) {
	dedupdriver.JournalTemplateData(m, func(name string) string { return quote(TableName(j.schema, name)) },
		func(table, suffix string) string { return quote(TableName(j.schema, table) + suffix) })
}

func (j journalTables) classify(err error) error { return classifyMissing(j.runs, err) }

// classifyActions names the actions table (migration 007) when it is missing.
func (j journalTables) classifyActions(err error) error { return classifyMissing(j.actions, err) }

// classifyGroups names the group actions table (migration 008) when it is missing.
func (j journalTables) classifyGroups(err error) error { return classifyMissing(j.groups, err) }

// classifyMissing is err as dedupdriver.NotMigrated naming table when a table is missing.
func classifyMissing(table string, err error) error {
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return dedupdriver.NotMigrated(table, err)
	}
	return err
}

// runColumns are the columns scanRun reads from the runs table, the run's topic IDs as
// topic=id pairs among them (topic names and IDs hold neither = nor ,).
func (j journalTables) runColumns() string {
	return `id, operator, reason, selection, source_topics, target, status, COALESCE(owner, ''), COALESCE(error, ''),
selected, sent, quarantined, skipped, created_at, updated_at, finished_at,
COALESCE((SELECT group_concat(t.topic || '=' || t.topic_id, ',') FROM ` + j.topics + ` t WHERE t.run_id = ` + j.runs + `.id), '')`
}

func scanRun(r interface{ Scan(...any) error }) (dedupdriver.ReplayRun, error) {
	var run dedupdriver.ReplayRun
	var sources, topicIDs string
	var created, updated, finished any
	err := r.Scan(&run.ID, &run.Operator, &run.Reason, &run.Selection, &sources, &run.Target, &run.Status, &run.Owner, &run.Error,
		&run.Selected, &run.Sent, &run.Quarantined, &run.Skipped, &created, &updated, &finished, &topicIDs)
	if err != nil {
		return run, err
	}
	run.SourceTopicIDs = dedupdriver.ParseTopicIDs(topicIDs)
	run.Sources = []string{}
	if sources != "" {
		run.Sources = strings.Split(sources, ",")
	}
	if run.CreatedAt, err = parseTime(created); err != nil {
		return run, err
	}
	if run.UpdatedAt, err = parseTime(updated); err != nil {
		return run, err
	}
	if finished != nil {
		t, err := parseTime(finished)
		if err != nil {
			return run, err
		}
		run.FinishedAt = &t
	}
	return run, nil
}

func storedOrNow(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return FormatTime(t)
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (d *Driver) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *Driver) CreateReplayRun(ctx context.Context, run dedupdriver.ReplayRun, cps []dedupdriver.ReplayCheckpoint) error {
	j := d.journal()
	return j.classify(d.inTx(ctx, func(tx *sql.Tx) error {
		// The transaction holds the write lock from its BEGIN IMMEDIATE: runs are recorded one
		// at a time, each at the time it holds the lock (see the PostgreSQL driver's).
		at := storedOrNow(run.CreatedAt)
		_, err := tx.ExecContext(ctx, `INSERT INTO `+j.runs+` (id, operator, reason, selection, source_topics, target, status, owner, error,
  selected, sent, quarantined, skipped, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
			run.ID, run.Operator, run.Reason, run.Selection, strings.Join(run.Sources, ","), run.Target, run.Status,
			nullIfEmpty(run.Owner), nullIfEmpty(run.Error), run.Selected, run.Sent, run.Quarantined, run.Skipped, at)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		for topic, id := range run.SourceTopicIDs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+j.topics+` (run_id, topic, topic_id) VALUES ($1, $2, $3)`, run.ID, topic, id); err != nil {
				return fmt.Errorf("insert the topic ID of %s: %w", topic, err)
			}
		}
		for _, c := range cps {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+j.checkpoints+` (run_id, topic, partition, start_offset, end_offset, acked_through)
VALUES ($1, $2, $3, $4, $5, $6)`, run.ID, c.Topic, c.Partition, c.Start, c.End, c.AckedThrough)
			if err != nil {
				return fmt.Errorf("insert checkpoint %s/%d: %w", c.Topic, c.Partition, err)
			}
			if c.Worker != nil { // a run shared by workers: a row per partition, held by none
				_, err := tx.ExecContext(ctx, `INSERT INTO `+j.workers+` (run_id, topic, partition, updated_at) VALUES ($1, $2, $3, $4)`,
					run.ID, c.Topic, c.Partition, at)
				if err != nil {
					return fmt.Errorf("insert the worker of %s/%d: %w", c.Topic, c.Partition, err)
				}
			}
		}
		return nil
	}))
}

func (d *Driver) SaveReplayProgress(ctx context.Context, p dedupdriver.ReplayProgress) (bool, error) {
	j := d.journal()
	owned := false
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if p.Partitioned {
			owned, err = j.savePartitioned(ctx, tx, p)
			return err
		}
		if owned, err = j.updateRun(ctx, tx, p); err != nil || !owned {
			return err
		}
		written := false
		if p.FlushID != "" && len(p.Sends) > 0 {
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+j.batches+` WHERE run_id = $1 AND flush_id = $2)`, p.RunID, p.FlushID).Scan(&written); err != nil {
				return fmt.Errorf("check flush %s: %w", p.FlushID, err)
			}
		}
		if !written {
			if err := j.insertSends(ctx, tx, p); err != nil {
				return err
			}
		}
		for _, c := range p.Checkpoints {
			_, err := tx.ExecContext(ctx, `UPDATE `+j.checkpoints+` SET acked_through = max(acked_through, $4)
WHERE run_id = $1 AND topic = $2 AND partition = $3`, p.RunID, c.Topic, c.Partition, c.AckedThrough)
			if err != nil {
				return fmt.Errorf("update checkpoint %s/%d: %w", c.Topic, c.Partition, err)
			}
		}
		return nil
	})
	if err != nil {
		return false, j.classify(err)
	}
	return owned, nil
}

// savePartitioned writes a flush of a worker of a run shared by workers
// (ReplayProgress.Partitioned) in tx: the sends whatever, each checkpoint and its counts while
// p.Owner holds its partition, the run's counts summed; false when a partition was not held.
func (j journalTables) savePartitioned(ctx context.Context, tx *sql.Tx, p dedupdriver.ReplayProgress) (bool, error) {
	now := storedOrNow(p.Now)
	written := false
	if p.FlushID != "" && len(p.Sends) > 0 {
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+j.batches+` WHERE run_id = $1 AND flush_id = $2)`, p.RunID, p.FlushID).Scan(&written); err != nil {
			return false, fmt.Errorf("check flush %s: %w", p.FlushID, err)
		}
	}
	if !written {
		if err := j.insertSends(ctx, tx, p); err != nil {
			return false, err
		}
	}
	held := true
	for _, c := range p.Checkpoints {
		var n dedupdriver.RunCounts
		if c.Worker != nil {
			n = c.Worker.Counts
		}
		res, err := tx.ExecContext(ctx, `UPDATE `+j.workers+` SET selected = $5, sent = $6, quarantined = $7, skipped = $8, updated_at = $9
WHERE run_id = $1 AND topic = $2 AND partition = $3 AND owner = $4`, p.RunID, c.Topic, c.Partition, p.Owner, n.Selected, n.Sent, n.Quarantined, n.Skipped, now)
		if err != nil {
			return false, fmt.Errorf("update the counts of %s/%d: %w", c.Topic, c.Partition, err)
		}
		if k, err := res.RowsAffected(); err != nil || k != 1 {
			held = false
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+j.checkpoints+` SET acked_through = max(acked_through, $4)
WHERE run_id = $1 AND topic = $2 AND partition = $3`, p.RunID, c.Topic, c.Partition, c.AckedThrough); err != nil {
			return false, fmt.Errorf("update checkpoint %s/%d: %w", c.Topic, c.Partition, err)
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE `+j.runs+` SET updated_at = $2,
  selected = (SELECT COALESCE(sum(selected), 0) FROM `+j.workers+` WHERE run_id = $1),
  sent = (SELECT COALESCE(sum(sent), 0) FROM `+j.workers+` WHERE run_id = $1),
  quarantined = (SELECT COALESCE(sum(quarantined), 0) FROM `+j.workers+` WHERE run_id = $1),
  skipped = (SELECT COALESCE(sum(skipped), 0) FROM `+j.workers+` WHERE run_id = $1)
WHERE id = $1`, p.RunID, now)
	if err != nil {
		return false, fmt.Errorf("sum the run's counts: %w", err)
	}
	return held, nil
}

func (d *Driver) TakeReplayPartitions(ctx context.Context, id, owner string, parts []dedupdriver.ReplayCheckpoint, now time.Time) error {
	j := d.journal()
	at := storedOrNow(now)
	return j.classify(d.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE `+j.runs+` SET status = CASE WHEN status = 'completed' THEN status ELSE 'running' END,
  finished_at = CASE WHEN status = 'completed' THEN finished_at END, updated_at = $2 WHERE id = $1`, id, at); err != nil {
			return fmt.Errorf("mark run running: %w", err)
		}
		for _, c := range parts {
			if _, err := tx.ExecContext(ctx, `UPDATE `+j.workers+` SET owner = $4, updated_at = $5 WHERE run_id = $1 AND topic = $2 AND partition = $3`,
				id, c.Topic, c.Partition, owner, at); err != nil {
				return fmt.Errorf("take %s/%d: %w", c.Topic, c.Partition, err)
			}
		}
		return nil
	}))
}

func (d *Driver) ReleaseReplayPartitions(ctx context.Context, id, owner string, now time.Time) (bool, error) {
	j := d.journal()
	at := storedOrNow(now)
	var status string
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if owner != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE `+j.workers+` SET owner = NULL, updated_at = $3 WHERE run_id = $1 AND owner = $2`, id, owner, at); err != nil {
				return fmt.Errorf("release partitions: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+j.runs+` SET status = 'completed', owner = NULL, finished_at = $2, updated_at = $2
WHERE id = $1 AND status <> 'completed' AND NOT EXISTS (SELECT 1 FROM `+j.checkpoints+` c WHERE c.run_id = $1 AND c.acked_through < c.end_offset)`, id, at); err != nil {
			return fmt.Errorf("complete run: %w", err)
		}
		return tx.QueryRowContext(ctx, `SELECT status FROM `+j.runs+` WHERE id = $1`, id).Scan(&status)
	})
	return status == dedupdriver.RunCompleted, j.classify(err)
}

// updateRun writes p's status, counts and times on the run while p.Owner owns it, and reports
// whether it does.
func (j journalTables) updateRun(ctx context.Context, tx *sql.Tx, p dedupdriver.ReplayProgress) (bool, error) {
	now := storedOrNow(p.Now)
	var finished any
	if p.Finished {
		finished = now
	}
	res, err := tx.ExecContext(ctx, `UPDATE `+j.runs+` SET status = $3, error = $4,
  selected = $5, sent = $6, quarantined = $7, skipped = $8, updated_at = $9, finished_at = $10
WHERE id = $1 AND owner = $2`,
		p.RunID, p.Owner, p.Status, nullIfEmpty(p.Error), p.Counts.Selected, p.Counts.Sent, p.Counts.Quarantined, p.Counts.Skipped, now, finished)
	if err != nil {
		return false, fmt.Errorf("update run: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// insertSends journals p's sends as send batches (with their source timestamps, when they
// have them) and adds them to the run's counts per target partition.
func (j journalTables) insertSends(ctx context.Context, tx *sql.Tx, p dedupdriver.ReplayProgress) error {
	for _, b := range dedupdriver.GroupSends(p.Sends) {
		if err := j.insertBatch(ctx, tx, p, b); err != nil {
			return err
		}
	}
	for _, c := range dedupdriver.CountTargets(p.Sends) {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+j.targets+` (run_id, target_topic, target_partition, records) VALUES ($1, $2, $3, $4)
ON CONFLICT (run_id, target_topic, target_partition) DO UPDATE SET records = records + excluded.records`, p.RunID, c.Topic, c.Partition, c.Records)
		if err != nil {
			return fmt.Errorf("count sends to %s/%d: %w", c.Topic, c.Partition, err)
		}
	}
	return nil
}

// insertBatch writes one send batch: its positions as JSON arrays, its source timestamps in
// replay_send_times.
func (j journalTables) insertBatch(ctx context.Context, tx *sql.Tx, p dedupdriver.ReplayProgress, b dedupdriver.SendBatch) error {
	n := len(b.SourceOffsets)
	arrays := make([]any, 4)
	for i, v := range []any{b.SourceOffsets, b.EventIDs, b.TargetPartitions, b.TargetOffsets} {
		text, err := json.Marshal(v)
		if err != nil {
			return err
		}
		arrays[i] = string(text)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO `+j.batches+` (run_id, flush_id, source_topic, source_partition, first_offset, last_offset,
  target_topic, records, source_offsets, event_ids, target_partitions, target_offsets, sent_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		p.RunID, p.FlushID, b.SourceTopic, b.SourcePartition, b.SourceOffsets[0], b.SourceOffsets[n-1], b.TargetTopic, n,
		arrays[0], arrays[1], arrays[2], arrays[3], storedOrNow(b.At))
	if err != nil {
		return fmt.Errorf("insert %d sends of %s/%d: %w", n, b.SourceTopic, b.SourcePartition, err)
	}
	if b.SourceTimestamps == nil {
		return nil
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	text, err := json.Marshal(b.SourceTimestamps)
	if err != nil {
		return err
	}
	// OR REPLACE: SQLite may give a batch the id of one deleted before, whose
	// timestamps a database without foreign keys enforced would still hold.
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO `+j.times+` (batch_id, source_timestamps) VALUES ($1, $2)`, id, string(text)); err != nil {
		return fmt.Errorf("insert the source timestamps of %d sends of %s/%d: %w", n, b.SourceTopic, b.SourcePartition, err)
	}
	return nil
}

func (d *Driver) TakeReplayRun(ctx context.Context, id, fromStatus, fromOwner, owner string, selection dedupdriver.JSONText, now time.Time) (bool, error) {
	j := d.journal()
	res, err := d.db.ExecContext(ctx, `UPDATE `+j.runs+` SET status = 'running', owner = $4, updated_at = $5, finished_at = NULL, error = NULL,
  selection = COALESCE(NULLIF($6, ''), selection)
WHERE id = $1 AND status = $2 AND owner IS $3`, id, fromStatus, nullIfEmpty(fromOwner), owner, storedOrNow(now), string(selection))
	if err != nil {
		return false, j.classify(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (d *Driver) GetReplayRun(ctx context.Context, id string) (*dedupdriver.ReplayRun, []dedupdriver.ReplayCheckpoint, error) {
	j := d.journal()
	run, err := scanRun(d.db.QueryRowContext(ctx, `SELECT `+j.runColumns()+` FROM `+j.runs+` WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, j.classify(err)
	}
	rows, err := d.db.QueryContext(ctx, `SELECT c.topic, c.partition, c.start_offset, c.end_offset, c.acked_through,
  w.run_id IS NOT NULL, COALESCE(w.owner, ''), COALESCE(w.selected, 0), COALESCE(w.sent, 0), COALESCE(w.quarantined, 0),
  COALESCE(w.skipped, 0), COALESCE(w.updated_at, '')
FROM `+j.checkpoints+` c LEFT JOIN `+j.workers+` w ON w.run_id = c.run_id AND w.topic = c.topic AND w.partition = c.partition
WHERE c.run_id = $1 ORDER BY c.topic, c.partition`, id)
	if err != nil {
		return nil, nil, j.classify(err)
	}
	defer rows.Close()
	var cps []dedupdriver.ReplayCheckpoint
	for rows.Next() {
		var c dedupdriver.ReplayCheckpoint
		var shared bool
		var w dedupdriver.PartitionWorker
		var updated any
		if err := rows.Scan(&c.Topic, &c.Partition, &c.Start, &c.End, &c.AckedThrough, &shared, &w.Owner,
			&w.Counts.Selected, &w.Counts.Sent, &w.Counts.Quarantined, &w.Counts.Skipped, &updated); err != nil {
			return nil, nil, err
		}
		if shared {
			if w.UpdatedAt, err = parseTime(updated); err != nil {
				return nil, nil, err
			}
			c.Worker = &w
		}
		cps = append(cps, c)
	}
	return &run, cps, j.classify(rows.Err())
}

func (d *Driver) ListReplayRuns(ctx context.Context, f dedupdriver.ReplayRunFilter) ([]dedupdriver.ReplayRun, error) {
	j := d.journal()
	rows, err := d.db.QueryContext(ctx, `SELECT `+j.runColumns()+` FROM `+j.runs+`
WHERE ($1 = '' OR status = $1) ORDER BY created_at DESC, id DESC LIMIT $2`, f.Status, f.Limit)
	if err != nil {
		return nil, j.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.ReplayRun
	for rows.Next() {
		run, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, j.classify(rows.Err())
}

// batchColumns are the columns collectBatches reads from a send batch b: with the topic ID its
// run journaled for its source topic (t) and its source timestamps (s), both LEFT JOINed by
// batchJoins and missing for a batch journaled before migration 006.
const batchColumns = `b.id, b.run_id, COALESCE(t.topic_id, ''), b.source_topic, b.source_partition, b.target_topic,
  b.source_offsets, COALESCE(s.source_timestamps, ''), b.event_ids, b.target_partitions, b.target_offsets, b.sent_at`

func (j journalTables) batchJoins() string {
	return ` LEFT JOIN ` + j.topics + ` t ON t.run_id = b.run_id AND t.topic = b.source_topic LEFT JOIN ` + j.times + ` s ON s.batch_id = b.id`
}

// collectBatches reads rows of batchColumns.
func collectBatches(rows *sql.Rows, err error) ([]dedupdriver.SendBatch, []dedupdriver.BatchRun, error) {
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out []dedupdriver.SendBatch
	var runs []dedupdriver.BatchRun
	for rows.Next() {
		var b dedupdriver.SendBatch
		var run dedupdriver.BatchRun
		var so, ts, ids, tp, to string
		var at any
		if err := rows.Scan(&run.Batch, &run.ID, &run.SourceTopicID, &b.SourceTopic, &b.SourcePartition, &b.TargetTopic, &so, &ts, &ids, &tp, &to, &at); err != nil {
			return nil, nil, err
		}
		type array struct {
			text string
			dst  any
		}
		arrays := []array{{so, &b.SourceOffsets}, {ids, &b.EventIDs}, {tp, &b.TargetPartitions}, {to, &b.TargetOffsets}}
		if ts != "" { // none for a batch journaled before migration 006
			arrays = append(arrays, array{ts, &b.SourceTimestamps})
		}
		for _, a := range arrays {
			if err := json.Unmarshal([]byte(a.text), a.dst); err != nil {
				return nil, nil, fmt.Errorf("replay run %s: a send batch of %s/%d: %w", run.ID, b.SourceTopic, b.SourcePartition, err)
			}
		}
		if !b.Valid() || ts != "" && b.SourceTimestamps == nil {
			return nil, nil, fmt.Errorf("replay run %s: a send batch of %s/%d has arrays of unequal length", run.ID, b.SourceTopic, b.SourcePartition)
		}
		if b.At, err = parseTime(at); err != nil {
			return nil, nil, err
		}
		out = append(out, b)
		runs = append(runs, run)
	}
	return out, runs, rows.Err()
}

func (d *Driver) ReplaySendsAfterCheckpoint(ctx context.Context, id string) ([]dedupdriver.ReplaySend, error) {
	j := d.journal()
	batches, _, err := collectBatches(d.db.QueryContext(ctx, `SELECT `+batchColumns+`
FROM `+j.batches+` b JOIN `+j.checkpoints+` c
  ON c.run_id = b.run_id AND c.topic = b.source_topic AND c.partition = b.source_partition`+j.batchJoins()+`
WHERE b.run_id = $1 AND b.last_offset > c.acked_through
ORDER BY b.id`, id))
	if err != nil {
		return nil, j.classify(err)
	}
	_, cps, err := d.GetReplayRun(ctx, id)
	if err != nil {
		return nil, err
	}
	acked := map[string]int64{}
	for _, c := range cps {
		acked[fmt.Sprintf("%s/%d", c.Topic, c.Partition)] = c.AckedThrough
	}
	var out []dedupdriver.ReplaySend
	for i := range batches {
		b := &batches[i]
		through := acked[fmt.Sprintf("%s/%d", b.SourceTopic, b.SourcePartition)]
		for k, o := range b.SourceOffsets {
			if o > through {
				out = append(out, b.Send(k))
			}
		}
	}
	return dedupdriver.SortSends(out), nil
}

func (d *Driver) ReplayTargetCounts(ctx context.Context, id string) ([]dedupdriver.TargetCount, error) {
	j := d.journal()
	rows, err := d.db.QueryContext(ctx, `SELECT target_topic, target_partition, records FROM `+j.targets+`
WHERE run_id = $1 ORDER BY 1, 2`, id)
	if err != nil {
		return nil, j.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.TargetCount
	for rows.Next() {
		var c dedupdriver.TargetCount
		if err := rows.Scan(&c.Topic, &c.Partition, &c.Records); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, j.classify(rows.Err())
}

// ReplayedSources finds the batches that may hold each record (same source partition, the
// offset within the batch's first and last) and resolves the records in them.
// ReplayedSpans reads the span of every source partition of topic from the batches (their
// source index: topic, partition, last offset).
func (d *Driver) ReplayedSpans(ctx context.Context, topic string) (map[int32]dedupdriver.OffsetSpan, error) {
	j := d.journal()
	rows, err := d.db.QueryContext(ctx, `SELECT source_partition, min(first_offset), max(last_offset) FROM `+j.batches+`
WHERE source_topic = $1 GROUP BY source_partition`, topic)
	if err != nil {
		return nil, j.classify(err)
	}
	defer rows.Close()
	out := map[int32]dedupdriver.OffsetSpan{}
	for rows.Next() {
		var (
			p    int32
			span dedupdriver.OffsetSpan
		)
		if err := rows.Scan(&p, &span.First, &span.Last); err != nil {
			return nil, j.classify(err)
		}
		out[p] = span
	}
	if err := rows.Err(); err != nil {
		return nil, j.classify(err)
	}
	return out, nil
}

func (d *Driver) ReplayedSources(ctx context.Context, recs []dedupdriver.SourceRecord) (map[dedupdriver.SourceRef]dedupdriver.ReplayRef, error) {
	j := d.journal()
	// In two steps (dedupdriver.SourceWindows): the spans of the batches near the records, then
	// the latest batches that hold them (dedupdriver.ResolveLatest).
	ws := dedupdriver.SourceWindows(recs)
	windows := make([][]any, len(ws))
	for i, w := range ws {
		windows[i] = []any{w.Topic, w.Partition, w.Low, w.High}
	}
	arr, err := json.Marshal(windows)
	if err != nil {
		return nil, err
	}
	// Bounded by the window and the widest batch of its partition, as in the PostgreSQL driver.
	rows, err := d.db.QueryContext(ctx, `SELECT c.id, c.source_topic, c.source_partition, c.first_offset, c.last_offset, c.sent_at, c.run_id FROM json_each($1) AS w
  JOIN `+j.batches+` c ON c.source_topic = w.value->>0 AND c.source_partition = w.value->>1
    AND c.last_offset >= w.value->>2 AND c.first_offset <= w.value->>3
    AND c.last_offset <= w.value->>3 + (SELECT max(b.last_offset - b.first_offset) FROM `+j.batches+` b
      WHERE b.source_topic = w.value->>0 AND b.source_partition = w.value->>1)`, string(arr))
	if err != nil {
		return nil, j.classify(err)
	}
	var spans []dedupdriver.BatchSpan
	for rows.Next() {
		var s dedupdriver.BatchSpan
		var at any
		if err := rows.Scan(&s.ID, &s.Topic, &s.Partition, &s.First, &s.Last, &at, &s.RunID); err != nil {
			rows.Close()
			return nil, j.classify(err)
		}
		if s.At, err = parseTime(at); err != nil {
			rows.Close()
			return nil, err
		}
		spans = append(spans, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, j.classify(err)
	}
	out, err := dedupdriver.ResolveLatest(recs, spans, func(ids []int64) ([]dedupdriver.SendBatch, []dedupdriver.BatchRun, error) {
		arr, err := json.Marshal(ids)
		if err != nil {
			return nil, nil, err
		}
		return collectBatches(d.db.QueryContext(ctx, `SELECT `+batchColumns+` FROM `+j.batches+` b`+j.batchJoins()+` WHERE b.id IN (SELECT value FROM json_each($1))`, string(arr)))
	})
	if err != nil {
		return nil, j.classify(err)
	}
	return out, nil
}
