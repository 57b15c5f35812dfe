package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// claimChunk bounds the markers per INSERT: 8 bind variables each stays
// under SQLite's limit of 32,766 variables.
const claimChunk = 4000

// outcomeChunk bounds the markers per INSERT that writes outcomes too (9 bind variables each),
// and versionChunk the aggregates per upsert of the version guard (3 each).
const (
	outcomeChunk = 3600
	versionChunk = 10000
)

type statements struct {
	cols   string
	insert string // INSERT … (cols) VALUES, rows appended per chunk
	// insertOutcome is insert with the outcome column (the version guard's stale markers).
	insertOutcome string
	conflict      string
	// raise and raiseEnd frame the version guard's upsert, rows appended per chunk.
	raise, raiseEnd string
	// lowerDelete and lowerUpdate undo raise for an unclaimed event (Driver.LowerVersion).
	lowerDelete, lowerUpdate string
	unclaim                  string
	getAll                   string
	getOne                   string
	lookup                   string
	marked                   string // lookup reading the event id only
	// newestVersions is the highest version of each of a list of aggregates among a
	// consumer's markers: one search of its markers by the primary key, the aggregates a list.
	newestVersions string
	// setOutcome and outcomes write and read the outcome column.
	setOutcome string
	outcomes   string
	forgetAll  string
	forgetOne  string
	pruneAll   string
	pruneOne   string
	// candidatesAll and candidatesOne count what pruneAll and pruneOne would delete, per topic.
	candidatesAll string
	candidatesOne string
	consumers     string
	c             dedupdriver.Columns // quoted
}

