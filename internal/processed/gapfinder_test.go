package processed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// readOf is rec with its envelope read, as Check's reader hands it to the gap finder.
func readOf(rec *kgo.Record) schema.Read {
	var d *schema.Decoder
	ev, err, _ := d.ReadEvent(context.Background(), rec)
	return schema.Read{Record: rec, Event: ev, Err: err}
}

// TestGapFinderBatches checks, without a broker or a store, that lookups go out in batches of
// at most the batch size while records stream in (looked up beside the reading, resolved in
// order),
// that a redelivery counts per record, that missing records are passed on in the order read,
// and that a lookup failure stops the scan with its error.
func TestGapFinderBatches(t *testing.T) {
	marked := map[string]bool{}
	for i := 0; i < 2500; i += 2 {
		marked[fmt.Sprintf("e%d", i)] = true
	}
	var (
		mu    sync.Mutex
		calls []int
	)
	rep := &CheckReport{}
	var missing []MissingRecord
	g := &gapFinder{
		lookup: func(_ context.Context, ids []string) ([]bool, error) {
			mu.Lock()
			calls = append(calls, len(ids))
			mu.Unlock()
			out := make([]bool, len(ids))
			for i, id := range ids {
				out[i] = marked[id]
			}
			return out, nil
		},
		onMissing: func(r MissingRecord) error { missing = append(missing, r); return nil },
		batchSize: 1000,
		rep:       rep,
	}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	g.start(ctx, stop)
	for i := 0; i < 2500; i++ {
		value := fmt.Sprintf(`{"specversion":"1.0","id":"e%d","type":"t","source":"s"}`, i)
		if i == 7 {
			value = `not an event`
		}
		if err := g.add(ctx, readOf(&kgo.Record{Topic: "tasks", Partition: int32(i % 3), Offset: int64(i), Value: []byte(value)})); err != nil {
			t.Fatal(err)
		}
	}
	// A redelivery of a marked and of a missing event.
	for _, id := range []string{"e0", "e1"} {
		_ = g.add(ctx, readOf(&kgo.Record{Topic: "tasks", Offset: 9999, Value: []byte(`{"specversion":"1.0","id":"` + id + `","type":"t","source":"s"}`)}))
	}
	if err := g.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(calls) // the lookups run at once: they may start in any order
	if fmt.Sprint(calls) != "[501 1000 1000]" {
		t.Errorf("lookup batches = %v", calls)
	}
	if rep.Records != 2502 || rep.Malformed != 1 || rep.Events != 2501 || rep.WithMarker != 1251 || rep.Missing != 1250 || int64(len(missing)) != rep.Missing {
		t.Errorf("counts = %+v, %d missing passed on", rep, len(missing))
	}
	if missing[0].EventID != "e1" || missing[0].Offset != 1 || missing[0].Partition != 1 || missing[len(missing)-1].Offset != 9999 {
		t.Errorf("first missing = %+v, last %+v", missing[0], missing[len(missing)-1])
	}
	if len(rep.MalformedExamples) != 1 || rep.MalformedExamples[0].Offset != 7 {
		t.Errorf("malformed = %+v", rep.MalformedExamples)
	}

	// A lookup failure stops the scan with that error: the reader's next hand-over fails
	// with it (once the lookup goroutine has cancelled), and so does the wait.
	boom := errors.New("boom")
	failing := &gapFinder{rep: &CheckReport{}, batchSize: 1,
		lookup: func(context.Context, []string) ([]bool, error) { return nil, boom }}
	fctx, fstop := context.WithCancelCause(context.Background())
	defer fstop(nil)
	failing.start(fctx, fstop)
	if err := failing.add(fctx, readOf(&kgo.Record{Value: []byte(`{"event_id":"x"}`)})); err != nil {
		t.Fatalf("the first hand-over: %v", err)
	}
	<-fctx.Done()
	if err := failing.add(fctx, readOf(&kgo.Record{Value: []byte(`{"event_id":"y"}`)})); !errors.Is(err, boom) {
		t.Errorf("a hand-over after the failure = %v, want boom", err)
	}
	if err := failing.wait(); !errors.Is(err, boom) {
		t.Errorf("wait = %v, want boom", err)
	}

	// An answer that is not one per record is a failure, not a count.
	short := &gapFinder{rep: &CheckReport{}, batchSize: 2,
		lookup: func(_ context.Context, ids []string) ([]bool, error) { return make([]bool, len(ids)-1), nil }}
	sctx, sstop := context.WithCancelCause(context.Background())
	defer sstop(nil)
	short.start(sctx, sstop)
	for _, id := range []string{"x", "y"} {
		if err := short.add(sctx, readOf(&kgo.Record{Value: []byte(`{"event_id":"` + id + `"}`)})); err != nil {
			t.Fatalf("hand-over of %s: %v", id, err)
		}
	}
	if err := short.wait(); err == nil || !strings.Contains(err.Error(), "answered for 1 of 2") {
		t.Errorf("wait = %v, want the store's short answer", err)
	}
	if short.rep.WithMarker+short.rep.Missing != 0 {
		t.Errorf("a short answer was counted: %+v", short.rep)
	}
}

