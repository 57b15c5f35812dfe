package handlers

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestProjectionBatchProbesPerTask checks the plan of the projection's batch statement on
// PostgreSQL (docs/design.md, "Cost grows with the work, not the store"): with statistics
// gathered before the consumer wrote, which judge its rows few, the statement must still find
// each task's row by the primary key (a probe per task, or the insert's conflict on that key),
// and never read the consumer's rows whole: before, the stored versions were read by
// "aggregate_id = ANY(…)" (every row of the consumer, for each batch) and the stale tasks were
// updated by a join that compared each with every row of the consumer. Custom and generic plans.
func TestProjectionBatchProbesPerTask(t *testing.T) {
	dsn := testenv.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schema := testenv.PGSchema(t, "fwtest_projplan_")
	pool := planPool(ctx, t, dsn)
	st := migratedStore(ctx, t, dsn, schema)
	h, err := New(NameProjection, Config{Consumer: "late", Driver: "postgres", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	p := h.(*projection)
	if err := st.InTx(ctx, func(tx *inbox.Tx) error { return p.Migrate(ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	cols := `(consumer, aggregate_id, version, event_id, event_type, updated_at)`
	for _, q := range []string{
		`ALTER TABLE ` + p.table + ` SET (autovacuum_enabled = false)`,
		`INSERT INTO ` + p.table + cols + ` SELECT 'other-' || (g % 20), 'task-' || g, 1, 'e', 't', now() FROM generate_series(1, 200000) g`,
		`ANALYZE ` + p.table,
		`INSERT INTO ` + p.table + cols + ` SELECT 'late', 'task-' || g, 10, 'e', 't', now() FROM generate_series(1, 50000) g`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%.100s: %v", q, err)
		}
	}
	// A batch of 1,000 events of 1,000 tasks the consumer has, every one stale (version 5 of
	// tasks at 10), as the statement's arguments are written (projection.batchOf) but literal.
	const n = 1000
	list := func(typ string, f func(i int) string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = f(i)
		}
		return "ARRAY[" + strings.Join(items, ", ") + "]::" + typ + "[]"
	}
	task := func(i int) string { return fmt.Sprintf("'task-%d'", 1+i*37) }
	five := func(int) string { return "5" }
	word := func(int) string { return "'x'" }
	null := func(int) string { return "NULL" }
	args := []string{"'late'", list("text", task), list("bigint", five), list("bigint", null),
		list("text", task), list("text", word), list("bigint", five), list("text", word), list("text", word),
		list("text", word), list("text", word), list("timestamptz", null), "now()"}
	// ClaimedBatch's statement, its part of the claim's alone: per task its columns, its first
	// version, its events, gaps and place.
	claimedArgs := append(append([]string{}, args[:1]...), args[4:12]...)
	claimedArgs = append(claimedArgs, list("bigint", five), list("bigint", five), list("bigint", five), list("bigint", five), "now()")
	statements := []struct {
		name, sql string
		args      []string
	}{
		{"batch", p.batchWith + "\n" + p.batchSelect, args},
		{"claimed", p.claimedWith + "\n" + p.claimedSelect, claimedArgs},
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stmt := range statements {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			t.Run(stmt.name+"/"+mode, func(t *testing.T) {
				if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, `PREPARE projection_batch AS WITH `+stmt.sql); err != nil {
					t.Fatal(err)
				}
				defer conn.Exec(ctx, `DEALLOCATE projection_batch`) //nolint:errcheck
				var out []byte
				// EXPLAIN without ANALYZE: nothing is written.
				if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE projection_batch(`+strings.Join(stmt.args, ", ")+`)`).Scan(&out); err != nil {
					t.Fatal(err)
				}
				if msg := byKeyAlone(t, out, TableTaskState); msg != "" {
					t.Errorf("%s\n%.4000s", msg, out)
				}
			})
		}
	}
}

// byKeyAlone says what is wrong with a plan that should touch table by its primary key only
// ("" when nothing): every scan of it an index scan of its primary key with the task in the
// index condition, every write an insert whose only arbiter is that key, and a probe there.
func byKeyAlone(t *testing.T, explained []byte, table string) string {
	t.Helper()
	var wrong []string
	probes := 0
	var walk func(n testenv.PlanNode)
	walk = func(n testenv.PlanNode) {
		if n.Relation == table {
			switch {
			case n.NodeType == "ModifyTable":
				if n.Operation != "Insert" || len(n.Arbiters) != 1 || n.Arbiters[0] != table+"_pkey" {
					wrong = append(wrong, fmt.Sprintf("%s %s with arbiters %v, not an insert by the primary key", n.Operation, n.NodeType, n.Arbiters))
				}
			case (n.NodeType == "Index Scan" || n.NodeType == "Index Only Scan") && n.IndexName == table+"_pkey" && strings.Contains(n.IndexCond, "aggregate_id = k.aggregate_id"):
				probes++
			default:
				wrong = append(wrong, fmt.Sprintf("%s on %s (%s %s)", n.NodeType, table, n.IndexName, n.IndexCond))
			}
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(testenv.ExplainedPlan(t, explained))
	if probes == 0 {
		wrong = append(wrong, "no probe of the primary key per task")
	}
	return strings.Join(wrong, "; ")
}

// TestAuditTableShapes checks the audit log's shape on PostgreSQL (docs/design.md §3.5): a new
// audit_log has no key and no index; one an earlier version created, with a surrogate key and
// its index on the event id (the B-tree event_idx, or the hash index event_id), loses that
// index after Migrate, twice migrated or once, keeps its key and an operator's own index, and
// still takes rows, batch and per event; an index of the same name in another schema, first
// on the store's search path, stays.
func TestAuditTableShapes(t *testing.T) {
	dsn := testenv.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := testenv.PGSchema(t, "fwtest_auditidx_")
	pool := planPool(ctx, t, dsn)
	other := testenv.PGSchema(t, "fwtest_auditidx_other_")
	for _, q := range []string{
		`CREATE SCHEMA "` + other + `"`,
		`CREATE TABLE "` + other + `".audit_log (consumer text, event_id text)`,
		`CREATE INDEX audit_log_event_idx ON "` + other + `".audit_log (consumer, event_id)`,
		`CREATE INDEX audit_log_event_id ON "` + other + `".audit_log USING hash (event_id)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	onPath := dsn + " search_path=" + other // a key=value DSN
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("search_path", other)
		u.RawQuery = q.Encode()
		onPath = u.String()
	}
	st := migratedStore(ctx, t, onPath, schema)
	var path string
	if err := st.InTx(ctx, func(tx *inbox.Tx) error { return tx.QueryRow(ctx, `SHOW search_path`).Scan(&path) }); err != nil || path != other {
		t.Fatalf("the store's search path: %q (%v), want %s", path, err, other)
	}
	h, err := New(NameAudit, Config{Consumer: "c1", Driver: "postgres", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	a := h.(*audit)
	migrate := func() {
		t.Helper()
		if err := st.InTx(ctx, func(tx *inbox.Tx) error { return a.Migrate(ctx, tx) }); err != nil {
			t.Fatal(err)
		}
	}
	indexes := func(schema string) string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'audit_log' ORDER BY indexname`, schema)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s[:strings.Index(s, ":")]+strings.ReplaceAll(s[strings.Index(s, " USING "):], `"`+schema+`".`, ""))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, "; ")
	}
	rows := func() string {
		t.Helper()
		evs := []*consumer.Message{
			{Event: consumer.Event{ID: "e-1", Type: "t"}, Record: &kgo.Record{Topic: "tasks", Partition: 0, Offset: 1}},
			{Event: consumer.Event{ID: "e-2", Type: "t"}, Record: &kgo.Record{Topic: "tasks", Partition: 0, Offset: 2}},
		}
		if err := st.InTx(ctx, func(tx *inbox.Tx) error {
			if _, err := a.HandleBatch(ctx, tx, evs[:1]); err != nil {
				return err
			}
			_, err := a.Handle(ctx, tx, evs[1])
			return err
		}); err != nil {
			t.Fatalf("the audit log takes no rows: %v", err)
		}
		var got string
		if err := pool.QueryRow(ctx, `SELECT string_agg(event_id || '@' || "offset", ',' ORDER BY "offset") FROM `+a.table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	migrate()
	migrate()
	if got := indexes(schema); got != "" {
		t.Errorf("a new audit log's indexes: %s, want none", got)
	}
	if got := rows(); got != "e-1@1,e-2@2" {
		t.Errorf("a new audit log's rows: %s, want e-1@1,e-2@2", got)
	}

	// The table as earlier versions left it: a surrogate key, the B-tree on (consumer,
	// event_id) or the hash index on event_id that replaced it, and an operator's own index.
	for _, earlier := range []string{
		`CREATE INDEX audit_log_event_idx ON ` + a.table + ` (consumer, event_id)`,
		`CREATE INDEX audit_log_event_id ON ` + a.table + ` USING hash (event_id)`,
	} {
		for _, q := range []string{
			`DROP TABLE ` + a.table,
			`CREATE TABLE ` + a.table + ` (id bigserial PRIMARY KEY, consumer text NOT NULL, event_id text NOT NULL,
	event_type text NOT NULL DEFAULT '', source text NOT NULL DEFAULT '', aggregate_type text NOT NULL DEFAULT '',
	aggregate_id text NOT NULL DEFAULT '', aggregate_version bigint, topic text NOT NULL, "partition" integer NOT NULL,
	"offset" bigint NOT NULL, occurred_at timestamptz, data text NOT NULL DEFAULT '', recorded_at timestamptz NOT NULL)`,
			earlier,
			`CREATE INDEX operators_own ON ` + a.table + ` (recorded_at)`,
		} {
			if _, err := pool.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		migrate()
		migrate()
		if got, want := indexes(schema), "audit_log_pkey USING btree (id); operators_own USING btree (recorded_at)"; got != want {
			t.Errorf("the audit log of %q after Migrate:\n got %s\nwant %s", earlier, got, want)
		}
		var ids string
		if got := rows(); got != "e-1@1,e-2@2" {
			t.Errorf("the earlier audit log's rows: %s, want e-1@1,e-2@2", got)
		} else if err := pool.QueryRow(ctx, `SELECT string_agg(id::text, ',' ORDER BY id) FROM `+a.table).Scan(&ids); err != nil || ids != "1,2" {
			t.Errorf("the earlier audit log's ids: %q (%v), want 1,2 from its sequence", ids, err)
		}
	}
	if got, want := indexes(other), "audit_log_event_id USING hash (event_id); audit_log_event_idx USING btree (consumer, event_id)"; got != want {
		t.Errorf("another schema's indexes of the same names: %s, want them kept (%s)", got, want)
	}
}

// planPool is a pool on dsn for the test's own statements, closed after the test.
func planPool(ctx context.Context, t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// migratedStore is a store on dsn in schema, migrated, closed after the test.
func migratedStore(ctx context.Context, t *testing.T, dsn, schema string) *inbox.Store {
	t.Helper()
	st, err := inbox.Open(ctx, dsn, inbox.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}
