package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestGroupMembersKilled: a consumer group of three `fieldwork consume` processes (static
// members, --instance-id, on the shared broker and PostgreSQL) consumes a stream produced in
// six rounds. In each round, once the group has committed a fifth of the round's records, one
// member is killed with SIGKILL in the middle of its batches. Most are restarted at once under
// the same instance id (they take their partitions back without a rebalance); one is left
// down until the group has rebalanced its partitions to the other two, then started again
// (a second rebalance gives it partitions back). The invariant: every event's effect exactly
// once, every poison record dead-lettered, nothing else; the members that remain exit 0 on
// SIGTERM.
func TestGroupMembersKilled(t *testing.T) {
	started := time.Now()
	w := newWorld(t, testenv.Brokers(t), 1, testenv.DSN(t))
	s := w.newStream(6, sample.Options{Seed: 301, Aggregates: 1600, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 150, Poison: 45})
	group := testenv.Name(t, "fwf-projection")
	member := func(i, life int) *testenv.Proc {
		return w.consume(fmt.Sprintf("member-%d.%d", i, life), group, s.topic,
			"--instance-id", fmt.Sprintf("%s-m%d", group, i), "--session-timeout", "6s")
	}
	members := make([]*testenv.Proc, 3)
	lives := make([]int, 3)
	for i := range members {
		members[i] = member(i, 0)
	}

	const rounds, leftDown = 6, 2
	chunk := (len(s.recs) + rounds - 1) / rounds
	var kills []string
	for round := range rounds {
		lo, hi := round*chunk, min((round+1)*chunk, len(s.recs))
		w.produce(s.recs[lo:hi])
		at := testenv.WaitProgress(t, w.adm, progressWithin, nil, fmt.Sprintf("a fifth of round %d committed", round),
			func(g testenv.GroupProgress) bool { return g.Committed >= int64(lo+(hi-lo)/5) }, group, s.topic)
		i := round % 3
		members[i].Kill()
		lives[i]++
		note := fmt.Sprintf("round %d: member %d killed at %d of %d committed", round, i, at.Committed, hi)
		if round == leftDown {
			// Left down until its session times out and the other two take its partitions.
			waitFor(t, time.Minute, nil, "the group rebalancing without the killed member", func() bool {
				n, err := groupMembers(w, group)
				return err == nil && n == 2
			})
			note += ", left down until the group rebalanced to the other two"
		}
		members[i] = member(i, lives[i])
		kills = append(kills, note+", restarted")
	}
	end := testenv.WaitCaughtUp(t, w.adm, caughtUpWithin, nil, group, s.topic)
	stop(t, members...)
	effects := w.checkEffects(s, group, nil)
	t.Log("group members killed:\n  " + join(
		"stream:   "+s.describe()+", on 6 partitions, produced in 6 rounds",
		"faults:   "+strings.Join(kills, "\n            "),
		fmt.Sprintf("group:    3 members, %d processes in all, committed %d of %d at the end", 3+len(kills), end.Committed, end.End),
		"effects:  "+effects,
		fmt.Sprintf("run time: %s", time.Since(started).Round(100*time.Millisecond))))
}

// groupMembers is how many members the group has, as its coordinator says.
func groupMembers(w *world, group string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gs, err := w.adm.DescribeGroups(ctx, group)
	if err != nil {
		return 0, err
	}
	g, ok := gs[group]
	if !ok {
		return 0, fmt.Errorf("group %s not described", group)
	}
	if g.Err != nil {
		return 0, g.Err
	}
	return len(g.Members), nil
}
