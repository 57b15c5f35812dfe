package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// statements are built once per store from validated, quoted names and the table's shape.
type statements struct {
	cols  string // the eight columns read, in MarkerRow order
	claim claimSQL
	// claimOutcome is claim writing each marker's outcome too (the version guard's stale ones).
	claimOutcome claimSQL
	// claimOne is claim for markers of one topic and partition: $4 and $5 are scalars, not
	// arrays (a consumer's batch is one partition's: 500 topic names fewer to encode and read).
	claimOne claimSQL
	// raise is the version guard's upsert (Driver.RaiseVersions).
	raise string
	// lower undoes raise for an unclaimed event (Driver.LowerVersion).
	lower   string
	unclaim string
	// setOutcome and outcomes write and read the outcome column (fieldwork's own table).
	setOutcome string
	outcomes   string
	getAll     string
	getOne     string
	lookup     string
	// marked is whether each id has a marker: one bool[] in the ids' order, a probe per id
	// (shape.exists); markedIDs says it is instead lookup reading the event id only, the ids
	// found (an id no index serves, shape.idScanned).
	marked    string
	markedIDs bool
	// newestVersions is the highest version of each of a list of aggregates among a
	// consumer's markers (Driver.NewestVersions).
	newestVersions string
	forgetAll      string
	forgetOne      string
	pruneAll       string
	pruneOne       string
	// candidatesAll and candidatesOne count what pruneAll and pruneOne would delete, per topic.
	candidatesAll  string
	candidatesOne  string
	unremovableAll string
	unremovableOne string
	consumers      string
	sh             shape
}

// claimSQL is a claim's statement in its two forms, each returning the ids it inserted. skip
// inserts the markers that are new (ON CONFLICT DO NOTHING: Claim's). insert inserts every
// marker and fails with a unique violation when one exists (ClaimWith's, whose statement falls back then
// anyway): without ON CONFLICT, PostgreSQL does not probe the key before each row and insert
// it speculatively, which cost about a quarter of a marker's insert (docs/design.md §3.5).
type claimSQL struct{ skip, insert string }

// shape is what the statements say of each logical column (docs/design.md §3.4): how it is
// read (as the type MarkerRow scans), compared and ordered; which rows are markers; which may
// be deleted. For fieldwork's own table every expression is the quoted column.
type shape struct {
	consumer, eventID, topic, partition, offset, aggID, aggVersion string // read expressions
	// at is the processed-at column as stored (ordering, bounds), atRead the timestamptz read
	// of it, atParam turns a timestamptz parameter into the column's representation.
	at, atRead string
	atParam    func(param string) string
	// markers, failed and removable are row predicates ("" for none): the rows that are
	// markers, the failed rows, the rows that may be deleted.
	markers, failed, removable string
	// consumerIs and eventIs compare the consumer and event id with a text parameter as their
	// read expressions do, on the column itself (a uuid column's index is used: only a uuid's
	// own text form can equal its text).
	consumerIs, eventIs func(param string) string
	// idScanned says no index serves the comparison of the event id with a text: it is read
	// from inside a document (a JSON column's path), or cast to text from another type (not
	// uuid, which eventIs compares as a uuid).
	idScanned bool
}

// uuidText is what a uuid's text form matches: lower-case hex in 8-4-4-4-12 groups.
const uuidText = `'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`

// equals compares the column col read as expr (its text) with a text parameter.
func equals(col, expr, typ string) func(string) string {
	if typ == "uuid" {
		q := quote(col)
		return func(p string) string {
			return fmt.Sprintf("%s = CASE WHEN %s::text ~ %s THEN %s::text::uuid END", q, p, uuidText, p)
		}
	}
	return func(p string) string { return expr + " = " + p }
}

// probe selects list from table's rows that match pred of each id of the text[] parameter
// ids, in the ids' order: a nested loop over the ids with one index probe per id (docs/design.md
// §3.4). The LATERAL subquery, kept apart by OFFSET 0, is what makes it one whatever the
// planner's statistics say: as a plain join, or as "= ANY(ids)", statistics gathered before a
// consumer wrote make its markers look few, and the planner reads every one of them for each
// batch of ids (an index scan on the consumer alone, the ids a filter or a hash join). Inside,
// the table is t, so that its own name never hides k.
//
// An id that no index serves (shape.idScanned: inside a document, or cast to text) has nothing
// to probe: there it is one scan that compares each row's id with all the ids (pred of
// "ANY(ids)"), not a scan per id.
func (sh shape) probe(table, ids, list string, pred func(id string) string) string {
	if sh.idScanned {
		return fmt.Sprintf(`SELECT %s FROM %s AS t WHERE %s`, list, table, pred("ANY("+ids+"::text[])"))
	}
	return fmt.Sprintf(`SELECT m.* FROM unnest(%s::text[]) AS k(id) CROSS JOIN LATERAL (SELECT %s FROM %s AS t WHERE %s OFFSET 0) m`,
		ids, list, table, pred("k.id"))
}

