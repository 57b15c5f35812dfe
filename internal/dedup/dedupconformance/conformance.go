// Package dedupconformance is the one test suite that every dedup driver
// passes. Driver tests call RunConformance with a function that hands out a
// fresh, isolated namespace (a Postgres schema, an SQLite file) and
// registers its removal with t.Cleanup. The suite talks to the store only
// through package dedup, against the real database: no mocks.
package dedupconformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// Fresh returns a DSN and a schema name that no other test uses. It
// registers the namespace's removal with t.Cleanup.
type Fresh func(t *testing.T) (dsn, schema string)

// Env is one isolated namespace.
type Env struct {
	DSN    string
	Schema string
}

// Open opens a store in env with opts (Schema defaults to env.Schema), creating an SQLite
// file that is not there yet (the namespace is the test's own), and closes it at cleanup.
func (e Env) Open(t *testing.T, opts dedup.Options) *dedup.Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = e.Schema
	}
	opts.Create = true
	st, err := dedup.Open(context.Background(), e.DSN, opts)
	if err != nil {
		t.Fatalf("open %s: %v", redact.DSN(e.DSN), err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// NewStore returns a migrated store with default names in a fresh namespace.
func NewStore(t *testing.T, fresh Fresh) (*dedup.Store, Env) {
	t.Helper()
	dsn, schema := fresh(t)
	env := Env{DSN: dsn, Schema: schema}
	st := env.Open(t, dedup.Options{})
	if _, err := st.Migrate(context.Background(), false); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st, env
}

// RunConformance runs the suite.
func RunConformance(t *testing.T, fresh Fresh) {
	tests := []struct {
		name string
		fn   func(t *testing.T, fresh Fresh)
	}{
		{"MigrateIdempotentAndStatus", testMigrate},
		{"ConcurrentMigrate", testConcurrentMigrate},
		{"NotMigrated", testNotMigrated},
		{"StoreNewerThanBinary", testNewerStore},
		{"InvalidIdentifiersRefusedBeforeSQL", testInvalidIdentifiers},
		{"ClaimFreshAndDuplicates", testClaimBasics},
		{"EmptyBatch", testEmptyBatch},
		{"MarkerFieldsRoundTrip", testRoundTrip},
		{"RollbackLeavesNoMarker", testRollback},
		{"InvalidInputLeavesTxUsable", testInvalidInput},
		{"ForeignTransaction", testForeignTx},
		{"LongIDs", testLongIDs},
		{"NonASCIIIDs", testNonASCII},
		{"LargeBatch", testLargeBatch},
		{"TwoConsumersBothWin", testTwoConsumers},
		{"RacingWorkersExactlyOneWins", testRacingWorkers},
		{"SecondClaimerWaitsForCommit", testWaitForCommit},
		{"SecondClaimerWinsAfterRollback", testWaitForRollback},
		{"SavepointRollbackRemovesOneMarker", testSavepoints},
		{"UnclaimAfterSavepoint", testUnclaim},
		{"PruneBoundaries", testPruneBoundaries},
		{"PruneBatches", testPruneBatches},
		{"Forget", testForget},
		{"GetAndLookup", testGetLookup},
		{"ListPagingAndFilters", testList},
		{"NewestVersions", testNewestVersions},
		{"Stats", testStats},
		{"CustomColumnMapping", testCustomColumns},
		{"MarkerOutcome", testMarkerOutcome},
		{"VersionGuard", testVersionGuard},
		{"VersionGuardWaitsForConcurrentTx", testGuardWaitsForConcurrentTx},
		{"VersionGuardNotMigrated", testGuardNotMigrated},
		{"AdoptCallersTx", testAdopt},
		{"Dialect", testDialect},
		{"JournalRunRoundTrip", testJournalRunRoundTrip},
		{"JournalProgress", testJournalProgress},
		{"JournalTakeOver", testJournalTake},
		{"JournalSharedByWorkers", testJournalWorkers},
		{"JournalListAndSharedBySchema", testJournalList},
		{"ReplayedSources", testReplayedSources},
		{"ReplayedSourcesKnowTheRecord", testRecordIdentity},
		{"JournalOfBeforeRecordIdentity", testJournalBeforeRecordIdentity},
		{"TargetCountsKeptAndBackfilled", testTargetCountsBackfill},
		{"JournalNotMigrated", testJournalNotMigrated},
		{"MarkerActions", testMarkerActions},
		{"GroupActions", testGroupActions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, fresh) })
	}
}

// --- helpers ---

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

func markers(eventIDs ...string) []dedup.Marker {
	out := make([]dedup.Marker, len(eventIDs))
	for i, id := range eventIDs {
		out[i] = dedup.Marker{EventID: id}
	}
	return out
}

// claim claims in its own transaction and commits.
func claim(t *testing.T, st *dedup.Store, consumer string, ms []dedup.Marker) []string {
	t.Helper()
	ctx := ctxT(t)
	var fresh []string
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		var err error
		fresh, err = st.Claim(ctx, tx, consumer, ms)
		return err
	})
	if err != nil {
		t.Fatalf("claim for %s: %v", consumer, err)
	}
	return fresh
}

func equalIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %d ids %q, want %d ids %q", what, len(got), trunc(got), len(want), trunc(want))
	}
}

func trunc(s []string) []string {
	out := make([]string, 0, min(len(s), 10))
	for _, x := range s[:min(len(s), 10)] {
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		out = append(out, x)
	}
	return out
}

func exists(t *testing.T, st *dedup.Store, consumer, id string) bool {
	t.Helper()
	rows, err := st.Get(ctxT(t), id, consumer)
	if err != nil {
		t.Fatalf("get %q: %v", id, err)
	}
	return len(rows) == 1
}

// migrationsTable is the quoted migrations table of a store in env.
func migrationsTable(st *dedup.Store, env Env) string {
	return dedup.TableName(st.Driver(), env.Schema, "fieldwork_migrations")
}

// sqlTime is a time as a bind value the driver's timestamp column compares
// correctly (dedup.TimeArg).
func sqlTime(st *dedup.Store, t time.Time) any { return dedup.TimeArg(st.Driver(), t) }

// storeTx is a migrated store of fresh and a transaction on it, rolled back at the end of the
// test unless committed.
func storeTx(t *testing.T, fresh Fresh) (*dedup.Store, *dedup.Tx) {
	t.Helper()
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return st, tx
}

// --- migrations ---

