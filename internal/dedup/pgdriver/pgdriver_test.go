package pgdriver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupconformance"
	"github.com/fieldwork/fieldwork/internal/redact"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// testDSN is FIELDWORK_TEST_DSN, with testenv's rule: skip on a developer's machine
// without it, fail under CI or FIELDWORK_TEST_REQUIRE=1.
func testDSN(t testing.TB) string {
	t.Helper()
	return testenv.DSN(t)
}

// admin connects for schema setup and cleanup; a database that cannot be
// reached fails the test.
func admin(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", redact.DSN(dsn), err)
	}
	return conn
}

func randomSchema() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "fwtest_" + hex.EncodeToString(b)
}

// freshSchema hands out a schema name no other test uses and drops the
// schema (whatever the test created in it) at cleanup.
func freshSchema(t *testing.T) (string, string) {
	dsn := testDSN(t)
	conn := admin(t, dsn)
	schema := randomSchema()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		_ = conn.Close(ctx)
	})
	return dsn, schema
}

func TestConformance(t *testing.T) {
	// One clear failure when the database is down, not one per subtest.
	_ = admin(t, testDSN(t)).Close(context.Background())
	dedupconformance.RunConformance(t, freshSchema)
}

func TestUnderlyingPgxTx(t *testing.T) {
	st, _ := dedupconformance.NewStore(t, freshSchema)
	ctx := context.Background()
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		ptx, ok := tx.Pgx()
		if !ok {
			t.Fatal("Pgx() on a postgres transaction returned false")
		}
		if _, ok := tx.SQL(); ok {
			t.Fatal("SQL() on a postgres transaction returned true")
		}
		if _, err := st.Claim(ctx, tx, "c", []dedup.Marker{{EventID: "via-pgx"}}); err != nil {
			return err
		}
		var n int
		// The caller's own statements see the claim: same transaction.
		err := ptx.QueryRow(ctx, `SELECT count(*) FROM `+st.Table()+` WHERE event_id = $1`, "via-pgx").Scan(&n)
		if n != 1 {
			t.Fatalf("the pgx.Tx sees %d markers, want 1", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigrationNames(t *testing.T) {
	st, env := dedupconformance.NewStore(t, freshSchema)
	if want := `"` + env.Schema + `"."processed_events"`; st.Table() != want {
		t.Fatalf("table %s, want %s", st.Table(), want)
	}
	conn := admin(t, env.DSN)
	defer conn.Close(context.Background())
	var idx, mig int
	err := conn.QueryRow(context.Background(), `SELECT
  (SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'processed_events'),
  (SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'fieldwork_migrations')`, env.Schema).Scan(&idx, &mig)
	if err != nil || idx != 2 || mig != 1 {
		t.Fatalf("indexes %d (want primary key + processed_at), migrations tables %d: %v", idx, mig, err)
	}
}

// TestSendArraysUncompressed: migration 004 stores the send batches' arrays out of line
// without compression (compressing them cost PostgreSQL more CPU than the rest of a replay),
// and so does migration 005 the packed sends that replace them.
func TestSendArraysUncompressed(t *testing.T) {
	_, env := dedupconformance.NewStore(t, freshSchema)
	conn := admin(t, env.DSN)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT a.attname, a.attstorage FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = 'replay_send_batches' AND a.attname IN ('sends', 'source_offsets', 'event_ids', 'target_partitions', 'target_offsets')`, env.Schema)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var name, storage string
		if err := rows.Scan(&name, &storage); err != nil {
			t.Fatal(err)
		}
		got[name] = storage
	}
	if rows.Err() != nil || len(got) != 5 {
		t.Fatalf("array columns: %v %v", got, rows.Err())
	}
	for name, storage := range got {
		if storage != "e" {
			t.Errorf("%s: storage %q, want e (external: out of line, uncompressed)", name, storage)
		}
	}
}

// TestFlushIsAtomic: a flush is sent as one pipeline of statements, which PostgreSQL must run
// as one transaction. A send the database refuses (a target topic with a NUL byte, which text
// cannot hold) fails the statement after the run's update, and the update must not stay.
func TestFlushIsAtomic(t *testing.T) {
	st, _ := dedupconformance.NewStore(t, freshSchema)
	ctx := context.Background()
	run := dedup.ReplayRun{ID: "r", Operator: "op", Reason: "why", Selection: "{}", Sources: []string{"orders.dlq"},
		Target: "original", Status: dedup.RunRunning, Owner: "me"}
	if err := st.CreateReplayRun(ctx, run, []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, Start: 0, End: 9, AckedThrough: -1}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	bad := dedup.ReplayProgress{RunID: "r", Owner: "me", Status: dedup.RunRunning, Now: now, FlushID: "me#1",
		Counts:      dedup.RunCounts{Selected: 2, Sent: 2},
		Checkpoints: []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, AckedThrough: 1}},
		Sends: []dedup.ReplaySend{
			{SourceTopic: "orders.dlq", SourcePartition: 0, SourceOffset: 0, EventID: "e0", TargetTopic: "orders", TargetOffset: 10, At: now},
			{SourceTopic: "orders.dlq", SourcePartition: 0, SourceOffset: 1, EventID: "e1", TargetTopic: "orders\x00", TargetOffset: 11, At: now},
		}}
	if err := st.SaveReplayProgress(ctx, bad); err == nil {
		t.Fatal("a send with a NUL byte in its target topic was journaled")
	}
	got, cps, err := st.ReplayRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if got.Sent != 0 || got.Selected != 0 || cps[0].AckedThrough != -1 {
		t.Fatalf("a failed flush left part of itself: sent %d, selected %d, acked through %d", got.Sent, got.Selected, cps[0].AckedThrough)
	}
	targets, err := st.ReplayTargetCounts(ctx, "r")
	if err != nil || len(targets) != 0 {
		t.Fatalf("a failed flush left target counts: %v %v", targets, err)
	}
	// The same flush without the bad send is written whole.
	bad.Sends[1].TargetTopic = "orders"
	if err := st.SaveReplayProgress(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if got, cps, err = st.ReplayRun(ctx, "r"); err != nil || got.Sent != 2 || cps[0].AckedThrough != 1 {
		t.Fatalf("flush after the failed one: %+v %+v %v", got, cps, err)
	}
}

// withPassword returns dsn (URL or key=value) with another password, and
// the host:port it names.
func withPassword(t *testing.T, dsn, password string) (string, string) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse FIELDWORK_TEST_DSN: %v", err)
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		u.User = url.UserPassword(cfg.User, password)
		return u.String(), addr
	}
	return dsn + " password=" + password, addr // the last setting wins
}

func TestConnectErrors(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	const secret = "S3cret-Never-Shown"
	wrongPassword, pgAddr := withPassword(t, dsn, secret)

	// A listener that accepts and never answers: Open must give up on its
	// own, within the connect timeout.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	// A port nobody listens on.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()

	cases := []struct {
		name, dsn, addr, cause string
		opts                   dedup.Options
	}{
		{"wrong password", wrongPassword, pgAddr, "28P01", dedup.Options{}},
		{"refused", "postgres://fieldwork:" + secret + "@" + closedAddr + "/fieldwork?sslmode=disable", closedAddr, "refused", dedup.Options{}},
		{"unknown host", "postgres://fieldwork:" + secret + "@no-such-host.invalid:5432/fieldwork?sslmode=disable&connect_timeout=3", "no-such-host.invalid:5432", "", dedup.Options{}},
		{"silent server", "host=127.0.0.1 port=" + strings.Split(silent.Addr().String(), ":")[1] + " user=fieldwork password=" + secret + " sslmode=disable",
			silent.Addr().String(), "", dedup.Options{ConnectTimeout: time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			st, err := dedup.Open(ctx, tc.dsn, tc.opts)
			elapsed := time.Since(start)
			if err == nil {
				st.Close()
				t.Fatal("Open succeeded")
			}
			var ce *dedup.ConnectError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %T %v, want *ConnectError", err, err)
			}
			msg := err.Error()
			if strings.Contains(msg, secret) {
				t.Fatalf("the message shows the password: %s", msg)
			}
			if !strings.Contains(msg, tc.addr) || (tc.cause != "" && !strings.Contains(msg, tc.cause)) {
				t.Fatalf("message %q does not name %s and %q", msg, tc.addr, tc.cause)
			}
			if wantTransient := tc.cause != "28P01"; dedup.IsTransient(err) != wantTransient {
				t.Fatalf("IsTransient = %v, want %v", !wantTransient, wantTransient)
			}
			if elapsed > 8*time.Second {
				t.Fatalf("Open took %v", elapsed)
			}
			t.Logf("%s after %v", msg, elapsed.Round(time.Millisecond))
		})
	}
}

func TestMalformedDSN(t *testing.T) {
	const secret = "Pa55word"
	for _, dsn := range []string{
		"postgres://fieldwork:" + secret + "@127.0.0.1:notaport/db",
		"host=127.0.0.1 port=abc user=fieldwork password=" + secret,
		"postgres://fieldwork:" + secret + "@127.0.0.1/db?sslmode=maybe",
		"postgres://fieldwork:Head@" + secret + "@127.0.0.1/db", // an unencoded '@' in the password
		"host=127.0.0.1 user=fieldwork password='" + secret + " unclosed",
	} {
		_, err := dedup.Open(context.Background(), dsn, dedup.Options{})
		var ie *dedup.InvalidDSNError
		if !errors.As(err, &ie) {
			t.Fatalf("Open(%s): %T %v, want *InvalidDSNError", redact.DSN(dsn), err, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the message shows the password: %v", err)
		}
	}
}

// TestRunsAreRecordedOneAtATime: a run is recorded holding the journal's lock, and takes its
// time once it holds it, so that a run recorded later by that time is recorded after every
// run before it is committed (replay.LaterGivesWay: two replays of one topic started at once
// see which came first). While another transaction holds the lock the record waits, and its
// time is after that transaction's end.
func TestRunsAreRecordedOneAtATime(t *testing.T) {
	st, env := dedupconformance.NewStore(t, freshSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := admin(t, env.DSN)
	defer conn.Close(context.Background())
	hold, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(context.Background())
	lock := `"` + env.Schema + `"."replay_runs"` // the key the driver locks: its runs table
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, lock); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- st.CreateReplayRun(ctx, dedup.ReplayRun{ID: "r", Operator: "op", Reason: "why", Selection: "{}",
			Sources: []string{"orders.dlq"}, Target: "original", Status: dedup.RunRunning, Owner: "me"}, nil)
	}()
	watch := admin(t, env.DSN)
	defer watch.Close(context.Background())
	for waiting := 0; waiting == 0; {
		select {
		case err := <-done:
			t.Fatalf("the run was recorded while another transaction held the journal's lock (%v)", err)
		case <-ctx.Done():
			t.Fatal("the run's record never waited for the journal's lock")
		case <-time.After(10 * time.Millisecond):
		}
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
  AND objid::bigint = (hashtext($1)::bigint & 4294967295) AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, lock).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	var released time.Time
	if err := hold.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&released); err != nil {
		t.Fatal(err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the run was not recorded once the lock was released")
	}
	run, _, err := st.ReplayRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if !run.CreatedAt.After(released) {
		t.Fatalf("the run was recorded at %s, before the lock it waited for was released (%s)", run.CreatedAt, released)
	}
}