// TestGapFinderLookupsAtOnce checks that four lookups run at once while the store has not
// answered (waitingLookups handed-over batches, the one being resolved and the one being
// handed over), that the reader then waits rather than starting a fifth, and that everything
// is counted once the store answers.
func TestGapFinderLookupsAtOnce(t *testing.T) {
	var (
		mu                 sync.Mutex
		inFlight, most     int
		release            = make(chan struct{})
		returned, received atomic.Int64
	)
	rep := &CheckReport{}
	g := &gapFinder{
		lookup: func(_ context.Context, ids []string) ([]bool, error) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			received.Add(int64(len(ids)))
			<-release
			mu.Lock()
			inFlight--
			mu.Unlock()
			return make([]bool, len(ids)), nil
		},
		batchSize:  1,
		maxMissing: 100,
		rep:        rep,
	}
	ctx := started(t, g)
	added := make(chan error, 1)
	go func() {
		for i := range 10 {
			if err := g.add(ctx, readOf(&kgo.Record{Offset: int64(i), Value: []byte(fmt.Sprintf(`{"event_id":"e%d"}`, i))})); err != nil {
				added <- err
				return
			}
			returned.Add(1)
		}
		added <- nil
	}()
	testenv.WaitUntil(t, 30*time.Second, nil, "four lookups at once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight == 4
	})
	// The fourth hand-over waits for a place: three adds returned, no fifth lookup.
	if n := returned.Load(); n != 3 {
		t.Errorf("adds returned with four lookups waiting: %d, want 3", n)
	}
	close(release)
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	if err := g.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.wait(); err != nil {
		t.Fatal(err)
	}
	if most != 4 {
		t.Errorf("lookups at once: at most %d, want 4", most)
	}
	if rep.Events != 10 || rep.Missing != 10 || received.Load() != 10 || len(rep.MissingRecords) != 10 || rep.MissingRecords[9].Offset != 9 {
		t.Errorf("counts = %+v, %d ids looked up", rep, received.Load())
	}
}

