package groups

import (
	"testing"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/internal/dedup"
)

// The journal's CSV columns are the JSON fields: run_id, dead_letter_topic, undone_by.
func TestGroupsJournalCSVNamesJSONFields(t *testing.T) {
	cmdtest.CSVColumnsAreJSONFields(t, groupActionColumns, dedup.GroupAction{ID: "r", Action: "skip", Group: "g", DeadLetterTopic: "t.dlq",
		UndoneBy: "u", Undoes: "v", Offsets: "[]", Operator: "o", Reason: "x"})
}