func testMigrate(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	env := Env{DSN: dsn, Schema: schema}
	st := env.Open(t, dedup.Options{})
	status := emptyStatus(t, st)

	planned, err := st.Migrate(ctx, true)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(planned) != status.Latest || planned[0].Version != 1 || !strings.Contains(planned[0].SQL, "CREATE TABLE") {
		t.Fatalf("dry run: %+v", planned)
	}
	if !strings.Contains(planned[0].SQL, st.Table()) {
		t.Fatalf("dry-run SQL does not name %s:\n%s", st.Table(), planned[0].SQL)
	}
	if st2, _ := st.Status(ctx); st2.Current != 0 {
		t.Fatalf("a dry run changed the version to %d", st2.Current)
	}

	applied, err := st.Migrate(ctx, false)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if len(applied) != len(planned) {
		t.Fatalf("applied %d steps, dry run planned %d", len(applied), len(planned))
	}
	for i := range applied {
		if applied[i].SQL != planned[i].SQL {
			t.Fatalf("step %d: applied SQL differs from the dry run's", i)
		}
	}
	again, err := st.Migrate(ctx, false)
	if err != nil || len(again) != 0 {
		t.Fatalf("second migrate: %d steps, err %v; want none", len(again), err)
	}
	if dry, err := st.Migrate(ctx, true); err != nil || len(dry) != 0 {
		t.Fatalf("dry run after migrate: %d steps, err %v", len(dry), err)
	}
	status, err = st.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if status.Current != status.Latest || len(status.Pending) != 0 || len(status.Applied) != status.Latest || status.Err() != nil {
		t.Fatalf("after migrate: %+v, Err %v", status, status.Err())
	}
	if status.Applied[0].AppliedAt.IsZero() || time.Since(status.Applied[0].AppliedAt) > time.Hour {
		t.Fatalf("applied_at = %v", status.Applied[0].AppliedAt)
	}
	if err := st.Verify(ctx); err != nil {
		t.Fatalf("Verify after migrate: %v", err)
	}
	for i, a := range status.Applied {
		if l := dedupdriver.Line[i]; a.Version != l.Version || a.Name != l.Name {
			t.Fatalf("applied migration %d_%s, want step %d_%s of the line", a.Version, a.Name, l.Version, l.Name)
		}
	}
	testOtherLine(t, env, st, status.Latest)
}

// emptyStatus checks the status of st's empty database: nothing applied, every migration
// pending, ErrNotMigrated naming `fieldwork db migrate`.
func emptyStatus(t *testing.T, st *dedup.Store) dedup.MigrationStatus {
	t.Helper()
	ctx := ctxT(t)
	status, err := st.Status(ctx)
	if err != nil {
		t.Fatalf("status of an empty database: %v", err)
	}
	if status.Current != 0 || status.Latest < 1 || len(status.Pending) != status.Latest {
		t.Fatalf("empty database: status %+v", status)
	}
	if err := status.Err(); !errors.Is(err, dedup.ErrNotMigrated) {
		t.Fatalf("empty database: Err() = %v, want ErrNotMigrated", err)
	}
	if err := st.Verify(ctx); !errors.Is(err, dedup.ErrNotMigrated) || !strings.Contains(err.Error(), "fieldwork db migrate") {
		t.Fatalf("Verify on an empty database = %v, want ErrNotMigrated naming `fieldwork db migrate`", err)
	}
	return status
}

// testOtherLine: a second store with another table in the namespace of st (migrated to
// latest) has its own migration line.
func testOtherLine(t *testing.T, env Env, st *dedup.Store, latest int) {
	t.Helper()
	ctx := ctxT(t)
	other := env.Open(t, dedup.Options{Table: "other_events"})
	if s, _ := other.Status(ctx); s.Current != 0 {
		t.Fatalf("other table: current %d before its migrate", s.Current)
	}
	if steps, err := other.Migrate(ctx, false); err != nil || len(steps) != latest {
		t.Fatalf("other table migrate: %d steps, %v", len(steps), err)
	}
	claim(t, other, "c", markers("x"))
	if exists(t, st, "c", "x") {
		t.Fatal("a claim in other_events is visible in processed_events")
	}
}

func testConcurrentMigrate(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	env := Env{DSN: dsn, Schema: schema}
	const n = 4
	stores := make([]*dedup.Store, n)
	for i := range stores {
		stores[i] = env.Open(t, dedup.Options{})
	}
	var wg sync.WaitGroup
	steps := make([]int, n)
	errs := make([]error, n)
	for i := range stores {
		wg.Go(func() {
			s, err := stores[i].Migrate(ctx, false)
			steps[i], errs[i] = len(s), err
		})
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += steps[i]
	}
	status, _ := stores[0].Status(ctx)
	if total != status.Latest {
		t.Fatalf("%d concurrent migrators applied %d steps in all, want %d", n, total, status.Latest)
	}
}

func testNotMigrated(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	st := Env{DSN: dsn, Schema: schema}.Open(t, dedup.Options{})
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dedup.ErrNotMigrated) {
			t.Fatalf("%s on an unmigrated store: %v, want ErrNotMigrated", what, err)
		}
		if !strings.Contains(err.Error(), "fieldwork db migrate") {
			t.Fatalf("%s: message does not name `fieldwork db migrate`: %v", what, err)
		}
	}
	_, err := st.Get(ctx, "e", "")
	check("Get", err)
	_, err = st.Get(ctx, "e", "c")
	check("Get with consumer", err)
	_, err = st.List(ctx, dedup.ListFilter{})
	check("List", err)
	_, err = st.Stats(ctx, dedup.StatsFilter{})
	check("Stats", err)
	_, err = st.Lookup(ctx, "c", []string{"e"})
	check("Lookup", err)
	_, err = st.Marked(ctx, "c", []string{"e"})
	check("Marked", err)
	_, err = st.Prune(ctx, "", time.Now(), 10, nil)
	check("Prune", err)
	_, err = st.Forget(ctx, "c", []string{"e"})
	check("Forget", err)
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = st.Claim(ctx, tx, "c", markers("e"))
	check("Claim", err)
}

func testNewerStore(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, env := NewStore(t, fresh)
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+migrationsTable(st, env)+` (line, version, name) VALUES ($1, $2, $3)`,
			"processed_events", 999, "from_the_future")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	status, err := st.Status(ctx)
	if err != nil {
		t.Fatalf("status of a newer store: %v", err)
	}
	var vm *dedup.VersionMismatchError
	if status.Current != 999 || !errors.As(status.Err(), &vm) || vm.Current != 999 || vm.Latest != status.Latest {
		t.Fatalf("status %+v, Err %v; want a version mismatch at 999", status, status.Err())
	}
	if errors.Is(status.Err(), dedup.ErrNotMigrated) {
		t.Fatal("a newer store must not read as not migrated")
	}
	if !strings.Contains(status.Err().Error(), "upgrade fieldwork") {
		t.Fatalf("message: %v", status.Err())
	}
	for _, dry := range []bool{true, false} {
		if _, err := st.Migrate(ctx, dry); !errors.As(err, &vm) {
			t.Fatalf("Migrate(dryRun=%v) on a newer store: %v, want *VersionMismatchError", dry, err)
		}
	}
	if err := st.Verify(ctx); !errors.As(err, &vm) {
		t.Fatalf("Verify: %v", err)
	}
}

