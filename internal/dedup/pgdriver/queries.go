package pgdriver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// statements are built once per store from validated, quoted names.
type statements struct {
	cols      string // the eight columns, in MarkerRow order
	claim     string
	unclaim   string
	getAll    string
	getOne    string
	lookup    string
	forgetAll string
	forgetOne string
	pruneAll  string
	pruneOne  string
	// candidatesAll and candidatesOne count what pruneAll and pruneOne would delete, per topic.
	candidatesAll string
	candidatesOne string
	consumers     string
	c             dedupdriver.Columns // quoted
}

func buildStatements(table string, raw dedupdriver.Columns) statements {
	c := dedupdriver.Columns{
		Consumer: quote(raw.Consumer), EventID: quote(raw.EventID), ProcessedAt: quote(raw.ProcessedAt),
		Topic: quote(raw.Topic), Partition: quote(raw.Partition), Offset: quote(raw.Offset),
		AggregateID: quote(raw.AggregateID), AggregateVersion: quote(raw.AggregateVersion),
	}
	cols := strings.Join([]string{c.Consumer, c.EventID, c.ProcessedAt, c.Topic, c.Partition, c.Offset, c.AggregateID, c.AggregateVersion}, ", ")
	mcols := "m." + strings.ReplaceAll(cols, ", ", ", m.")
	s := statements{cols: cols, c: c}
	// One statement per batch: the arrays are unnested into rows, existing
	// markers are skipped by ON CONFLICT (never an error), and RETURNING
	// names the rows this statement inserted.
	s.claim = fmt.Sprintf(`INSERT INTO %[1]s (%[2]s)
SELECT $1, e.event_id, COALESCE(e.processed_at, now()),
       NULLIF(e.topic, ''), CASE WHEN e.topic <> '' THEN e.partition END, CASE WHEN e.topic <> '' THEN e.off END,
       NULLIF(e.aggregate_id, ''), CASE WHEN e.aggregate_id <> '' THEN e.aggregate_version END
FROM unnest($2::text[], $3::timestamptz[], $4::text[], $5::int4[], $6::int8[], $7::text[], $8::int8[])
  AS e(event_id, processed_at, topic, partition, off, aggregate_id, aggregate_version)
ON CONFLICT (%[3]s, %[4]s) DO NOTHING
RETURNING %[4]s`, table, cols, c.Consumer, c.EventID)
	s.unclaim = fmt.Sprintf(`DELETE FROM %s WHERE %s = $1 AND %s = $2`, table, c.Consumer, c.EventID)
	// Without a consumer, walk the distinct consumers through the primary
	// key (a loose index scan) and probe (consumer, event_id) for each,
	// instead of scanning the table for one event id.
	s.getAll = fmt.Sprintf(`WITH RECURSIVE c(consumer) AS (
  (SELECT %[2]s FROM %[1]s ORDER BY %[2]s LIMIT 1)
  UNION ALL
  SELECT (SELECT %[2]s FROM %[1]s WHERE %[2]s > c.consumer ORDER BY %[2]s LIMIT 1) FROM c WHERE c.consumer IS NOT NULL
)
SELECT %[4]s FROM c JOIN %[1]s m ON m.%[2]s = c.consumer AND m.%[3]s = $1
ORDER BY m.%[2]s`, table, c.Consumer, c.EventID, mcols)
	s.getOne = fmt.Sprintf(`SELECT %s FROM %s WHERE %s = $2 AND %s = $1`, cols, table, c.Consumer, c.EventID)
	s.lookup = fmt.Sprintf(`SELECT %s FROM %s WHERE %s = $1 AND %s = ANY($2::text[])`, cols, table, c.Consumer, c.EventID)
	s.forgetAll = fmt.Sprintf(`DELETE FROM %s WHERE %s = ANY($1::text[]) RETURNING %s`, table, c.EventID, cols)
	s.forgetOne = fmt.Sprintf(`DELETE FROM %s WHERE %s = $2 AND %s = ANY($1::text[]) RETURNING %s`, table, c.Consumer, c.EventID, cols)
	s.pruneAll = fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE %[2]s < $1 LIMIT $2)`, table, c.ProcessedAt)
	s.pruneOne = fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE %[2]s < $1 AND %[3]s = $3 LIMIT $2)`, table, c.ProcessedAt, c.Consumer)
	s.candidatesAll = fmt.Sprintf(`SELECT %[2]s, count(*) FROM %[1]s WHERE %[3]s < $1 GROUP BY 1 ORDER BY 1`, table, c.Topic, c.ProcessedAt)
	s.candidatesOne = fmt.Sprintf(`SELECT %[2]s, count(*) FROM %[1]s WHERE %[3]s < $1 AND %[4]s = $2 GROUP BY 1 ORDER BY 1`, table, c.Topic, c.ProcessedAt, c.Consumer)
	s.consumers = dedupdriver.ConsumersSQL(table, c.Consumer)
	return s
}

