package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// A PostgreSQL server of the test's own (testenv.StartPrivatePostgres) stopped in fast mode
// (connections closed, transactions rolled back) and started again in the middle of a run;
// the broker is the shared one.

// TestPostgresRestartMidConsume: the database goes away under `fieldwork consume` while
// records keep arriving; the consumer rolls back, retries and resumes: every effect exactly
// once, nothing dead-lettered because of it.
func TestPostgresRestartMidConsume(t *testing.T) {
	brokers := testenv.Brokers(t)
	pg := testenv.StartPrivatePostgres(t)
	w := newWorld(t, brokers, 1, pg.DSN())
	s := w.newStream(3, sample.Options{Seed: 201, Aggregates: 1000, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 60, Poison: 30})
	report := w.consumeThroughFault(s, fault{
		brokerStays: true,
		down: func() string {
			pg.Stop()
			return "PostgreSQL stopped (fast), the second half produced while it was down"
		},
		up: func() string { pg.Start(); return "PostgreSQL started again" },
	})
	t.Log("postgres restart mid consume:\n  " + report)
}

// TestPostgresRestartMidPrune: `fieldwork processed prune` deletes in batches, each its own
// transaction. The test holds it between two batches (a trigger on the marker table sleeps
// at the first row of the sixth batch, so that nothing can let that batch go on), stops the
// database under it, starts it again, and runs the prune once more, as an operator would.
// The invariant: exactly the markers older than the window are gone, every newer one is
// still there, the deletions of the interrupted run and of the second add up to the
// candidates, and the projection's effects are untouched.
func TestPostgresRestartMidPrune(t *testing.T) {
	started := time.Now()
	brokers := testenv.Brokers(t)
	pg := testenv.StartPrivatePostgres(t)
	w := newWorld(t, brokers, 1, pg.DSN())
	s := w.newStream(3, sample.Options{Seed: 202, Aggregates: 1200, EventsPerAggregate: 8, DuplicateFraction: 0.05, Stale: 60, Poison: 30})
	group := testenv.Name(t, "fwf-projection")
	w.produce(s.recs)
	c := w.consume("consume", group, s.topic)
	testenv.WaitCaughtUp(t, w.adm, caughtUpWithin, c.Done(), group, s.topic)
	stop(t, c)

	// Two thirds of the tasks' markers were written 60 days ago (--older-than 30d prunes
	// them); the others stay.
	ctx := context.Background()
	markers := `"` + w.schema + `".processed_events`
	exec := func(conn *pgx.Conn, sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	conn := pgConnect(t, pg.DSN())
	exec(conn, `UPDATE `+markers+` SET processed_at = now() - interval '60 days' WHERE consumer = $1 AND substring(aggregate_id from 6)::int % 3 <> 0`, group)
	kept := eventIDs(t, conn, `SELECT event_id FROM `+markers+` WHERE consumer = $1 AND processed_at > now() - interval '30 days'`, group)
	var candidates int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+markers+` WHERE processed_at < now() - interval '30 days'`).Scan(&candidates); err != nil {
		t.Fatal(err)
	}

	// The gate: the first row of the sixth batch sleeps until the server stops.
	const batch = 200
	exec(conn, `CREATE SEQUENCE "`+w.schema+`".prune_gate_rows`)
	exec(conn, fmt.Sprintf(`CREATE FUNCTION "%[1]s".prune_gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF nextval('"%[1]s".prune_gate_rows') = %[2]d THEN PERFORM pg_sleep(600); END IF;
  RETURN OLD;
END $$`, w.schema, 5*batch+1))
	exec(conn, `CREATE TRIGGER prune_gate BEFORE DELETE ON `+markers+` FOR EACH ROW EXECUTE FUNCTION "`+w.schema+`".prune_gate()`)

	prune := func(name string) *testenv.Proc {
		// --force: the sample's topic keeps its records forever (retention.ms -1), so the
		// replay-horizon check would refuse any window; the horizon is not what this tests.
		return testenv.StartProc(t, name, nil, w.bin, "processed", "prune", "--older-than", "30d", "--execute", "--yes", "--force",
			"--batch-size", fmt.Sprint(batch), "--brokers", brokers, "--dsn", pg.DSN(), "--schema", w.schema, "-o", "json")
	}
	first := prune("prune")
	waitFor(t, time.Minute, first.Done(), "the prune waiting at the gate", func() bool {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'DELETE%'`).Scan(&n)
		return err == nil && n == 1
	})
	var before int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+markers+` WHERE processed_at < now() - interval '30 days'`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	deletedFirst := candidates - before
	conn.Close(ctx)
	pg.Stop()
	code, err := first.Wait(exitWithin)
	if err != nil {
		t.Fatal(err)
	}
	if code == 0 {
		t.Errorf("the prune exited 0 although its database went away mid-run:\n%s", first.Tail(10))
	}
	pg.Start()

	conn = pgConnect(t, pg.DSN())
	exec(conn, `DROP TRIGGER prune_gate ON `+markers)
	var after int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+markers+` WHERE processed_at < now() - interval '30 days'`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	second := prune("prune-again")
	if code, err := second.Wait(exitWithin); err != nil || code != 0 {
		t.Fatalf("the second prune: exit %d, %v\n%s", code, err, second.Tail(10))
	}
	var rep struct {
		Candidates int64 `json:"candidates"`
		Deleted    int64 `json:"deleted"`
	}
	if err := json.Unmarshal([]byte(second.Stdout()), &rep); err != nil {
		t.Fatalf("the second prune's report: %v\n%s", err, second.Stdout())
	}

	remaining := eventIDs(t, conn, `SELECT event_id FROM `+markers+` WHERE consumer = $1`, group)
	if deletedFirst != candidates-after || deletedFirst != 5*batch {
		t.Errorf("the interrupted prune: %d markers gone at the gate, %d after the restart; want %d (five batches committed, the sixth rolled back)",
			candidates-before, candidates-after, 5*batch)
	}
	if (candidates-after)+rep.Deleted != candidates || rep.Candidates != after {
		t.Errorf("deleted %d by the interrupted prune + %d by the second (of %d it found) = %d, want the %d candidates",
			candidates-after, rep.Deleted, rep.Candidates, candidates-after+rep.Deleted, candidates)
	}
	if !slices.Equal(remaining, kept) {
		t.Errorf("%d markers remain, want the %d newer than the window, exactly", len(remaining), len(kept))
	}
	pf, probs, err := invariant.Projection(ctx, w.store(), w.schema, group, s.man)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	t.Log("postgres restart mid prune:\n  " + join(
		"stream:   "+s.describe()+", consumed by one `fieldwork consume`",
		fmt.Sprintf("markers:  %d, of which %d backdated 60 days (candidates of --older-than 30d) and %d newer", candidates+int64(len(kept)), candidates, len(kept)),
		fmt.Sprintf("fault:    prune --batch-size %d held at the sixth batch with %d deleted; PostgreSQL stopped (fast): the prune exited %d (%s); started again: %d candidates left",
			batch, candidates-before, code, lastLine(first), after),
		fmt.Sprintf("second:   exit 0, candidates %d, deleted %d", rep.Candidates, rep.Deleted),
		fmt.Sprintf("markers:  %d remain, the %d newer ones exactly: %v", len(remaining), len(kept), slices.Equal(remaining, kept)),
		"effects:  "+pf.String()+" (untouched by the prune)",
		fmt.Sprintf("run time: %s", time.Since(started).Round(100*time.Millisecond))))
}

func pgConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// eventIDs returns the event ids a query selects, sorted.
func eventIDs(t *testing.T, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

func lastLine(p *testenv.Proc) string { return p.Tail(1) }