func testInvalidIdentifiers(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	long := strings.Repeat("a", 64)
	cases := []dedup.Options{
		{Schema: "bad-name"},
		{Schema: `x"; DROP SCHEMA public CASCADE; --`},
		{Table: "processed events"},
		{Table: "t;drop table t"},
		{Table: long},
		{Table: "1table"},
		{Table: "événements"},
		{Columns: dedup.ColumnNames{EventID: "event id"}},
		{Columns: dedup.ColumnNames{Offset: `"offset"`}},
		{Columns: dedup.ColumnNames{Consumer: "event_id"}}, // same column twice
	}
	for _, opts := range cases {
		if opts.Schema == "" {
			opts.Schema = schema
		}
		st, err := dedup.Open(ctx, dsn, opts)
		var ie *dedup.InvalidIdentifierError
		if !errors.As(err, &ie) {
			if st != nil {
				st.Close()
			}
			t.Fatalf("Open(%+v) = %v, want *InvalidIdentifierError", opts, err)
		}
	}
	// Refused before any connection: an unreachable DSN still gives the
	// identifier error, at once.
	start := time.Now()
	_, err := dedup.Open(ctx, "postgres://u:secret@127.0.0.1:1/db?connect_timeout=30", dedup.Options{Table: "x y"})
	var ie *dedup.InvalidIdentifierError
	if !errors.As(err, &ie) || time.Since(start) > time.Second {
		t.Fatalf("unreachable DSN with a bad table: %v after %v", err, time.Since(start))
	}

	// Savepoint names are identifiers too, and refusing one leaves the
	// transaction usable.
	st, tx := storeTx(t, fresh)
	if err := tx.Savepoint(ctx, "sp; ROLLBACK"); !errors.As(err, &ie) {
		t.Fatalf("bad savepoint name: %v", err)
	}
	if _, err := st.Claim(ctx, tx, "c", markers("a")); err != nil {
		t.Fatalf("claim after a refused savepoint: %v", err)
	}
}

// --- claiming ---

func testClaimBasics(t *testing.T, fresh Fresh) {
	st, _ := NewStore(t, fresh)
	equalIDs(t, "first batch", claim(t, st, "c", markers("b", "a", "b", "c", "a")), []string{"b", "a", "c"})
	equalIDs(t, "second batch", claim(t, st, "c", markers("c", "d", "a", "e", "d")), []string{"d", "e"})
	equalIDs(t, "all known", claim(t, st, "c", markers("a", "b", "c", "d", "e")), nil)
	equalIDs(t, "other consumer", claim(t, st, "c2", markers("a")), []string{"a"})
}

