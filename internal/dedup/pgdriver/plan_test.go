package pgdriver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupconformance"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestLookupsProbePerID checks the plans of the statements that take a list of event ids
// (issue 32, docs/design.md §3.4): with statistics gathered before a consumer wrote, which
// judge it rare, each must still probe the primary key once per id (no Seq Scan, no index scan
// on the consumer alone with the ids as a filter or a hash join over its markers), in a
// custom plan (what pgx's first executions get) and in a generic one (a cached statement's).
// The table is small: the plan's choice is what matters, not its time.
func TestLookupsProbePerID(t *testing.T) {
	ctx, _, pool, names := planStore(t)
	d := pgdriver.New(pool, names)
	// 200,000 markers of 20 other consumers, analyzed; then 50,000 of "late", which the
	// statistics never see (autovacuum off for the table, so no analyze runs behind the test).
	ids := dedupconformance.StaleStatistics(t, ctx, d, func(ctx context.Context, q string) error {
		_, err := pool.Exec(ctx, q)
		return err
	},
		`ALTER TABLE `+d.Table()+` SET (autovacuum_enabled = false)`,
		`INSERT INTO `+d.Table()+` (consumer, event_id) SELECT 'other-' || (g % 20), 'e-' || g FROM generate_series(1, 200000) g`,
		`ANALYZE `+d.Table(),
		`INSERT INTO `+d.Table()+` (consumer, event_id, aggregate_id, aggregate_version) SELECT 'late', 'e-' || g, 'agg-' || (g % 5000), g FROM generate_series(1, 50000) g`)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	statements := pgdriver.IDStatements(d)
	for _, st := range []struct {
		name string
		args []any
	}{
		{"lookup", []any{"late", ids}},
		{"marked", []any{"late", ids}},
		{"outcomes", []any{"late", ids}},
		{"setOutcome", []any{"late", ids, dedupdriver.OutcomeStale}},
		{"forgetOne", []any{ids, "late"}},
		{"forgetAll", []any{ids}},
	} {
		// EXECUTE takes no parameters of its own: its arguments are written as literals.
		params := make([]string, len(st.args))
		for i, a := range st.args {
			switch a := a.(type) {
			case string:
				params[i] = literal(a)
			case []string:
				elems := make([]string, len(a))
				for j, s := range a {
					elems[j] = literal(s)
				}
				params[i] = "ARRAY[" + strings.Join(elems, ", ") + "]::text[]"
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			t.Run(st.name+"/"+mode, func(t *testing.T) {
				if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, `PREPARE probe_plan AS `+statements[st.name]); err != nil {
					t.Fatal(err)
				}
				defer conn.Exec(ctx, `DEALLOCATE probe_plan`) //nolint:errcheck
				var out []byte
				err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE probe_plan(`+strings.Join(params, ", ")+`)`).Scan(&out)
				if err != nil {
					t.Fatal(err)
				}
				if msg := probesPerID(t, out, "fieldwork_processed_events"); msg != "" {
					t.Errorf("%s\n%.3000s", msg, out)
				}
			})
		}
	}
	// The replay's newer-version guard asks by aggregate, which no index serves: one scan of the
	// consumer's markers, the aggregates hashed, never a scan (or a comparison with every
	// aggregate) per marker or per aggregate.
	aggs := make([]string, 1000)
	for i := range aggs {
		aggs[i] = literal(fmt.Sprintf("agg-%d", i*5))
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run("newestVersions/"+mode, func(t *testing.T) {
			// As the driver runs it: in a transaction of its own, without nested loops.
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			for _, q := range []string{`SET LOCAL plan_cache_mode = ` + mode, pgdriver.NoNestedLoop, `PREPARE versions_plan AS ` + pgdriver.NewestVersionsStatement(d)} {
				if _, err := tx.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			defer conn.Exec(ctx, `DEALLOCATE versions_plan`) //nolint:errcheck
			var out []byte
			err = tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE versions_plan('late', ARRAY[`+strings.Join(aggs, ", ")+`]::text[])`).Scan(&out)
			if err != nil {
				t.Fatal(err)
			}
			if msg := readsOnceHashed(t, out, "fieldwork_processed_events"); msg != "" {
				t.Errorf("%s\n%.3000s", msg, out)
			}
		})
	}
	if got, err := d.NewestVersions(ctx, "late", []string{"agg-0", "agg-4999", "agg-none"}); err != nil || len(got) != 2 || got["agg-0"] != 50000 || got["agg-4999"] != 49999 {
		t.Errorf("newest versions of late: %v, %v", got, err)
	}

	// The claim inserts: its one statement per batch must not read the table at all, whatever
	// the statistics say; each marker's conflict is found by the primary key, the arbiter of
	// ON CONFLICT, a probe per id of the insertion itself.
	claimArgs := "(" + literal("late") + ", ARRAY[" + literal("fresh-1") + ", " + literal(ids[0]) + "]::text[], NULL::timestamptz[], " +
		"ARRAY['t', 't']::text[], ARRAY[0, 0]::int4[], ARRAY[1, 2]::int8[], ARRAY['', '']::text[], ARRAY[0, 0]::int8[]"
	for name, q := range pgdriver.ClaimStatements(d) {
		args := claimArgs + ")"
		switch name {
		case "claimOutcome":
			args = claimArgs + ", ARRAY['', 'stale']::text[])"
		case "claimOne":
			args = strings.Replace(args, "ARRAY['t', 't']::text[], ARRAY[0, 0]::int4[]", "'t'::text, 0::int4", 1)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, `PREPARE claim_plan AS `+q); err != nil {
					t.Fatal(err)
				}
				defer conn.Exec(ctx, `DEALLOCATE claim_plan`) //nolint:errcheck
				var out []byte
				// EXPLAIN without ANALYZE: nothing is inserted.
				if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE claim_plan`+args).Scan(&out); err != nil {
					t.Fatal(err)
				}
				if msg := insertsByArbiter(t, out, "fieldwork_processed_events"); msg != "" {
					t.Errorf("%s\n%.3000s", msg, out)
				}
			})
		}
	}
}

// planStore is what a plan test starts from: a context bounded for the test, the DSN, a pool
// on it, and the names of a marker table in a fresh schema.
func planStore(t *testing.T) (context.Context, string, *pgxpool.Pool, dedupdriver.Names) {
	t.Helper()
	dsn := testenv.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return ctx, dsn, pool, dedupdriver.Names{Schema: testenv.PGSchema(t, "fwtest_plan_"), Table: "fieldwork_processed_events", Columns: dedupdriver.DefaultColumns}
}

// TestLookupsOfAnEmptiedTable checks the plans the driver's lookups by event id are executed
// with (auto_explain, on the driver's own connections) against a table whose markers were
// nearly all deleted and vacuumed: its pages stay, its primary key's too, and with 3 rows
// left the planner costs a probe of that index above a read of the whole heap, and would read
// the heap once per id. Every statement of a list of ids must probe the primary key instead,
// and none may be compiled by JIT, to which the same costing leads a plain probe of the ids.
func TestLookupsOfAnEmptiedTable(t *testing.T) {
	ctx, dsn, admin, names := planStore(t)
	built := pgdriver.New(admin, names)
	table := built.Table()
	dedupconformance.Build(t, ctx, built, func(ctx context.Context, q string) error {
		_, err := admin.Exec(ctx, q)
		return err
	},
		`ALTER TABLE `+table+` SET (autovacuum_enabled = false)`,
		`INSERT INTO `+table+` (consumer, event_id) SELECT 'gone', md5(g::text) FROM generate_series(1, 200000) g`,
		`INSERT INTO `+table+` (consumer, event_id) SELECT 'kept', 'k-' || g FROM generate_series(1, 3) g`,
		`DELETE FROM `+table+` WHERE consumer = 'gone'`,
		`VACUUM ANALYZE `+table)
	// The setup must still mislead the planner, or the test proves nothing.
	var plain []byte
	if err := admin.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT * FROM `+table+` WHERE consumer = 'kept' AND event_id = 'k-1'`).Scan(&plain); err != nil {
		t.Fatal(err)
	}
	if root := testenv.ExplainedPlan(t, plain); root.NodeType != "Seq Scan" {
		t.Fatalf("the emptied table's plain lookup is a %s, not a Seq Scan: the setup no longer misleads the planner\n%s", root.NodeType, plain)
	}

	explained := newExplainer(t, ctx, dsn, false)
	d := pgdriver.New(explained.Pool, names)
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = fmt.Sprintf("k-%d", i+1)
	}
	// The same costing makes PostgreSQL compile a probe of these ids to machine code (JIT), or
	// the test's check that no statement is compiled proves nothing.
	var jitted bool
	err := pgx.BeginFunc(ctx, explained.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		explained.take()
		if _, err := tx.Exec(ctx, `SELECT m.* FROM unnest($1::text[]) AS k(id) CROSS JOIN LATERAL (SELECT * FROM `+table+
			` AS t WHERE consumer = 'kept' AND event_id = k.id OFFSET 0) m`, ids); err != nil {
			return err
		}
		// Its plan is told once its portal is dropped: by the next statement's.
		if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
			return err
		}
		jitted = slices.ContainsFunc(explained.take(), func(p string) bool { return strings.Contains(p, `"JIT"`) })
		return nil
	})
	if err != nil || !jitted {
		t.Fatalf("a probe of the ids on the emptied table was not compiled by JIT (%v): the setup no longer leads PostgreSQL there", err)
	}
	calls := []struct {
		name string
		call func() (int, error)
	}{
		{"lookup", func() (int, error) { m, err := d.Lookup(ctx, "kept", ids); return len(m), err }},
		{"marked", func() (int, error) {
			m, err := d.Marked(ctx, "kept", ids)
			n := 0
			for _, b := range m {
				if b {
					n++
				}
			}
			return n, err
		}},
		{"outcomes", func() (int, error) { m, err := d.Outcomes(ctx, "kept", ids); return len(m) + 3, err }},
		{"get", func() (int, error) { m, err := d.Get(ctx, "k-1", "kept"); return len(m) + 2, err }},
		{"get of every consumer", func() (int, error) { m, err := d.Get(ctx, "k-1", ""); return len(m) + 2, err }},
		{"set outcome", func() (int, error) {
			// In the caller's transaction, whose settings are its own again afterwards.
			ptx, err := explained.Begin(ctx)
			if err != nil {
				return 0, err
			}
			defer ptx.Rollback(ctx) //nolint:errcheck
			if _, err := ptx.Exec(ctx, `SET LOCAL enable_bitmapscan = off`); err != nil {
				return 0, err
			}
			tx, err := d.Adopt(ptx)
			if err != nil {
				return 0, err
			}
			if err := d.SetOutcome(ctx, tx, "kept", ids, dedupdriver.OutcomeStale); err != nil {
				return 0, err
			}
			var seq, bitmap, jit string
			if err := ptx.QueryRow(ctx, `SELECT current_setting('enable_seqscan'), current_setting('enable_bitmapscan'), current_setting('jit')`).Scan(&seq, &bitmap, &jit); err != nil {
				return 0, err
			}
			if seq != "on" || bitmap != "off" || jit != "on" {
				t.Errorf("after the outcome, the caller's transaction has enable_seqscan %s, enable_bitmapscan %s and jit %s, not on, off and on", seq, bitmap, jit)
			}
			var stale int
			err = ptx.QueryRow(ctx, `SELECT count(*) /* the test's own */ FROM `+table+` WHERE consumer = 'kept' AND outcome = 'stale'`).Scan(&stale)
			return stale, err
		}},
		{"forget", func() (int, error) { m, err := d.Forget(ctx, "kept", ids[3:]); return len(m) + 3, err }},
		{"forget of every consumer", func() (int, error) { m, err := d.Forget(ctx, "", ids[3:]); return len(m) + 3, err }},
	}
	for _, c := range calls {
		explained.take()
		n, err := c.call()
		if err != nil || n != 3 {
			t.Errorf("%s: %d of the 3 markers, %v", c.name, n, err)
			continue
		}
		got := explained.take()
		probed := 0
		for _, p := range got {
			if !strings.Contains(p, `"fieldwork_processed_events"`) || strings.Contains(p, "the test's own") {
				continue
			}
			if msg := probesPerID(t, []byte(p), "fieldwork_processed_events"); msg != "" {
				t.Errorf("%s: %s\n%.3000s", c.name, msg, p)
			}
			if strings.Contains(p, `"JIT"`) {
				t.Errorf("%s: compiled by JIT before it ran\n%.3000s", c.name, p)
			}
			probed++
		}
		if probed == 0 {
			t.Errorf("%s: no plan of a statement on the table was seen (%d plans)", c.name, len(got))
		}
		// The settings ended with the statement's transaction: the session's are as they were.
		var seq, bitmap, jit string
		if err := explained.QueryRow(ctx, `SELECT current_setting('enable_seqscan'), current_setting('enable_bitmapscan'), current_setting('jit')`).Scan(&seq, &bitmap, &jit); err != nil || seq != "on" || bitmap != "on" || jit != "on" {
			t.Errorf("%s: after it, the session has enable_seqscan %s, enable_bitmapscan %s and jit %s (%v), not on", c.name, seq, bitmap, jit, err)
		}
	}
	// A statement that fails (here: a table the driver does not find) rolls its transaction
	// back and leaves the connection to the next one.
	missing := pgdriver.New(explained.Pool, dedupdriver.Names{Schema: names.Schema, Table: "no_such_table", Columns: dedupdriver.DefaultColumns})
	if _, err := missing.Lookup(ctx, "kept", ids); err == nil {
		t.Error("a lookup in a missing table did not fail")
	}
	if m, err := d.Lookup(ctx, "kept", ids); err != nil || len(m) != 3 {
		t.Errorf("the lookup after a failed one: %d markers, %v", len(m), err)
	}
	var status string
	if err := explained.QueryRow(ctx, `SELECT current_setting('enable_seqscan')`).Scan(&status); err != nil || status != "on" {
		t.Errorf("after a failed lookup, the session has enable_seqscan %s (%v)", status, err)
	}
}

