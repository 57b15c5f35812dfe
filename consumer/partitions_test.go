package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// perPartition produces n small events to each of the topic's partitions.
func perPartition(t *testing.T, topic string, partitions int32, n int) {
	t.Helper()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, smallEvent(t, topic, p, fmt.Sprintf("ev-%d-%d", p, i), fmt.Sprintf("task-%d-%d", p, i)))
		}
	}
	testenv.Produce(t, testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs...)
}

// watching wraps a handler: it delays every event, notes how many events had been handled
// in all when each partition's first one came, and holds partition 0's events while gate
// is open.
type watching struct {
	named
	delay time.Duration
	gate  chan struct{} // nil: no gate; partition 0 waits until it is closed

	mu      sync.Mutex
	handled int
	first   map[int32]int // partition → events handled before its first
}

// calls is how many events the handler was given, held ones included.
func (w *watching) calls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.handled
}

func (w *watching) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	rec := m.Record
	w.mu.Lock()
	if _, ok := w.first[rec.Partition]; !ok {
		w.first[rec.Partition] = w.handled
	}
	w.handled++
	w.mu.Unlock()
	if w.gate != nil && rec.Partition == 0 {
		select {
		case <-w.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return slow{w.named, w.delay}.Handle(ctx, tx, m)
}

// TestPartitionsStartTogether: the partitions of one consumer start together. A poll that
// handed records out partition after partition, up to a queue limit, let the first
// partition work through most of its records before the others got theirs.
func TestPartitionsStartTogether(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 4)
	const perPart, batch = 1000, 50
	perPartition(t, topic, 4, perPart)
	group := testenv.Name(t, "audit-together")
	h := &watching{named: handler(t, st, schema, handlers.NameAudit, group, handlers.Config{}), delay: 2 * time.Millisecond, first: map[int32]int{}}
	o := engineOpts(t, st, h, topic, group)
	o.BatchMax = batch
	stats := run(t, o)
	if stats.Processed != 4*perPart {
		t.Errorf("processed %d, want %d", stats.Processed, 4*perPart)
	}
	t.Logf("events handled in all when each partition handled its first: %v", h.first)
	// Four workers that start together have handled a few events each when the last one
	// starts; 4 batches in all leaves room for a busy machine.
	for p := range int32(4) {
		if n, ok := h.first[p]; !ok || n > 4*batch {
			t.Errorf("partition %d started after %d events of the others (present %v), want at most %d", p, n, ok, 4*batch)
		}
	}
}

// TestSlowPartitionDoesNotHoldUpOthers: while partition 0's handler is stuck, the other
// partitions are consumed and committed to their end; then partition 0 finishes too.
func TestSlowPartitionDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 4)
	const perPart = 1000
	perPartition(t, topic, 4, perPart)
	group := testenv.Name(t, "audit-stuck")
	gate := make(chan struct{})
	h := &watching{named: handler(t, st, schema, handlers.NameAudit, group, handlers.Config{}), gate: gate, first: map[int32]int{}}
	o := engineOpts(t, st, h, topic, group)
	o.BatchMax = 50
	e, _, runErr := startEngine(t, o, 2*time.Minute)
	cl := testenv.Client(t)
	var behind []string
	waitUntil(t, runErr, "partitions 1-3 to be committed to their end while partition 0 is stuck", func() bool {
		behind, _ = groupLag(t, cl, group, topic)
		return len(behind) == 1 && strings.HasPrefix(behind[0], "0@")
	})
	t.Logf("partition 0 stuck, the others done: behind %v, %+v", behind, e.Stats())
	close(gate)
	if err := <-runErr; err != nil {
		t.Fatalf("run: %v", err)
	}
	if behind, _ := groupLag(t, cl, group, topic); len(behind) != 0 {
		t.Errorf("behind after the run: %v", behind)
	}
	if st := e.Stats(); st.Processed != 4*perPart {
		t.Errorf("processed %d, want %d", st.Processed, 4*perPart)
	}
}

// TestPausedPartitionResumesBesideAnIdleOne: a partition whose fetching was paused (its
// queue full) beside a partition with nothing to fetch is fetched again as soon as its queue
// is down to half, not when the poll, which only the idle partition could feed, times out.
// With the poll's wait set to an hour, every event of the busy partition is applied, its
// fetching paused and resumed again and again on the way.
func TestPausedPartitionResumesBesideAnIdleOne(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 2)
	// Record batches of 250 events, fetched one a fetch: the queue is full (8 batches of
	// 100) after four fetches, and the partition is paused and resumed some 20 times.
	const events, batch, produced = 10_000, 100, 250
	cl := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for n := 0; n < events; n += produced {
		recs := make([]*kgo.Record, 0, produced)
		for i := n; i < n+produced; i++ {
			recs = append(recs, smallEvent(t, topic, 0, fmt.Sprintf("ev-%d", i), fmt.Sprintf("task-%d", i)))
		}
		testenv.Produce(t, cl, recs...)
	}
	group := testenv.Name(t, "audit-resume")
	o := engineOpts(t, st, handler(t, st, schema, handlers.NameAudit, group, handlers.Config{}), topic, group)
	o.BatchMax = batch
	o.Kafka = append(o.Kafka, kgo.FetchMaxPartitionBytes(1)) // a broker sends one record batch
	e, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	consumer.SetPollWait(e, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(ctx) }()
	waitUntil(t, runErr, "every event of partition 0 applied", func() bool { return e.Stats().Processed == events })
	cancel()
	if err := <-runErr; err != nil {
		t.Fatalf("run: %v", err)
	}
	if st := e.Stats(); st.Processed != events || st.Batches < events/batch {
		t.Errorf("processed %d events in %d batches, want %d in at least %d", st.Processed, st.Batches, events, events/batch)
	}
}

// TestTransactionMarkers: events of an aborted transaction are not applied, and a log that
// ends in a commit marker is consumed to its end (the marker is committed past), so that
// StopWhenIdle stops.
func TestTransactionMarkers(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 1)
	txn := testenv.Client(t, kgo.TransactionalID(testenv.Name(t, "txn")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := context.Background()
	for i, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		testenv.Produce(t, txn, smallEvent(t, topic, 0, fmt.Sprintf("ev-txn-%d", i), fmt.Sprintf("task-%d", i)))
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	// offsets 0 event, 1 commit marker, 2 aborted event, 3 abort marker, 4 event, 5 commit
	// marker: wait for the last marker (written after EndTransaction returns).
	cl := testenv.Client(t)
	waitUntil(t, nil, "the last commit marker", func() bool {
		behind, _ := groupLag(t, cl, "fw-nobody", topic)
		return len(behind) == 1 && strings.HasSuffix(behind[0], "<6")
	})
	group := testenv.Name(t, "audit-txn")
	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	stats := run(t, engineOpts(t, st, h, topic, group))
	if stats.Processed != 2 || stats.Records != 2 {
		t.Errorf("stats %+v; want the 2 committed events only", stats)
	}
	audit := tableName(t, st, schema, handlers.TableAuditLog)
	if n := queryInt(t, st, `SELECT count(*) FROM `+audit+` WHERE consumer = $1 AND event_id = 'ev-txn-1'`, group); n != 0 {
		t.Error("the aborted event was applied")
	}
	if behind, committed := groupLag(t, cl, group, topic); len(behind) != 0 || committed[0] != 6 {
		t.Errorf("committed %v, behind %v; want 6, past the last marker", committed, behind)
	}
}
