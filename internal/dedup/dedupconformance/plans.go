package dedupconformance

import (
	"context"
	"fmt"
	"testing"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// StaleStatistics builds, through exec, the table in which the drivers' plan tests explain
// their lookups by event ids (docs/design.md §3.4): drv's migrations, then steps, in the
// driver's dialect: the markers of other consumers, an analyze, and then 50,000 markers of
// consumer "late", event ids "e-1" to "e-50000", which the statistics never saw. It checks that
// drv finds 1,000 of late's markers, and returns their ids.
func StaleStatistics(t *testing.T, ctx context.Context, drv dedupdriver.Driver, exec func(ctx context.Context, sql string) error, steps ...string) []string {
	t.Helper()
	Build(t, ctx, drv, exec, steps...)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("e-%d", 1+i*37)
	}
	found, err := drv.Lookup(ctx, "late", ids)
	if err != nil || len(found) != len(ids) {
		t.Fatalf("lookup of %d markers of late: %d found, %v", len(ids), len(found), err)
	}
	if marked, err := drv.Marked(ctx, "late", ids); err != nil || len(marked) != len(ids) {
		t.Fatalf("marked of %d markers of late: %d found, %v", len(ids), len(marked), err)
	}
	return ids
}

// Build runs, through exec, drv's migrations and then steps (statements in the driver's
// dialect that fill or shape its table for a plan test).
func Build(t *testing.T, ctx context.Context, drv dedupdriver.Driver, exec func(ctx context.Context, sql string) error, steps ...string) {
	t.Helper()
	migs, err := drv.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	all := make([]string, 0, len(migs)+len(steps))
	for _, m := range migs {
		all = append(all, m.SQL)
	}
	all = append(all, steps...)
	for _, q := range all {
		if err := exec(ctx, q); err != nil {
			t.Fatalf("%.200s: %v", q, err)
		}
	}
}
