package dedup

import "testing"

// TestUnquoteTable: a quoted table name as reports give it, without SQL's quotes; what is not
// quoted as Table quotes it is kept whole.
func TestUnquoteTable(t *testing.T) {
	for in, want := range map[string]string{
		`"fieldwork_processed_events"`:        "fieldwork_processed_events",
		`"fieldwork"."processed_events"`:      "fieldwork.processed_events",
		`"a ""b"""."c.d"`:                     `a "b".c.d`,
		`plain`:                               "plain",
		`"open`:                               `"open`,
		`"a"x`:                                `"a"x`,
		TableName(driverPostgres, "s", "t"):   "s.t",
		TableName(driverSQLite, "main", "pe"): "pe",
	} {
		if got := unquoteTable(in); got != want {
			t.Errorf("unquoteTable(%s) = %q, want %q", in, got, want)
		}
	}
}
