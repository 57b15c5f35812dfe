package dedupconformance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// The version guard (Store.ClaimVerdicts with guard), adopting the caller's transaction
// (Store.Adopt) and the drivers' dialect (Store.Dialect), on every driver.

// versioned is an event of aggregate agg at version v.
func versioned(id, agg string, v int64) dedup.Marker {
	return dedup.Marker{EventID: id, AggregateID: agg, AggregateVersion: v, Versioned: true}
}

// claimVerdicts claims ms with the guard in tx and returns the verdicts as letters: F fresh,
// D duplicate, S stale.
func claimVerdicts(t *testing.T, st *dedup.Store, tx *dedup.Tx, consumer string, ms []dedup.Marker) string {
	t.Helper()
	vs, err := st.ClaimVerdicts(ctxT(t), tx, consumer, ms, true)
	if err != nil {
		t.Fatalf("claim with the guard: %v", err)
	}
	return letters(vs)
}

func letters(vs []dedup.Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteByte("FDS"[v])
	}
	return b.String()
}

// storedVersion is consumer's stored version of agg, or -1 when there is none.
func storedVersion(t *testing.T, st *dedup.Store, consumer, agg string) int64 {
	t.Helper()
	ctx := ctxT(t)
	v := int64(-1)
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		err := tx.QueryRow(ctx, `SELECT version FROM `+st.VersionsTable()+` WHERE consumer = $1 AND aggregate_id = $2`, consumer, agg).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("stored version of %s: %v", agg, err)
	}
	return v
}

