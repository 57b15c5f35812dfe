package inbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// backend is a migrated store on one driver, and how the caller opens its own transaction on
// the same database (for Adopt).
type backend struct {
	name  string
	store *inbox.Store
	// begin begins a transaction of the caller's own: a pgx.Tx of its own pool, a *sql.Tx of
	// its own database/sql handle. commit and rollback end it.
	begin func(t *testing.T) (tx any, commit, rollback func() error)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, dsn string, opts ...inbox.Option) *inbox.Store {
	t.Helper()
	st, err := inbox.Open(ctxT(t), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return st
}

func postgres(t *testing.T) backend {
	dsn := testenv.DSN(t)
	schema := testenv.PGSchema(t, "fwinbox_")
	pool, err := pgxpool.New(ctxT(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return backend{name: "postgres", store: open(t, dsn, inbox.Schema(schema)), begin: func(t *testing.T) (any, func() error, func() error) {
		ctx := ctxT(t)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tx, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }
	}}
}

func sqlite(t *testing.T) backend {
	path := filepath.Join(t.TempDir(), "inbox.db")
	st := open(t, "sqlite:"+path)
	db, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return backend{name: "sqlite", store: st, begin: func(t *testing.T) (any, func() error, func() error) {
		tx, err := db.BeginTx(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return tx, tx.Commit, tx.Rollback
	}}
}

// each runs fn against a fresh store on PostgreSQL and on SQLite (which needs no service).
func each(t *testing.T, fn func(t *testing.T, b backend)) {
	for name, mk := range map[string]func(*testing.T) backend{"postgres": postgres, "sqlite": sqlite} {
		t.Run(name, func(t *testing.T) { fn(t, mk(t)) })
	}
}

func ev(id, agg string, version int64) inbox.Event {
	return inbox.Event{ID: id, Topic: "orders", AggregateID: agg, Version: version, HasVersion: true}
}

// claim claims evs in a transaction of its own and returns the verdicts, as words.
func claim(t *testing.T, st *inbox.Store, consumer string, evs []inbox.Event, opts ...inbox.ClaimOption) string {
	t.Helper()
	var got []inbox.Verdict
	err := st.InTx(ctxT(t), func(tx *inbox.Tx) error {
		var err error
		got, err = st.Claim(ctxT(t), tx, consumer, evs, opts...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(got)
}

func outcomes(t *testing.T, st *inbox.Store, consumer string, ids ...string) map[string]string {
	t.Helper()
	got, err := inboxlink.Store(st).Outcomes(ctxT(t), consumer, ids)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func marked(t *testing.T, st *inbox.Store, consumer, id string) bool {
	t.Helper()
	rows, err := inboxlink.Store(st).Get(ctxT(t), id, consumer)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows) == 1
}

func TestVerdicts(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		st := b.store
		if got := claim(t, st, "billing", []inbox.Event{ev("e1", "o1", 1), ev("e2", "o1", 2)}, inbox.GuardVersions()); got != "[fresh fresh]" {
			t.Fatalf("first claim: %s", got)
		}
		// e2 again is a duplicate; e1b, another event of version 1, is stale: marked, as stale.
		if got := claim(t, st, "billing", []inbox.Event{ev("e2", "o1", 2), ev("e1b", "o1", 1)}, inbox.GuardVersions()); got != "[duplicate stale]" {
			t.Fatalf("second claim: %s", got)
		}
		if !marked(t, st, "billing", "e1b") || outcomes(t, st, "billing", "e1b")["e1b"] != "stale" {
			t.Fatal("the stale event is not marked as stale")
		}
		if o := outcomes(t, st, "billing", "e1", "e2"); len(o) != 0 {
			t.Fatalf("fresh events' outcomes: %v", o)
		}
		// Without the guard there is no stale verdict.
		if got := claim(t, st, "billing", []inbox.Event{ev("e0", "o1", 0)}); got != "[fresh]" {
			t.Fatalf("claim without the guard: %s", got)
		}
	})
}

// TestBatchWithSeveralVersionsOfOneAggregate: within a batch the offset order decides.
func TestBatchWithSeveralVersionsOfOneAggregate(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		got := claim(t, b.store, "billing", []inbox.Event{
			ev("v3", "o1", 3), ev("v1", "o1", 1), ev("v2", "o1", 2), ev("v4", "o1", 4), ev("v4b", "o1", 4),
			ev("p1", "o2", 1), {ID: "plain", AggregateID: "o1"},
		}, inbox.GuardVersions())
		if got != "[fresh stale stale fresh stale fresh fresh]" {
			t.Fatalf("verdicts %s", got)
		}
	})
}

func TestGuardAcrossTransactions(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		st, ctx := b.store, ctxT(t)
		tx1, err := st.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Claim(ctx, tx1, "billing", []inbox.Event{ev("a5", "o1", 5)}, inbox.GuardVersions()); err != nil || fmt.Sprint(got) != "[fresh]" {
			t.Fatalf("tx1: %v %v", got, err)
		}
		// In the same transaction, later claims see what tx1 raised.
		if got, err := st.Claim(ctx, tx1, "billing", []inbox.Event{ev("a5b", "o1", 5)}, inbox.GuardVersions()); err != nil || fmt.Sprint(got) != "[stale]" {
			t.Fatalf("tx1 again: %v %v", got, err)
		}
		if err := tx1.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, st, "billing", []inbox.Event{ev("a4", "o1", 4), ev("a6", "o1", 6)}, inbox.GuardVersions()); got != "[stale fresh]" {
			t.Fatalf("tx2: %s", got)
		}
		// A rolled back claim raised nothing.
		tx3, err := st.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, tx3, "billing", []inbox.Event{ev("a9", "o1", 9)}, inbox.GuardVersions()); err != nil {
			t.Fatal(err)
		}
		if err := tx3.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, st, "billing", []inbox.Event{ev("a7", "o1", 7)}, inbox.GuardVersions()); got != "[fresh]" {
			t.Fatalf("after a rollback: %s", got)
		}
	})
}

