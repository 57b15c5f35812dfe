package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// Integration tests of the status rule and of record identity: the real Apache Kafka, and both
// stores (the journal is the driver's).

// eachStore runs fn against a PostgreSQL store and an SQLite one.
func eachStore(t *testing.T, fn func(t *testing.T, st *dedup.Store)) {
	for _, s := range []struct {
		name string
		open func(*testing.T) *dedup.Store
	}{{"postgres", store}, {"sqlite", func(t *testing.T) *dedup.Store { return testenv.SQLiteStore(t) }}} {
		t.Run(s.name, func(t *testing.T) { fn(t, s.open(t)) })
	}
}

// listStatuses is what `dlq list --consumer consumer` shows for topic: each dead letter's
// status by its address.
func listStatuses(t *testing.T, c *kafka.Cluster, lookup dlq.StatusLookup, topic string) map[string]dlq.Status {
	t.Helper()
	s, err := dlq.PlanScan(t.Context(), c, []string{topic}, dlq.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dlq.Status{}
	_, err = dlq.List(t.Context(), s, dlq.ListOptions{Lookup: lookup}, func(e dlq.Entry) error {
		out[fmt.Sprintf("%s/%d/%d", e.Topic, e.Partition, e.Offset)] = e.Status.Status
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withStatus are the addresses of statuses that have one of want, sorted.
func withStatus(statuses map[string]dlq.Status, want ...dlq.Status) []string {
	var out []string
	for a, s := range statuses {
		if slices.Contains(want, s) {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// selected are the addresses a replay of spec selects (its dry run's sample, which lists every
// selected record up to its size), sorted.
func selected(t *testing.T, c *kafka.Cluster, st *dedup.Store, spec Spec) []string {
	t.Helper()
	p, err := NewPlan(t.Context(), c, spec)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Scan(t.Context(), c, st, p, ScanOptions{Sample: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range rep.Sample {
		out = append(out, s.RecordAddress.String())
	}
	sort.Strings(out)
	if int64(len(out)) != rep.Counts.Selected {
		t.Fatalf("the sample holds %d of %d selected records", len(out), rep.Counts.Selected)
	}
	return out
}

// TestReplaySelectsWhatDLQListCalls: on one set of dead letters — pending ones, some replayed by
// a journaled run, some resolved by markers (one of them also replayed), some without an event
// id — the dead letters a replay selects with --status pending (and replayed) are exactly those
// `dlq list` calls pending (and replayed), and an executed replay of the pending ones sends
// none of the others.
func TestReplaySelectsWhatDLQListCalls(t *testing.T) {
	eachStore(t, func(t *testing.T, st *dedup.Store) {
		c := cluster(t)
		cl := testenv.Client(t)
		src, dlqTopic := testenv.Topic(t, 2, nil), testenv.Topic(t, 2, nil)
		origs := originals(t, cl, src, 10)
		dls := deadLetters(t, cl, dlqTopic, origs, dlq.Meta{Group: "billing"})
		// Two dead letters without an event id: records no envelope reads.
		noID := deadLetters(t, cl, dlqTopic, []*kgo.Record{
			{Topic: src, Key: []byte("k-0"), Value: []byte("not an event")},
			{Topic: src, Key: []byte("k-1"), Value: []byte("neither")},
		}, dlq.Meta{Group: "billing"})
		byEvent := map[string]string{}
		for _, d := range dls {
			byEvent[header(d, "ce_id")] = addr(d)
		}
		// Resolved: markers of billing for 1 and 2. Replayed: journaled runs sent 1, 3 and 4.
		if err := st.InTx(t.Context(), func(tx *dedup.Tx) error {
			_, err := st.Claim(t.Context(), tx, "billing", []dedup.Marker{{EventID: "evt-0001"}, {EventID: "evt-0002"}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"evt-0001", "evt-0003", "evt-0004"} {
			if _, sum, err := execute(t, t.Context(), c, st, Spec{From: dlqTopic, FilterSpec: dlq.FilterSpec{EventID: id}}, ExecOptions{}); err != nil || sum.Counts.Sent != 1 {
				t.Fatalf("replay of %s: %+v %v", id, sum, err)
			}
		}

		statuses := listStatuses(t, c, dlq.StatusLookup{Store: st, Consumer: "billing", TopicID: c.TopicID}, dlqTopic)
		want := map[dlq.Status][]string{
			dlq.StatusPending:  {byEvent["evt-0000"], byEvent["evt-0005"], byEvent["evt-0006"], byEvent["evt-0007"], byEvent["evt-0008"], byEvent["evt-0009"]},
			dlq.StatusReplayed: {byEvent["evt-0003"], byEvent["evt-0004"]},
			dlq.StatusResolved: {byEvent["evt-0001"], byEvent["evt-0002"]},
			dlq.StatusUnknown:  {addr(noID[0]), addr(noID[1])},
		}
		for status, addrs := range want {
			sort.Strings(addrs)
			if got := withStatus(statuses, status); !slices.Equal(got, addrs) {
				t.Fatalf("dlq list --status %s: %v, want %v (all: %v)", status, got, addrs, statuses)
			}
		}

		for _, sel := range [][]dlq.Status{{dlq.StatusPending}, {dlq.StatusReplayed}, {dlq.StatusPending, dlq.StatusReplayed}} {
			got := selected(t, c, st, Spec{From: dlqTopic, Statuses: sel, StatusConsumer: "billing"})
			if listed := withStatus(statuses, sel...); !slices.Equal(got, listed) {
				t.Errorf("replay --status %v selects %v; dlq list --status %v lists %v", sel, got, sel, listed)
			}
		}
		// PendingFor (what `--status pending --consumer billing` sets) is the same selection.
		if got := selected(t, c, st, Spec{From: dlqTopic, PendingFor: "billing"}); !slices.Equal(got, withStatus(statuses, dlq.StatusPending)) {
			t.Errorf("PendingFor selects %v, dlq list's pending are %v", got, withStatus(statuses, dlq.StatusPending))
		}

		// Executed, the pending replay sends the pending dead letters and nothing else.
		_, sum, err := execute(t, t.Context(), c, st, Spec{From: dlqTopic, PendingFor: "billing"}, ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var sent []string
		for source := range replayed(readTopic(t, c, src), sum.RunID) {
			sent = append(sent, source)
		}
		sort.Strings(sent)
		if !slices.Equal(sent, withStatus(statuses, dlq.StatusPending)) || sum.Counts != (dedup.RunCounts{Selected: 6, Sent: 6}) {
			t.Fatalf("the pending replay sent %v (%+v), want the pending %v", sent, sum.Counts, withStatus(statuses, dlq.StatusPending))
		}
		// And they are replayed now, by dlq's rule as well.
		after := listStatuses(t, c, dlq.StatusLookup{Store: st, Consumer: "billing", TopicID: c.TopicID}, dlqTopic)
		if got := withStatus(after, dlq.StatusReplayed); len(got) != 8 || len(withStatus(after, dlq.StatusPending)) != 0 {
			t.Fatalf("after the replay: %v", after)
		}
	})
}

// recreateTopic deletes topic and creates it again with the same name and partitions, and
// returns its topic ID before and after. It waits (bounded) for the deletion to finish and the
// new topic's partitions to have leaders.
func recreateTopic(t *testing.T, c *kafka.Cluster, topic string, partitions int32) (before, after string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	before, err := c.TopicID(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTopic(t, testenv.Client(t), topic)
	testenv.CreateTopic(t, topic, partitions, nil)
	// c's own metadata may still name the old topic for a moment: ask until it names the new.
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		if after, err = c.TopicID(ctx, topic); err == nil && after != before {
			return before, after
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: topic ID still %s (%v) after it was recreated", topic, before, err)
		case <-poll.C:
		}
	}
}

// TestRecreatedDeadLetterTopic: a run journaled from a dead-letter topic that is then deleted
// and recreated, and refilled with records at the same offsets — the same dead letters again,
// with the same event ids and timestamps, so that only the topic's ID tells them apart. The new
// records are not replayed (dlq's status, and replay's selection by it), a resume of the old
// run is refused with a plain error that says why, and so is a plan made before.
func TestRecreatedDeadLetterTopic(t *testing.T) {
	eachStore(t, func(t *testing.T, st *dedup.Store) {
		c := cluster(t)
		_, dlt, _ := deadLettersWithMissingTarget(t, 6, 4)
		// A single pass sends 0-3 and stops at 4, whose target does not exist: a failed run,
		// resumable, its checkpoint at 3.
		p, err := NewPlan(t.Context(), c, Spec{From: dlt})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Execute(t.Context(), c, st, p, ExecOptions{Operator: "tester", Reason: "test", SinglePass: true})
		var mt *MissingTargetError
		if !errors.As(err, &mt) || sum.Status != dedup.RunFailed || sum.Counts.Sent != 4 {
			t.Fatalf("the run to resume: %+v %v", sum, err)
		}
		lookup := dlq.StatusLookup{Store: st, TopicID: c.TopicID} // the dead letters' own group
		addrs := func(offsets ...int) []string {
			var out []string
			for _, o := range offsets {
				out = append(out, fmt.Sprintf("%s/0/%d", dlt, o))
			}
			return out
		}
		statuses := listStatuses(t, c, lookup, dlt)
		if got := withStatus(statuses, dlq.StatusReplayed); !slices.Equal(got, addrs(0, 1, 2, 3)) {
			t.Fatalf("before the topic is recreated, replayed: %v (all %v)", got, statuses)
		}
		stale, err := NewPlan(t.Context(), c, Spec{From: dlt, FilterSpec: dlq.FilterSpec{EventID: "evt-0005"}})
		if err != nil {
			t.Fatal(err)
		}

		old := readTopic(t, c, dlt)
		then, now := recreateTopic(t, c, dlt, 1)
		again := make([]*kgo.Record, len(old))
		for i, r := range old {
			again[i] = &kgo.Record{Topic: dlt, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		}
		testenv.Produce(t, testenv.Client(t), again...)
		c2 := cluster(t) // a process of after the recreation
		if back := readTopic(t, c2, dlt); len(back) != len(old) || back[3].Offset != 3 || !back[3].Timestamp.Equal(old[3].Timestamp) {
			t.Fatalf("the recreated topic holds %d records", len(back))
		}

		// The new records at the same coordinates are not replayed: pending, for dlq and replay.
		statuses = listStatuses(t, c2, dlq.StatusLookup{Store: st, TopicID: c2.TopicID}, dlt)
		if got := withStatus(statuses, dlq.StatusPending); !slices.Equal(got, addrs(0, 1, 2, 3, 4, 5)) {
			t.Fatalf("after the topic was recreated, pending: %v (all %v)", got, statuses)
		}
		if got := selected(t, c2, st, Spec{From: dlt, Statuses: []dlq.Status{dlq.StatusPending}}); !slices.Equal(got, addrs(0, 1, 2, 3, 4, 5)) {
			t.Fatalf("after the topic was recreated, replay --status pending selects %v", got)
		}
		// Only the topic ID told them apart: without it, the same event ids and timestamps at
		// the same offsets are taken for the records sent (as StatusLookup.TopicID says).
		blind := listStatuses(t, c2, dlq.StatusLookup{Store: st}, dlt)
		if got := withStatus(blind, dlq.StatusReplayed); !slices.Equal(got, addrs(0, 1, 2, 3)) {
			t.Fatalf("without topic IDs, replayed: %v (all %v)", got, blind)
		}

		// Resuming the old run is refused, force or not.
		for _, force := range []bool{false, true} {
			_, err = LoadRun(t.Context(), c2, st, sum.RunID, force)
			var rec *SourceRecreatedError
			if !errors.As(err, &rec) || fwerr.KindOf(err) != fwerr.KindError || rec.Then != then || rec.Now != now {
				t.Fatalf("resume of a run whose source topic was recreated (force %v): %v (kind %v)", force, err, fwerr.KindOf(err))
			}
			for _, part := range []string{"run " + sum.RunID + " cannot be resumed", "source topic " + dlt + " was deleted and recreated since the run",
				"topic ID " + then + " then, " + now + " now", "its checkpoints name records that no longer exist", "start a new replay"} {
				if !strings.Contains(err.Error(), part) {
					t.Fatalf("the refusal %q does not say %q", err, part)
				}
			}
		}
		// A plan made before the recreation is refused too, before anything is recorded or sent.
		runs, _ := st.ReplayRuns(t.Context(), dedup.ReplayRunFilter{})
		_, err = Execute(t.Context(), c2, st, stale, ExecOptions{Operator: "tester", Reason: "test"})
		var rec *SourceRecreatedError
		if !errors.As(err, &rec) || rec.RunID != "" || !strings.Contains(err.Error(), "since the replay was planned") {
			t.Fatalf("a plan of before the recreation: %v", err)
		}
		if after, _ := st.ReplayRuns(t.Context(), dedup.ReplayRunFilter{}); len(after) != len(runs) {
			t.Fatalf("a refused plan recorded a run: %d runs, %d before", len(after), len(runs))
		}
		// The journal still holds the old run, with the topic ID it read.
		run, _, err := st.ReplayRun(t.Context(), sum.RunID)
		if err != nil || !maps.Equal(run.SourceTopicIDs, map[string]string{dlt: then}) {
			t.Fatalf("the old run: %+v %v", run.SourceTopicIDs, err)
		}
	})
}