func testVersionGuard(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	inTx := func(fn func(tx *dedup.Tx) string) string {
		var got string
		if err := st.InTx(ctx, func(tx *dedup.Tx) error { got = fn(tx); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// One batch, in offset order: a1 at 2, then 1 (older), 2 again (another event of the same
	// version), 3; a repeat of an id is a duplicate whatever its version; b never seen; an
	// event without a version is never stale.
	got := inTx(func(tx *dedup.Tx) string {
		return claimVerdicts(t, st, tx, "c", []dedup.Marker{
			versioned("e2", "a1", 2), versioned("e1", "a1", 1), versioned("e2b", "a1", 2), versioned("e3", "a1", 3),
			versioned("e3", "a1", 9), versioned("b1", "b", 7), {EventID: "n1", AggregateID: "a1", AggregateVersion: 0},
		})
	})
	if got != "FSSFDFF" {
		t.Fatalf("first batch: verdicts %s, want FSSFDFF", got)
	}
	if v := storedVersion(t, st, "c", "a1"); v != 3 {
		t.Fatalf("stored version of a1: %d, want 3", v)
	}
	outcomes, err := st.Outcomes(ctx, "c", []string{"e2", "e1", "e2b", "e3", "b1", "n1"})
	if err != nil || len(outcomes) != 2 || outcomes["e1"] != dedup.OutcomeStale || outcomes["e2b"] != dedup.OutcomeStale {
		t.Fatalf("outcomes: %v %v, want e1 and e2b stale", outcomes, err)
	}
	if !exists(t, st, "c", "e1") {
		t.Fatal("a stale event is not marked")
	}

	// Across transactions: what the first committed counts; duplicates stay duplicates; another
	// consumer has versions of its own.
	got = inTx(func(tx *dedup.Tx) string {
		return claimVerdicts(t, st, tx, "c", []dedup.Marker{versioned("e3", "a1", 3), versioned("e0", "a1", 0), versioned("e3x", "a1", 3), versioned("e4", "a1", 4)})
	})
	if got != "DSSF" {
		t.Fatalf("second transaction: verdicts %s, want DSSF", got)
	}
	if got := inTx(func(tx *dedup.Tx) string {
		return claimVerdicts(t, st, tx, "other", []dedup.Marker{versioned("e0", "a1", 0)})
	}); got != "F" {
		t.Fatalf("another consumer: %s, want F", got)
	}

	// A rollback takes the raised version back with the markers.
	rollback := errors.New("rollback")
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		if got := claimVerdicts(t, st, tx, "c", []dedup.Marker{versioned("e9", "a1", 9)}); got != "F" {
			t.Fatalf("e9: %s", got)
		}
		return rollback
	})
	if !errors.Is(err, rollback) || storedVersion(t, st, "c", "a1") != 4 || exists(t, st, "c", "e9") {
		t.Fatalf("after a rollback: %v, version %d", err, storedVersion(t, st, "c", "a1"))
	}

	// Unclaim (a dead-lettered event) puts back the version its claim raised, so that the event
	// replayed is fresh again; an aggregate first seen in that claim is forgotten.
	inTx(func(tx *dedup.Tx) string {
		claimVerdicts(t, st, tx, "c", []dedup.Marker{versioned("e5", "a1", 5), versioned("z1", "z", 1)})
		for _, id := range []string{"e5", "z1"} {
			if ok, err := st.Unclaim(ctx, tx, "c", id); err != nil || !ok {
				t.Fatalf("unclaim %s: %v %v", id, ok, err)
			}
		}
		return ""
	})
	if v, z := storedVersion(t, st, "c", "a1"), storedVersion(t, st, "c", "z"); v != 4 || z != -1 {
		t.Fatalf("after unclaim: a1 at %d (want 4), z at %d (want none)", v, z)
	}
	if got := inTx(func(tx *dedup.Tx) string {
		return claimVerdicts(t, st, tx, "c", []dedup.Marker{versioned("e5", "a1", 5)})
	}); got != "F" {
		t.Fatalf("the unclaimed event read again: %s, want F", got)
	}

	// A claim without the guard neither reads nor raises versions.
	if got := claim(t, st, "c", []dedup.Marker{versioned("e1b", "a1", 1)}); len(got) != 1 {
		t.Fatalf("an old version claimed without the guard: %v", got)
	}
	if v := storedVersion(t, st, "c", "a1"); v != 5 {
		t.Fatalf("a claim without the guard moved the version to %d", v)
	}
}

// testGuardWaitsForConcurrentTx: two transactions guard the same aggregate; the second waits
// for the first, and sees what it committed: its event of the same version is stale.
func testGuardWaitsForConcurrentTx(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, tx1 := storeTx(t, fresh)
	if got := claimVerdicts(t, st, tx1, "c", []dedup.Marker{versioned("one", "a", 5)}); got != "F" {
		t.Fatalf("first: %s", got)
	}
	res := make(chan string, 1)
	go func() {
		var got string
		err := st.InTx(ctx, func(tx *dedup.Tx) error {
			vs, err := st.ClaimVerdicts(ctx, tx, "c", []dedup.Marker{versioned("two", "a", 5), versioned("three", "a", 6)}, true)
			got = letters(vs)
			return err
		})
		if err != nil {
			got = err.Error()
		}
		res <- got
	}()
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-res; got != "SF" {
		t.Fatalf("second transaction: %s, want SF", got)
	}
	if v := storedVersion(t, st, "c", "a"); v != 6 {
		t.Fatalf("stored version %d, want 6", v)
	}
}

// testGuardNotMigrated: a store without the versions table refuses the guard as not migrated,
// and claims without it still work.
func testGuardNotMigrated(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := tx.Exec(ctx, `DROP TABLE `+st.VersionsTable())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.ClaimVerdicts(ctx, tx, "c", []dedup.Marker{versioned("e", "a", 1)}, true)
		return err
	})
	if !errors.Is(err, dedup.ErrNotMigrated) || !strings.Contains(err.Error(), "versions") {
		t.Fatalf("guard without its table: %v", err)
	}
	if got := claim(t, st, "c", markers("e")); len(got) != 1 {
		t.Fatalf("claim without the guard: %v", got)
	}
}

