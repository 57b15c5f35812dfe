package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// TestDriven: a running run holds its topic while its process may be alive (this one; another
// host's written within StaleAfter) and not when it is gone; a run shared by workers while a
// worker holding a partition may be alive, or it was recorded within StaleAfter (its workers
// yet to start).
func TestDriven(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour)
	host, _, _ := strings.Cut(Owner(), ":")
	single := func(owner string, updated time.Time) dedup.ReplayRun {
		return dedup.ReplayRun{ID: "r", Status: dedup.RunRunning, Owner: owner, CreatedAt: old, UpdatedAt: updated}
	}
	worker := func(owner string, updated time.Time) []dedup.ReplayCheckpoint {
		return []dedup.ReplayCheckpoint{
			{Topic: "dlq", Partition: 0, Worker: &dedup.PartitionWorker{}},
			{Topic: "dlq", Partition: 1, Worker: &dedup.PartitionWorker{Owner: owner, UpdatedAt: updated}},
		}
	}
	for _, c := range []struct {
		name string
		run  dedup.ReplayRun
		cps  []dedup.ReplayCheckpoint
		want bool
	}{
		{"this process", single(Owner(), old), nil, true},
		{"another host, written now", single("elsewhere:7", now), nil, true},
		{"another host, written an hour ago", single("elsewhere:7", old), nil, false},
		{"this host, no such pid", single(host+":999999999", now), nil, false},
		{"workers: one in this process", single("", old), worker(Owner(), old), true},
		{"workers: one elsewhere, written now", single("", old), worker("elsewhere:7", now), true},
		{"workers: one elsewhere, written an hour ago", single("", old), worker("elsewhere:7", old), false},
		{"workers: none holds a partition", single("", old), worker("", old), false},
		{"workers: recorded now, none started", dedup.ReplayRun{Status: dedup.RunRunning, CreatedAt: now}, worker("", old), true},
	} {
		if got := driven(c.run, c.cps, now); got != c.want {
			t.Errorf("%s: driven %v, want %v", c.name, got, c.want)
		}
	}
}
