package db_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestStatusSameVersionOnBothDrivers: one binary migrates a PostgreSQL store and an SQLite
// store, and `db status` reports the same version of both, with the same migrations under
// the same versions: a version means one schema change whatever the driver.
func TestStatusSameVersionOnBothDrivers(t *testing.T) {
	type status struct {
		Driver  string `json:"driver"`
		State   string `json:"state"`
		Current int    `json:"current_version"`
		Latest  int    `json:"latest_version"`
		Applied []struct {
			Version int    `json:"version"`
			Name    string `json:"name"`
		} `json:"applied"`
	}
	stores := []map[string]string{
		{"FIELDWORK_DSN": testenv.DSN(t)},
		{"FIELDWORK_DSN": "sqlite:" + t.TempDir() + "/store.db"},
	}
	schema := testenv.PGSchema(t, "fw_dbversion_")
	var got []status
	for _, env := range stores {
		roottest.RunCode(t, env, 0, "db", "migrate", "--schema", schema)
		r := roottest.RunCode(t, env, 0, "db", "status", "--schema", schema, "-o", "json")
		var st status
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
			t.Fatalf("%v: %s", err, r.Stdout)
		}
		if st.State != "up_to_date" || st.Current != st.Latest {
			t.Fatalf("%s: %+v", st.Driver, st)
		}
		got = append(got, st)
	}
	pg, lite := got[0], got[1]
	if pg.Driver != "postgres" || lite.Driver != "sqlite" || pg.Current != lite.Current || pg.Latest != lite.Latest ||
		fmt.Sprint(pg.Applied) != fmt.Sprint(lite.Applied) {
		t.Fatalf("db status on PostgreSQL: version %d of %d, %v\non SQLite: version %d of %d, %v",
			pg.Current, pg.Latest, pg.Applied, lite.Current, lite.Latest, lite.Applied)
	}
}
