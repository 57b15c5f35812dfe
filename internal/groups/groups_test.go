package groups

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// TestStuck: a partition is stuck when it has lag and its commit did not move while watched;
// a single read says nothing, a partition without a commit or without lag is not stuck.
func TestStuck(t *testing.T) {
	parts := []Partition{
		{Topic: "orders", Partition: 0, Committed: 2, Lag: 3},                    // stuck
		{Topic: "orders", Partition: 1, Committed: 7, Lag: 2, CommitMoved: true}, // moving
		{Topic: "orders", Partition: 2, Committed: 9, Lag: 0},                    // caught up
		{Topic: "orders", Partition: 3, Committed: -1, Lag: 0},                   // no commit
	}
	once := &Report{Partitions: parts}
	if got := once.Stuck(); len(got) != 0 {
		t.Fatalf("one read called %v stuck", got)
	}
	watched := &Report{Partitions: parts, WatchedMS: 5000}
	if got := watched.Stuck(); len(got) != 1 || got[0].Partition != 0 {
		t.Fatalf("stuck: %+v, want orders/0 alone", got)
	}
}

func TestMemberName(t *testing.T) {
	if got := (Member{ClientID: "billing", Host: "/10.0.0.7"}).Name(); got != "billing@10.0.0.7" {
		t.Fatalf("name %q", got)
	}
	if got := (Member{ClientID: "billing", Host: "h", InstanceID: "pod-3"}).Name(); got != "billing@h (instance pod-3)" {
		t.Fatalf("name %q", got)
	}
}

// TestJournalOffsetsReadsOldRows: moves journaled before the offset a move found was named
// committed_offset (old_offset then) are read, undone and listed in today's names; a row
// that holds no list of moves is shown as it is.
func TestJournalOffsetsReadsOldRows(t *testing.T) {
	old := dedup.JSONText(`[{"topic":"orders","partition":0,"old_offset":5,"new_offset":0,"parked":0},{"partition":1,"old_offset":null,"new_offset":3,"parked":0}]`)
	want := `[{"topic":"orders","partition":0,"committed_offset":5,"new_offset":0,"parked":0},{"partition":1,"committed_offset":null,"new_offset":3,"parked":0}]`
	if got := JournalOffsets(old); string(got) != want {
		t.Errorf("old row listed as\n%s\nwant\n%s", got, want)
	}
	if got := JournalOffsets(dedup.JSONText(want)); string(got) != want {
		t.Errorf("new row listed as\n%s", got)
	}
	if got := JournalOffsets("by hand"); got != "by hand" {
		t.Errorf("a row by hand: %s", got)
	}
}
