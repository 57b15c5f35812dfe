package groups

import (
	"testing"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/output"
)

// The journal's CSV columns are the JSON fields: run_id, dead_letter_topic, undone_by.
func TestGroupsJournalCSVNamesJSONFields(t *testing.T) {
	cmdtest.CSVColumnsAreJSONFields(t, groupActionColumns, dedup.GroupAction{ID: "r", Action: "skip", Group: "g", DeadLetterTopic: "t.dlq",
		UndoneBy: "u", Undoes: "v", Offsets: "[]", Operator: "o", Reason: "x"})
}

// The groups list's CSV columns are the JSON fields: total_lag, error.
func TestGroupsListCSVNamesJSONFields(t *testing.T) {
	s, _, _, _ := output.Test()
	cmdtest.CSVColumnsAreJSONFields(t, summaryColumns(output.NewPrinter(s, output.FormatCSV)),
		groups.Summary{Group: "g", State: "Empty", Type: "classic", TotalLag: 3, LagKnown: true, Error: "e"})
}
