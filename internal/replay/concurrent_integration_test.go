package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// Two runs over one topic started within the same instant both pass the check made before a
// run is recorded. Once recorded they see each other (LaterGivesWay): the one recorded later
// is refused before it sends, marked failed, and the earlier one sends. Each side is played
// here by recording the other run at the moment the race would: before this run is recorded
// (this run is the later one), or between its record and its check (the earlier one).
func TestRunsStartedTogetherTheLaterGivesWay(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t)
	src, dlqTopic, dst := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	deadLetters(t, cl, dlqTopic, originals(t, cl, src, 20), dlq.Meta{})
	other := func(id string) dedup.ReplayRun {
		return dedup.ReplayRun{ID: id, Operator: "bob", Reason: "INC-1", Selection: "{}",
			Sources: []string{dlqTopic}, Target: dst, Status: dedup.RunRunning, Owner: Owner()}
	}
	finish := func(id string) { // the other run ends, so that it holds the topic no more
		t.Helper()
		if err := st.SaveReplayProgress(t.Context(), dedup.ReplayProgress{RunID: id, Owner: Owner(), Status: dedup.RunCompleted, Finished: true}); err != nil {
			t.Fatal(err)
		}
	}

	for i, single := range []bool{false, true} {
		earlier := other([]string{"20261205-060000-aaaaaa", "20261205-060000-bbbbbb"}[i])
		if err := st.CreateReplayRun(t.Context(), earlier, nil); err != nil {
			t.Fatal(err)
		}
		opts := ExecOptions{SinglePass: single, Recheck: LaterGivesWay(st, dlqTopic)}
		_, sum, err := execute(t, t.Context(), c, st, Spec{From: dlqTopic, To: dst}, opts)
		if err == nil || !strings.Contains(err.Error(), "refusing to replay: run "+earlier.ID+" is replaying from "+dlqTopic) {
			t.Fatalf("single pass %v: the later run: %+v, %v; want it refused naming %s", single, sum, err, earlier.ID)
		}
		if n := len(readTopic(t, c, dst)); n != 0 {
			t.Fatalf("single pass %v: the refused run sent %d records", single, n)
		}
		runs, err := st.ReplayRuns(t.Context(), dedup.ReplayRunFilter{Status: dedup.RunFailed})
		if err != nil || len(runs) != i+1 || !strings.Contains(runs[0].Error, "refusing to replay") || runs[0].Sent != 0 {
			t.Fatalf("single pass %v: failed runs %+v, %v; want the refused one, nothing sent", single, runs, err)
		}
		finish(earlier.ID)
	}

	// This run is the earlier one: the other is recorded after it, before its check.
	later := other("20261205-060000-cccccc")
	opts := ExecOptions{Recheck: func(ctx context.Context, runID string) error {
		if err := st.CreateReplayRun(ctx, later, nil); err != nil {
			t.Fatal(err)
		}
		return LaterGivesWay(st, dlqTopic)(ctx, runID)
	}}
	_, sum, err := execute(t, t.Context(), c, st, Spec{From: dlqTopic, To: dst}, opts)
	if err != nil || sum.Status != dedup.RunCompleted || sum.Counts.Sent != 20 {
		t.Fatalf("the earlier run: %+v, %v; want it to send the 20 dead letters", sum, err)
	}
	if n := len(readTopic(t, c, dst)); n != 20 {
		t.Fatalf("the target holds %d records, want 20", n)
	}
}