// TestAdopt claims inside the caller's own transaction (a pgx.Tx of the caller's pool, a *sql.Tx
// of its own handle): the caller's commit keeps the markers, its rollback removes them, and the
// adopted Tx never ends the caller's transaction.
func TestAdopt(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		st, ctx := b.store, ctxT(t)
		raw, commit, _ := b.begin(t)
		tx, err := st.Adopt(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Claim(ctx, tx, "billing", []inbox.Event{ev("k1", "o1", 1)}, inbox.GuardVersions()); err != nil || fmt.Sprint(got) != "[fresh]" {
			t.Fatalf("claim: %v %v", got, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE `+st.Table("adopted_effects")+` (id text PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+st.Table("adopted_effects")+` (id) VALUES ($1)`, "k1"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); !errors.Is(err, inbox.ErrAdopted) {
			t.Fatalf("Commit of an adopted Tx: %v, want ErrAdopted", err)
		}
		if err := tx.Rollback(ctx); !errors.Is(err, inbox.ErrAdopted) {
			t.Fatalf("Rollback of an adopted Tx: %v, want ErrAdopted", err)
		}
		if marked(t, st, "billing", "k1") {
			t.Fatal("the marker is visible before the caller's commit")
		}
		if err := commit(); err != nil {
			t.Fatalf("the caller's commit: %v", err)
		}
		if !marked(t, st, "billing", "k1") {
			t.Fatal("the caller's commit did not keep the marker")
		}
		var n int
		if err := st.InTx(ctx, func(tx *inbox.Tx) error {
			return tx.QueryRow(ctx, `SELECT count(*) FROM `+st.Table("adopted_effects")).Scan(&n)
		}); err != nil || n != 1 {
			t.Fatalf("the effect: %d %v", n, err)
		}

		raw, _, rollback := b.begin(t)
		if tx, err = st.Adopt(raw); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Claim(ctx, tx, "billing", []inbox.Event{ev("k2", "o1", 2)}, inbox.GuardVersions()); err != nil || fmt.Sprint(got) != "[fresh]" {
			t.Fatalf("claim: %v %v", got, err)
		}
		if err := rollback(); err != nil {
			t.Fatal(err)
		}
		if marked(t, st, "billing", "k2") {
			t.Fatal("the caller's rollback left the marker")
		}
		if got := claim(t, st, "billing", []inbox.Event{ev("k2", "o1", 2)}, inbox.GuardVersions()); got != "[fresh]" {
			t.Fatalf("after the caller's rollback: %s (its version was kept)", got)
		}

		if _, err := st.Adopt(context.Background()); err == nil || !strings.Contains(err.Error(), "adopts a") {
			t.Fatalf("adopting a %T: %v", context.Background(), err)
		}
	})
}

// TestConcurrentClaims: two transactions claim the same event; the second waits for the first
// and, once it commits, finds a duplicate.
func TestConcurrentClaims(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		st, ctx := b.store, ctxT(t)
		tx1, err := st.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx1.Rollback(ctx)
		if got, err := st.Claim(ctx, tx1, "billing", []inbox.Event{ev("same", "o1", 1)}, inbox.GuardVersions()); err != nil || fmt.Sprint(got) != "[fresh]" {
			t.Fatalf("first: %v %v", got, err)
		}
		pid := make(chan int32, 1)
		res := make(chan string, 1)
		go func() {
			var got []inbox.Verdict
			err := st.InTx(ctx, func(tx *inbox.Tx) error {
				if ptx, ok := tx.Pgx(); ok {
					var p int32
					if err := ptx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&p); err != nil {
						return err
					}
					pid <- p
				}
				var err error
				got, err = st.Claim(ctx, tx, "billing", []inbox.Event{ev("same", "o1", 1)}, inbox.GuardVersions())
				return err
			})
			if err != nil {
				res <- err.Error()
				return
			}
			res <- fmt.Sprint(got)
		}()
		if b.name == "postgres" {
			// Wait until the second transaction waits on the first's lock.
			p := <-pid
			conn, err := pgx.Connect(ctx, testenv.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			testenv.WaitUntil(t, 30*time.Second, nil, "the second claim waits for the first", func() bool {
				var waiting bool
				err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)`, p).Scan(&waiting)
				return err == nil && waiting
			})
		}
		select {
		case got := <-res:
			t.Fatalf("the second claim finished (%s) before the first committed", got)
		default:
		}
		if err := tx1.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := <-res; got != "[duplicate]" {
			t.Fatalf("second: %s, want [duplicate]", got)
		}
	})
}

func TestMarkStaleTableAndErrors(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		st, ctx := b.store, ctxT(t)
		err := st.InTx(ctx, func(tx *inbox.Tx) error {
			if _, err := st.Claim(ctx, tx, "billing", []inbox.Event{{ID: "s1"}, {ID: "s2"}}); err != nil {
				return err
			}
			return st.MarkStale(ctx, tx, "billing", []string{"s1"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if o := outcomes(t, st, "billing", "s1", "s2"); len(o) != 1 || o["s1"] != "stale" {
			t.Fatalf("outcomes after MarkStale: %v", o)
		}

		want := map[string]string{"postgres": `"` + inboxlink.Store(st).Schema() + `"."orders"`, "sqlite": `"fieldwork_orders"`}[b.name]
		if got := st.Table("orders"); got != want {
			t.Fatalf("Table: %s, want %s", got, want)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Table took a name that is not an identifier")
				}
			}()
			st.Table(`x"; DROP TABLE y; --`)
		}()

		err = st.InTx(ctx, func(tx *inbox.Tx) error {
			_, err := tx.Exec(ctx, `SELECT 1 FROM `+st.Table("no_such_table"))
			return err
		})
		if !st.IsMissingTable(err) || inbox.IsTransient(err) {
			t.Fatalf("a missing table: IsMissingTable %v, IsTransient %v (%v)", st.IsMissingTable(err), inbox.IsTransient(err), err)
		}
		if st.IsMissingTable(errors.New("relation does not exist")) || inbox.IsTransient(errors.New("boom")) {
			t.Fatal("an error of the caller's own is classified")
		}
	})
}
