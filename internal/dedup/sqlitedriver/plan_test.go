package sqlitedriver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupconformance"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
)

// TestLookupsProbePerID checks with EXPLAIN QUERY PLAN the statements that take event ids
// (issue 32, docs/design.md §3.4): with sqlite_stat1 gathered before a consumer wrote, when
// the consumers were many and small, each must still search the primary key once per id (and
// consumer): no SCAN of the table, save the one-row first step of the walk over the consumers.
// The table is small: the plan's choice is what matters, not its time.
func TestLookupsProbePerID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const table = "fieldwork_processed_events"
	d, err := sqlitedriver.Open(ctx, dedupdriver.Config{DSN: filepath.Join(t.TempDir(), "fieldwork.db"), Create: true,
		Names: dedupdriver.Names{Schema: "main", Table: table, Columns: dedupdriver.DefaultColumns}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// 200,000 markers of 100,000 consumers, analyzed; then 50,000 of "late".
	const series = `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < %d) `
	ids := dedupconformance.StaleStatistics(t, ctx, d, func(ctx context.Context, q string) error {
		_, err := d.DB().ExecContext(ctx, q)
		return err
	},
		fmt.Sprintf(series+`INSERT INTO `+table+` (consumer, event_id) SELECT 'other-' || (i / 2), 'e-' || i FROM g`, 200000),
		`ANALYZE`,
		fmt.Sprintf(series+`INSERT INTO `+table+` (consumer, event_id) SELECT 'late', 'e-' || i FROM g`, 50000))
	arr, err := json.Marshal(ids)
	if err != nil {
		t.Fatal(err)
	}
	statements := sqlitedriver.IDStatements(d)
	for _, st := range []struct {
		name string
		args []any
	}{
		{"lookup", []any{"late", string(arr)}},
		{"marked", []any{"late", string(arr)}},
		{"outcomes", []any{"late", string(arr)}},
		{"setOutcome", []any{"late", string(arr), dedupdriver.OutcomeStale}},
		{"forgetOne", []any{string(arr), "late"}},
		{"forgetAll", []any{string(arr)}},
		{"getAll", []any{"e-1"}},
	} {
		t.Run(st.name, func(t *testing.T) {
			rows, err := d.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+statements[st.name], st.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			detail := map[int]string{}
			var plan, wrong []string
			probes := 0
			for rows.Next() {
				var id, parent, unused int
				var line string
				if err := rows.Scan(&id, &parent, &unused, &line); err != nil {
					t.Fatal(err)
				}
				detail[id] = line
				plan = append(plan, fmt.Sprintf("%d %d %s", id, parent, line))
				f := strings.Fields(line)
				if len(f) < 2 || (f[0] != "SCAN" && f[0] != "SEARCH") || (f[1] != table && f[1] != "t" && f[1] != "m") {
					continue
				}
				switch {
				case f[0] == "SCAN" && strings.HasPrefix(detail[parent], "SCALAR SUBQUERY"):
					// the walk's first step: one row of the primary key
				case f[0] == "SCAN":
					wrong = append(wrong, line)
				case strings.Contains(line, "event_id=?") && strings.Contains(line, "consumer=?"):
					probes++
				case !strings.Contains(line, "(rowid=?)") && !strings.Contains(line, "(consumer>?)"):
					wrong = append(wrong, line)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if probes == 0 {
				wrong = append(wrong, "no search of the primary key by consumer and event id")
			}
			if len(wrong) > 0 {
				t.Errorf("%s\n%s", strings.Join(wrong, "; "), strings.Join(plan, "\n"))
			}
		})
	}
}
