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
	sends       string
}

func (d *Driver) journal() journalTables {
	s := d.names.Schema
	return journalTables{
		schema:      s,
		runs:        qualify(s, "replay_runs"),
		checkpoints: qualify(s, "replay_checkpoints"),
		sends:       qualify(s, "replay_sends"),
	}
}

// templateData adds the journal's names to the migrations' template data.
// Index names are unqualified: an index lives in its table's schema.
func (j journalTables) templateData(m map[string]string) {
	m["ReplayRuns"] = j.runs
	m["ReplayCheckpoints"] = j.checkpoints
	m["ReplaySends"] = j.sends
	m["ReplayRunsCreatedIndex"] = quote("replay_runs_created_at_idx")
	m["ReplaySendsSourceIndex"] = quote("replay_sends_source_idx")
}

// classify names the journal's runs table when the journal is missing.
func (j journalTables) classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") {
		return dedupdriver.NotMigrated(j.runs, err)
	}
	return err
}

const runColumns = `id, operator, reason, selection, source_topics, target, status, COALESCE(owner, ''), COALESCE(error, ''),
selected, sent, quarantined, skipped, created_at, updated_at, finished_at`

func scanRun(r pgx.Row) (dedupdriver.ReplayRun, error) {
	var run dedupdriver.ReplayRun
	var sources string
	err := r.Scan(&run.ID, &run.Operator, &run.Reason, &run.Selection, &sources, &run.Target, &run.Status, &run.Owner, &run.Error,
		&run.Selected, &run.Sent, &run.Quarantined, &run.Skipped, &run.CreatedAt, &run.UpdatedAt, &run.FinishedAt)
	if err != nil {
		return run, err
	}
	run.Sources = splitTopics(sources)
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
		at := orNow(run.CreatedAt)
		_, err := tx.Exec(ctx, `INSERT INTO `+j.runs+` (id, operator, reason, selection, source_topics, target, status, owner, error,
  selected, sent, quarantined, skipped, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), NULLIF($9, ''), $10, $11, $12, $13, $14, $14)`,
			run.ID, run.Operator, run.Reason, run.Selection, strings.Join(run.Sources, ","), run.Target, run.Status, run.Owner, run.Error,
			run.Selected, run.Sent, run.Quarantined, run.Skipped, at)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
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
		return nil
	}))
}

func (d *Driver) SaveReplayProgress(ctx context.Context, p dedupdriver.ReplayProgress) (bool, error) {
	j := d.journal()
	owned := false
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		now := orNow(p.Now)
		var finished *time.Time
		if p.Finished {
			finished = &now
		}
		tag, err := tx.Exec(ctx, `UPDATE `+j.runs+` SET status = $3, error = NULLIF($4, ''),
  selected = $5, sent = $6, quarantined = $7, skipped = $8, updated_at = $9, finished_at = $10
WHERE id = $1 AND owner = $2`,
			p.RunID, p.Owner, p.Status, p.Error, p.Counts.Selected, p.Counts.Sent, p.Counts.Quarantined, p.Counts.Skipped, now, finished)
		if err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		owned = true
		if n := len(p.Sends); n > 0 {
			var (
				sTopics, tTopics, ids = make([]string, n), make([]string, n), make([]string, n)
				sParts, tParts        = make([]int32, n), make([]int32, n)
				sOffs, tOffs          = make([]int64, n), make([]int64, n)
				ats                   = make([]time.Time, n)
			)
			for i, s := range p.Sends {
				sTopics[i], sParts[i], sOffs[i], ids[i] = s.SourceTopic, s.SourcePartition, s.SourceOffset, s.EventID
				tTopics[i], tParts[i], tOffs[i], ats[i] = s.TargetTopic, s.TargetPartition, s.TargetOffset, orNow(s.At)
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+j.sends+` (run_id, source_topic, source_partition, source_offset, event_id,
  target_topic, target_partition, target_offset, sent_at)
SELECT $1, u.st, u.sp, u.so, NULLIF(u.id, ''), u.tt, u.tp, u.tofs, u.at
FROM unnest($2::text[], $3::int4[], $4::int8[], $5::text[], $6::text[], $7::int4[], $8::int8[], $9::timestamptz[])
  AS u(st, sp, so, id, tt, tp, tofs, at)
ON CONFLICT (run_id, source_topic, source_partition, source_offset) DO NOTHING`,
				p.RunID, sTopics, sParts, sOffs, ids, tTopics, tParts, tOffs, ats)
			if err != nil {
				return fmt.Errorf("insert %d sends: %w", n, err)
			}
		}
		if n := len(p.Checkpoints); n > 0 {
			topics, parts, acked := make([]string, n), make([]int32, n), make([]int64, n)
			for i, c := range p.Checkpoints {
				topics[i], parts[i], acked[i] = c.Topic, c.Partition, c.AckedThrough
			}
			_, err := tx.Exec(ctx, `UPDATE `+j.checkpoints+` AS c SET acked_through = GREATEST(c.acked_through, u.a)
FROM unnest($2::text[], $3::int4[], $4::int8[]) AS u(t, p, a)
WHERE c.run_id = $1 AND c.topic = u.t AND c.partition = u.p`, p.RunID, topics, parts, acked)
			if err != nil {
				return fmt.Errorf("update checkpoints: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return false, j.classify(err)
	}
	return owned, nil
}

func (d *Driver) TakeReplayRun(ctx context.Context, id, fromStatus, fromOwner, owner string, now time.Time) (bool, error) {
	j := d.journal()
	tag, err := d.pool.Exec(ctx, `UPDATE `+j.runs+` SET status = 'running', owner = $4, updated_at = $5, finished_at = NULL, error = NULL
WHERE id = $1 AND status = $2 AND owner IS NOT DISTINCT FROM NULLIF($3, '')`, id, fromStatus, fromOwner, owner, orNow(now))
	if err != nil {
		return false, j.classify(err)
	}
	return tag.RowsAffected() == 1, nil
}

func (d *Driver) GetReplayRun(ctx context.Context, id string) (*dedupdriver.ReplayRun, []dedupdriver.ReplayCheckpoint, error) {
	j := d.journal()
	run, err := scanRun(d.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM `+j.runs+` WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, j.classify(err)
	}
	rows, err := d.pool.Query(ctx, `SELECT topic, partition, start_offset, end_offset, acked_through FROM `+j.checkpoints+`
WHERE run_id = $1 ORDER BY topic, partition`, id)
	if err != nil {
		return nil, nil, j.classify(err)
	}
	cps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.ReplayCheckpoint, error) {
		var c dedupdriver.ReplayCheckpoint
		err := r.Scan(&c.Topic, &c.Partition, &c.Start, &c.End, &c.AckedThrough)
		return c, err
	})
	if err != nil {
		return nil, nil, j.classify(err)
	}
	return &run, cps, nil
}