// TestReplayedSourcesReadTheirWindow checks the rows the lookup of replays reads (auto_explain
// with its actual rows, on the driver's own connection) near the start of a partition whose
// journal holds 3,000 batches after the records asked for: the batches read must be those near
// the records, not every batch from them to the end of the partition, which made a replay of
// n dead letters replayed before read of the order of n² batches.
func TestReplayedSourcesReadTheirWindow(t *testing.T) {
	st, env := dedupconformance.NewStore(t, freshSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	if err := st.CreateReplayRun(ctx, dedup.ReplayRun{ID: "dense", Operator: "o", Reason: "r", Selection: `{}`, Sources: []string{"d.dlq"},
		Target: "original", Status: dedup.RunRunning, Owner: "o", CreatedAt: t0}, nil); err != nil {
		t.Fatal(err)
	}
	// 3,000 batches of 10 offsets each (a target topic each: a batch per flush, partition and
	// target), in one flush.
	var sends []dedup.ReplaySend
	for o := range int64(30_000) {
		sends = append(sends, dedup.ReplaySend{SourceTopic: "d.dlq", SourcePartition: 0, SourceOffset: o, EventID: fmt.Sprint("e-", o),
			TargetTopic: fmt.Sprint("d-", o/10), TargetPartition: 0, TargetOffset: o, At: t0})
	}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "dense", Owner: "o", Status: dedup.RunRunning, Sends: sends}); err != nil {
		t.Fatal(err)
	}
	explained := newExplainer(t, ctx, env.DSN, true)
	if _, err := explained.Exec(ctx, `ANALYZE "`+env.Schema+`".replay_send_batches`); err != nil {
		t.Fatal(err)
	}
	d := pgdriver.New(explained.Pool, dedupdriver.Names{Schema: env.Schema, Table: dedup.DefaultTable, Columns: dedupdriver.DefaultColumns})
	var recs []dedupdriver.SourceRecord
	for o := int64(5); o < 25; o++ {
		recs = append(recs, dedupdriver.SourceRecord{SourceRef: dedupdriver.SourceRef{Topic: "d.dlq", Partition: 0, Offset: o}, EventID: fmt.Sprint("e-", o)})
	}
	explained.take()
	got, err := d.ReplayedSources(ctx, recs)
	if err != nil || len(got) != len(recs) {
		t.Fatalf("%d of %d records replayed, %v", len(got), len(recs), err)
	}
	// The statements' plans are told once their portals are dropped: by the next one's.
	if _, err := explained.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	read, seen := 0.0, false
	for _, p := range explained.take() {
		var walk func(n testenv.PlanNode)
		walk = func(n testenv.PlanNode) {
			if n.Relation == "replay_send_batches" {
				seen = true
				read += (n.ActualRows + n.RemovedByFilter) * max(n.ActualLoops, 1)
			}
			for _, c := range n.Plans {
				walk(c)
			}
		}
		walk(testenv.ExplainedPlan(t, []byte(p)))
	}
	// The window's 3 batches and their neighbours, the widest batch's probe, the batches read by id.
	if !seen || read > 20 {
		t.Errorf("the lookup of 20 records read %v rows of replay_send_batches (seen: %v): the read is not bounded by the records", read, seen)
	}
}