// exists is, as one bool[] in the order of the text[] parameter ids, whether table has a row
// that matches pred of each id: the same probe per id as probe's, and no row sent back but
// the array (for 1,000 ids, a bool each instead of 1,000 rows to decode). An EXISTS in the
// select list is a subplan run per id, which the planner neither joins nor hashes into one
// read of the consumer's markers; OFFSET 0 keeps it so, as in probe. For an id no index serves
// (shape.idScanned), use probe.
func (sh shape) exists(table, ids string, pred func(id string) string) string {
	return fmt.Sprintf(`SELECT array_agg(EXISTS (SELECT 1 FROM %s AS t WHERE %s OFFSET 0) ORDER BY k.n) FROM unnest(%s::text[]) WITH ORDINALITY AS k(id, n)`,
		table, pred("k.id"), ids)
}

// byProbe is the predicate of an UPDATE or DELETE of the rows probe finds: by their ctid, a
// TID scan, so that the write too is planned whatever the statistics say.
func (sh shape) byProbe(table, ids string, pred func(id string) string) string {
	return "ctid = ANY(ARRAY(" + sh.probe(table, ids, "ctid", pred) + "))"
}

// types maps a table's column names to their PostgreSQL data types (information_schema's
// data_type); nil means fieldwork's own table, whose types are known.
type types map[string]string

func newShape(table string, raw dedupdriver.Columns, ty types) shape {
	typeOf := func(col string) string { return ty[col] }
	text := func(col string) string {
		switch {
		case col == dedupdriver.Absent:
			return "NULL::text"
		case ty != nil && !isText(typeOf(col)):
			return quote(col) + "::text"
		}
		return quote(col)
	}
	typed := func(col, cast string) string {
		if col == dedupdriver.Absent {
			return "NULL::" + cast
		}
		if ty != nil {
			return quote(col) + "::" + cast
		}
		return quote(col)
	}
	sh := shape{
		topic: text(raw.Topic), partition: typed(raw.Partition, "int4"), offset: typed(raw.Offset, "int8"),
		aggID: text(raw.AggregateID), aggVersion: typed(raw.AggregateVersion, "int8"),
		eventID: text(raw.EventID),
		at:      quote(raw.ProcessedAt),
	}
	// A table without a consumer column holds one endpoint's markers: it is named by the table.
	sh.consumer = text(raw.Consumer)
	if raw.Consumer == dedupdriver.Absent {
		sh.consumer = "'" + strings.ReplaceAll(table, "'", "''") + "'::text"
	}
	if raw.EventIDPath != "" {
		sh.eventID = fmt.Sprintf("(%s::jsonb #>> '{%s}')", quote(raw.EventID), strings.ReplaceAll(raw.EventIDPath, "/", ","))
	}
	sh.consumerIs = equals(raw.Consumer, sh.consumer, typeOf(raw.Consumer))
	idType := typeOf(raw.EventID)
	if raw.EventIDPath != "" {
		idType = "" // the id is text inside the column
	}
	sh.eventIs = equals(raw.EventID, sh.eventID, idType)
	sh.idScanned = raw.EventIDPath != "" || (ty != nil && raw.EventID != dedupdriver.Absent && !isText(idType) && idType != "uuid")
	sh.atRead, sh.atParam = sh.at, func(p string) string { return p + "::timestamptz" }
	switch t := typeOf(raw.ProcessedAt); {
	case ty == nil || t == "timestamp with time zone":
	case t == "timestamp without time zone":
		sh.atRead = "(" + sh.at + " AT TIME ZONE 'UTC')"
		sh.atParam = func(p string) string { return "(" + p + "::timestamptz AT TIME ZONE 'UTC')" }
	case t == "date":
		sh.atRead = "(" + sh.at + "::timestamp AT TIME ZONE 'UTC')"
		sh.atParam = func(p string) string { return "(" + p + "::timestamptz AT TIME ZONE 'UTC')::date" }
	case raw.ProcessedAtUnit == "s":
		sh.atRead = "to_timestamp(" + sh.at + ")"
		sh.atParam = func(p string) string { return "floor(extract(epoch from " + p + "::timestamptz))::bigint" }
	default: // an integer of epoch milliseconds
		sh.atRead = "to_timestamp(" + sh.at + " / 1000.0)"
		sh.atParam = func(p string) string { return "floor(extract(epoch from " + p + "::timestamptz) * 1000)::bigint" }
	}
	var markers []string
	if raw.Done != "" {
		markers = append(markers, quote(raw.Done)+" IS NOT NULL")
	}
	if raw.Status != "" && raw.StatusDone != "" {
		markers = append(markers, quote(raw.Status)+" = '"+raw.StatusDone+"'")
	}
	sh.markers = strings.Join(markers, " AND ")
	if raw.Status != "" && raw.StatusFailed != "" {
		sh.failed = quote(raw.Status) + " = '" + raw.StatusFailed + "'"
	}
	if raw.Removable != "" {
		sh.removable = quote(raw.Removable) + " IS NOT NULL"
		if typeOf(raw.Removable) == "boolean" {
			sh.removable = "COALESCE(" + quote(raw.Removable) + ", false)"
		}
	}
	return sh
}