func buildStatements(table, versions string, raw dedupdriver.Columns) statements {
	c := dedupdriver.Columns{
		Consumer: quote(raw.Consumer), EventID: quote(raw.EventID), ProcessedAt: quote(raw.ProcessedAt),
		Topic: quote(raw.Topic), Partition: quote(raw.Partition), Offset: quote(raw.Offset),
		AggregateID: quote(raw.AggregateID), AggregateVersion: quote(raw.AggregateVersion),
	}
	cols := strings.Join([]string{c.Consumer, c.EventID, c.ProcessedAt, c.Topic, c.Partition, c.Offset, c.AggregateID, c.AggregateVersion}, ", ")
	s := statements{cols: cols, c: c}
	s.insert = fmt.Sprintf(`INSERT INTO %s (%s) VALUES `, table, cols)
	s.insertOutcome = fmt.Sprintf(`INSERT INTO %s (%s, outcome) VALUES `, table, cols)
	// The version guard: prior_version keeps what the row held before the upsert (RETURNING
	// sees only the new row); SET's right-hand sides read the row as it was.
	s.raise = `INSERT INTO ` + versions + ` (consumer, aggregate_id, version) VALUES `
	s.raiseEnd = ` ON CONFLICT (consumer, aggregate_id) DO UPDATE SET prior_version = version, version = max(version, excluded.version) RETURNING aggregate_id, prior_version`
	s.conflict = fmt.Sprintf(` ON CONFLICT (%s, %s) DO NOTHING RETURNING %s`, c.Consumer, c.EventID, c.EventID)
	s.lowerDelete = `DELETE FROM ` + versions + ` WHERE consumer = $1 AND aggregate_id = $2 AND version = $3 AND prior_version IS NULL`
	s.lowerUpdate = `UPDATE ` + versions + ` SET version = prior_version WHERE consumer = $1 AND aggregate_id = $2 AND version = $3 AND prior_version IS NOT NULL`
	s.unclaim = fmt.Sprintf(`DELETE FROM %s WHERE %s = $1 AND %s = $2 RETURNING %s, %s`, table, c.Consumer, c.EventID, c.AggregateID, c.AggregateVersion)
	// Every statement that takes event ids probes the primary key once per id (and consumer),
	// whatever sqlite_stat1 says: json_each's rows, or the consumers' walk, are the outer loop
	// (CROSS JOIN: SQLite keeps that order), the table the inner one; writes go by rowid.
	mcols := "m." + strings.ReplaceAll(cols, ", ", ", m.")
	walk := dedupdriver.ConsumerWalk(table, c.Consumer)
	s.getAll = fmt.Sprintf(`%s
SELECT %s FROM c CROSS JOIN %s AS m WHERE m.%s = c.consumer AND m.%s = $1 ORDER BY m.%s`, walk, mcols, table, c.Consumer, c.EventID, c.Consumer)
	s.getOne = fmt.Sprintf(`SELECT %s FROM %s WHERE %s = $1 AND %s = $2`, cols, table, c.EventID, c.Consumer)
	// A JSON array of ids, unpacked by json_each, is one bind variable
	// however many ids it holds.
	probe := func(list, from, where string) string {
		return fmt.Sprintf(`SELECT %s FROM %s CROSS JOIN %s AS m WHERE %s`, list, from, table, where)
	}
	one := func(consumer string) string {
		return fmt.Sprintf(`m.%s = %s AND m.%s = k.value`, c.Consumer, consumer, c.EventID)
	}
	s.lookup = probe(mcols, "json_each($2) AS k", one("$1"))
	s.marked = probe("m."+c.EventID, "json_each($2) AS k", one("$1"))
	s.newestVersions = fmt.Sprintf(`SELECT %[1]s, max(%[2]s) FROM %[3]s WHERE %[4]s = $1
AND %[1]s IN (SELECT value FROM json_each($2)) AND %[2]s IS NOT NULL GROUP BY 1`, c.AggregateID, c.AggregateVersion, table, c.Consumer)
	s.setOutcome = fmt.Sprintf(`UPDATE %s SET outcome = $3 WHERE rowid IN (%s)`, table, probe("m.rowid", "json_each($2) AS k", one("$1")))
	s.outcomes = probe("m."+c.EventID+", m.outcome", "json_each($2) AS k", one("$1")+" AND m.outcome IS NOT NULL")
	s.forgetAll = fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (%s
%s) RETURNING %s`, table, walk, probe("m.rowid", "c CROSS JOIN json_each($1) AS k", one("c.consumer")), cols)
	s.forgetOne = fmt.Sprintf(`DELETE FROM %s WHERE rowid IN (%s) RETURNING %s`, table, probe("m.rowid", "json_each($1) AS k", one("$2")), cols)
	s.pruneAll = fmt.Sprintf(`DELETE FROM %[1]s WHERE rowid IN (SELECT rowid FROM %[1]s WHERE %[2]s < $1 LIMIT $2)`, table, c.ProcessedAt)
	s.pruneOne = fmt.Sprintf(`DELETE FROM %[1]s WHERE rowid IN (SELECT rowid FROM %[1]s WHERE %[2]s < $1 AND %[3]s = $3 LIMIT $2)`, table, c.ProcessedAt, c.Consumer)
	s.candidatesAll = fmt.Sprintf(`SELECT %[2]s, count(*) FROM %[1]s WHERE %[3]s < $1 GROUP BY 1 ORDER BY 1`, table, c.Topic, c.ProcessedAt)
	s.candidatesOne = fmt.Sprintf(`SELECT %[2]s, count(*) FROM %[1]s WHERE %[3]s < $1 AND %[4]s = $2 GROUP BY 1 ORDER BY 1`, table, c.Topic, c.ProcessedAt, c.Consumer)
	s.consumers = dedupdriver.ConsumersSQL(table, c.Consumer)
	return s
}

// Claim inserts the markers with one INSERT … VALUES … ON CONFLICT DO
// NOTHING RETURNING per 4,000 markers (3,600 when they carry outcomes).
func (d *Driver) Claim(ctx context.Context, tx dedupdriver.Tx, consumer string, markers []dedupdriver.Marker) ([]string, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	insert, row, chunkSize := d.sql.insert, "(?, ?, COALESCE(?, "+nowExpr+"), ?, ?, ?, ?, ?)", claimChunk
	outcomes := slices.ContainsFunc(markers, func(m dedupdriver.Marker) bool { return m.Outcome != "" })
	if outcomes {
		insert, row, chunkSize = d.sql.insertOutcome, "(?, ?, COALESCE(?, "+nowExpr+"), ?, ?, ?, ?, ?, ?)", outcomeChunk
	}
	var fresh []string
	for start := 0; start < len(markers); start += chunkSize {
		chunk := markers[start:min(start+chunkSize, len(markers))]
		var b strings.Builder
		b.WriteString(insert)
		args := make([]any, 0, 9*len(chunk))
		for i, m := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			// Anonymous ? parameters: SQLite resolves a named or numbered
			// one by a linear search, which is quadratic over a batch.
			b.WriteString(row)
			var at, topic, part, off, aggID, ver any
			if !m.ProcessedAt.IsZero() {
				at = FormatTime(m.ProcessedAt)
			}
			if m.Topic != "" {
				topic, part, off = m.Topic, int64(m.Partition), m.Offset
			}
			if m.AggregateID != "" {
				aggID, ver = m.AggregateID, m.AggregateVersion
			}
			args = append(args, consumer, m.EventID, at, topic, part, off, aggID, ver)
			if outcomes {
				args = append(args, nullText(m.Outcome))
			}
		}
		b.WriteString(d.sql.conflict)
		got, err := d.scanStrings(ctx, q, b.String(), args...)
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, got...)
	}
	return fresh, nil
}

// nullText is s, or nil (NULL) for the empty string.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// scanStrings runs a query of one text column on q and returns its values.
func (d *Driver) scanStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	out, err := dedupdriver.ScanStrings(rows)
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// RaiseVersions runs the version guard's upsert, one per 10,000 aggregates.
func (d *Driver) RaiseVersions(ctx context.Context, tx dedupdriver.Tx, consumer string, vs []dedupdriver.AggregateVersion) (map[string]int64, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	prior := make(map[string]int64, len(vs))
	for start := 0; start < len(vs); start += versionChunk {
		chunk := vs[start:min(start+versionChunk, len(vs))]
		var b strings.Builder
		b.WriteString(d.sql.raise)
		args := make([]any, 0, 3*len(chunk))
		for i, v := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, consumer, v.AggregateID, v.Version)
		}
		b.WriteString(d.sql.raiseEnd)
		if err := d.scanPrior(ctx, q, b.String(), args, prior); err != nil {
			return nil, err
		}
	}
	return prior, nil
}

// scanPrior reads the upsert's (aggregate_id, prior_version) rows into prior.
func (d *Driver) scanPrior(ctx context.Context, q querier, query string, args []any, prior map[string]int64) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return d.classifyVersions(err)
	}
	defer rows.Close()
	for rows.Next() {
		var agg string
		var before sql.NullInt64
		if err := rows.Scan(&agg, &before); err != nil {
			return err
		}
		if before.Valid {
			prior[agg] = before.Int64
		}
	}
	return d.classifyVersions(rows.Err())
}

// classifyVersions is classify naming the versions table when it is the one missing.
func (d *Driver) classifyVersions(err error) error {
	if IsMissingTable(err) {
		return dedupdriver.NotMigrated(d.versions, err)
	}
	return err
}

func (d *Driver) Unclaim(ctx context.Context, tx dedupdriver.Tx, consumer, key string) (bool, *dedupdriver.AggregateVersion, error) {
	q, err := d.on(tx)
	if err != nil {
		return false, nil, err
	}
	rows, err := q.QueryContext(ctx, d.sql.unclaim, consumer, key)
	if err != nil {
		return false, nil, d.classify(err)
	}
	defer rows.Close()
	var found bool
	var agg *dedupdriver.AggregateVersion
	for rows.Next() {
		var aggID sql.NullString
		var version sql.NullInt64
		if err := rows.Scan(&aggID, &version); err != nil {
			return false, nil, err
		}
		found = true
		if aggID.Valid && version.Valid {
			agg = &dedupdriver.AggregateVersion{AggregateID: aggID.String, Version: version.Int64}
		}
	}
	if err := rows.Err(); err != nil {
		return false, nil, d.classify(err)
	}
	return found, agg, nil
}

func (d *Driver) LowerVersion(ctx context.Context, tx dedupdriver.Tx, consumer string, v dedupdriver.AggregateVersion) error {
	q, err := d.on(tx)
	if err != nil {
		return err
	}
	for _, stmt := range []string{d.sql.lowerDelete, d.sql.lowerUpdate} {
		if _, err := q.ExecContext(ctx, stmt, consumer, v.AggregateID, v.Version); err != nil {
			return d.classifyVersions(err)
		}
	}
	return nil
}

func (d *Driver) collect(rows *sql.Rows, err error) ([]dedupdriver.MarkerRow, error) {
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.MarkerRow
	for rows.Next() {
		var m dedupdriver.MarkerRow
		var at any
		var topic, aggID sql.NullString
		var part, off, ver sql.NullInt64
		if err := rows.Scan(&m.Consumer, &m.EventID, &at, &topic, &part, &off, &aggID, &ver); err != nil {
			return nil, err
		}
		t, err := parseTime(at)
		if err != nil {
			return nil, err
		}
		m.ProcessedAt, m.Topic, m.AggregateID = dedupdriver.Instant(t), dedupdriver.Text(topic.String), dedupdriver.Text(aggID.String)
		if part.Valid {
			p := int32(part.Int64)
			m.Partition = &p
		}
		if off.Valid {
			m.Offset = &off.Int64
		}
		if ver.Valid {
			m.AggregateVersion = &ver.Int64
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

func (d *Driver) Get(ctx context.Context, key, consumer string) ([]dedupdriver.MarkerRow, error) {
	if consumer == "" {
		return d.collect(d.db.QueryContext(ctx, d.sql.getAll, key))
	}
	return d.collect(d.db.QueryContext(ctx, d.sql.getOne, key, consumer))
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
		where = append(where, c.ProcessedAt+" >= "+arg(formatBound(f.Since)))
	}
	if !f.Until.IsZero() {
		where = append(where, c.ProcessedAt+" < "+arg(formatBound(f.Until)))
	}
	if f.AggregateID != "" {
		where = append(where, c.AggregateID+" = "+arg(f.AggregateID))
	}
	if f.Before != nil {
		where = append(where, fmt.Sprintf("(%s, %s, %s) < (%s, %s, %s)", c.ProcessedAt, c.Consumer, c.EventID,
			arg(formatBound(f.Before.ProcessedAt)), arg(f.Before.Consumer), arg(f.Before.EventID)))
	}
	query := "SELECT " + d.sql.cols + " FROM " + d.table
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += fmt.Sprintf(" ORDER BY %s DESC, %s DESC, %s DESC LIMIT %s", c.ProcessedAt, c.Consumer, c.EventID, arg(f.Limit))
	return d.collect(d.db.QueryContext(ctx, query, args...))
}

// Stats has no sizes on SQLite: the file holds the application's tables too.
func (d *Driver) Stats(ctx context.Context, f dedupdriver.StatsFilter, now time.Time) ([]dedupdriver.ConsumerStats, *dedupdriver.Sizes, error) {
	c := d.sql.c
	args := []any{formatBound(now.Add(-f.Window))}
	query := fmt.Sprintf(`SELECT %[1]s, count(*), min(%[2]s), max(%[2]s), count(*) FILTER (WHERE %[2]s >= $1) FROM %[3]s`,
		c.Consumer, c.ProcessedAt, d.table)
	if f.Consumer != "" {
		query += " WHERE " + c.Consumer + " = $2"
		args = append(args, f.Consumer)
	}
	query += " GROUP BY 1 ORDER BY 1"
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, d.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.ConsumerStats
	for rows.Next() {
		var s dedupdriver.ConsumerStats
		var first, last any
		if err := rows.Scan(&s.Consumer, &s.Count, &first, &last, &s.InWindow); err != nil {
			return nil, nil, err
		}
		t0, err := parseTime(first)
		if err != nil {
			return nil, nil, err
		}
		t1, err := parseTime(last)
		if err != nil {
			return nil, nil, err
		}
		s.First, s.Last = dedupdriver.Instant(t0), dedupdriver.Instant(t1)
		s.PerHour = float64(s.InWindow) / f.Window.Hours()
		out = append(out, s)
	}
	return out, nil, d.classify(rows.Err())
}

func jsonArray(keys []string) (string, error) {
	b, err := json.Marshal(keys)
	return string(b), err
}

func (d *Driver) SetOutcome(ctx context.Context, tx dedupdriver.Tx, consumer string, keys []string, outcome string) error {
	q, err := d.on(tx)
	if err != nil {
		return err
	}
	arr, err := jsonArray(keys)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, d.sql.setOutcome, consumer, arr, outcome)
	return d.classifyOutcome(err)
}

func (d *Driver) Outcomes(ctx context.Context, consumer string, keys []string) (map[string]string, error) {
	arr, err := jsonArray(keys)
	if err != nil {
		return nil, err
	}
	rows, err := d.db.QueryContext(ctx, d.sql.outcomes, consumer, arr)
	if err != nil {
		return nil, d.classifyOutcome(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var key, outcome string
		if err := rows.Scan(&key, &outcome); err != nil {
			return nil, err
		}
		out[key] = outcome
	}
	if err := rows.Err(); err != nil {
		return nil, d.classifyOutcome(err)
	}
	return out, nil
}

// classifyOutcome is classify, with a table that lacks the outcome column as
// dedupdriver.ErrNoOutcome.
func (d *Driver) classifyOutcome(err error) error {
	if err != nil && strings.Contains(err.Error(), "no such column") {
		return fmt.Errorf("%s: %w", d.table, dedupdriver.ErrNoOutcome)
	}
	return d.classify(err)
}

func (d *Driver) Lookup(ctx context.Context, consumer string, keys []string) ([]dedupdriver.MarkerRow, error) {
	arr, err := jsonArray(keys)
	if err != nil {
		return nil, err
	}
	return d.collect(d.db.QueryContext(ctx, d.sql.lookup, consumer, arr))
}

func (d *Driver) Marked(ctx context.Context, consumer string, keys []string) ([]bool, error) {
	arr, err := jsonArray(keys)
	if err != nil {
		return nil, err
	}
	rows, err := d.db.QueryContext(ctx, d.sql.marked, consumer, arr)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	found, err := dedupdriver.ScanStrings(rows)
	if err != nil {
		return nil, d.classify(err)
	}
	return dedupdriver.MarkedOf(keys, found), nil
}

func (d *Driver) NewestVersions(ctx context.Context, consumer string, aggregates []string) (map[string]int64, error) {
	arr, err := jsonArray(aggregates)
	if err != nil {
		return nil, err
	}
	rows, err := d.db.QueryContext(ctx, d.sql.newestVersions, consumer, arr)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var (
			agg string
			v   int64
		)
		if err := rows.Scan(&agg, &v); err != nil {
			return nil, err
		}
		out[agg] = v
	}
	if err := rows.Err(); err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// PruneBatch deletes up to n rows in one autocommitted statement.
func (d *Driver) PruneBatch(ctx context.Context, consumer string, olderThan time.Time, n int) (int64, error) {
	args := []any{formatBound(olderThan), n}
	query := d.sql.pruneAll
	if consumer != "" {
		query = d.sql.pruneOne
		args = append(args, consumer)
	}
	res, err := d.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, d.classify(err)
	}
	return res.RowsAffected()
}

func (d *Driver) Forget(ctx context.Context, consumer string, keys []string) ([]dedupdriver.MarkerRow, error) {
	arr, err := jsonArray(keys)
	if err != nil {
		return nil, err
	}
	if consumer == "" {
		return d.collect(d.db.QueryContext(ctx, d.sql.forgetAll, arr))
	}
	return d.collect(d.db.QueryContext(ctx, d.sql.forgetOne, arr, consumer))
}

// PruneCandidates counts, per recorded topic, the markers PruneBatch would delete.
func (d *Driver) PruneCandidates(ctx context.Context, consumer string, olderThan time.Time) ([]dedupdriver.TopicCount, error) {
	query, args := d.sql.candidatesAll, []any{formatBound(olderThan)}
	if consumer != "" {
		query, args = d.sql.candidatesOne, append(args, consumer)
	}
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.TopicCount
	for rows.Next() {
		var topic sql.NullString
		var tc dedupdriver.TopicCount
		if err := rows.Scan(&topic, &tc.Markers); err != nil {
			return nil, d.classify(err)
		}
		tc.Topic = topic.String
		out = append(out, tc)
	}
	if err := rows.Err(); err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// Consumers returns up to limit consumers that have markers (dedupdriver.ConsumersSQL).
func (d *Driver) Consumers(ctx context.Context, limit int) ([]string, error) {
	return d.scanStrings(ctx, d.db, d.sql.consumers, limit)
}

// Unremovable is always empty: a table of another library's shape (Columns.Removable) is read
// on PostgreSQL only.
func (d *Driver) Unremovable(context.Context, string, []string) ([]string, error) { return nil, nil }