// explainer is a pool of one connection (what runs after a statement is on the same session)
// whose statements' plans auto_explain sends back as notices, in JSON; with analyze, with the
// rows each node read.
type explainer struct {
	*pgxpool.Pool
	mu    sync.Mutex
	plans []string
}

func newExplainer(t *testing.T, ctx context.Context, dsn string, analyze bool) *explainer {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	e := &explainer{}
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if _, plan, ok := strings.Cut(n.Message, "plan:\n"); ok {
			e.mu.Lock()
			e.plans = append(e.plans, plan)
			e.mu.Unlock()
		}
	}
	set := []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_level = notice`, `SET auto_explain.log_format = json`}
	if analyze {
		set = append(set, `SET auto_explain.log_analyze = on`, `SET auto_explain.log_timing = off`)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		for _, q := range set {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}
	cfg.MaxConns = 1
	if e.Pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// take returns the plans seen since the last take, and forgets them.
func (e *explainer) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.plans
	e.plans = nil
	return out
}

// insertsByArbiter says what is wrong with the plan of a claim ("" when nothing): it inserts
// into table with its primary key as the only arbiter of ON CONFLICT, and reads table nowhere.
func insertsByArbiter(t *testing.T, explained []byte, table string) string {
	t.Helper()
	root := testenv.ExplainedPlan(t, explained)
	var wrong []string
	var walk func(n testenv.PlanNode)
	walk = func(n testenv.PlanNode) {
		switch {
		case n.Relation == table && n.NodeType == "ModifyTable":
			if n.Operation != "Insert" || len(n.Arbiters) != 1 || n.Arbiters[0] != table+"_pkey" {
				wrong = append(wrong, fmt.Sprintf("%s %s with arbiters %v, not an insert by the primary key", n.Operation, n.NodeType, n.Arbiters))
			}
		case n.Relation == table:
			wrong = append(wrong, n.NodeType+" on "+table)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root)
	return strings.Join(wrong, "; ")
}

// readsOnceHashed says what is wrong with a plan that should read table once and join the
// aggregates by a hash ("" when nothing): exactly one scan of table, no nested loop (a scan per
// aggregate), and no filter comparing each row with a whole array ("= ANY").
func readsOnceHashed(t *testing.T, explained []byte, table string) string {
	t.Helper()
	root := testenv.ExplainedPlan(t, explained)
	var wrong []string
	scans, hashed := 0, false
	var walk func(n testenv.PlanNode)
	walk = func(n testenv.PlanNode) {
		switch {
		case n.NodeType == "Nested Loop":
			wrong = append(wrong, "a nested loop")
		case strings.HasPrefix(n.NodeType, "Hash") && strings.Contains(n.NodeType, "Join"):
			hashed = true
		}
		if strings.Contains(n.Filter, "ANY") {
			wrong = append(wrong, fmt.Sprintf("%s with a filter on an array (%.100s…)", n.NodeType, n.Filter))
		}
		if n.Relation == table {
			scans++
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root)
	if scans != 1 {
		wrong = append(wrong, fmt.Sprintf("%d scans of %s", scans, table))
	}
	if !hashed {
		wrong = append(wrong, "no hash join of the aggregates")
	}
	return strings.Join(wrong, "; ")
}

// literal is s as an SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// probesPerID says what is wrong with a plan that should read table by a primary-key probe
// per event id ("" when nothing): every scan of table is one of its primary key with the event
// id in the index condition (the one-row steps of the walk over the consumers, under a Limit,
// aside) or a TID scan, and at least one such probe is there.
func probesPerID(t *testing.T, explained []byte, table string) string {
	t.Helper()
	root := testenv.ExplainedPlan(t, explained)
	var wrong []string
	probes := 0
	var walk func(n testenv.PlanNode, parent string)
	walk = func(n testenv.PlanNode, parent string) {
		if n.Relation == table {
			switch n.NodeType {
			case "ModifyTable", "Tid Scan":
			case "Index Scan", "Index Only Scan":
				switch {
				case n.IndexName != table+"_pkey":
					wrong = append(wrong, fmt.Sprintf("%s on %s, not the primary key", n.NodeType, n.IndexName))
				case strings.Contains(n.Filter, "event_id"):
					wrong = append(wrong, fmt.Sprintf("%s with the event ids as a filter (%.100s…)", n.NodeType, n.Filter))
				case strings.Contains(n.IndexCond, "event_id"):
					probes++
				case parent != "Limit":
					wrong = append(wrong, fmt.Sprintf("%s on %q alone", n.NodeType, n.IndexCond))
				}
			default:
				wrong = append(wrong, n.NodeType+" on "+table)
			}
		}
		for _, c := range n.Plans {
			walk(c, n.NodeType)
		}
	}
	walk(root, "")
	if probes == 0 {
		wrong = append(wrong, "no probe of the primary key by event id")
	}
	return strings.Join(wrong, "; ")
}