// isText reports whether a column of PostgreSQL data type t reads as text without a cast.
func isText(t string) bool {
	return t == "text" || t == "character varying" || t == "character"
}

// and joins the predicates that are set with AND.
func and(preds ...string) string {
	var set []string
	for _, p := range preds {
		if p != "" {
			set = append(set, p)
		}
	}
	return strings.Join(set, " AND ")
}

// newestVersionsSQL is NewestVersions' statement on table. No index serves an aggregate: one
// scan of the consumer's markers joined by a hash with the aggregates (a semi join, run
// without nested loops: noNestedLoop). "= ANY($2)" would compare each marker with every
// aggregate in turn once the plan is generic (12 s instead of 0.3 over 2 million markers and
// 1,000 aggregates).
func newestVersionsSQL(table string, sh shape, where func(preds ...string) string) string {
	return fmt.Sprintf(`SELECT %[1]s, max(%[2]s) FROM %[3]s WHERE %[4]s GROUP BY 1`, sh.aggID, sh.aggVersion, table,
		where(sh.consumerIs("$1"), sh.aggID+" IN (SELECT unnest($2::text[]))", sh.aggVersion+" IS NOT NULL"))
}

// guardStatements are the version guard's statements on the table versions: one upsert per
// batch, which locks each aggregate's row (waiting for a transaction that holds it) and keeps
// in prior_version what the row held before it; and the step back of an unclaimed event.
func guardStatements(versions string) (raise, lower string) {
	raise = fmt.Sprintf(`INSERT INTO %s AS v (consumer, aggregate_id, version)
SELECT $1, e.aggregate_id, e.version FROM unnest($2::text[], $3::int8[]) AS e(aggregate_id, version)
ON CONFLICT (consumer, aggregate_id) DO UPDATE SET prior_version = v.version, version = GREATEST(v.version, EXCLUDED.version)
RETURNING aggregate_id, prior_version`, versions)
	lower = fmt.Sprintf(`WITH gone AS (DELETE FROM %[1]s WHERE consumer = $1 AND aggregate_id = $2 AND version = $3 AND prior_version IS NULL)
UPDATE %[1]s SET version = prior_version WHERE consumer = $1 AND aggregate_id = $2 AND version = $3 AND prior_version IS NOT NULL`, versions)
	return raise, lower
}

