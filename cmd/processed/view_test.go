package processed

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/processed"
)

// TestForgetTableIsBounded: a forget of many ids shows the first forgetShown markers and ids
// without one in its table, and says how many there are; json lists every one.
func TestForgetTableIsBounded(t *testing.T) {
	rep := &processed.ForgetReport{Table: "fieldwork.processed_events", Consumer: "billing", DryRun: true}
	for i := range 250 {
		rep.Removed = append(rep.Removed, dedup.MarkerRow{Consumer: "billing", EventID: fmt.Sprintf("evt-%d", i)})
		rep.NotFound = append(rep.NotFound, fmt.Sprintf("gone-%d", i))
	}
	rep.Requested = 500

	s, _, out, _ := output.Test()
	if err := renderForget(output.NewPrinter(s, output.FormatTable), rep); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{"evt-99 ", "gone-99\n", "the first 100 of 250 markers; -o json or csv lists every one",
		"the first 100 of 250 event ids; -o json lists every one", "No marker, nothing removed (250)"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	for _, unwanted := range []string{"evt-100 ", "gone-100\n"} {
		if strings.Contains(table, unwanted) {
			t.Errorf("table shows %q past the first 100", unwanted)
		}
	}

	s, _, out, _ = output.Test()
	if err := renderForget(output.NewPrinter(s, output.FormatJSON), rep); err != nil {
		t.Fatal(err)
	}
	var got processed.ForgetReport
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Removed) != 250 || len(got.NotFound) != 250 {
		t.Errorf("json: %d removed, %d not found, %v", len(got.Removed), len(got.NotFound), err)
	}
}

// The journal's CSV columns are the JSON fields: run_id, marker_table.
func TestProcessedJournalCSVNamesJSONFields(t *testing.T) {
	cmdtest.CSVColumnsAreJSONFields(t, markerActionColumns, dedup.MarkerAction{ID: 7, Action: "forget", Operator: "o", MarkerTable: "t",
		Reason: "r", Error: "e", Selection: "{}"})
}