func (d *Driver) ListReplayRuns(ctx context.Context, f dedupdriver.ReplayRunFilter) ([]dedupdriver.ReplayRun, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT `+runColumns+` FROM `+j.runs+`
WHERE ($1 = '' OR status = $1) ORDER BY created_at DESC, id DESC LIMIT $2`, f.Status, f.Limit)
	if err != nil {
		return nil, j.classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.ReplayRun, error) { return scanRun(r) })
	return out, j.classify(err)
}

func scanSend(r pgx.CollectableRow) (dedupdriver.ReplaySend, error) {
	var s dedupdriver.ReplaySend
	var id *string
	err := r.Scan(&s.SourceTopic, &s.SourcePartition, &s.SourceOffset, &id, &s.TargetTopic, &s.TargetPartition, &s.TargetOffset, &s.At)
	if id != nil {
		s.EventID = *id
	}
	s.At = s.At.UTC()
	return s, err
}

func (d *Driver) ReplaySendsAfterCheckpoint(ctx context.Context, id string) ([]dedupdriver.ReplaySend, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT s.source_topic, s.source_partition, s.source_offset, s.event_id,
  s.target_topic, s.target_partition, s.target_offset, s.sent_at
FROM `+j.sends+` s JOIN `+j.checkpoints+` c
  ON c.run_id = s.run_id AND c.topic = s.source_topic AND c.partition = s.source_partition
WHERE s.run_id = $1 AND s.source_offset > c.acked_through
ORDER BY s.source_topic, s.source_partition, s.source_offset`, id)
	if err != nil {
		return nil, j.classify(err)
	}
	out, err := pgx.CollectRows(rows, scanSend)
	return out, j.classify(err)
}

func (d *Driver) ReplayTargetCounts(ctx context.Context, id string) ([]dedupdriver.TargetCount, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT target_topic, target_partition, count(*) FROM `+j.sends+`
WHERE run_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`, id)
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

func (d *Driver) ReplayedSources(ctx context.Context, refs []dedupdriver.SourceRef) (map[dedupdriver.SourceRef]dedupdriver.ReplayRef, error) {
	j := d.journal()
	topics, parts, offs := make([]string, len(refs)), make([]int32, len(refs)), make([]int64, len(refs))
	for i, r := range refs {
		topics[i], parts[i], offs[i] = r.Topic, r.Partition, r.Offset
	}
	rows, err := d.pool.Query(ctx, `SELECT s.source_topic, s.source_partition, s.source_offset, s.run_id, s.sent_at,
  s.target_topic, s.target_partition, s.target_offset
FROM unnest($1::text[], $2::int4[], $3::int8[]) AS u(t, p, o)
JOIN `+j.sends+` s ON s.source_topic = u.t AND s.source_partition = u.p AND s.source_offset = u.o`, topics, parts, offs)
	if err != nil {
		return nil, j.classify(err)
	}
	defer rows.Close()
	out := make(map[dedupdriver.SourceRef]dedupdriver.ReplayRef)
	for rows.Next() {
		var k dedupdriver.SourceRef
		var v dedupdriver.ReplayRef
		if err := rows.Scan(&k.Topic, &k.Partition, &k.Offset, &v.RunID, &v.At, &v.TargetTopic, &v.TargetPartition, &v.TargetOffset); err != nil {
			return nil, err
		}
		v.At = v.At.UTC()
		keepLatest(out, k, v)
	}
	return out, j.classify(rows.Err())
}

// keepLatest keeps, per source record, the latest replay: by time, then by
// run id (so equal times give the same answer every time).
func keepLatest(m map[dedupdriver.SourceRef]dedupdriver.ReplayRef, k dedupdriver.SourceRef, v dedupdriver.ReplayRef) {
	if old, ok := m[k]; ok && (old.At.After(v.At) || old.At.Equal(v.At) && old.RunID > v.RunID) {
		return
	}
	m[k] = v
}