func (d *Driver) Claim(ctx context.Context, tx dedupdriver.Tx, consumer string, markers []dedupdriver.Marker) ([]string, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	// Plain slices encode without reflection; empty strings become NULL in
	// the statement. The timestamps go as NULL (now()) unless a marker
	// sets one; multi-argument unnest pads a NULL array with NULLs.
	n := len(markers)
	var (
		ids      = make([]string, n)
		topics   = make([]string, n)
		parts    = make([]int32, n)
		offsets  = make([]int64, n)
		aggIDs   = make([]string, n)
		versions = make([]int64, n)
		times    []*time.Time
	)
	for i := range markers {
		m := &markers[i]
		ids[i], topics[i], parts[i], offsets[i] = m.EventID, m.Topic, m.Partition, m.Offset
		aggIDs[i], versions[i] = m.AggregateID, m.AggregateVersion
		if !m.ProcessedAt.IsZero() {
			if times == nil {
				times = make([]*time.Time, n)
			}
			times[i] = &m.ProcessedAt
		}
	}
	rows, err := q.Query(ctx, d.sql.claim, consumer, ids, times, topics, parts, offsets, aggIDs, versions)
	if err != nil {
		return nil, d.classify(err)
	}
	fresh, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return fresh, d.classify(err)
}

func (d *Driver) Unclaim(ctx context.Context, tx dedupdriver.Tx, consumer, key string) (bool, error) {
	q, err := d.on(tx)
	if err != nil {
		return false, err
	}
	tag, err := q.Exec(ctx, d.sql.unclaim, consumer, key)
	if err != nil {
		return false, d.classify(err)
	}
	return tag.RowsAffected() > 0, nil
}

