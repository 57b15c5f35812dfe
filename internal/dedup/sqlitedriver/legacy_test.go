package sqlitedriver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
)

// legacyStore makes, in a new file, the store an older fieldwork made: the SQLite migrations
// it had, numbered as it numbered them (before the one migration line: 001–008, without
// replay_packed_sends), applied up to version upTo and recorded as it recorded them. The
// files of testdata/legacy_migrations.txtar are that fieldwork's migrations/, as they were
// (git show of internal/dedup/sqlitedriver/migrations at the commit before the line). Two
// markers and a marker action are written in the millisecond layout it wrote.
func legacyStore(t *testing.T, upTo int) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	d, err := sqlitedriver.Open(ctx, dedupdriver.Config{DSN: path, ConnectTimeout: 5 * time.Second, Create: true,
		Names: dedupdriver.Names{Schema: "fieldwork", Table: "processed_events", Columns: dedupdriver.DefaultColumns}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ar, err := txtar.ParseFile("testdata/legacy_migrations.txtar")
	if err != nil || len(ar.Files) != 8 {
		t.Fatalf("legacy migrations: %d files, %v", len(ar.Files), err)
	}
	db := d.DB()
	for i, f := range ar.Files[:upTo] {
		var b strings.Builder
		if err := template.Must(template.New(f.Name).Option("missingkey=error").Parse(string(f.Data))).Execute(&b, sqlitedriver.TemplateData(d)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		name := strings.TrimSuffix(f.Name[4:], ".sql")
		if _, err := db.ExecContext(ctx, `INSERT INTO "fieldwork_fieldwork_migrations" (line, version, name) VALUES ('processed_events', $1, $2)`, i+1, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []string{"2024-05-01T10:00:00.123Z", "2024-05-01T10:00:00.124Z"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO "fieldwork_processed_events" (consumer, event_id, processed_at) VALUES ('c', $1, $1)`, at); err != nil {
			t.Fatal(err)
		}
	}
	if upTo >= 6 {
		if _, err := db.ExecContext(ctx, `INSERT INTO "fieldwork_marker_actions" (action, marker_table, operator, reason, selection, counts, deleted, created_at)
VALUES ('prune', 'x', 'o', 'r', '{}', '{}', 1, '2024-05-01T10:00:00.500Z')`); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func versions(applied []dedup.AppliedMigration) string {
	var s []string
	for _, a := range applied {
		s = append(s, fmt.Sprintf("%d_%s", a.Version, a.Name))
	}
	return strings.Join(s, " ")
}

// TestLegacyNumberedStoreUpgrades: a store made by a fieldwork before the one migration line,
// at each version it could be at, reads at the line's version of what it has and migrates
// to the newest: no step it had is run again (migration 009 adds a column, which fails when
// run twice), none it lacked is skipped, and its migrations table ends in the line's
// numbering. Its millisecond times are read and compared as the instants they are.
func TestLegacyNumberedStoreUpgrades(t *testing.T) {
	var line []string
	for _, s := range dedupdriver.Line {
		line = append(line, fmt.Sprintf("%d_%s", s.Version, s.Name))
	}
	latest := dedupdriver.Line[len(dedupdriver.Line)-1].Version
	for _, tc := range []struct {
		old, current int // the legacy version, the line's version it means
	}{{4, 4}, {5, 6}, {7, 8}, {8, 9}} {
		t.Run(fmt.Sprintf("old%d", tc.old), func(t *testing.T) {
			ctx := context.Background()
			path := legacyStore(t, tc.old)
			st, err := dedup.Open(ctx, "sqlite:"+path, dedup.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			status, err := st.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if status.Current != tc.current || status.Latest != latest || versions(status.Applied) != strings.Join(line[:tc.current], " ") ||
				len(status.Pending) != latest-tc.current || status.Pending[0].Version != tc.current+1 {
				t.Fatalf("status of a store at legacy version %d: current %d, applied %s, pending %+v",
					tc.old, status.Current, versions(status.Applied), status.Pending)
			}
			steps, err := st.Migrate(ctx, false)
			if err != nil || len(steps) != latest-tc.current {
				t.Fatalf("migrate a store at legacy version %d: %+v %v", tc.old, steps, err)
			}
			status, err = st.Status(ctx)
			if err != nil || status.Err() != nil || versions(status.Applied) != strings.Join(line, " ") {
				t.Fatalf("after migrate: %+v %v", status, err)
			}
			// The table itself says the line's numbering, to every reader.
			recorded := queryStrings(t, st, `SELECT version || '_' || name FROM "fieldwork_fieldwork_migrations" WHERE line = 'processed_events' ORDER BY version`)
			if strings.Join(recorded, " ") != strings.Join(line, " ") {
				t.Fatalf("migrations table %v", recorded)
			}
			// Millisecond times of the old layout: the marker at .123 is before .1235, the one
			// at .124 is not.
			page, err := st.List(ctx, dedup.ListFilter{Until: time.Date(2024, 5, 1, 10, 0, 0, 123_500_000, time.UTC), Limit: 10})
			rows := page.Rows
			if err != nil || len(rows) != 1 || rows[0].EventID != "2024-05-01T10:00:00.123Z" ||
				!rows[0].ProcessedAt.Equal(time.Date(2024, 5, 1, 10, 0, 0, 123_000_000, time.UTC)) {
				t.Fatalf("markers before .1235: %+v %v", rows, err)
			}
			// The column of migration 009 is there once.
			id := []string{"2024-05-01T10:00:00.123Z"}
			if err := st.InTx(ctx, func(tx *dedup.Tx) error { return st.SetOutcome(ctx, tx, "c", id, dedupdriver.OutcomeStale) }); err != nil {
				t.Fatal(err)
			}
			if got, err := st.Outcomes(ctx, "c", id); err != nil || got[id[0]] != dedupdriver.OutcomeStale {
				t.Fatalf("outcomes %v %v", got, err)
			}
			if tc.old >= 6 {
				acts, err := st.MarkerActions(ctx, 0)
				if err != nil || len(acts) != 1 || !acts[0].At.Equal(time.Date(2024, 5, 1, 10, 0, 0, 500_000_000, time.UTC)) {
					t.Fatalf("marker actions %+v %v", acts, err)
				}
			}
		})
	}
}