func testEmptyBatch(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, tx := storeTx(t, fresh)
	for _, batch := range [][]dedup.Marker{nil, {}} {
		fresh, err := st.Claim(ctx, tx, "c", batch)
		if err != nil || len(fresh) != 0 {
			t.Fatalf("empty batch: %v, %v", fresh, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func testRoundTrip(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	at := time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
	before := time.Now().Add(-time.Minute)
	claim(t, st, "c", []dedup.Marker{
		{EventID: "full", Topic: "orders", Partition: 7, Offset: 0, AggregateID: "order-1", AggregateVersion: 0, ProcessedAt: at},
		{EventID: "bare"},
		{EventID: "big", Topic: "t", Partition: 2147483647, Offset: 1 << 62, AggregateID: "a", AggregateVersion: 1 << 61},
	})
	rows, err := st.Get(ctx, "full", "c")
	if err != nil || len(rows) != 1 {
		t.Fatalf("get full: %v %v", rows, err)
	}
	r := rows[0]
	if r.Consumer != "c" || r.EventID != "full" || !r.ProcessedAt.Equal(at) || str(r.Topic) != "orders" ||
		r.Partition == nil || *r.Partition != 7 || r.Offset == nil || *r.Offset != 0 ||
		str(r.AggregateID) != "order-1" || r.AggregateVersion == nil || *r.AggregateVersion != 0 {
		t.Fatalf("full marker read back as %+v", r)
	}
	rows, _ = st.Get(ctx, "bare", "c")
	if len(rows) != 1 || rows[0].Topic != nil || rows[0].Partition != nil || rows[0].Offset != nil ||
		rows[0].AggregateID != nil || rows[0].AggregateVersion != nil {
		t.Fatalf("bare marker read back as %+v", rows)
	}
	if p := rows[0].ProcessedAt; p.Before(before) || p.After(time.Now().Add(time.Minute)) {
		t.Fatalf("default processed_at %v is not about now", p)
	}
	rows, _ = st.Get(ctx, "big", "c")
	if len(rows) != 1 || *rows[0].Partition != 2147483647 || *rows[0].Offset != 1<<62 || *rows[0].AggregateVersion != 1<<61 {
		t.Fatalf("big values read back as %+v", rows)
	}
}

func testRollback(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh1, err := st.Claim(ctx, tx, "c", markers("a", "b"))
	if err != nil || len(fresh1) != 2 {
		t.Fatalf("claim: %v %v", fresh1, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("second rollback: %v", err)
	}
	if exists(t, st, "c", "a") || exists(t, st, "c", "b") {
		t.Fatal("a rolled-back claim left a marker")
	}
	equalIDs(t, "claim after rollback", claim(t, st, "c", markers("a", "b")), []string{"a", "b"})

	// InTx rolls back when fn fails, and when it panics.
	boom := errors.New("side effect failed")
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		if _, err := st.Claim(ctx, tx, "c", markers("x")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || exists(t, st, "c", "x") {
		t.Fatalf("InTx with a failing fn: err %v, marker kept %v", err, exists(t, st, "c", "x"))
	}
	func() {
		defer func() { _ = recover() }()
		_ = st.InTx(ctx, func(tx *dedup.Tx) error {
			_, _ = st.Claim(ctx, tx, "c", markers("y"))
			panic("handler panicked")
		})
	}()
	if exists(t, st, "c", "y") {
		t.Fatal("InTx kept the claim of a panicking fn")
	}
}

func testInvalidInput(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, tx := storeTx(t, fresh)
	var ie *dedup.InvalidInputError
	for _, bad := range [][]dedup.Marker{
		markers("ok", ""),
		markers("ok", "nul\x00byte"),
		markers("bad\xffutf8"),
	} {
		if _, err := st.Claim(ctx, tx, "c", bad); !errors.As(err, &ie) {
			t.Fatalf("claim %+v: %v, want *InvalidInputError", bad, err)
		}
	}
	for _, consumer := range []string{"", strings.Repeat("c", dedup.MaxConsumerBytes+1), "c\x00"} {
		if _, err := st.Claim(ctx, tx, consumer, markers("ok")); !errors.As(err, &ie) {
			t.Fatalf("consumer %q: %v, want *InvalidInputError", consumer, err)
		}
	}
	fresh1, err := st.Claim(ctx, tx, "c", markers("ok"))
	if err != nil || len(fresh1) != 1 {
		t.Fatalf("claim after refused input: %v %v", fresh1, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func testForeignTx(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	a, _ := NewStore(t, fresh)
	b, _ := NewStore(t, fresh)
	tx, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := a.Claim(ctx, tx, "c", markers("x")); !errors.Is(err, dedup.ErrForeignTx) {
		t.Fatalf("claim with another store's tx: %v", err)
	}
	if _, err := a.Claim(ctx, nil, "c", markers("x")); !errors.Is(err, dedup.ErrForeignTx) {
		t.Fatalf("claim with a nil tx: %v", err)
	}
}

func randomID(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func testLongIDs(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	// Incompressible 10 KB ids that differ only in their last bytes, one
	// id of exactly the inline limit and one just over it.
	base := randomID(10 * 1024)
	long := []string{base + "-1", base + "-2", randomID(10 * 1024)}
	edge := []string{strings.Repeat("e", dedup.MaxInlineEventIDBytes), strings.Repeat("e", dedup.MaxInlineEventIDBytes+1)}
	all := append(append([]string{}, long...), edge...)
	equalIDs(t, "first claim", claim(t, st, "c", markers(append(all, long[0])...)), all)
	equalIDs(t, "second claim", claim(t, st, "c", markers(all...)), nil)

	found, err := st.Lookup(ctx, "c", append([]string{base + "-3"}, all...))
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(all) {
		t.Fatalf("lookup found %d of %d long ids", len(found), len(all))
	}
	for _, id := range all {
		if r, ok := found[id]; !ok || r.EventID != dedup.EventKey(id) {
			t.Fatalf("lookup of a %d-byte id: %v (row id %.40q)", len(id), ok, r.EventID)
		}
	}
	sameMarked(t, st, "c", append([]string{base + "-3"}, all...), found)
	rows, err := st.Get(ctx, long[1], "")
	if err != nil || len(rows) != 1 || rows[0].EventID != dedup.EventKey(long[1]) {
		t.Fatalf("get long id: %v %v", rows, err)
	}
	if rows, _ := st.Get(ctx, edge[0], "c"); len(rows) != 1 || rows[0].EventID != edge[0] {
		t.Fatal("an id of exactly MaxInlineEventIDBytes is not stored as it is")
	}
	removed, err := st.Forget(ctx, "c", long[:1])
	if err != nil || len(removed) != 1 {
		t.Fatalf("forget long id: %v %v", removed, err)
	}
	equalIDs(t, "claim after forget", claim(t, st, "c", markers(long...)), long[:1])
}

func testNonASCII(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	weird := []string{
		"\U0001F600\U0001F389-event",                        // emoji
		"\u4e8b\u4ef6-\u4e00\u4e8c\u4e09",                   // CJK
		"\u00e9-precomposed",                                // é as one code point
		"e\u0301-precomposed",                               // e + combining acute: a different id
		"\u05e9\u05dc\u05d5\u05dd-\u05e2\u05d5\u05dc\u05dd", // right-to-left
		"\U0001F469\u200d\U0001F469\u200d\U0001F467",        // ZWJ sequence
		"tab\tand\nnewline",
		"quote'\"back\\slash%_",
	}
	consumer := "consumer-\u00df-\u6d88\u8d39\u8005"
	equalIDs(t, "claim", claim(t, st, consumer, markers(weird...)), weird)
	equalIDs(t, "again", claim(t, st, consumer, markers(weird...)), nil)
	for _, id := range weird {
		rows, err := st.Get(ctx, id, "")
		if err != nil || len(rows) != 1 || rows[0].EventID != id || rows[0].Consumer != consumer {
			t.Fatalf("get %q: %+v %v", id, rows, err)
		}
	}
	found, err := st.Lookup(ctx, consumer, weird)
	if err != nil || len(found) != len(weird) {
		t.Fatalf("lookup: %d found, %v", len(found), err)
	}
	sameMarked(t, st, consumer, weird, found)
	if rows, _ := st.Get(ctx, "e-precomposed", ""); len(rows) != 0 {
		t.Fatal("an ASCII id matched a non-ASCII one")
	}
}

func testLargeBatch(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	all := ids("big", 9001) // more than SQLite's 4,000-marker chunk, twice
	equalIDs(t, "first half", claim(t, st, "c", markers(all[:5000]...)), all[:5000])
	equalIDs(t, "all", claim(t, st, "c", markers(all...)), all[5000:])
	found, err := st.Lookup(ctx, "c", all)
	if err != nil || len(found) != len(all) {
		t.Fatalf("lookup: %d of %d, %v", len(found), len(all), err)
	}
	sameMarked(t, st, "c", all, found)
}

// --- concurrency ---

func testTwoConsumers(t *testing.T, fresh Fresh) {
	st, _ := NewStore(t, fresh)
	batch := ids("ev", 100)
	results := make([][]string, 2)
	var wg sync.WaitGroup
	for i, consumer := range []string{"billing", "shipping"} {
		wg.Go(func() { results[i] = claim(t, st, consumer, markers(batch...)) })
	}
	wg.Wait()
	equalIDs(t, "billing", results[0], batch)
	equalIDs(t, "shipping", results[1], batch)
}

func testRacingWorkers(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	const workers = 6
	batch := ids("race", 300)
	results := make([][]string, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		mine := slices.Clone(batch)
		mrand.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
		wg.Go(func() {
			<-start
			errs[w] = st.InTx(ctx, func(tx *dedup.Tx) error {
				var err error
				results[w], err = st.Claim(ctx, tx, "worker-group", markers(mine...))
				return err
			})
		})
	}
	close(start)
	wg.Wait()
	won := map[string]int{}
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		for _, id := range results[w] {
			won[id]++
		}
	}
	for _, id := range batch {
		if won[id] != 1 {
			t.Fatalf("id %s was won %d times, want exactly once", id, won[id])
		}
	}
	if len(won) != len(batch) {
		t.Fatalf("%d ids won, want %d", len(won), len(batch))
	}
}

type claimResult struct {
	fresh []string
	err   error
}

// secondClaimer begins a transaction and claims in a goroutine; it commits
// after its result has been read and release is closed.
func secondClaimer(ctx context.Context, st *dedup.Store, consumer string, ms []dedup.Marker) (<-chan claimResult, chan<- struct{}, <-chan error) {
	res := make(chan claimResult, 1)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		tx, err := st.Begin(ctx)
		if err != nil {
			res <- claimResult{err: err}
			done <- err
			return
		}
		fresh, err := st.Claim(ctx, tx, consumer, ms)
		res <- claimResult{fresh, err}
		<-release
		if err != nil {
			done <- tx.Rollback(ctx)
			return
		}
		done <- tx.Commit(ctx)
	}()
	return res, release, done
}

func testWaitForCommit(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	tx1, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(ctx)
	got1, err := st.Claim(ctx, tx1, "c", markers("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	equalIDs(t, "first claimer", got1, []string{"a", "b"})

	res, release, done := secondClaimer(ctx, st, "c", markers("b", "c"))
	select {
	case r := <-res:
		t.Fatalf("the second claimer finished (%v, %v) while the first had not committed", r.fresh, r.err)
	case <-time.After(400 * time.Millisecond):
	}
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	close(release)
	if r.err != nil {
		t.Fatalf("second claimer: %v", r.err)
	}
	equalIDs(t, "second claimer after the first committed", r.fresh, []string{"c"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func testWaitForRollback(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	tx1, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, tx1, "c", markers("a", "b")); err != nil {
		t.Fatal(err)
	}
	res, release, done := secondClaimer(ctx, st, "c", markers("b", "c"))
	time.Sleep(200 * time.Millisecond)
	if err := tx1.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	close(release)
	if r.err != nil {
		t.Fatalf("second claimer: %v", r.err)
	}
	equalIDs(t, "second claimer after the first rolled back", r.fresh, []string{"b", "c"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if exists(t, st, "c", "a") || !exists(t, st, "c", "b") {
		t.Fatal("wrong markers after rollback and second commit")
	}
}

// --- savepoints ---

func testSavepoints(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, tx := storeTx(t, fresh)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Claim(ctx, tx, "c", markers("a")); err != nil {
		t.Fatal(err)
	}
	must(tx.Savepoint(ctx, "ev_b"))
	if got, err := st.Claim(ctx, tx, "c", markers("b")); err != nil || len(got) != 1 {
		t.Fatalf("claim b: %v %v", got, err)
	}
	// A failing statement inside the savepoint: on Postgres it aborts the
	// transaction up to the savepoint, and RollbackTo makes it usable.
	if _, err := tx.Exec(ctx, `SELECT * FROM no_such_table_here`); err == nil {
		t.Fatal("a query on a missing table succeeded")
	}
	must(tx.RollbackTo(ctx, "ev_b"))
	must(tx.Release(ctx, "ev_b"))
	must(tx.Savepoint(ctx, "ev_c"))
	if got, err := st.Claim(ctx, tx, "c", markers("c", "b")); err != nil || len(got) != 2 {
		t.Fatalf("claim c, b after rollback to savepoint: %v %v", got, err)
	}
	must(tx.Release(ctx, "ev_c"))
	must(tx.Savepoint(ctx, "ev_d"))
	if _, err := st.Claim(ctx, tx, "c", markers("d")); err != nil {
		t.Fatal(err)
	}
	must(tx.RollbackTo(ctx, "ev_d"))
	must(tx.Commit(ctx))
	for id, want := range map[string]bool{"a": true, "b": true, "c": true, "d": false} {
		if exists(t, st, "c", id) != want {
			t.Fatalf("marker %s exists = %v, want %v", id, !want, want)
		}
	}
}

func testUnclaim(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	// The consumer's pattern: claim the batch, apply each fresh event
	// under a savepoint, and for a permanent failure roll back to it and
	// unclaim that one event, so it stays unmarked for a replay.
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		fresh, err := st.Claim(ctx, tx, "c", markers("x", "y", "z"))
		if err != nil {
			return err
		}
		for _, id := range fresh {
			if err := tx.Savepoint(ctx, "event"); err != nil {
				return err
			}
			if id == "y" { // the handler fails permanently
				if err := tx.RollbackTo(ctx, "event"); err != nil {
					return err
				}
				if ok, err := st.Unclaim(ctx, tx, "c", id); err != nil || !ok {
					return fmt.Errorf("unclaim: %v %w", ok, err)
				}
			}
			if err := tx.Release(ctx, "event"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(t, st, "c", "x") || exists(t, st, "c", "y") || !exists(t, st, "c", "z") {
		t.Fatal("unclaim under a savepoint removed the wrong markers")
	}
	equalIDs(t, "replay of y", claim(t, st, "c", markers("x", "y", "z")), []string{"y"})
}

// --- prune and forget ---

func claimAt(t *testing.T, st *dedup.Store, consumer string, at time.Time, eventIDs ...string) {
	t.Helper()
	ms := markers(eventIDs...)
	for i := range ms {
		ms[i].ProcessedAt = at
	}
	if got := claim(t, st, consumer, ms); len(got) != len(ms) {
		t.Fatalf("claimAt: %d of %d fresh", len(got), len(ms))
	}
}

func testPruneBoundaries(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	cutoff := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Millisecond)
	claimAt(t, st, "c", cutoff.Add(-3*time.Hour), "old-3h")
	claimAt(t, st, "c", cutoff.Add(-time.Millisecond), "old-1ms")
	claimAt(t, st, "c", cutoff, "at-cutoff")
	claimAt(t, st, "c", cutoff.Add(time.Millisecond), "new-1ms")
	claimAt(t, st, "other", cutoff.Add(-time.Hour), "other-old")

	// The candidates are exactly what the same prune deletes, counted per recorded topic
	// (claimAt records none).
	for _, c := range []struct {
		consumer string
		want     int64
	}{{"c", 2}, {"", 3}} {
		got, err := st.PruneCandidates(ctx, c.consumer, cutoff)
		if err != nil || len(got) != 1 || got[0].Topic != "" || got[0].Markers != c.want {
			t.Fatalf("prune candidates for %q: %+v, %v; want %d markers with no topic", c.consumer, got, err, c.want)
		}
	}

	n, err := st.Prune(ctx, "c", cutoff, 100, nil)
	if err != nil || n != 2 {
		t.Fatalf("prune c before the cutoff: %d, %v; want 2", n, err)
	}
	for id, want := range map[string]bool{"old-3h": false, "old-1ms": false, "at-cutoff": true, "new-1ms": true} {
		if exists(t, st, "c", id) != want {
			t.Fatalf("after prune, %s exists = %v", id, !want)
		}
	}
	if !exists(t, st, "other", "other-old") {
		t.Fatal("prune for consumer c removed another consumer's marker")
	}
	// A cutoff a fraction of a millisecond after a marker prunes it.
	if n, err := st.Prune(ctx, "", cutoff.Add(500*time.Microsecond), 100, nil); err != nil || n != 2 {
		t.Fatalf("prune all before cutoff+0.5ms: %d, %v; want 2 (at-cutoff, other-old)", n, err)
	}
	if n, err := st.Prune(ctx, "", cutoff, 100, nil); err != nil || n != 0 {
		t.Fatalf("second prune: %d, %v", n, err)
	}
	if !exists(t, st, "c", "new-1ms") {
		t.Fatal("a marker after the cutoff was pruned")
	}
}

func testPruneBatches(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	old := time.Now().Add(-30 * 24 * time.Hour)
	claimAt(t, st, "c", old, ids("old", 25)...)
	claimAt(t, st, "c", time.Now(), ids("new", 5)...)
	var calls []int64
	n, err := st.Prune(ctx, "", time.Now().Add(-24*time.Hour), 10, func(d int64) { calls = append(calls, d) })
	if err != nil || n != 25 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if !slices.Equal(calls, []int64{10, 20, 25}) {
		t.Fatalf("progress calls %v, want [10 20 25]", calls)
	}
	// Exactly a multiple of the batch size ends with an empty batch.
	claimAt(t, st, "c", old, ids("old2", 20)...)
	calls = nil
	n, err = st.Prune(ctx, "c", time.Now().Add(-24*time.Hour), 10, func(d int64) { calls = append(calls, d) })
	if err != nil || n != 20 || !slices.Equal(calls, []int64{10, 20}) {
		t.Fatalf("prune 20 in batches of 10: %d, %v, calls %v", n, err, calls)
	}
	page, err := st.List(ctx, dedup.ListFilter{Limit: 100})
	if err != nil || len(page.Rows) != 5 {
		t.Fatalf("after prune: %d rows, %v", len(page.Rows), err)
	}
	// Cancellation stops between batches and reports what is gone.
	claimAt(t, st, "c", old, ids("old3", 30)...)
	cctx, cancel := context.WithCancel(ctx)
	n, err = st.Prune(cctx, "", time.Now().Add(-24*time.Hour), 10, func(d int64) {
		if d >= 10 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || n != 10 {
		t.Fatalf("cancelled prune: %d, %v; want 10 and context.Canceled", n, err)
	}
}

func testForget(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	claim(t, st, "a", markers("e1", "e2"))
	claim(t, st, "b", markers("e1", "e2"))
	removed, err := st.Forget(ctx, "a", []string{"e1", "never", "e1"})
	if err != nil || len(removed) != 1 || removed[0].Consumer != "a" || removed[0].EventID != "e1" {
		t.Fatalf("forget e1 for a: %+v, %v", removed, err)
	}
	if exists(t, st, "a", "e1") || !exists(t, st, "b", "e1") {
		t.Fatal("forget removed the wrong markers")
	}
	removed, err = st.Forget(ctx, "", []string{"e2"})
	if err != nil || len(removed) != 2 {
		t.Fatalf("forget e2 for every consumer: %+v, %v", removed, err)
	}
	if removed, err := st.Forget(ctx, "a", nil); err != nil || len(removed) != 0 {
		t.Fatalf("forget nothing: %v %v", removed, err)
	}
	equalIDs(t, "reclaim after forget", claim(t, st, "a", markers("e1", "e2")), []string{"e1", "e2"})
}

// --- queries ---

func testGetLookup(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	claim(t, st, "zeta", []dedup.Marker{{EventID: "shared", Topic: "t", Partition: 1, Offset: 10}})
	claim(t, st, "alpha", []dedup.Marker{{EventID: "shared", Topic: "t", Partition: 1, Offset: 11}, {EventID: "only-alpha"}})
	claim(t, st, "mid", markers("x"))
	rows, err := st.Get(ctx, "shared", "")
	if err != nil || len(rows) != 2 || rows[0].Consumer != "alpha" || rows[1].Consumer != "zeta" || *rows[1].Offset != 10 {
		t.Fatalf("get shared: %+v %v", rows, err)
	}
	rows, err = st.Get(ctx, "shared", "zeta")
	if err != nil || len(rows) != 1 || rows[0].Consumer != "zeta" {
		t.Fatalf("get shared for zeta: %+v %v", rows, err)
	}
	if rows, err := st.Get(ctx, "absent", ""); err != nil || len(rows) != 0 {
		t.Fatalf("get absent: %v %v", rows, err)
	}
	if rows, err := st.Get(ctx, "only-alpha", "zeta"); err != nil || len(rows) != 0 {
		t.Fatalf("get for a consumer without it: %v %v", rows, err)
	}

	all := ids("chk", 2500)
	claim(t, st, "alpha", markers(all[:1000]...))
	claim(t, st, "alpha", markers(all[2000:]...))
	found, err := st.Lookup(ctx, "alpha", all)
	if err != nil || len(found) != 1500 {
		t.Fatalf("lookup: %d found, %v; want 1500", len(found), err)
	}
	for i, id := range all {
		_, ok := found[id]
		if want := i < 1000 || i >= 2000; ok != want {
			t.Fatalf("lookup %s: found %v, want %v", id, ok, want)
		}
	}
	sameMarked(t, st, "alpha", append(all, "shared", "x"), nil)
	if found, err := st.Marked(ctx, "alpha", nil); err != nil || len(found) != 0 {
		t.Fatalf("empty marked: %v %v", found, err)
	}
	if found, err := st.Lookup(ctx, "zeta", all); err != nil || len(found) != 0 {
		t.Fatalf("lookup for another consumer: %d, %v", len(found), err)
	}
	if found, err := st.Lookup(ctx, "alpha", nil); err != nil || len(found) != 0 {
		t.Fatalf("empty lookup: %v %v", found, err)
	}
}

func testList(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var want []string // newest first
	for i := range 30 {
		consumer := []string{"a", "b"}[i%2]
		at := base.Add(time.Duration(i/3) * time.Minute) // three markers share each minute
		id := fmt.Sprintf("ev-%02d", i)
		claim(t, st, consumer, []dedup.Marker{{EventID: id, ProcessedAt: at, AggregateID: fmt.Sprintf("agg-%d", i%3), AggregateVersion: int64(i)}})
		want = append(want, fmt.Sprintf("%s|%s|%s", at.Format(time.RFC3339Nano), consumer, id))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(want)))

	var got []string
	var before *dedup.Cursor
	pages := 0
	for {
		page, err := st.List(ctx, dedup.ListFilter{Limit: 7, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range page.Rows {
			got = append(got, fmt.Sprintf("%s|%s|%s", r.ProcessedAt.Format(time.RFC3339Nano), r.Consumer, r.EventID))
		}
		if page.Next == nil {
			break
		}
		before = page.Next
	}
	equalIDs(t, "paged list, newest first", got, want)
	if pages != 5 {
		t.Fatalf("30 rows in pages of 7: %d pages", pages)
	}
	page, err := st.List(ctx, dedup.ListFilter{Limit: 30})
	if err != nil || len(page.Rows) != 30 || page.Next != nil {
		t.Fatalf("exactly the limit: %d rows, next %v, %v", len(page.Rows), page.Next, err)
	}

	page, _ = st.List(ctx, dedup.ListFilter{Consumer: "a", Limit: 100})
	if len(page.Rows) != 15 {
		t.Fatalf("consumer a: %d rows", len(page.Rows))
	}
	page, _ = st.List(ctx, dedup.ListFilter{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute), Limit: 100})
	if len(page.Rows) != 6 {
		t.Fatalf("since 2m until 4m: %d rows, want 6", len(page.Rows))
	}
	for _, r := range page.Rows {
		if r.ProcessedAt.Before(base.Add(2*time.Minute)) || !r.ProcessedAt.Before(base.Add(4*time.Minute)) {
			t.Fatalf("row outside the window: %v", r.ProcessedAt)
		}
	}
	page, _ = st.List(ctx, dedup.ListFilter{AggregateID: "agg-1", Consumer: "b", Limit: 100})
	for _, r := range page.Rows {
		if str(r.AggregateID) != "agg-1" || r.Consumer != "b" {
			t.Fatalf("aggregate filter returned %+v", r)
		}
	}
	if len(page.Rows) != 5 {
		t.Fatalf("agg-1 for b: %d rows, want 5", len(page.Rows))
	}
	page, _ = st.List(ctx, dedup.ListFilter{})
	if len(page.Rows) != 30 {
		t.Fatalf("default limit: %d rows", len(page.Rows))
	}
}

// testNewestVersions: the highest version of each aggregate asked among one consumer's
// markers, whatever the order they were claimed in; other consumers' markers and aggregates
// not asked are left out.
func testNewestVersions(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	claim(t, st, "a", []dedup.Marker{
		{EventID: "a-1", AggregateID: "agg-1", AggregateVersion: 3, Versioned: true},
		{EventID: "a-2", AggregateID: "agg-1", AggregateVersion: 7, Versioned: true},
		{EventID: "a-3", AggregateID: "agg-1", AggregateVersion: 5, Versioned: true},
		{EventID: "a-4", AggregateID: "agg-2", AggregateVersion: 1, Versioned: true},
		{EventID: "a-5", AggregateID: "agg-3"}, // no version: a claim stores 0 with the aggregate
		{EventID: "a-6", AggregateID: "agg-4", AggregateVersion: 9, Versioned: true},
	})
	claim(t, st, "b", []dedup.Marker{{EventID: "b-1", AggregateID: "agg-2", AggregateVersion: 40, Versioned: true}})
	got, err := st.NewestVersions(ctx, "a", []string{"agg-1", "agg-2", "agg-3", "agg-none"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"agg-1": 7, "agg-2": 1, "agg-3": 0}; !maps.Equal(got, want) {
		t.Fatalf("newest versions of a: %v, want %v", got, want)
	}
	if got, err := st.NewestVersions(ctx, "c", []string{"agg-1"}); err != nil || len(got) != 0 {
		t.Fatalf("a consumer with no markers: %v, %v", got, err)
	}
	if got, err := st.NewestVersions(ctx, "a", nil); err != nil || len(got) != 0 {
		t.Fatalf("no aggregates: %v, %v", got, err)
	}
}

func testStats(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	now := time.Now().UTC().Truncate(time.Millisecond)
	first := now.Add(-72 * time.Hour)
	claimAt(t, st, "a", first, "a-old")
	claimAt(t, st, "a", now.Add(-90*time.Minute), ids("a-recent", 6)...)
	claimAt(t, st, "a", now.Add(-10*time.Minute), "a-last")
	claimAt(t, st, "b", now.Add(-5*time.Hour), "b-1", "b-2")

	s, err := st.Stats(ctx, dedup.StatsFilter{Window: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Consumers) != 2 || s.Window != 2*time.Hour {
		t.Fatalf("stats: %+v", s)
	}
	a, b := s.Consumers[0], s.Consumers[1]
	if a.Consumer != "a" || a.Count != 8 || !a.First.Equal(first) || !a.Last.Equal(now.Add(-10*time.Minute)) ||
		a.InWindow != 7 || a.PerHour != 3.5 {
		t.Fatalf("consumer a: %+v", a)
	}
	if b.Consumer != "b" || b.Count != 2 || b.InWindow != 0 || b.PerHour != 0 {
		t.Fatalf("consumer b: %+v", b)
	}
	if st.Driver() == "postgres" {
		if s.Sizes == nil || s.Sizes.TableBytes <= 0 || s.Sizes.IndexBytes <= 0 || s.Sizes.TotalBytes < s.Sizes.TableBytes+s.Sizes.IndexBytes {
			t.Fatalf("postgres sizes: %+v", s.Sizes)
		}
	} else if s.Sizes != nil {
		t.Fatalf("sqlite sizes: %+v, want nil", s.Sizes)
	}
	s, err = st.Stats(ctx, dedup.StatsFilter{Consumer: "b"})
	if err != nil || len(s.Consumers) != 1 || s.Consumers[0].InWindow != 2 || s.Window != dedup.DefaultStatsWindow {
		t.Fatalf("stats for b over the default window: %+v %v", s, err)
	}
	if s, err := st.Stats(ctx, dedup.StatsFilter{Consumer: "nobody"}); err != nil || len(s.Consumers) != 0 {
		t.Fatalf("stats for an unknown consumer: %+v %v", s, err)
	}
}

// --- existing tables ---

func testCustomColumns(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	env := Env{DSN: dsn, Schema: schema}
	plain := env.Open(t, dedup.Options{})
	old := handMadeTable(ctx, t, plain, schema)
	cols := dedup.ColumnNames{Consumer: "who", EventID: "eid", ProcessedAt: "seen_at", Topic: "src_topic",
		Partition: "src_partition", Offset: "src_offset", AggregateID: "agg", AggregateVersion: "agg_ver"}
	st := env.Open(t, dedup.Options{Table: "seen", Columns: cols})

	rows, err := st.Get(ctx, "pre-existing", "")
	if err != nil || len(rows) != 1 {
		t.Fatalf("get on the mapped table: %+v %v", rows, err)
	}
	r := rows[0]
	if r.Consumer != "legacy" || !r.ProcessedAt.Equal(old) || str(r.Topic) != "orders" || *r.Partition != 3 || *r.Offset != 42 ||
		str(r.AggregateID) != "o-1" || *r.AggregateVersion != 7 {
		t.Fatalf("mapped row: %+v", r)
	}
	equalIDs(t, "claim on the mapped table", claim(t, st, "legacy", markers("pre-existing", "new-one")), []string{"new-one"})
	page, err := st.List(ctx, dedup.ListFilter{Consumer: "legacy"})
	if err != nil || len(page.Rows) != 2 || page.Rows[0].EventID != "new-one" {
		t.Fatalf("list on the mapped table: %+v %v", page.Rows, err)
	}
	if s, err := st.Stats(ctx, dedup.StatsFilter{}); err != nil || len(s.Consumers) != 1 || s.Consumers[0].Count != 2 {
		t.Fatalf("stats on the mapped table: %+v %v", s, err)
	}
	if found, err := st.Lookup(ctx, "legacy", []string{"pre-existing", "nope"}); err != nil || len(found) != 1 {
		t.Fatalf("lookup on the mapped table: %v %v", found, err)
	}
	sameMarked(t, st, "legacy", []string{"pre-existing", "nope", "new-one"}, nil)
	if n, err := st.Prune(ctx, "", time.Now().Add(-24*time.Hour), 10, nil); err != nil || n != 1 {
		t.Fatalf("prune on the mapped table: %d %v", n, err)
	}
	if removed, err := st.Forget(ctx, "legacy", []string{"new-one"}); err != nil || len(removed) != 1 {
		t.Fatalf("forget on the mapped table: %v %v", removed, err)
	}
	// A table of its own records no outcome: recording one does nothing, reading finds none.
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		return st.SetOutcome(ctx, tx, "legacy", []string{"pre-existing"}, dedup.OutcomeStale)
	}); err != nil {
		t.Fatalf("set outcome on the mapped table: %v", err)
	}
	if got, err := st.Outcomes(ctx, "legacy", []string{"pre-existing"}); err != nil || len(got) != 0 {
		t.Fatalf("outcomes on the mapped table: %v %v", got, err)
	}
	if _, err := st.Migrate(ctx, false); err == nil {
		t.Fatal("migrate with a column mapping was not refused")
	}
	if s, err := st.Status(ctx); err != nil || s.Current != 0 {
		t.Fatalf("status with a column mapping: %+v %v", s, err)
	}
	// A mapping naming a column the table lacks fails clearly, not as
	// "not migrated": when the store opens (PostgreSQL reads the table's columns), or at the
	// first query.
	bad, err := dedup.Open(ctx, dsn, dedup.Options{Schema: schema, Table: "seen", Columns: dedup.ColumnNames{Consumer: "who", EventID: "event_key"}})
	if err == nil {
		defer bad.Close()
		_, err = bad.Get(ctx, "x", "legacy")
	}
	if err == nil || errors.Is(err, dedup.ErrNotMigrated) || !strings.Contains(err.Error(), "event_key") {
		t.Fatalf("missing mapped column: %v", err)
	}
}

// handMadeTable creates table "seen" of schema with columns of its own names, as an
// application made it before fieldwork, holding one marker ("legacy", "pre-existing") claimed
// at the time it returns.
func handMadeTable(ctx context.Context, t *testing.T, plain *dedup.Store, schema string) time.Time {
	var ddl, table string
	if plain.Driver() == "postgres" {
		table = fmt.Sprintf(`"%s"."seen"`, schema)
		ddl = fmt.Sprintf(`CREATE SCHEMA IF NOT EXISTS "%s";
CREATE TABLE %s (who text NOT NULL, eid text NOT NULL, seen_at timestamptz NOT NULL DEFAULT now(),
  src_topic text, src_partition int, src_offset bigint, agg text, agg_ver bigint, PRIMARY KEY (who, eid))`, schema, table)
	} else {
		table = `"` + sqlitedriver.TableName(schema, "seen") + `"`
		ddl = `CREATE TABLE ` + table + ` (who TEXT NOT NULL, eid TEXT NOT NULL,
  seen_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  src_topic TEXT, src_partition INTEGER, src_offset INTEGER, agg TEXT, agg_ver INTEGER, PRIMARY KEY (who, eid))`
	}
	old := time.Now().UTC().Add(-10 * 24 * time.Hour).Truncate(time.Millisecond)
	err := plain.InTx(ctx, func(tx *dedup.Tx) error {
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+table+` (who, eid, seen_at, src_topic, src_partition, src_offset, agg, agg_ver)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, "legacy", "pre-existing", sqlTime(plain, old), "orders", 3, 42, "o-1", 7)
		return err
	})
	if err != nil {
		t.Fatalf("hand-made table: %v", err)
	}
	return old
}

// testMarkerOutcome: a marker records that its event was ignored as stale (the outcome column,
// written in the transaction that claims it), per consumer, for long ids too; a rollback
// leaves none; a table without the column (not migrated to it) reads as having none, without
// an error.
func testMarkerOutcome(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	long := strings.Repeat("l", dedup.MaxInlineEventIDBytes+10)
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		if _, err := st.Claim(ctx, tx, "c1", markers("applied", "stale", long)); err != nil {
			return err
		}
		if _, err := st.Claim(ctx, tx, "c2", markers("stale")); err != nil {
			return err
		}
		return st.SetOutcome(ctx, tx, "c1", []string{"stale", long}, dedup.OutcomeStale)
	}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Outcomes(ctx, "c1", []string{"applied", "stale", long, "missing"})
	if err != nil || len(got) != 2 || got["stale"] != dedup.OutcomeStale || got[long] != dedup.OutcomeStale {
		t.Fatalf("outcomes of c1: %v %v", got, err)
	}
	if got, err := st.Outcomes(ctx, "c2", []string{"stale"}); err != nil || len(got) != 0 {
		t.Fatalf("outcomes of c2 (applied): %v %v", got, err)
	}
	if found, err := st.Lookup(ctx, "c1", []string{"stale"}); err != nil || len(found) != 1 {
		t.Fatalf("a stale event's marker: %v %v", found, err)
	}
	sameMarked(t, st, "c1", []string{"stale", "applied", long, "missing"}, nil)

	rollback := errors.New("rollback")
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		if err := st.SetOutcome(ctx, tx, "c1", []string{"applied"}, dedup.OutcomeStale); err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if got, err := st.Outcomes(ctx, "c1", []string{"applied"}); err != nil || len(got) != 0 {
		t.Fatalf("outcome after a rollback: %v %v", got, err)
	}

	// A table from before the outcome column: no outcomes, no error.
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := tx.Exec(ctx, `ALTER TABLE `+st.Table()+` DROP COLUMN outcome`)
		return err
	}); err != nil {
		t.Fatalf("drop the outcome column: %v", err)
	}
	if got, err := st.Outcomes(ctx, "c1", []string{"stale"}); err != nil || len(got) != 0 {
		t.Fatalf("outcomes without the column: %v %v", got, err)
	}
}

// str is *p, or "" for nil (a NULL column).
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sameMarked checks that Marked finds, among ids, the ids Lookup finds (found; nil: looked up
// here), each id's answer in its place.
func sameMarked(t *testing.T, st *dedup.Store, consumer string, ids []string, found map[string]dedup.MarkerRow) {
	t.Helper()
	ctx := ctxT(t)
	if found == nil {
		var err error
		if found, err = st.Lookup(ctx, consumer, ids); err != nil {
			t.Fatalf("lookup: %v", err)
		}
	}
	marked, err := st.Marked(ctx, consumer, ids)
	if err != nil {
		t.Fatalf("marked: %v", err)
	}
	if len(marked) != len(ids) {
		t.Fatalf("marked answered for %d of %d ids", len(marked), len(ids))
	}
	for i, id := range ids {
		if _, want := found[id]; marked[i] != want {
			t.Fatalf("marked says %v of %.60q (id %d), lookup %v", marked[i], id, i, want)
		}
	}
}
