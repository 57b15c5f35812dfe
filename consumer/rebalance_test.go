package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// slow delays every event, so that a rebalance happens while batches are in flight.
type slow struct {
	named
	delay time.Duration
}

func (s slow) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	time.Sleep(s.delay)
	return s.named.Handle(ctx, tx, m)
}

// TestRebalance: a second member joins the group while the first is busy (partitions move
// from one to the other mid-stream), then the first shuts down (its partitions move again).
// Whatever moved is neither lost nor applied twice.
func TestRebalance(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 4)
	recs, man := produceSample(t, producer(t), topic, sample.Options{Seed: 41, Aggregates: 600, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 20})
	group := testenv.Name(t, "projection-rebalance")
	// The first member alone needs about 8s for the stream (4 partitions at once, 5ms an
	// event): the second one's join, 3 to 4s, must come while there is work left to move.
	h := slow{handler(t, st, schema, handlers.NameProjection, group, handlers.Config{}), 5 * time.Millisecond}

	start := func(ctx context.Context, stopWhenIdle time.Duration) (*consumer.Runner, chan error) {
		o := engineOpts(t, st, h, topic, group)
		o.BatchMax = 50
		o.StopWhenIdle = stopWhenIdle
		e, err := newRunner(o)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		return e, done
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	ctxA, stopA := context.WithCancel(context.Background())
	defer stopA()
	a, doneA := start(ctxA, 0)
	waitFor("the first member to start", func() bool { return a.Stats().Processed > 200 })
	ctxB, stopB := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stopB()
	b, doneB := start(ctxB, 4*time.Second)
	waitFor("the second member to get partitions", func() bool { return b.Stats().Processed > 100 })
	atHandover := a.Stats()
	stopA() // drain, commit, leave: the rest moves to b
	if err := <-doneA; err != nil {
		t.Fatalf("first member: %v", err)
	}
	if err := <-doneB; err != nil {
		t.Fatalf("second member: %v", err)
	}
	sa, sb := a.Stats(), b.Stats()

	applied, stale := checkProjection(t, st, schema, group, man)
	dls := readAll(t, dlqTopic)
	report := fmt.Sprintf("rebalance: first member %d records (%d when the second took partitions), second %d; duplicates seen %d+%d; "+
		"applied_events %d (want %d), stale_events %d (want %d), dead letters %d",
		sa.Records, atHandover.Records, sb.Records, sa.Duplicates, sb.Duplicates, applied, man.Events, stale, len(man.Stale), len(dls))
	t.Log(report)
	if sa.Records+sb.Records < int64(len(recs)) {
		t.Errorf("the members saw %d records in all, fewer than the %d produced", sa.Records+sb.Records, len(recs))
	}
	if len(dls) != 0 {
		t.Errorf("%d dead letters", len(dls))
	}
}

// TestWaitingForPartitionsSaysWhy: a member that joins while another one holds the group's
// rebalance up (here a member that never polls again, as a killed one never heartbeats again)
// gets no partition until that one is gone, and says why while it waits instead of sitting
// silent; once the other leaves, it gets the partition and applies every event.
func TestWaitingForPartitionsSaysWhy(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 1)
	_, man := produceSample(t, producer(t), topic, sample.Options{Seed: 43, Aggregates: 20, EventsPerAggregate: 5})
	group := testenv.Name(t, "projection-waiting")

	holder := testenv.HoldRebalance(t, group, topic)

	counts := map[string]*atomic.Int64{"waiting for the group to assign partitions": {}, "partitions assigned": {}}
	o := engineOpts(t, st, handler(t, st, schema, handlers.NameProjection, group, handlers.Config{}), topic, group)
	o.Logger = slog.New(counting{testLogger(t).Handler(), counts})
	e, _, runErr := startEngine(t, o, 3*time.Minute)
	testenv.WaitUntil(t, time.Minute, nil, "the runner warns that it waits for the group", func() bool {
		return counts["waiting for the group to assign partitions"].Load() > 0
	})
	if counts["waiting for the group to assign partitions"].Load() == 0 || counts["partitions assigned"].Load() != 0 {
		t.Fatalf("while the holder held the partition: %d notes, %d assignments; want a note and no assignment",
			counts["waiting for the group to assign partitions"].Load(), counts["partitions assigned"].Load())
	}
	holder.Close() // it leaves the group: the rebalance completes
	s := stopped(t, e, runErr)
	if counts["partitions assigned"].Load() == 0 || s.Processed != int64(man.Events) {
		t.Fatalf("after the holder left: %d assignments, %+v; want the partition and %d events applied", counts["partitions assigned"].Load(), s, man.Events)
	}
}

// TestForeignGroupProtocolStops: a group held by another application's consumers that speak
// another assignment protocol (here the range balancer alone; a librdkafka consumer's default)
// cannot be joined until they leave, and sharing it would take their partitions: the runner
// stops at once, saying why and naming the group, instead of retrying the join for ever.
func TestForeignGroupProtocolStops(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 1)
	group := testenv.Name(t, "projection-foreign")
	foreign := testenv.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.RangeBalancer()))
	testenv.WaitUntil(t, time.Minute, nil, "the foreign member joins the group", func() bool {
		testenv.PollOnce(foreign)
		_, gen := foreign.GroupMetadata()
		return gen > 0
	})
	o := engineOpts(t, st, handler(t, st, schema, handlers.NameProjection, group, handlers.Config{}), topic, group)
	_, _, runErr := startEngine(t, o, 3*time.Minute)
	err := <-runErr
	if err == nil || !errors.Is(err, kerr.InconsistentGroupProtocol) ||
		!strings.Contains(err.Error(), "consumer group "+group+" is used by members of another assignment protocol") {
		t.Fatalf("run: %v; want it stopped for the group's other protocol", err)
	}
}