// buildStatements builds every statement of the driver on table (named name, the version
// guard's on versions). It is long because it is a list of one assignment per statement,
// which reads best side by side: the probes, the writes by probe and the scans share the
// helpers built at its top.
func buildStatements(table, name, versions string, raw dedupdriver.Columns, ty types) statements {
	sh := newShape(name, raw, ty)
	c := dedupdriver.Columns{
		Consumer: quote(raw.Consumer), EventID: quote(raw.EventID), ProcessedAt: quote(raw.ProcessedAt),
		Topic: quote(raw.Topic), Partition: quote(raw.Partition), Offset: quote(raw.Offset),
		AggregateID: quote(raw.AggregateID), AggregateVersion: quote(raw.AggregateVersion),
	}
	cols := strings.Join([]string{sh.consumer, sh.eventID, sh.atRead, sh.topic, sh.partition, sh.offset, sh.aggID, sh.aggVersion}, ", ")
	s := statements{cols: cols, sh: sh}
	// One statement per batch: the arrays are unnested into rows; Claim's form skips existing
	// markers by ON CONFLICT (never an error) and RETURNING names the rows it inserted,
	// ClaimWith's fails on one (claimSQL). (fieldwork's own table: consume writes no other.)
	owncols := strings.Join([]string{c.Consumer, c.EventID, c.ProcessedAt, c.Topic, c.Partition, c.Offset, c.AggregateID, c.AggregateVersion}, ", ")
	claim := func(outcomeCol, outcomeVal, outcomeArg string) claimSQL {
		insert := fmt.Sprintf(`INSERT INTO %[1]s (%[2]s%[3]s)
SELECT $1, e.event_id, COALESCE(e.processed_at, now()),
       NULLIF(e.topic, ''), CASE WHEN e.topic <> '' THEN e.partition END, CASE WHEN e.topic <> '' THEN e.off END,
       NULLIF(e.aggregate_id, ''), CASE WHEN e.aggregate_id <> '' THEN e.aggregate_version END%[4]s
FROM unnest($2::text[], $3::timestamptz[], $4::text[], $5::int4[], $6::int8[], $7::text[], $8::int8[]%[5]s)
  AS e(event_id, processed_at, topic, partition, off, aggregate_id, aggregate_version%[6]s)`,
			table, owncols, outcomeCol, outcomeVal, outcomeArg, outcomeCol)
		returning := "\nRETURNING " + c.EventID
		return claimSQL{
			skip:   insert + fmt.Sprintf("\nON CONFLICT (%s, %s) DO NOTHING", c.Consumer, c.EventID) + returning,
			insert: insert + returning,
		}
	}
	s.claim = claim("", "", "")
	s.claimOutcome = claim(", outcome", ", NULLIF(e.outcome, '')", ", $9::text[]")
	one := strings.NewReplacer(
		"e.topic", "$4::text", "e.partition", "$5::int4",
		"$4::text[], $5::int4[], ", "", "processed_at, topic, partition, off", "processed_at, off",
	)
	s.claimOne = claimSQL{skip: one.Replace(s.claim.skip), insert: one.Replace(s.claim.insert)}
	s.raise, s.lower = guardStatements(versions)
	s.unclaim = fmt.Sprintf(`DELETE FROM %s WHERE %s = $1 AND %s = $2 RETURNING %s, %s`, table, c.Consumer, c.EventID, sh.aggID, sh.aggVersion)
	// Every statement that takes a list of ids probes the table once per id (probe), whatever
	// the planner's statistics say; those that write do so by the rows' ctid (byProbe).
	own := func(consumer string) func(string) string {
		return func(id string) string { return and(c.Consumer+" = "+consumer, c.EventID+" = "+id) }
	}
	s.setOutcome = fmt.Sprintf(`UPDATE %s SET outcome = $3 WHERE %s`, table, sh.byProbe(table, "$2", own("$1")))
	s.outcomes = sh.probe(table, "$2", c.EventID+", outcome", func(id string) string { return and(own("$1")(id), "outcome IS NOT NULL") })
	where := func(preds ...string) string { return and(append(preds, sh.markers)...) }
	if ty == nil {
		// Without a consumer, walk the distinct consumers through the primary
		// key (a loose index scan) and probe (consumer, event_id) for each,
		// instead of scanning the table for one event id.
		mcols := "m." + strings.ReplaceAll(cols, ", ", ", m.")
		s.getAll = fmt.Sprintf(`%s
SELECT %s FROM c JOIN %s m ON m.%s = c.consumer AND m.%s = $1
ORDER BY m.%s`, dedupdriver.ConsumerWalk(table, c.Consumer), mcols, table, c.Consumer, c.EventID, c.Consumer)
		// Every consumer's markers of a list of ids: a probe per consumer and id.
		s.forgetAll = fmt.Sprintf(`DELETE FROM %s WHERE ctid = ANY(ARRAY(%s
SELECT m.ctid FROM c CROSS JOIN unnest($1::text[]) AS k(id)
CROSS JOIN LATERAL (SELECT ctid FROM %s AS t WHERE %s OFFSET 0) m)) RETURNING %s`,
			table, dedupdriver.ConsumerWalk(table, c.Consumer), table, own("c.consumer")("k.id"), cols)
	} else {
		// Another library's table: its keys are its own; one query by event id, one probe
		// per id of a list.
		s.getAll = fmt.Sprintf(`SELECT %s FROM %s WHERE %s ORDER BY 1`, cols, table, where(sh.eventIs("$1")))
		s.forgetAll = fmt.Sprintf(`DELETE FROM %s WHERE %s RETURNING %s`, table, sh.byProbe(table, "$1", func(id string) string {
			return where(sh.eventIs(id), sh.removable)
		}), cols)
	}
	s.getOne = fmt.Sprintf(`SELECT %s FROM %s WHERE %s`, cols, table, where(sh.consumerIs("$2"), sh.eventIs("$1")))
	// A consumer's ($1) marker of an id: what lookup and marked probe for each id of $2.
	ofConsumer := func(id string) string { return where(sh.consumerIs("$1"), sh.eventIs(id)) }
	s.lookup = sh.probe(table, "$2", cols, ofConsumer)
	if s.markedIDs = sh.idScanned; s.markedIDs {
		s.marked = sh.probe(table, "$2", sh.eventID, ofConsumer)
	} else {
		s.marked = sh.exists(table, "$2", ofConsumer)
	}
	s.newestVersions = newestVersionsSQL(table, sh, where)
	s.forgetOne = fmt.Sprintf(`DELETE FROM %s WHERE %s RETURNING %s`, table, sh.byProbe(table, "$1", func(id string) string {
		return where(sh.consumerIs("$2"), sh.eventIs(id), sh.removable)
	}), cols)
	if sh.removable != "" {
		s.unremovableAll = sh.probe(table, "$1", sh.eventID, func(id string) string { return where(sh.eventIs(id), "NOT "+sh.removable) }) + " LIMIT 10"
		s.unremovableOne = sh.probe(table, "$1", sh.eventID, func(id string) string {
			return where(sh.consumerIs("$2"), sh.eventIs(id), "NOT "+sh.removable)
		}) + " LIMIT 10"
	}
	older := sh.at + " < " + sh.atParam("$1")
	s.pruneAll = fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE %[2]s LIMIT $2)`, table, where(older, sh.removable))
	s.pruneOne = fmt.Sprintf(`DELETE FROM %[1]s WHERE ctid IN (SELECT ctid FROM %[1]s WHERE %[2]s LIMIT $2)`, table, where(older, sh.consumerIs("$3"), sh.removable))
	s.candidatesAll = fmt.Sprintf(`SELECT %[2]s, count(*) FROM %[1]s WHERE %[3]s GROUP BY 1 ORDER BY 1`, table, sh.topic, where(older, sh.removable))
	s.candidatesOne = fmt.Sprintf(`SELECT %[2]s, count(*) FROM %[1]s WHERE %[3]s GROUP BY 1 ORDER BY 1`, table, sh.topic, where(older, sh.consumerIs("$2"), sh.removable))
	s.consumers = dedupdriver.ConsumersSQL(table, sh.consumer)
	return s
}

func (d *Driver) Claim(ctx context.Context, tx dedupdriver.Tx, consumer string, markers []dedupdriver.Marker) ([]string, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	query, args := d.claimQuery(consumer, markers)
	rows, err := q.Query(ctx, query.skip, args...)
	if err != nil {
		return nil, d.classify(err)
	}
	fresh, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return fresh, d.classify(err)
}

// claimQuery is the claim's statement for markers, in its two forms, and its arguments.
func (d *Driver) claimQuery(consumer string, markers []dedupdriver.Marker) (claimSQL, []any) {
	// Plain slices encode without reflection; empty strings become NULL in
	// the statement. The timestamps go as NULL (now()) unless a marker
	// sets one; multi-argument unnest pads a NULL array with NULLs.
	n := len(markers)
	one := onePartition(markers)
	var (
		ids      = make([]string, n)
		topics   []string // nil with one (the statement takes the one topic and partition)
		parts    []int32
		offsets  = make([]int64, n)
		aggIDs   = make([]string, n)
		versions = make([]int64, n)
		times    []*time.Time
		outcomes []string // nil when no marker has one
	)
	if !one {
		topics, parts = make([]string, n), make([]int32, n)
	}
	for i := range markers {
		m := &markers[i]
		ids[i], offsets[i] = m.EventID, m.Offset
		if !one {
			topics[i], parts[i] = m.Topic, m.Partition
		}
		aggIDs[i], versions[i] = m.AggregateID, m.AggregateVersion
		if !m.ProcessedAt.IsZero() {
			if times == nil {
				times = make([]*time.Time, n)
			}
			times[i] = &m.ProcessedAt
		}
		if m.Outcome != "" {
			if outcomes == nil {
				outcomes = make([]string, n)
			}
			outcomes[i] = m.Outcome
		}
	}
	if one && outcomes == nil {
		return d.sql.claimOne, []any{consumer, ids, times, markers[0].Topic, markers[0].Partition, offsets, aggIDs, versions}
	}
	if one { // the outcome's statement takes arrays
		topics, parts = make([]string, n), make([]int32, n)
		for i := range markers {
			topics[i], parts[i] = markers[i].Topic, markers[i].Partition
		}
	}
	args := []any{consumer, ids, times, topics, parts, offsets, aggIDs, versions}
	query := d.sql.claim
	if outcomes != nil {
		query, args = d.sql.claimOutcome, append(args, outcomes)
	}
	return query, args
}

// onePartition reports whether markers (at least one) are all of one topic and partition.
func onePartition(markers []dedupdriver.Marker) bool {
	for i := 1; i < len(markers); i++ {
		if markers[i].Topic != markers[0].Topic || markers[i].Partition != markers[0].Partition {
			return false
		}
	}
	return len(markers) > 0
}

var _ dedupdriver.ClaimWither = (*Driver)(nil)

// ClaimWith is Claim and part in one statement (dedupdriver.ClaimWither): the claim, in the
// form that inserts every marker (claimSQL.insert), is the expression fw_claimed, the part's
// expressions follow it, and the statement fails (and writes nothing) when a marker exists
// already (a unique violation) or the part's Fallback returns a row. The part's parameters
// are numbered after the claim's.
func (d *Driver) ClaimWith(ctx context.Context, tx dedupdriver.Tx, consumer string, markers []dedupdriver.Marker, part dedupdriver.ClaimedPart) error {
	q, err := d.on(tx)
	if err != nil {
		return err
	}
	query, args := d.claimQuery(consumer, markers)
	stmt := d.claimWithSQL(query.insert, len(args), part)
	args = append(args, part.Args...)
	rows, err := q.Query(ctx, stmt, args...)
	if err != nil {
		return claimFallback(err)
	}
	defer rows.Close()
	var skip []any
	for rows.Next() {
		var isRow *bool
		if skip == nil {
			skip = make([]any, len(rows.FieldDescriptions())-2)
		}
		if err := rows.Scan(append([]any{nil, &isRow}, skip...)...); err != nil {
			return err
		}
		if isRow == nil || part.Row == nil {
			continue
		}
		err := part.Row(func(dest ...any) error {
			return rows.Scan(append([]any{nil, nil}, dest...)...)
		})
		if err != nil {
			return err
		}
	}
	return claimFallback(rows.Err())
}

// fallbackMark is in the message of the error claimWithSQL's statement raises to fall back.
const fallbackMark = "fieldwork_claim_fallback"

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// claimFallback is err, or dedupdriver.ErrClaimFallback when err is the statement's own
// failure to fall back, or a unique violation: a marker that exists already, or a row of the
// part's that does (the part's own statement, claim first, then meets it as it should).
func claimFallback(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "22P02" && strings.Contains(pe.Message, fallbackMark) || pe.Code == uniqueViolation) {
		return dedupdriver.ErrClaimFallback
	}
	return err
}

// placeholder is a positional parameter of a ClaimedPart.
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// claimWithSQL is ClaimWith's statement: the claim's statement (with nargs parameters) as
// fw_claimed, the part's expressions with their parameters renumbered after the claim's, and
// a check of the part's Fallback: when it returns a row, the check fails the statement by
// casting a text to an integer (an error whose message holds fallbackMark and the number of
// markers, which also keeps the planner from folding the cast, and failing, before the
// CASE is ever evaluated); else the
// statement returns each row of the part's Select (one row of NULLs when it has none, or no
// Select). A marker that exists already fails the claim itself. The statements are cached: a
// consumer sends the same few.
func (d *Driver) claimWithSQL(claim string, nargs int, part dedupdriver.ClaimedPart) string {
	key := claimWithKey{claim, part.With, part.Select, part.Fallback, nargs}
	if s, ok := d.claimWith.Load(key); ok {
		return s.(string)
	}
	shift := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			return "$" + strconv.Itoa(n+nargs)
		})
	}
	cond := "true"
	if part.Fallback != "" {
		cond = "NOT EXISTS (" + shift(part.Fallback) + ")"
	}
	sel := "SELECT NULL::int AS fw_none WHERE false"
	if part.Select != "" {
		sel = shift(part.Select)
	}
	s := "WITH fw_claimed AS (\n" + claim + "\n), " + shift(part.With) + ",\n" +
		"fw_check AS (SELECT CASE WHEN " + cond + " THEN 0\n" +
		"\tELSE ('" + fallbackMark + ": the part refused the batch of ' || (SELECT count(*) FROM fw_claimed))::int END AS ok)\n" +
		"SELECT fw_check.ok, fw_r.* FROM fw_check\n" +
		"LEFT JOIN (SELECT true AS fw_row, fw_q.* FROM (" + sel + ") fw_q) fw_r ON true"
	d.claimWith.Store(key, s)
	return s
}

type claimWithKey struct {
	claim, with, sel, fallback string
	nargs                      int
}

// RaiseVersions runs the version guard's upsert (statements.raise).
func (d *Driver) RaiseVersions(ctx context.Context, tx dedupdriver.Tx, consumer string, vs []dedupdriver.AggregateVersion) (map[string]int64, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	aggs, versions := make([]string, len(vs)), make([]int64, len(vs))
	for i, v := range vs {
		aggs[i], versions[i] = v.AggregateID, v.Version
	}
	rows, err := q.Query(ctx, d.sql.raise, consumer, aggs, versions)
	if err != nil {
		return nil, d.classifyVersions(err)
	}
	prior := make(map[string]int64, len(vs))
	var agg string
	var before *int64
	_, err = pgx.ForEachRow(rows, []any{&agg, &before}, func() error {
		if before != nil {
			prior[agg] = *before
		}
		return nil
	})
	if err != nil {
		return nil, d.classifyVersions(err)
	}
	return prior, nil
}

// classifyVersions is classify naming the versions table when it is the one missing.
func (d *Driver) classifyVersions(err error) error {
	if IsMissingTable(err) {
		return dedupdriver.NotMigrated(d.versions, err)
	}
	return err
}

func (d *Driver) SetOutcome(ctx context.Context, tx dedupdriver.Tx, consumer string, keys []string, outcome string) error {
	return d.classifyOutcome(d.byIDs(ctx, tx, nil, d.sql.setOutcome, consumer, keys, outcome))
}

func (d *Driver) Outcomes(ctx context.Context, consumer string, keys []string) (map[string]string, error) {
	out, err := collectByIDs(ctx, d, func(rows pgx.Rows) (map[string]string, error) {
		out := map[string]string{}
		var key, outcome string
		_, err := pgx.ForEachRow(rows, []any{&key, &outcome}, func() error {
			out[key] = outcome
			return nil
		})
		return out, err
	}, d.sql.outcomes, consumer, keys)
	if err != nil {
		return nil, d.classifyOutcome(err)
	}
	return out, nil
}

// classifyOutcome is classify, with a table that lacks the outcome column (SQLSTATE 42703,
// undefined_column) as dedupdriver.ErrNoOutcome.
func (d *Driver) classifyOutcome(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42703" {
		return fmt.Errorf("%s: %w", d.table, dedupdriver.ErrNoOutcome)
	}
	return d.classify(err)
}

func (d *Driver) Unclaim(ctx context.Context, tx dedupdriver.Tx, consumer, key string) (bool, *dedupdriver.AggregateVersion, error) {
	q, err := d.on(tx)
	if err != nil {
		return false, nil, err
	}
	rows, err := q.Query(ctx, d.sql.unclaim, consumer, key)
	if err != nil {
		return false, nil, d.classify(err)
	}
	var found bool
	var agg *dedupdriver.AggregateVersion
	var aggID *string
	var version *int64
	_, err = pgx.ForEachRow(rows, []any{&aggID, &version}, func() error {
		found = true
		if aggID != nil && version != nil {
			agg = &dedupdriver.AggregateVersion{AggregateID: *aggID, Version: *version}
		}
		return nil
	})
	if err != nil {
		return false, nil, d.classify(err)
	}
	return found, agg, nil
}

func (d *Driver) LowerVersion(ctx context.Context, tx dedupdriver.Tx, consumer string, v dedupdriver.AggregateVersion) error {
	q, err := d.on(tx)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, d.sql.lower, consumer, v.AggregateID, v.Version)
	return d.classifyVersions(err)
}

func (d *Driver) collect(rows pgx.Rows, err error) ([]dedupdriver.MarkerRow, error) {
	if err != nil {
		return nil, d.classify(err)
	}
	out, err := collectMarkers(rows)
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// collectMarkers reads rows of the driver's marker columns (scanMarker).
func collectMarkers(rows pgx.Rows) ([]dedupdriver.MarkerRow, error) {
	return pgx.CollectRows(rows, scanMarker)
}

func scanMarker(r pgx.CollectableRow) (dedupdriver.MarkerRow, error) {
	var m dedupdriver.MarkerRow
	var consumer, eventID, topic, aggID *string
	var at *time.Time // NULL in a table that keeps no time for some markers (NServiceBus's undispatched)
	if err := r.Scan(&consumer, &eventID, &at, &topic, &m.Partition, &m.Offset, &aggID, &m.AggregateVersion); err != nil {
		return m, err
	}
	if consumer != nil {
		m.Consumer = *consumer
	}
	if eventID != nil {
		m.EventID = *eventID
	}
	m.ProcessedAt, m.Topic, m.AggregateID = at, topic, aggID
	if at != nil {
		*at = at.UTC()
	}
	return m, nil
}

func (d *Driver) Get(ctx context.Context, key, consumer string) ([]dedupdriver.MarkerRow, error) {
	if consumer == "" {
		return d.markersByIDs(ctx, d.sql.getAll, key)
	}
	return d.markersByIDs(ctx, d.sql.getOne, key, consumer)
}

func (d *Driver) List(ctx context.Context, f dedupdriver.ListFilter) ([]dedupdriver.MarkerRow, error) {
	sh := d.sql.sh
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch {
	case f.Failed:
		where = append(where, sh.failed)
	case sh.markers != "":
		where = append(where, sh.markers)
	}
	if f.Consumer != "" {
		where = append(where, sh.consumerIs(arg(f.Consumer)))
	}
	if !f.Since.IsZero() {
		where = append(where, sh.at+" >= "+sh.atParam(arg(f.Since.UTC())))
	}
	if !f.Until.IsZero() {
		where = append(where, sh.at+" < "+sh.atParam(arg(f.Until.UTC())))
	}
	if f.AggregateID != "" {
		where = append(where, sh.aggID+" = "+arg(f.AggregateID))
	}
	// Rows without a processed time (another library's table may keep none for some) come
	// last; fieldwork's own column is never NULL, and ordered as it is indexed.
	at := sh.at
	if sh.atRead != sh.at || sh.markers != "" {
		at = "COALESCE(" + sh.atRead + ", '-infinity'::timestamptz)"
	}
	if f.Before != nil {
		var before any = f.Before.ProcessedAt.UTC()
		if f.Before.ProcessedAt.IsZero() {
			before = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
		}
		where = append(where, fmt.Sprintf("(%s, %s, %s) < (%s::timestamptz, %s::text, %s::text)",
			at, sh.consumer, sh.eventID, arg(before), arg(f.Before.Consumer), arg(f.Before.EventID)))
	}
	sql := "SELECT " + d.sql.cols + " FROM " + d.table
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY %s DESC, %s DESC, %s DESC LIMIT %s", at, sh.consumer, sh.eventID, arg(f.Limit))
	return d.collect(d.pool.Query(ctx, sql, args...))
}

func (d *Driver) Stats(ctx context.Context, f dedupdriver.StatsFilter, now time.Time) ([]dedupdriver.ConsumerStats, *dedupdriver.Sizes, error) {
	sh := d.sql.sh
	args := []any{now.Add(-f.Window).UTC()}
	sql := fmt.Sprintf(`SELECT %[1]s, count(*), min(%[2]s), max(%[2]s), count(*) FILTER (WHERE %[3]s >= %[4]s) FROM %[5]s`,
		sh.consumer, sh.atRead, sh.at, sh.atParam("$1"), d.table)
	var where []string
	if sh.markers != "" {
		where = append(where, sh.markers)
	}
	if f.Consumer != "" {
		where = append(where, sh.consumerIs("$2"))
		args = append(args, f.Consumer)
	}
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " GROUP BY 1 ORDER BY 1"
	rows, err := d.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, d.classify(err)
	}
	hours := f.Window.Hours()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.ConsumerStats, error) {
		var s dedupdriver.ConsumerStats
		var first, last *time.Time // NULL when none of the consumer's markers has a time
		err := r.Scan(&s.Consumer, &s.Count, &first, &last, &s.InWindow)
		if first != nil && last != nil {
			s.First, s.Last = dedupdriver.Instant(*first), dedupdriver.Instant(*last)
		}
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
	return d.markersByIDs(ctx, d.sql.lookup, consumer, keys)
}

func (d *Driver) Marked(ctx context.Context, consumer string, keys []string) ([]bool, error) {
	if d.sql.markedIDs {
		found, err := collectByIDs(ctx, d, func(rows pgx.Rows) ([]string, error) {
			return pgx.CollectRows(rows, pgx.RowTo[string])
		}, d.sql.marked, consumer, keys)
		if err != nil {
			return nil, d.classify(err)
		}
		return dedupdriver.MarkedOf(keys, found), nil
	}
	out, err := collectByIDs(ctx, d, func(rows pgx.Rows) ([]bool, error) {
		return pgx.CollectExactlyOneRow(rows, pgx.RowTo[[]bool])
	}, d.sql.marked, consumer, keys)
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

func (d *Driver) NewestVersions(ctx context.Context, consumer string, aggregates []string) (map[string]int64, error) {
	out := map[string]int64{}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, noNestedLoop); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, d.sql.newestVersions, consumer, aggregates)
		if err != nil {
			return err
		}
		var (
			agg string
			v   int64
		)
		_, err = pgx.ForEachRow(rows, []any{&agg, &v}, func() error {
			out[agg] = v
			return nil
		})
		return err
	})
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// noNestedLoop is set in NewestVersions' transaction: statistics gathered before a consumer
// wrote judge its markers few, and a generic plan then joins them to the aggregates by a
// nested loop that compares every marker with every aggregate (50,000 × 1,000 in the plan
// test); without one the planner hashes one side, and the markers are read once.
const noNestedLoop = "SET LOCAL enable_nestloop = off"

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
		return d.markersByIDs(ctx, d.sql.forgetAll, keys)
	}
	return d.markersByIDs(ctx, d.sql.forgetOne, keys, consumer)
}

// Unremovable returns up to 10 of keys whose markers may not be deleted (Columns.Removable).
func (d *Driver) Unremovable(ctx context.Context, consumer string, keys []string) ([]string, error) {
	if d.sql.sh.removable == "" {
		return nil, nil
	}
	query, args := d.sql.unremovableAll, []any{keys}
	if consumer != "" {
		query, args = d.sql.unremovableOne, append(args, consumer)
	}
	out, err := collectByIDs(ctx, d, func(rows pgx.Rows) ([]string, error) {
		return dedupdriver.ScanStrings(rows)
	}, query, args...)
	if err != nil {
		return nil, d.classify(err)
	}
	return out, nil
}

// strings runs a query of one text column and returns its values.
func (d *Driver) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := d.pool.Query(ctx, query, args...)
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
	return d.strings(ctx, d.sql.consumers, limit)
}
