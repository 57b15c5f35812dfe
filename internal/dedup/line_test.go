package dedup

import (
	"fmt"
	"testing"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
)

// TestDriversFollowOneMigrationLine: every driver has the steps of dedupdriver.Line, in order,
// under the same versions and names; a step a driver needs nothing for is a file of comments.
func TestDriversFollowOneMigrationLine(t *testing.T) {
	names := dedupdriver.Names{Schema: "fieldwork", Table: "processed_events", Columns: dedupdriver.DefaultColumns}
	var want []string
	for _, s := range dedupdriver.Line {
		want = append(want, fmt.Sprintf("%03d_%s", s.Version, s.Name))
	}
	for _, d := range []dedupdriver.Driver{pgdriver.New(nil, names), sqlitedriver.New(nil, names)} {
		ms, err := d.Migrations()
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		var got []string
		empty := 0
		for _, m := range ms {
			got = append(got, fmt.Sprintf("%03d_%s", m.Version, m.Name))
			if dedupdriver.Empty(m.SQL) {
				empty++
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s's migrations %v, want the line %v", d.Name(), got, want)
		}
		if empty != 1 { // each needs nothing for one step: SQLite 005, PostgreSQL 010
			t.Fatalf("%s: %d steps it needs nothing for, want 1", d.Name(), empty)
		}
	}
}