// callerTx begins a transaction of the caller's own, outside the store: on its own pgx
// connection, or its own database/sql handle of the SQLite file.
func callerTx(t *testing.T, st *dedup.Store, env Env) (tx any, commit, rollback func() error) {
	t.Helper()
	ctx := ctxT(t)
	if st.Driver() == "postgres" {
		conn, err := pgx.Connect(ctx, env.DSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		ptx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ptx, func() error { return ptx.Commit(ctx) }, func() error { return ptx.Rollback(ctx) }
	}
	path, query, _ := strings.Cut(strings.TrimPrefix(env.DSN, "sqlite:"), "?")
	if query == "" {
		query = "_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open("sqlite", path+"?_txlock=immediate&"+query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	stx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return stx, stx.Commit, stx.Rollback
}

func testAdopt(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, env := NewStore(t, fresh)

	raw, commit, _ := callerTx(t, st, env)
	tx, err := st.Adopt(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.Claim(ctx, tx, "c", markers("kept")); err != nil || len(got) != 1 {
		t.Fatalf("claim in an adopted tx: %v %v", got, err)
	}
	if err := tx.Commit(ctx); !errors.Is(err, dedup.ErrAdopted) {
		t.Fatalf("commit of an adopted tx: %v, want ErrAdopted", err)
	}
	if err := tx.Rollback(ctx); !errors.Is(err, dedup.ErrAdopted) {
		t.Fatalf("rollback of an adopted tx: %v, want ErrAdopted", err)
	}
	if exists(t, st, "c", "kept") {
		t.Fatal("the marker is visible before the caller committed")
	}
	if got, err := st.Claim(ctx, tx, "c", markers("kept", "also")); err != nil || fmt.Sprint(got) != "[also]" {
		t.Fatalf("the adopted tx after its refused commit: %v %v", got, err)
	}
	if err := commit(); err != nil {
		t.Fatalf("the caller's commit: %v", err)
	}
	if !exists(t, st, "c", "kept") || !exists(t, st, "c", "also") {
		t.Fatal("the caller's commit did not keep the markers")
	}

	raw, _, rollback := callerTx(t, st, env)
	if tx, err = st.Adopt(raw); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Claim(ctx, tx, "c", markers("gone")); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if err := rollback(); err != nil {
		t.Fatal(err)
	}
	if exists(t, st, "c", "gone") {
		t.Fatal("the caller's rollback left the marker")
	}

	var other any = &sql.Tx{} // the other driver's transaction
	if st.Driver() == "sqlite" {
		other = struct{ pgx.Tx }{}
	}
	for _, wrong := range []any{nil, "tx", other} {
		if _, err := st.Adopt(wrong); err == nil || !strings.Contains(err.Error(), "adopts a") {
			t.Fatalf("adopt %T: %v", wrong, err)
		}
	}
}

// testDialect: the driver's dialect creates a table beside the markers and tells a missing
// table from other errors.
func testDialect(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, env := NewStore(t, fresh)
	d := st.Dialect()
	if byName, err := dedup.DialectOf(st.Driver()); err != nil || byName.Timestamp != d.Timestamp || byName.Arrays != d.Arrays {
		t.Fatalf("DialectOf(%s): %+v %v", st.Driver(), byName, err)
	}
	table := dedup.TableName(st.Driver(), env.Schema, "dialect_probe")
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1 FROM `+table+` WHERE 1 = 0`)
		return err
	})
	if !d.IsMissingTable(err) {
		t.Fatalf("a missing table: IsMissingTable(%v) is false", err)
	}
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE `+table+` (at `+d.Timestamp+` NOT NULL)`+d.UpdatedInPlace); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (at) VALUES ($1), ($1)`, dedup.TimeArg(st.Driver(), time.Now())); err != nil {
			return err
		}
		// An index, created by its name in the table's schema and dropped by its qualified name.
		if _, err := tx.Exec(ctx, `CREATE INDEX `+dedup.IndexName(st.Driver(), env.Schema, "dialect_probe", "at")+` ON `+table+` (at)`); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		var n int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE at = (SELECT max(at) FROM `+table+`)`).Scan(&n); err != nil || n != 2 {
			return fmt.Errorf("a lookup by the index's column: %d %v", n, err)
		}
		if _, err := tx.Exec(ctx, `DROP INDEX `+dedup.QualifiedIndexName(st.Driver(), env.Schema, "dialect_probe", "at")); err != nil {
			return fmt.Errorf("drop the index by its qualified name: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := tx.Exec(ctx, `SELECT no_such_column FROM `+table)
		return err
	})
	if err == nil || d.IsMissingTable(err) {
		t.Fatalf("a missing column: IsMissingTable(%v) is true", err)
	}
	if d.IsMissingTable(nil) || d.IsMissingTable(errors.New("no such table: x")) {
		t.Fatal("IsMissingTable matched an error that is not the driver's")
	}
}
