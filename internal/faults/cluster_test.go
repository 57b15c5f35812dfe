package faults_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// The three-node cluster of `scripts/services.sh cluster` (replication factor 3,
// min.insync.replicas 2), started by the tests if it does not run. One broker is killed with
// SIGKILL in the middle of a run, so that the leadership of the partitions it led moves to
// the other two (and, mid consume, the group's coordinator with it); it is started again
// before the run ends.

// TestClusterBrokerKilledMidConsume kills the group's coordinator, which leads partitions of
// the source topic too, under `fieldwork consume`.
func TestClusterBrokerKilledMidConsume(t *testing.T) {
	k := testenv.ServicesCluster(t)
	w := newWorld(t, k.Brokers(), 3, testenv.DSN(t))
	s := w.newStream(6, sample.Options{Seed: 401, Aggregates: 1000, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 60, Poison: 30})
	var group string
	report := w.consumeThroughFaultIn(s, func(g string) fault {
		group = g
		return brokerKill(w, k, s, func() int32 { return coordinator(t, w, group) }, "the group's coordinator")
	})
	t.Log("cluster broker killed mid consume:\n  " + report)
}

// TestClusterBrokerKilledMidReplay kills the broker that leads the most partitions of the
// dead-letter topic the replay reads and the topic it writes, under `fieldwork replay
// --execute` (and the consumer reading what it replays).
func TestClusterBrokerKilledMidReplay(t *testing.T) {
	k := testenv.ServicesCluster(t)
	w := newWorld(t, k.Brokers(), 3, testenv.DSN(t))
	s := w.newStream(6, sample.Options{Seed: 402, Aggregates: 1200, EventsPerAggregate: 8, DuplicateFraction: 0.05, Stale: 60, Poison: 30})
	report := w.replayThroughFault(s, brokerKill(w, k, s, func() int32 { return busiestLeader(t, w, s.topic, s.dlq) }, "the leader of the most partitions of the replay's source and target"))
	t.Log("cluster broker killed mid replay:\n  " + report)
}

// brokerKill kills the node victim names; settle waits until every partition of the stream's
// topics that it led is led by another; up starts it again.
func brokerKill(w *world, k *testenv.KafkaCluster, s *stream, victim func() int32, who string) fault {
	var node int32
	var before map[string]int32
	topics := []string{s.topic, s.dlq}
	return fault{
		brokerStays: true,
		down: func() string {
			node = victim()
			before = leaders(w.t, w, topics...)
			k.Kill(int(node))
			return fmt.Sprintf("node %d (%s) killed (SIGKILL)", node, who)
		},
		settle: func() string {
			t := w.t
			var led []string
			for p, l := range before {
				if l == node {
					led = append(led, p)
				}
			}
			slices.Sort(led)
			if len(led) == 0 {
				t.Fatalf("node %d led none of %v: its death moves no leadership", node, before)
			}
			var after map[string]int32
			waitFor(t, time.Minute, nil, fmt.Sprintf("the partitions of node %d led by the others", node), func() bool {
				after = leadersNow(w, topics...)
				if len(after) != len(before) {
					return false
				}
				for _, l := range after {
					if l < 0 || l == node {
						return false
					}
				}
				return true
			})
			moved := make([]string, len(led))
			for i, p := range led {
				moved[i] = fmt.Sprintf("%s %d→%d", shortPartition(p), node, after[p])
			}
			return "leadership moved: " + strings.Join(moved, ", ")
		},
		up: func() string { k.Start(int(node)); return fmt.Sprintf("node %d started again", node) },
	}
}

// leaders maps "topic/partition" to its leader's node id, failing the test on error.
func leaders(t *testing.T, w *world, topics ...string) map[string]int32 {
	t.Helper()
	var m map[string]int32
	waitFor(t, time.Minute, nil, "the topics' metadata", func() bool { m = leadersNow(w, topics...); return m != nil })
	return m
}

// leadersNow is leaders, nil when the metadata cannot be read.
func leadersNow(w *world, topics ...string) map[string]int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := w.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil
	}
	out := map[string]int32{}
	for _, td := range md.Topics {
		if td.Err != nil {
			return nil
		}
		for _, pd := range td.Partitions {
			out[fmt.Sprintf("%s/%d", td.Topic, pd.Partition)] = pd.Leader
		}
	}
	return out
}

// busiestLeader is the node that leads the most partitions of topics.
func busiestLeader(t *testing.T, w *world, topics ...string) int32 {
	t.Helper()
	count := map[int32]int{}
	for _, l := range leaders(t, w, topics...) {
		count[l]++
	}
	best := int32(-1)
	for l, n := range count {
		if best < 0 || n > count[best] || (n == count[best] && l < best) {
			best = l
		}
	}
	return best
}

// coordinator is the node that coordinates group.
func coordinator(t *testing.T, w *world, group string) int32 {
	t.Helper()
	var id int32 = -1
	waitFor(t, time.Minute, nil, "the group's coordinator", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := w.adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		var g kadm.DescribedGroup
		var ok bool
		if g, ok = gs[group]; !ok || g.Err != nil {
			return false
		}
		id = g.Coordinator.NodeID
		return true
	})
	return id
}

// shortPartition writes "fwf-…-123-4/2" as "…-4/2": topic names are long.
func shortPartition(p string) string {
	if i := strings.LastIndex(p, "-"); i > 0 {
		return "…" + p[i:]
	}
	return p
}