// TestGapFinderKeepsCopies: the events' text comes as views of their records' values
// (schema.Read), and a missing record kept holds a copy of its own, whatever becomes of the
// values once the check is done with them.
func TestGapFinderKeepsCopies(t *testing.T) {
	rep := &CheckReport{}
	g := &gapFinder{
		lookup:     func(_ context.Context, ids []string) ([]bool, error) { return make([]bool, len(ids)), nil },
		batchSize:  2,
		maxMissing: 100,
		rep:        rep,
	}
	ctx := started(t, g)
	var values [][]byte
	for i := range 3 {
		value := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"e%d","type":"t%d","source":"s","aggregateid":"a%d"}`, i, i, i))
		rec := &kgo.Record{Offset: int64(i), Value: value}
		ev, err := envelope.DecodeRecordView(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.add(ctx, schema.Read{Record: rec, Event: ev}); err != nil {
			t.Fatal(err)
		}
		values = append(values, value)
	}
	if err := g.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.wait(); err != nil {
		t.Fatal(err)
	}
	for _, value := range values { // the records' values gone, the report read after
		for k := range value {
			value[k] = 'X'
		}
	}
	for i, r := range rep.MissingRecords {
		if r.EventID != fmt.Sprintf("e%d", i) || r.Type != fmt.Sprintf("t%d", i) || r.AggregateID != fmt.Sprintf("a%d", i) {
			t.Errorf("missing record %d = %+v", i, r)
		}
	}
	if len(rep.MissingRecords) != 3 {
		t.Errorf("%d missing records kept, want 3", len(rep.MissingRecords))
	}
}

// started starts g's resolving goroutine for a test, its context cancelled at the test's end.
func started(t *testing.T, g *gapFinder) context.Context {
	ctx, stop := context.WithCancelCause(context.Background())
	t.Cleanup(func() { stop(nil) })
	g.start(ctx, stop)
	return ctx
}

// TestListsKeepNoReadOrder: the report lists the first MaxMalformedExamples malformed records
// and the first MaxMissing missing ones by partition and offset, in that order, whichever order
// the partitions' reads interleave in (a fetch may bring partition 2 before partition 0).
func TestListsKeepNoReadOrder(t *testing.T) {
	var recs []*kgo.Record
	for p := range int32(3) {
		for o := range int64(30) {
			value := "not an event"
			if o%2 == 1 {
				value = fmt.Sprintf(`{"specversion":"1.0","id":"e-%d-%d","type":"t","source":"s"}`, p, o)
			}
			recs = append(recs, &kgo.Record{Topic: "tasks", Partition: p, Offset: o, Value: []byte(value)})
		}
	}
	lists := func(order []*kgo.Record) string {
		rep := &CheckReport{}
		g := &gapFinder{rep: rep, batchSize: 4, maxMissing: 7,
			lookup: func(_ context.Context, ids []string) ([]bool, error) { return make([]bool, len(ids)), nil }}
		ctx, stop := context.WithCancelCause(context.Background())
		defer stop(nil)
		g.start(ctx, stop)
		for _, r := range order {
			if err := g.add(ctx, readOf(r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := g.wait(); err != nil {
			t.Fatal(err)
		}
		rep.finish()
		if rep.Malformed != 45 || len(rep.MalformedExamples) != MaxMalformedExamples || rep.Missing != 45 || len(rep.MissingRecords) != 7 ||
			!rep.MissingTruncated {
			t.Fatalf("malformed %d (%d listed), missing %d (%d listed, truncated %v)",
				rep.Malformed, len(rep.MalformedExamples), rep.Missing, len(rep.MissingRecords), rep.MissingTruncated)
		}
		var b strings.Builder
		for _, m := range rep.MalformedExamples {
			fmt.Fprintf(&b, "%d/%d ", m.Partition, m.Offset)
		}
		b.WriteString("| ")
		for _, m := range rep.MissingRecords {
			fmt.Fprintf(&b, "%s ", m.EventID)
		}
		return b.String()
	}
	want := lists(recs)
	if !strings.HasPrefix(want, "0/0 0/2 ") || !strings.Contains(want, " 0/28 1/0 1/2 1/4 1/6 1/8 | e-0-1 e-0-3 ") ||
		!strings.HasSuffix(want, " e-0-13 ") {
		t.Fatalf("in partition order: %s", want)
	}
	// Partition 2's records first, then the others interleaved.
	var mixed []*kgo.Record
	mixed = append(mixed, recs[60:]...)
	for i := range 30 {
		mixed = append(mixed, recs[30+i], recs[i])
	}
	if got := lists(mixed); got != want {
		t.Errorf("read in another order:\n got %s\nwant %s", got, want)
	}
}
