package sqlitedriver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupconformance"
)

// freshFile hands out a database file in the test's temporary directory.
func freshFile(t *testing.T) (string, string) {
	return "sqlite:" + filepath.Join(t.TempDir(), "fieldwork.db"), "fieldwork"
}

// TestConformance runs the suite on files whose writers wait up to a minute for each other
// (busy_timeout) instead of the default 5 s: its racing workers queue six transactions on
// SQLite's one writer, and on a loaded machine under the race detector five of them can hold
// it longer than 5 s. What is tested is who wins, not how long a writer waits (the default
// has its own test below).
func TestConformance(t *testing.T) {
	dedupconformance.RunConformance(t, func(t *testing.T) (string, string) {
		dsn, schema := freshFile(t)
		return dsn + "?_pragma=busy_timeout(60000)", schema
	})
}

func tableNames(t *testing.T, st *dedup.Store) []string {
	t.Helper()
	return queryStrings(t, st, `SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name`)
}

// queryStrings runs query on st and returns the one text column of its rows.
func queryStrings(t *testing.T, st *dedup.Store, query string) []string {
	t.Helper()
	var names []string
	err := st.InTx(context.Background(), func(tx *dedup.Tx) error {
		rows, err := tx.Query(context.Background(), query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestSchemaIsATablePrefix(t *testing.T) {
	st, _ := dedupconformance.NewStore(t, freshFile)
	if st.Table() != `"fieldwork_processed_events"` {
		t.Fatalf("table %s", st.Table())
	}
	got := strings.Join(tableNames(t, st), " ")
	want := "fieldwork_fieldwork_migrations fieldwork_group_actions fieldwork_marker_actions fieldwork_processed_events fieldwork_processed_events_processed_at_idx fieldwork_processed_events_versions" +
		" fieldwork_replay_checkpoints fieldwork_replay_run_topics fieldwork_replay_runs fieldwork_replay_runs_created_at_idx" +
		" fieldwork_replay_send_batches fieldwork_replay_send_batches_run_idx fieldwork_replay_send_batches_source_idx fieldwork_replay_send_batches_width_idx" +
		" fieldwork_replay_send_times fieldwork_replay_target_counts fieldwork_replay_workers"
	if got != want {
		t.Fatalf("objects %q, want %q", got, want)
	}
}

func TestSchemaMainMeansNoPrefix(t *testing.T) {
	dsn, _ := freshFile(t)
	env := dedupconformance.Env{DSN: dsn, Schema: "main"}
	st := env.Open(t, dedup.Options{Table: "seen_events"})
	if _, err := st.Migrate(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(tableNames(t, st), " ")
	if got != "fieldwork_migrations group_actions marker_actions replay_checkpoints replay_run_topics replay_runs replay_runs_created_at_idx"+
		" replay_send_batches replay_send_batches_run_idx replay_send_batches_source_idx replay_send_batches_width_idx replay_send_times replay_target_counts"+
		" replay_workers seen_events seen_events_processed_at_idx seen_events_versions" {
		t.Fatalf("objects %q", got)
	}
}

func TestPragmasAndUnderlyingTx(t *testing.T) {
	st, _ := dedupconformance.NewStore(t, freshFile)
	ctx := context.Background()
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		stx, ok := tx.SQL()
		if !ok {
			t.Fatal("SQL() on an sqlite transaction returned false")
		}
		if _, ok := tx.Pgx(); ok {
			t.Fatal("Pgx() on an sqlite transaction returned true")
		}
		var mode string
		var busy, sync int
		if err := stx.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			return err
		}
		if err := stx.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			return err
		}
		if err := stx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			return err
		}
		if mode != "wal" || busy != 5000 || sync != 2 {
			t.Fatalf("journal_mode %s, busy_timeout %d, synchronous %d; want wal, 5000, 2 (FULL)", mode, busy, sync)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDSNForms(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	path := filepath.Join(dir, "a.db")
	for i, dsn := range []string{"sqlite:" + path, "sqlite://" + path, "sqlite:" + path + "?_pragma=busy_timeout(9000)"} {
		// The first creates the file; the others open it as it is.
		st, err := dedup.Open(ctx, dsn, dedup.Options{Create: i == 0})
		if err != nil {
			t.Fatalf("Open(%s): %v", dsn, err)
		}
		if st.Driver() != "sqlite" {
			t.Fatalf("driver %s", st.Driver())
		}
		if _, err := st.Migrate(ctx, false); err != nil {
			t.Fatalf("migrate via %s: %v", dsn, err)
		}
		st.Close()
	}
}

// TestNoSuchStore: a path that does not exist is refused, and nothing is created, unless the
// store is opened to create it (Options.Create, db migrate's); a store that is there opens
// without it, through every form of the DSN.
func TestNoSuchStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "typo.db"), filepath.Join(dir, "missing", "typo.db"), filepath.Join(dir, "we ird%20#other.db")} {
		_, err := dedup.Open(ctx, "sqlite:"+path, dedup.Options{})
		var ns *dedup.NoStoreError
		if !errors.As(err, &ns) || ns.Path != path || !strings.Contains(err.Error(), "no such store") {
			t.Fatalf("Open(%s): %T %v, want *NoStoreError naming the path", path, err, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open(%s) without Create left a file: %v", path, err)
		}
	}
	path := filepath.Join(dir, "we ird%20#name.db")
	st, err := dedup.Open(ctx, "sqlite:"+path, dedup.Options{Create: true})
	if err != nil {
		t.Fatalf("Open with Create: %v", err)
	}
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, dsn := range []string{"sqlite:" + path, "sqlite://" + path, "sqlite:" + path + "?_pragma=busy_timeout(9000)"} {
		st, err := dedup.Open(ctx, dsn, dedup.Options{})
		if err != nil {
			t.Fatalf("Open(%s) of an existing store: %v", dsn, err)
		}
		if err := st.Verify(ctx); err != nil {
			t.Fatalf("Verify through %s: %v", dsn, err)
		}
		st.Close()
	}
	// Relative paths too.
	t.Chdir(dir)
	if _, err := dedup.Open(ctx, "sqlite:rel.db", dedup.Options{}); !errors.As(err, new(*dedup.NoStoreError)) {
		t.Fatalf("relative missing path: %v", err)
	}
	st, err = dedup.Open(ctx, "sqlite:"+filepath.Base(path), dedup.Options{})
	if err != nil {
		t.Fatalf("relative existing path: %v", err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(dir, "rel.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rel.db was created: %v", err)
	}
}

func TestOpenFailures(t *testing.T) {
	dir := t.TempDir()
	notADB := filepath.Join(dir, "not-a-db")
	if err := os.WriteFile(notADB, []byte(strings.Repeat("this is not sqlite\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing", "dir", "x.db"), notADB} {
		// Created where it cannot be (a directory that does not exist), or opened as it is.
		_, err := dedup.Open(context.Background(), "sqlite:"+path, dedup.Options{Create: true})
		var ce *dedup.ConnectError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open(%s): %T %v, want *ConnectError naming the path", path, err, err)
		}
	}
	for _, dsn := range []string{"sqlite:", "sqlite::memory:"} {
		_, err := dedup.Open(context.Background(), dsn, dedup.Options{})
		var ie *dedup.InvalidDSNError
		if !errors.As(err, &ie) {
			t.Fatalf("Open(%q): %v, want *InvalidDSNError", dsn, err)
		}
	}
}
