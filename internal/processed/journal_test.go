package processed_test

import (
	"encoding/json"
	"github.com/fieldwork/fieldwork/internal/action"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/processed"
)

// TestJournal: an executed prune and an executed forget are journaled with the operator, the
// reason, the selection and the counts; a dry run, a declined prune and a prune with nothing to
// delete are not.
func TestJournal(t *testing.T) {
	st := pgStore(t, true)
	now := time.Now().UTC()
	old := now.Add(-48 * time.Hour)
	mark(t, st, "billing", dedup.Marker{EventID: "o1", Topic: "tasks", ProcessedAt: old}, dedup.Marker{EventID: "o2", Topic: "tasks", ProcessedAt: old},
		dedup.Marker{EventID: "o3", ProcessedAt: old}, dedup.Marker{EventID: "new", Topic: "tasks", ProcessedAt: now})
	j := action.Record{Operator: "alice", Reason: "quarterly cleanup"}
	prune := func(o pruneCall) {
		t.Helper()
		o.OlderThan, o.Consumer, o.Force, o.Now, o.Journal = 24*time.Hour, "billing", true, now, j
		if _, err := runPrune(ctx(t), st, nil, o); err != nil && o.Confirm == nil {
			t.Fatal(err)
		}
	}
	prune(pruneCall{DryRun: true})
	prune(pruneCall{Confirm: func(*processed.PruneReport, string) error { return dedup.ErrNotMigrated }})
	if got, err := st.MarkerActions(ctx(t), 10); err != nil || len(got) != 0 {
		t.Fatalf("journaled without deleting: %+v, %v", got, err)
	}
	prune(pruneCall{})
	prune(pruneCall{}) // nothing left to delete: not journaled

	if _, err := runForget(ctx(t), st, "", []string{"new", "nope"}, forgetCall{Journal: action.Record{Operator: "bob"}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.MarkerActions(ctx(t), 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("journal: %+v, %v", got, err)
	}
	f, p := got[0], got[1]
	if p.Action != dedup.ActionPrune || p.Operator != "alice" || p.Reason != "quarterly cleanup" || p.Deleted != 3 || p.MarkerTable != st.TableLabel() || p.Error != "" {
		t.Fatalf("prune journaled: %+v", p)
	}
	var sel struct {
		Consumer  string
		OlderThan string `json:"older_than"`
		Forced    bool
	}
	var counts struct {
		Candidates, Deleted, WithoutTopic int64
		PerTopic                          map[string]int64 `json:"per_topic"`
	}
	if err := json.Unmarshal([]byte(p.Selection), &sel); err != nil || sel.Consumer != "billing" || !sel.Forced {
		t.Fatalf("prune selection %s: %v", p.Selection, err)
	}
	if err := json.Unmarshal([]byte(p.Counts), &counts); err != nil || counts.Candidates != 3 || counts.Deleted != 3 || counts.PerTopic["tasks"] != 2 {
		t.Fatalf("prune counts %s: %v", p.Counts, err)
	}
	if f.Action != dedup.ActionForget || f.Operator != "bob" || f.Reason != "" || f.Deleted != 1 ||
		f.Selection != `{"all_consumers":true,"event_ids":["new","nope"]}` || f.Counts != `{"requested":2,"deleted":1,"not_found":1}` {
		t.Fatalf("forget journaled: %+v", f)
	}
}
