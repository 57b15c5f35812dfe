package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestScan reads two dead-letter topics on the real broker: in topic, partition and offset
// order; bounded by the end offsets of the plan (dead letters written after it are not read);
// through a filter; with progress; stopped early by ErrStop; and List's limit.
func TestScan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := testenv.Topic(t, 3, nil), testenv.Topic(t, 1, nil)
	c := testenv.Cluster(t)
	produce := func(topic string, partition int32, n int, from int) {
		cl := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for i := range n {
			reason := dlq.ReasonRejected
			if (from+i)%2 == 1 {
				reason = dlq.ReasonMalformed
			}
			r := dlq.NewDeadLetter(&kgo.Record{Topic: "tasks", Offset: int64(from + i), Value: []byte(fmt.Sprintf(`{"event_id":"e-%s-%d-%d"}`, topic, partition, from+i))},
				dlq.Meta{Topic: topic, Reason: reason, Group: "g"})
			r.Partition = partition
			recs = append(recs, r)
		}
		testenv.Produce(t, cl, recs...)
	}
	for p := range int32(3) {
		produce(a, p, 4, 0)
	}
	produce(b, 0, 5, 0)

	topics, err := dlq.Topics(ctx, c, []string{b, a, a}, nil)
	if err != nil || !slices.Equal(topics, slices.Sorted(slices.Values([]string{a, b}))) {
		t.Fatalf("Topics: %v %v", topics, err)
	}
	if _, err := dlq.Topics(ctx, c, []string{a, "fw-no-such-topic-" + a}, nil); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("missing topic: %v", err)
	}
	if got, err := dlq.Topics(ctx, c, nil, regexp.MustCompile("^"+regexp.QuoteMeta(b)+"$")); err != nil || !slices.Equal(got, []string{b}) {
		t.Fatalf("pattern: %v %v", got, err)
	}

	var calls [][2]int64
	s, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{InOrder: true, Progress: func(done, total int64) { calls = append(calls, [2]int64{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	// Written after the plan: never read by it.
	produce(a, 0, 3, 100)
	produce(b, 0, 3, 100)
	if s.Total() != 17 {
		t.Fatalf("planned %d offsets, want 17", s.Total())
	}
	var seen []string
	res, err := s.Run(ctx, dlq.Filter{}, func(d dlq.DeadLetter) error {
		seen = append(seen, fmt.Sprintf("%s/%d/%d", d.Topic, d.Partition, d.Offset))
		return nil
	})
	if err != nil || res.Read != 17 || res.Matched != 17 || res.Stopped {
		t.Fatalf("run: %+v %v", res, err)
	}
	want := []string{}
	for _, topic := range topics {
		parts := int32(3)
		if topic == b {
			parts = 1
		}
		for p := range parts {
			n := 4
			if topic == b {
				n = 5
			}
			for o := range n {
				want = append(want, fmt.Sprintf("%s/%d/%d", topic, p, o))
			}
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("order\n got %v\nwant %v", seen, want)
	}
	if len(calls) < 2 || calls[0] != [2]int64{0, 17} || calls[len(calls)-1] != [2]int64{17, 17} {
		t.Errorf("progress calls %v", calls)
	}

	// A filter, and ErrStop after three matches.
	n := 0
	res, err = s.Run(ctx, dlq.Filter{Reasons: []string{dlq.ReasonMalformed}}, func(d dlq.DeadLetter) error {
		if d.Reason != dlq.ReasonMalformed {
			t.Errorf("filter let %s through", d.Reason)
		}
		if n++; n == 3 {
			return dlq.ErrStop
		}
		return nil
	})
	if err != nil || !res.Stopped || res.Matched != 3 {
		t.Fatalf("stopped run: %+v %v", res, err)
	}

	// List: the limit, and More only when one more matched.
	for _, tc := range []struct {
		limit, listed int
		more          bool
	}{{0, 17, false}, {5, 5, true}, {17, 17, false}, {16, 16, true}} {
		res, err := dlq.List(ctx, s, dlq.ListOptions{Limit: tc.limit}, func(dlq.Entry) error { return nil })
		if err != nil || res.Listed != tc.listed || res.More != tc.more {
			t.Errorf("limit %d: %+v %v", tc.limit, res, err)
		}
	}

	// Interleaved reading (stats) reads the same records.
	s2, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{Parse: dlq.ParseOptions{NoEnvelope: true}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := dlq.Summarise(ctx, s2, topics, dlq.SummaryOptions{By: []dlq.StatsKey{dlq.ByReason}, Window: time.Hour, Now: time.Now()})
	if err != nil || rep.RecordsRead != 23 || len(rep.Topics) != 2 || len(rep.Groups) != 2 {
		t.Fatalf("summary: %+v %v", rep, err)
	}

	// A window before everything plans nothing.
	s3, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{Selection: kafka.Selection{Until: time.Now().Add(-24 * time.Hour)}})
	if err != nil || s3.Total() != 0 {
		t.Fatalf("empty window: %d %v", s3.Total(), err)
	}
}

// TestScanSkipsDeletedTopics: topics found by a pattern may be deleted before they are read
// (another team's topic that came and went); with SkipDeleted the scan reads the others and
// names the deleted one, without it the scan fails as it does for a topic the operator named.
func TestScanSkipsDeletedTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := testenv.Topic(t, 1, nil)
	gone := testenv.Name(t, "gone") + ".dlq"
	c := testenv.Cluster(t)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(a))
	testenv.Produce(t, cl, dlq.NewDeadLetter(&kgo.Record{Topic: "tasks", Value: []byte(`{"event_id":"e-1"}`)}, dlq.Meta{Topic: a, Reason: dlq.ReasonRejected}))

	scan, err := dlq.PlanScan(ctx, c, []string{a, gone}, dlq.ScanOptions{InOrder: true, SkipDeleted: true})
	if err != nil {
		t.Fatalf("plan with SkipDeleted: %v", err)
	}
	if got := scan.Deleted(); !slices.Equal(got, []string{gone}) {
		t.Fatalf("deleted = %v, want [%s]", got, gone)
	}
	res, err := scan.Run(ctx, dlq.Filter{}, func(dlq.DeadLetter) error { return nil })
	if err != nil || res.Matched != 1 {
		t.Fatalf("run: %+v, %v; want the one dead letter of %s", res, err, a)
	}
	var ute *kafka.UnknownTopicError
	if _, err := dlq.PlanScan(ctx, c, []string{a, gone}, dlq.ScanOptions{InOrder: true}); !errors.As(err, &ute) || ute.Topic != gone {
		t.Fatalf("plan without SkipDeleted: %v, want an UnknownTopicError for %s", err, gone)
	}

	// Deleted after the plan, while the scan reads: the client would wait for its partitions
	// for ever. Read in order (dlq list), all at once (dlq stats) and ahead, the scan skips it
	// and reads the others; without SkipDeleted it fails naming it.
	for _, o := range []dlq.ScanOptions{{InOrder: true}, {}, {InOrder: true, Ahead: true}} {
		late := testenv.Topic(t, 2, nil)
		lcl := testenv.Client(t, kgo.DefaultProduceTopic(late))
		testenv.Produce(t, lcl, dlq.NewDeadLetter(&kgo.Record{Topic: "tasks", Value: []byte(`{"event_id":"e-2"}`)}, dlq.Meta{Topic: late, Reason: dlq.ReasonRejected}))
		skip := o
		skip.SkipDeleted = true
		scan, err := dlq.PlanScan(ctx, c, []string{a, late}, skip)
		if err != nil {
			t.Fatal(err)
		}
		strict, err := dlq.PlanScan(ctx, c, []string{a, late}, o)
		if err != nil {
			t.Fatal(err)
		}
		testenv.DeleteTopic(t, lcl, late)
		res, err := scan.Run(ctx, dlq.Filter{}, func(dlq.DeadLetter) error { return nil })
		if err != nil || res.Matched != 1 || !slices.Equal(scan.Deleted(), []string{late}) {
			t.Fatalf("%+v: run: %+v, %v, deleted %v; want the one dead letter of %s and %s deleted", o, res, err, scan.Deleted(), a, late)
		}
		if _, err := strict.Run(ctx, dlq.Filter{}, func(dlq.DeadLetter) error { return nil }); !errors.As(err, &ute) || ute.Topic != late {
			t.Fatalf("%+v: run without SkipDeleted: %v, want an UnknownTopicError for %s", o, err, late)
		}
	}
}

// TestListSharesLimitFairly: a limit over a large three-partition dead-letter topic and a
// small one lists the small one whole and shares the rest evenly among the large one's
// partitions; a partition that has fewer matching dead letters than offsets leaves its room
// to its siblings; Shares names each topic cut and at most how many more it has.
func TestListSharesLimitFairly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := testenv.Name(t, "fw")
	big, small := base+".big.dlq", base+".tasks.dlq" // read in this order
	testenv.CreateTopic(t, big, 3, nil)
	testenv.CreateTopic(t, small, 1, nil)
	c := testenv.Cluster(t)
	produce := func(topic string, partition int32, n int, reason func(i int) string) {
		cl := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		recs := make([]*kgo.Record, 0, n)
		for i := range n {
			r := dlq.NewDeadLetter(&kgo.Record{Topic: "tasks", Value: []byte(fmt.Sprintf(`{"event_id":"e-%d-%d"}`, partition, i))},
				dlq.Meta{Topic: topic, Reason: reason(i), Group: "g"})
			r.Partition = partition
			recs = append(recs, r)
		}
		testenv.Produce(t, cl, recs...)
	}
	rejected := func(int) string { return dlq.ReasonRejected }
	produce(big, 0, 1000, rejected)
	produce(big, 1, 1000, func(i int) string { // 5 rejected in 1000
		if i%200 == 0 {
			return dlq.ReasonRejected
		}
		return dlq.ReasonMalformed
	})
	produce(big, 2, 1000, rejected)
	produce(small, 0, 32, rejected)
	topics := []string{big, small}
	s, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{InOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	list := func(limit int, f dlq.Filter) (dlq.ListResult, map[string]int, []string) {
		t.Helper()
		per := map[string]int{}
		var order []string
		res, err := dlq.List(ctx, s, dlq.ListOptions{Limit: limit, Filter: f}, func(e dlq.Entry) error {
			key := fmt.Sprintf("%s/%d", e.Topic, e.Partition)
			per[key]++
			if len(order) == 0 || order[len(order)-1] != key {
				order = append(order, key)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, per, order
	}
	p := func(topic string, n int) string { return fmt.Sprintf("%s/%d", topic, n) }

	// No filter: 168 from the large topic, 56 from each partition, and the 32 of the small one.
	res, per, order := list(200, dlq.Filter{})
	want := map[string]int{p(big, 0): 56, p(big, 1): 56, p(big, 2): 56, p(small, 0): 32}
	if res.Listed != 200 || !res.More || fmt.Sprint(per) != fmt.Sprint(want) {
		t.Fatalf("limit 200: listed %d more %v per partition %v, want 200, true, %v", res.Listed, res.More, per, want)
	}
	if !slices.Equal(order, []string{p(big, 0), p(big, 1), p(big, 2), p(small, 0)}) {
		t.Errorf("order %v: want topic and partition order", order)
	}
	wantShares := []dlq.TopicShare{{Topic: big, Listed: 168, More: true, Left: 2832}, {Topic: small, Listed: 32}}
	if !slices.Equal(res.Shares, wantShares) || !slices.Equal(cutTopics(res), []string{big}) {
		t.Errorf("shares %+v, want %+v", res.Shares, wantShares)
	}

	// Rejected only: partition 1 has 5, not the 56 its offsets promised; partitions 0 and 2
	// take its room in a second round, listed after the first.
	res, per, order = list(200, dlq.Filter{Reasons: []string{dlq.ReasonRejected}})
	want = map[string]int{p(big, 0): 82, p(big, 1): 5, p(big, 2): 81, p(small, 0): 32}
	if res.Listed != 200 || !res.More || fmt.Sprint(per) != fmt.Sprint(want) {
		t.Fatalf("rejected: listed %d more %v per partition %v, want 200, true, %v", res.Listed, res.More, per, want)
	}
	if !slices.Equal(order, []string{p(big, 0), p(big, 1), p(big, 2), p(small, 0), p(big, 0), p(big, 2)}) {
		t.Errorf("rejected: order %v", order)
	}
	if len(res.Shares) != 2 || res.Shares[0].Listed != 168 || !res.Shares[0].More || res.Shares[1] != (dlq.TopicShare{Topic: small, Listed: 32}) {
		t.Errorf("rejected: shares %+v", res.Shares)
	}

	// The same through statuses: partition 1's events but 5 processed by the consumer, the
	// pending ones listed, looked up in small batches.
	st := testenv.SQLiteStore(t)
	var processed []dedup.Marker
	for i := range 1000 {
		if i%200 != 0 {
			processed = append(processed, dedup.Marker{EventID: fmt.Sprintf("e-1-%d", i)})
		}
	}
	if err := st.InTx(ctx, func(tx *dedup.Tx) error { _, err := st.Claim(ctx, tx, "g", processed); return err }); err != nil {
		t.Fatal(err)
	}
	per = map[string]int{}
	res, err = dlq.List(ctx, s, dlq.ListOptions{Limit: 200, Lookup: dlq.StatusLookup{Store: st}, Statuses: []dlq.Status{dlq.StatusPending}, StatusBatch: 7},
		func(e dlq.Entry) error {
			if e.Status.Status != dlq.StatusPending {
				t.Errorf("%s/%d/%d is %s", e.Topic, e.Partition, e.Offset, e.Status.Status)
			}
			per[fmt.Sprintf("%s/%d", e.Topic, e.Partition)]++
			return nil
		})
	want = map[string]int{p(big, 0): 82, p(big, 1): 5, p(big, 2): 81, p(small, 0): 32}
	if err != nil || res.Listed != 200 || !res.More || fmt.Sprint(per) != fmt.Sprint(want) {
		t.Fatalf("pending: %v listed %d more %v per partition %v, want 200, true, %v", err, res.Listed, res.More, per, want)
	}

	// Room for all: everything, nothing cut.
	res, _, _ = list(3032, dlq.Filter{})
	if res.Listed != 3032 || res.More || len(cutTopics(res)) != 0 {
		t.Errorf("limit 3032: %+v", res)
	}
	// A limit smaller than the topics: the first one, and the other named as cut.
	res, per, _ = list(1, dlq.Filter{})
	if res.Listed != 1 || per[p(big, 0)] != 1 || !slices.Equal(cutTopics(res), []string{big, small}) {
		t.Errorf("limit 1: %+v %v", res, per)
	}
}

// cutTopics are the topics, in scan order, some of whose dead letters the limit left out.
func cutTopics(r dlq.ListResult) []string {
	var out []string
	for _, t := range r.Shares {
		if t.More {
			out = append(out, t.Topic)
		}
	}
	return out
}
