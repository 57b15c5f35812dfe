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

// TestStepsWithNothingToRunHoldNoConsumerBack: a store that lacks only steps its driver needs
// nothing for (PostgreSQL's 010 after an upgrade) passes Verify's check and still reads as
// pending for `db migrate` to record them; a missing step with work, or a newer store, fails.
func TestStepsWithNothingToRunHoldNoConsumerBack(t *testing.T) {
	empty := MigrationStep{Version: 10, Name: "sqlite_microsecond_times", SQL: "-- nothing on this driver\n\n"}
	work := MigrationStep{Version: 9, Name: "marker_outcome", SQL: "ALTER TABLE t ADD COLUMN outcome text;"}
	for _, tc := range []struct {
		name    string
		st      MigrationStatus
		ok      bool
		pending bool
	}{
		{"only an empty step pending", MigrationStatus{Current: 9, Latest: 10, Pending: []MigrationStep{empty}}, true, true},
		{"a step with work pending", MigrationStatus{Current: 8, Latest: 10, Pending: []MigrationStep{work, empty}}, false, true},
		{"up to date", MigrationStatus{Current: 10, Latest: 10}, true, false},
		{"newer", MigrationStatus{Current: 11, Latest: 10}, false, false},
		{"nothing applied", MigrationStatus{Latest: 10, Pending: []MigrationStep{work, empty}}, false, false},
	} {
		if err := tc.st.Err(); (err == nil) != tc.ok {
			t.Errorf("%s: Err() = %v", tc.name, err)
		}
		if got := tc.st.State() == StatePending; got != tc.pending {
			t.Errorf("%s: State() = %s", tc.name, tc.st.State())
		}
	}
}