func (d *Driver) collect(rows pgx.Rows, err error) ([]dedupdriver.MarkerRow, error) {
	if err != nil {
		return nil, d.classify(err)
	}
	out, err := pgx.CollectRows(rows, scanMarker)
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

func scanMarker(r pgx.CollectableRow) (dedupdriver.MarkerRow, error) {
	var m dedupdriver.MarkerRow
	var topic, aggID *string
	if err := r.Scan(&m.Consumer, &m.EventID, &m.ProcessedAt, &topic, &m.Partition, &m.Offset, &aggID, &m.AggregateVersion); err != nil {
		return m, err
	}
	m.ProcessedAt = m.ProcessedAt.UTC()
	if topic != nil {
		m.Topic = *topic
	}
	if aggID != nil {
		m.AggregateID = *aggID
	}
	return m, nil
}

func (d *Driver) Get(ctx context.Context, key, consumer string) ([]dedupdriver.MarkerRow, error) {
	if consumer == "" {
		return d.collect(d.pool.Query(ctx, d.sql.getAll, key))
	}
	return d.collect(d.pool.Query(ctx, d.sql.getOne, key, consumer))
}

func (d *Driver) List(ctx context.Context, f dedupdriver.ListFilter) ([]dedupdriver.MarkerRow, error) {
	c := d.sql.c
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Consumer != "" {
		where = append(where, c.Consumer+" = "+arg(f.Consumer))
	}
	if !f.Since.IsZero() {
		where = append(where, c.ProcessedAt+" >= "+arg(f.Since.UTC()))
	}
	if !f.Until.IsZero() {
		where = append(where, c.ProcessedAt+" < "+arg(f.Until.UTC()))
	}
	if f.AggregateID != "" {
		where = append(where, c.AggregateID+" = "+arg(f.AggregateID))
	}
	if f.Before != nil {
		where = append(where, fmt.Sprintf("(%s, %s, %s) < (%s::timestamptz, %s::text, %s::text)",
			c.ProcessedAt, c.Consumer, c.EventID,
			arg(f.Before.ProcessedAt.UTC()), arg(f.Before.Consumer), arg(f.Before.EventID)))
	}
	sql := "SELECT " + d.sql.cols + " FROM " + d.table
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY %s DESC, %s DESC, %s DESC LIMIT %s", c.ProcessedAt, c.Consumer, c.EventID, arg(f.Limit))
	return d.collect(d.pool.Query(ctx, sql, args...))
}

func (d *Driver) Stats(ctx context.Context, f dedupdriver.StatsFilter, now time.Time) ([]dedupdriver.ConsumerStats, *dedupdriver.Sizes, error) {
	c := d.sql.c
	args := []any{now.Add(-f.Window).UTC()}
	sql := fmt.Sprintf(`SELECT %[1]s, count(*), min(%[2]s), max(%[2]s), count(*) FILTER (WHERE %[2]s >= $1) FROM %[3]s`,
		c.Consumer, c.ProcessedAt, d.table)
	if f.Consumer != "" {
		sql += " WHERE " + c.Consumer + " = $2"
		args = append(args, f.Consumer)
	}
	sql += " GROUP BY 1 ORDER BY 1"
	rows, err := d.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, d.classify(err)
	}
	hours := f.Window.Hours()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.ConsumerStats, error) {
		var s dedupdriver.ConsumerStats
		err := r.Scan(&s.Consumer, &s.Count, &s.First, &s.Last, &s.InWindow)
		s.First, s.Last = s.First.UTC(), s.Last.UTC()
		s.PerHour = float64(s.InWindow) / hours
		return s, err
	})
	if err != nil {
		return nil, nil, d.classify(err)
	}
	var sz dedupdriver.Sizes
	err = d.pool.QueryRow(ctx, `SELECT pg_table_size(r), pg_indexes_size(r), pg_total_relation_size(r) FROM (SELECT $1::regclass AS r) t`,
		d.table).Scan(&sz.TableBytes, &sz.IndexBytes, &sz.TotalBytes)
	if err != nil {
		return nil, nil, d.classify(err)
	}
	return out, &sz, nil
}

func (d *Driver) Lookup(ctx context.Context, consumer string, keys []string) ([]dedupdriver.MarkerRow, error) {
	return d.collect(d.pool.Query(ctx, d.sql.lookup, consumer, keys))
}

// PruneBatch deletes up to n rows in one autocommitted statement, so each
// batch is its own transaction and holds its locks briefly.
func (d *Driver) PruneBatch(ctx context.Context, consumer string, olderThan time.Time, n int) (int64, error) {
	var args = []any{olderThan, n}
	sql := d.sql.pruneAll
	if consumer != "" {
		sql = d.sql.pruneOne
		args = append(args, consumer)
	}
	tag, err := d.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, d.classify(err)
	}
	return tag.RowsAffected(), nil
}

func (d *Driver) Forget(ctx context.Context, consumer string, keys []string) ([]dedupdriver.MarkerRow, error) {
	if consumer == "" {
		return d.collect(d.pool.Query(ctx, d.sql.forgetAll, keys))
	}
	return d.collect(d.pool.Query(ctx, d.sql.forgetOne, keys, consumer))
}

// PruneCandidates counts, per recorded topic, the markers PruneBatch would delete.
func (d *Driver) PruneCandidates(ctx context.Context, consumer string, olderThan time.Time) ([]dedupdriver.TopicCount, error) {
	query, args := d.sql.candidatesAll, []any{olderThan}
	if consumer != "" {
		query, args = d.sql.candidatesOne, append(args, consumer)
	}
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.TopicCount
	for rows.Next() {
		var topic *string
		var tc dedupdriver.TopicCount
		if err := rows.Scan(&topic, &tc.Markers); err != nil {
			return nil, d.classify(err)
		}
		if topic != nil {
			tc.Topic = *topic
		}
		out = append(out, tc)
	}
	if err := rows.Err(); err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// Consumers returns up to limit consumers that have markers (dedupdriver.ConsumersSQL).
func (d *Driver) Consumers(ctx context.Context, limit int) ([]string, error) {
	rows, err := d.pool.Query(ctx, d.sql.consumers, limit)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	names, err := dedupdriver.ScanStrings(rows)
	if err != nil {
		return nil, d.classify(err)
	}
	return names, nil
}
