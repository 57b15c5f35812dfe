package replay

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

func i64(v int64) *int64 { return &v }

func TestSpecValidate(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string // substring of the usage error; "" for valid
	}{
		{"whole topic", Spec{From: "orders.dlq"}, ""},
		{"no topic", Spec{}, "nothing to read"},
		{"bad topic", Spec{From: "a b"}, "a topic name holds only ASCII letters"},
		{"into itself", Spec{From: "orders", To: "orders"}, "refusing to write into orders"},
		{"bad target", Spec{From: "orders.dlq", To: "x/y"}, "--to"},
		{"inverted", Spec{From: "t", Selection: kafka.Selection{StartOffset: i64(9), EndOffset: i64(3)}}, "--end-offset 3 is before --start-offset 9"},
		{"negative", Spec{From: "t", Selection: kafka.Selection{StartOffset: i64(-1)}}, "not negative"},
		{"range and window", Spec{From: "t", Selection: kafka.Selection{StartOffset: i64(1), Since: time.Now()}}, "not both"},
		{"window inverted", Spec{From: "t", Selection: kafka.Selection{Since: time.Now(), Until: time.Now().Add(-time.Hour)}}, "is not after"},
		{"reason", Spec{From: "t", FilterSpec: dlq.FilterSpec{Reasons: []string{"bored"}}}, "--dlq-reason"},
		{"reason unknown ok", Spec{From: "t", FilterSpec: dlq.FilterSpec{Reasons: []string{"unknown", "exhausted"}}}, ""},
		{"bad regexp", Spec{From: "t", FilterSpec: dlq.FilterSpec{Error: "("}}, "not a regular expression"},
		{"to-partition", Spec{From: "t", ToPartition: "random"}, "--to-partition"},
		{"max replays", Spec{From: "t", MaxReplays: -1}, "--max-replays"},
		{"pending and replayed", Spec{From: "t", Statuses: []dlq.Status{dlq.StatusPending, dlq.StatusReplayed}, StatusConsumer: "billing"}, ""},
		{"statuses of each dead letter's group", Spec{From: "t", Statuses: []dlq.Status{dlq.StatusReplayed}}, ""},
		{"resolved", Spec{From: "t", Statuses: []dlq.Status{dlq.StatusResolved}, StatusConsumer: "billing"}, "--status resolved: the consumer has processed these events"},
		{"unknown", Spec{From: "t", Statuses: []dlq.Status{dlq.StatusUnknown}}, "--status unknown: these dead letters have no event id"},
		{"not a status", Spec{From: "t", Statuses: []dlq.Status{"done"}}, `--status "done"`},
		{"a consumer without a status", Spec{From: "t", StatusConsumer: "billing"}, "without a status"},
		{"a consumer that cannot be", Spec{From: "t", Statuses: []dlq.Status{dlq.StatusPending}, StatusConsumer: "b\x00"}, "--consumer"},
		{"pending for two consumers", Spec{From: "t", PendingFor: "a", Statuses: []dlq.Status{dlq.StatusReplayed}, StatusConsumer: "b"}, "one consumer's statuses"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				if tc.spec.MaxReplays != DefaultMaxReplays || tc.spec.ToPartition != PartitionAuto {
					t.Fatalf("defaults not filled: %+v", tc.spec)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || fwerr.KindOf(err) != fwerr.KindUsage {
				t.Fatalf("error %v (kind %v), want a usage error containing %q", err, fwerr.KindOf(err), tc.want)
			}
		})
	}
}

// TestPendingForIsDLQsPending: PendingFor (what `--status pending --consumer C` sets) is the
// status selection pending for C, and so is a spec journaled with it before.
func TestPendingForIsDLQsPending(t *testing.T) {
	s := Spec{From: "t", PendingFor: "billing"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.PendingFor != "billing" || s.StatusConsumer != "billing" || !slices.Equal(s.Statuses, []dlq.Status{dlq.StatusPending}) || !s.NeedsStore() {
		t.Fatalf("validated: %+v", s)
	}
	if again, _, _, err := unmarshalSpec(s.marshal()); err != nil || again.marshal() != s.marshal() {
		t.Fatalf("validated again (a resume): %+v %v", again, err)
	}
	back, ex, _, err := unmarshalSpec(`{"from":"t","pending_for":"billing","to_partition":"default","max_replays":3}`)
	if err != nil || ex != nil || back.StatusConsumer != "billing" || !slices.Equal(back.Statuses, []dlq.Status{dlq.StatusPending}) {
		t.Fatalf("a spec journaled with pending_for: %+v %v", back, err)
	}
	twice := Spec{From: "t", PendingFor: "billing", Statuses: []dlq.Status{dlq.StatusPending, dlq.StatusReplayed, dlq.StatusPending}}
	if err := twice.Validate(); err != nil || !slices.Equal(twice.Statuses, []dlq.Status{dlq.StatusPending, dlq.StatusReplayed}) {
		t.Fatalf("pending given twice: %+v %v", twice, err)
	}
}

func TestSpecRoundTripsThroughTheJournal(t *testing.T) {
	s := Spec{From: "orders.dlq", Selection: kafka.Selection{Partitions: []int32{1}, StartOffset: i64(5), EndOffset: i64(9)}, SkipProcessedFor: "billing", To: "orders-retry", ToPartition: PartitionOriginal,
		Statuses: []dlq.Status{dlq.StatusReplayed}, StatusConsumer: "billing", IncludeReplayed: true,
		FilterSpec: dlq.FilterSpec{Error: "time(out)?", Reasons: []string{"exhausted"}},
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	back, _, _, err := unmarshalSpec(s.marshal())
	if err != nil {
		t.Fatal(err)
	}
	if back.marshal() != s.marshal() || back.compiled.ErrorRegexp == nil || !back.compiled.ErrorRegexp.MatchString("timeout") || !back.IncludeReplayed {
		t.Fatalf("round trip: %s vs %s", back.marshal(), s.marshal())
	}
}

func hdr(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }

func TestOutgoingStripsDeadLetterHeadersAndAddsProvenance(t *testing.T) {
	orig := &kgo.Record{Topic: "orders", Partition: 2, Offset: 41, Key: []byte("order-7"), Value: []byte{0, 1, 2, 0xff},
		Headers: []kgo.RecordHeader{hdr("ce_id", "e-1"), {Key: "bin", Value: []byte{0xde, 0xad}}, hdr("traceparent", "00-abc")}}
	dl := dlq.NewDeadLetter(orig, dlq.Meta{Reason: dlq.ReasonExhausted, Error: "timeout", Group: "billing"})
	// Other conventions' headers and an earlier replay's provenance ride along too.
	dl.Headers = append(dl.Headers,
		kgo.RecordHeader{Key: dlq.SpringOriginalPartition, Value: binary.BigEndian.AppendUint32(nil, 2)},
		hdr(dlq.ConnectTopic, "orders"), hdr(dlq.WatermillTopic, "orders"), hdr(dlq.SmallRyeTopic, "orders"),
		hdr("FW.Replay.Count", "1"), hdr(dlq.ReplayHeaderID, "old-run"))
	dl.Partition, dl.Offset = 0, 17

	at := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	out := NewProvenance("run-1", "fix deployed").outgoing(dl, 1, "orders", -1, replayAt(at))
	if out.Topic != "orders" || !bytes.Equal(out.Key, orig.Key) || !bytes.Equal(out.Value, orig.Value) {
		t.Fatalf("record %+v", out)
	}
	if out.Partition != 0 || !out.Timestamp.IsZero() {
		t.Fatalf("partition %d / timestamp %v: want the partitioner's and the producer's", out.Partition, out.Timestamp)
	}
	var got []string
	for _, h := range out.Headers {
		got = append(got, h.Key+"="+string(h.Value))
	}
	want := []string{"ce_id=e-1", "bin=\xde\xad", "traceparent=00-abc",
		"fw.replay.id=run-1", "fw.replay.source=orders.dlq/0/17", "fw.replay.count=2",
		"fw.replay.at=2025-01-02T03:04:05.0000006Z", "fw.replay.reason=fix deployed"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("headers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if fixed := (Provenance{RunID: "r"}).outgoing(dl, 0, "orders", 5, replayAt(at)); fixed.Partition != 5 {
		t.Fatalf("fixed partition %d", fixed.Partition)
	}
}

func springDeadLetter(origTopic string, origPartition int32, key string) *kgo.Record {
	return &kgo.Record{Topic: "orders-dlt", Key: []byte(key), Value: []byte(`{"event_id":"s-1"}`), Headers: []kgo.RecordHeader{
		hdr(dlq.SpringOriginalTopic, origTopic),
		{Key: dlq.SpringOriginalPartition, Value: binary.BigEndian.AppendUint32(nil, uint32(origPartition))},
		{Key: dlq.SpringOriginalOffset, Value: binary.BigEndian.AppendUint64(nil, 99)},
		hdr(dlq.SpringExceptionFQCN, "java.lang.IllegalStateException"),
	}}
}

func TestClassifyRoutes(t *testing.T) {
	fw := dlq.NewDeadLetter(&kgo.Record{Topic: "orders", Partition: 1, Offset: 3, Key: []byte("k")}, dlq.Meta{Reason: dlq.ReasonRejected, EventID: "e-1"})
	fw.Topic, fw.Partition, fw.Offset = "orders.dlq", 0, 0
	spring := springDeadLetter("payments", 4, "p")
	spring.Offset = 1
	plain := &kgo.Record{Topic: "orders.dlq", Offset: 2, Value: []byte(`{}`)}
	self := dlq.NewDeadLetter(&kgo.Record{Topic: "orders.dlq"}, dlq.Meta{Reason: dlq.ReasonRejected})
	self.Topic, self.Offset = "orders.dlq", 3
	looped := dlq.NewDeadLetter(&kgo.Record{Topic: "orders", Headers: []kgo.RecordHeader{hdr(dlq.ReplayHeaderCount, "3")}}, dlq.Meta{Reason: dlq.ReasonRejected})
	looped.Topic, looped.Offset = "orders.dlq", 4

	run := func(spec Spec, recs ...*kgo.Record) []decision {
		t.Helper()
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		ds, err := newClassifier(nil, &Plan{Spec: spec}, nil, nil).classify(t.Context(), recs)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	ds := run(Spec{From: "orders.dlq"}, fw, spring, plain, self, looped)
	if d := ds[0]; d.outcome != OutcomeSend || d.target != "orders" || d.partition != -1 || d.eventID != "e-1" {
		t.Fatalf("fieldwork dead letter: %+v", d)
	}
	if d := ds[1]; d.outcome != OutcomeSend || d.target != "payments" {
		t.Fatalf("spring dead letter: %+v", d)
	}
	if d := ds[2]; d.outcome != OutcomeProblem || !strings.Contains(d.problem, "orders.dlq/0/2 is not a dead letter") || !strings.Contains(d.problem, "--to") {
		t.Fatalf("plain record without --to: %+v", d)
	}
	if d := ds[3]; d.outcome != OutcomeProblem || !strings.Contains(d.problem, "refusing to write into it") {
		t.Fatalf("dead letter of the topic being read: %+v", d)
	}
	if d := ds[4]; d.outcome != OutcomeQuarantined || d.count != 3 {
		t.Fatalf("replayed 3 times: %+v", d)
	}

	ds = run(Spec{From: "orders.dlq", ToPartition: PartitionOriginal}, fw, spring)
	if ds[0].partition != 1 || ds[1].partition != 4 {
		t.Fatalf("original partitions: %d, %d", ds[0].partition, ds[1].partition)
	}
	ds = run(Spec{From: "orders.dlq", To: "retry", ToPartition: PartitionOriginal}, plain)
	if d := ds[0]; d.outcome != OutcomeSend || d.target != "retry" || d.partition != 0 {
		t.Fatalf("plain record with --to: %+v", d)
	}
	ds = run(Spec{From: "orders.dlq", FilterSpec: dlq.FilterSpec{Reasons: []string{"malformed"}}}, fw, spring)
	if ds[0].outcome != OutcomeFiltered || ds[1].outcome != OutcomeFiltered {
		t.Fatalf("reason filter: %v %v", ds[0].outcome, ds[1].outcome)
	}
	ds = run(Spec{From: "orders.dlq", FilterSpec: dlq.FilterSpec{EventID: "e-1"}}, fw, spring)
	if ds[0].outcome != OutcomeSend || ds[1].outcome != OutcomeFiltered {
		t.Fatalf("event id: %v %v", ds[0].outcome, ds[1].outcome)
	}
	ds = run(Spec{From: "orders.dlq", MaxReplays: 4}, looped)
	if ds[0].outcome != OutcomeSend {
		t.Fatalf("--max-replays 4 lets count 3 through: %v", ds[0].outcome)
	}
}

// TestTrackerCheckpointIsTheContiguousPrefix acks out of order and checks that the checkpoint
// and the committed counts only ever cover settled records.
func TestTrackerCheckpointIsTheContiguousPrefix(t *testing.T) {
	tr := newTracker([]kafka.PartitionRange{{Topic: "d", Partition: 0, Start: 10, End: 20}}, dedup.RunCounts{Sent: 100})
	rec := func(off int64, o Outcome) *decision {
		return &decision{rec: &kgo.Record{Topic: "d", Partition: 0, Offset: off}, outcome: o}
	}
	checkpoint := func() int64 {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.parts[0].done
	}
	// 10 filtered: done at once.
	tr.read(rec(10, OutcomeFiltered))
	if got := checkpoint(); got != 10 {
		t.Fatalf("after a filtered record: %d", got)
	}
	a := tr.read(rec(11, OutcomeSend))
	b := tr.read(rec(12, OutcomeSend))
	tr.read(rec(14, OutcomeQuarantined)) // 13 is a gap (a control record)
	c := tr.read(rec(15, OutcomeSend))
	tr.ack(b, dedup.ReplaySend{SourceOffset: 12}, nil)
	tr.ack(c, dedup.ReplaySend{SourceOffset: 15}, nil)
	if got := checkpoint(); got != 10 {
		t.Fatalf("11 unacknowledged: checkpoint %d, want 10", got)
	}
	if lv := tr.live(); lv.Committed.Sent != 100 || lv.Acked != 2 {
		t.Fatalf("counts before the prefix moves: %+v", lv)
	}
	tr.ack(a, dedup.ReplaySend{SourceOffset: 11}, nil)
	if got := checkpoint(); got != 15 {
		t.Fatalf("all acknowledged: checkpoint %d, want 15", got)
	}
	if c := tr.live().Committed; c.Sent != 103 || c.Quarantined != 1 || c.Selected != 4 {
		t.Fatalf("committed %+v", c)
	}
	// A failed send holds the checkpoint before it for good.
	d := tr.read(rec(16, OutcomeSend))
	tr.read(rec(17, OutcomeSkipped))
	tr.ack(d, dedup.ReplaySend{}, errors.New("broker said no"))
	if got := checkpoint(); got != 15 || tr.err() == nil {
		t.Fatalf("after a failed send: checkpoint %d, err %v", got, tr.err())
	}
	tr.finish()
	if got := checkpoint(); got != 15 {
		t.Fatalf("finish moved past a failed send: %d", got)
	}
	sends, _, _ := tr.snapshot()
	if len(sends) != 3 {
		t.Fatalf("%d sends to journal, want 3", len(sends))
	}
	if u := tr.unjournaled(); u != 3 {
		t.Fatalf("unjournaled %d, want 3 (4 produced, 1 failed)", u)
	}
	tr.journaledN(len(sends))
	if u := tr.unjournaled(); u != 0 {
		t.Fatalf("unjournaled after the journal write: %d", u)
	}
}

func TestTrackerFinishCoversTrailingOffsets(t *testing.T) {
	tr := newTracker([]kafka.PartitionRange{{Topic: "d", Partition: 0, Start: 0, End: 10}, {Topic: "d", Partition: 1, Start: 5, End: 5}}, dedup.RunCounts{})
	tk := tr.read(&decision{rec: &kgo.Record{Topic: "d", Partition: 0, Offset: 7}, outcome: OutcomeSend})
	tr.ack(tk, dedup.ReplaySend{}, nil)
	tr.finish()
	_, cps, counts := tr.snapshot()
	if len(cps) != 1 || cps[0].AckedThrough != 9 || cps[0].End != 9 || counts.Sent != 1 {
		t.Fatalf("checkpoints %+v counts %+v", cps, counts)
	}
}

// TestTrackerSharedCountsPerPartition: a worker's tracker counts each partition from its
// journaled counts and journals them with the partition's checkpoint.
func TestTrackerSharedCountsPerPartition(t *testing.T) {
	tr := newTracker([]kafka.PartitionRange{{Topic: "d", Partition: 0, Start: 0, End: 10}, {Topic: "d", Partition: 1, Start: 0, End: 10}}, dedup.RunCounts{Sent: 50})
	tr.share([]dedup.ReplayCheckpoint{{Topic: "d", Partition: 0, Worker: &dedup.PartitionWorker{Counts: dedup.RunCounts{Selected: 7, Sent: 7}}},
		{Topic: "d", Partition: 1, Worker: &dedup.PartitionWorker{}}})
	for off := range int64(3) {
		tk := tr.read(&decision{rec: &kgo.Record{Topic: "d", Partition: 0, Offset: off}, outcome: OutcomeSend})
		tr.ack(tk, dedup.ReplaySend{}, nil)
	}
	tr.read(&decision{rec: &kgo.Record{Topic: "d", Partition: 1, Offset: 0}, outcome: OutcomeSkipped})
	_, cps, counts := tr.snapshot()
	if len(cps) != 2 || cps[0].Worker == nil || cps[0].Worker.Counts != (dedup.RunCounts{Selected: 10, Sent: 10}) ||
		cps[1].Worker.Counts != (dedup.RunCounts{Selected: 1, Skipped: 1}) || counts.Sent != 53 {
		t.Fatalf("checkpoints %+v %+v, counts %+v", cps[0].Worker, cps[1].Worker, counts)
	}
}

func TestLimiterHoldsTheRate(t *testing.T) {
	// 600 waits at 3,000/s: 200ms, less the 50ms burst at most.
	l := newLimiter(3000)
	start := time.Now()
	for range 600 {
		if err := l.wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 145*time.Millisecond {
		t.Fatalf("600 records at 3000/s took %v: faster than the cap", el)
	}
	if newLimiter(0) != nil {
		t.Fatal("rate 0 must mean no limiter")
	}
}

// TestHeaderStripperCacheAgrees checks that the cached verdicts of headerStripper are those of
// the uncached outgoing, whatever the order and case of the keys from record to record.
func TestHeaderStripperCacheAgrees(t *testing.T) {
	keysets := [][]string{
		{"fw.dlq.reason", "content-type", "fw.replay.count", "x"},
		{"content-type", "FW.DLQ.Reason", "kafka_dlt-original-topic", "x"},
		{"x", "fw.dlq.reason"},
		{"fw.dlq.reason", "content-type", "fw.replay.count", "x", "__connect.errors.topic", "Fw.Replay.Id"},
		manyKeys(70), // past the 64 verdicts outgoing remembers
	}
	var hs headerStripper
	var sl slab
	p := NewProvenance("run", "why")
	for round := 0; round < 3; round++ {
		for _, keys := range keysets {
			r := &kgo.Record{Topic: "t.dlq"}
			for _, k := range keys {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte("v")})
			}
			want := p.outgoing(r, 0, "t", -1, []byte("at"))
			got := p.outgoingWith(&hs, &sl, r, 0, "t", -1, []byte("at"))
			if fmt.Sprint(got.Headers) != fmt.Sprint(want.Headers) {
				t.Fatalf("keys %v: cached %v, uncached %v", keys, got.Headers, want.Headers)
			}
			// Both keep exactly the headers that are neither dead-letter nor replay headers,
			// in order, before the five provenance headers.
			var kept []string
			for _, k := range keys {
				if !stripHeader(k) {
					kept = append(kept, k)
				}
			}
			var gotKeys []string
			for _, h := range got.Headers[:len(got.Headers)-5] {
				gotKeys = append(gotKeys, h.Key)
			}
			if fmt.Sprint(gotKeys) != fmt.Sprint(kept) {
				t.Fatalf("keys %v: kept %v, want %v", keys, gotKeys, kept)
			}
		}
	}
}

// TestSlabRecordsStayApart builds more records than one slab holds, keeps them all (as the
// producer does until their acknowledgement), and checks that none shares memory with another:
// each keeps its own provenance, and its headers cannot grow into the next record's.
func TestSlabRecordsStayApart(t *testing.T) {
	var hs headerStripper
	var sl slab
	p := NewProvenance("run", "why")
	const n = 3*slabRecords + 7
	outs := make([]*kgo.Record, n)
	for i := range n {
		src := &kgo.Record{Topic: "t.dlq", Partition: int32(i % 3), Offset: int64(i), Key: []byte(fmt.Sprint(i)),
			Headers: []kgo.RecordHeader{{Key: "fw.dlq.reason", Value: []byte("rejected")}, {Key: "k", Value: []byte(fmt.Sprint(i))}}}
		outs[i] = p.outgoingWith(&hs, &sl, src, i%5, "t", -1, []byte("at"))
		outs[i].Offset = int64(1000 + i) // the producer writes into the records it is given
	}
	for i, out := range outs {
		h := map[string]string{}
		for _, x := range out.Headers {
			h[x.Key] = string(x.Value)
		}
		want := map[string]string{"k": fmt.Sprint(i), dlq.ReplayHeaderID: "run", dlq.ReplayHeaderSource: fmt.Sprintf("t.dlq/%d/%d", i%3, i),
			dlq.ReplayHeaderCount: fmt.Sprint(i%5 + 1), dlq.ReplayHeaderAt: "at", dlq.ReplayHeaderReason: "why"}
		if fmt.Sprint(h) != fmt.Sprint(want) || len(out.Headers) != len(want) || out.Offset != int64(1000+i) || string(out.Key) != fmt.Sprint(i) {
			t.Fatalf("record %d: headers %v offset %d key %s, want %v", i, h, out.Offset, out.Key, want)
		}
		if cap(out.Headers) != len(out.Headers) {
			t.Fatalf("record %d: headers can grow into another record's (len %d, cap %d)", i, len(out.Headers), cap(out.Headers))
		}
		src, count := out.Headers[2].Value, out.Headers[3].Value
		if cap(src) != len(src) || cap(count) != len(count) {
			t.Fatalf("record %d: provenance values can grow into another's", i)
		}
	}
}

// manyKeys returns n header keys, dead-letter and replay headers among others.
func manyKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		switch i % 3 {
		case 0:
			keys[i] = fmt.Sprintf("k%d", i)
		case 1:
			keys[i] = "fw.dlq.reason"
		default:
			keys[i] = fmt.Sprintf("fw.replay.x%d", i)
		}
	}
	keys[n-1] = "last-kept"
	return keys
}

// BenchmarkOutgoing builds the record a replay sends for a fieldwork dead letter.
func BenchmarkOutgoing(b *testing.B) {
	orig := &kgo.Record{Topic: "tasks", Partition: 3, Offset: 1041, Key: []byte("task-7"), Value: []byte(`{"id":"evt-7"}`),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
	dl := dlq.NewDeadLetter(orig, dlq.Meta{Topic: "tasks.dlq", Group: "g", Handler: "h", EventID: "evt-7", Reason: dlq.ReasonRejected, Error: "no", Attempts: 1})
	dl.Offset = 77
	p := NewProvenance("run-1", "fix deployed")
	var hs headerStripper
	var sl slab
	at := replayAt(time.Now())
	b.ReportAllocs()
	for b.Loop() {
		_ = p.outgoingWith(&hs, &sl, dl, 0, "tasks", -1, at)
	}
}

// BenchmarkRecord is a replay's own work for one fieldwork dead letter, without Kafka: classify
// it (in batches, as the read loop does), track it, build the record sent, and take its
// acknowledgement 2,000 records later, with the journal's snapshot every DefaultFlushRecords
// acknowledgements.
func BenchmarkRecord(b *testing.B) {
	const n = 4 * batchSize
	recs := make([]*kgo.Record, n)
	for i := range recs {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012d", i, i)
		orig := &kgo.Record{Topic: "tasks", Partition: int32(i % 3), Offset: int64(i / 3), Key: []byte(fmt.Sprintf("task-%05d", i%1000)),
			Value:   []byte(`{"specversion":"1.0","id":"` + id + `"}`),
			Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
		dl := dlq.NewDeadLetter(orig, dlq.Meta{Topic: "tasks.dlq", Group: "g", Handler: "projection", EventID: id,
			Reason: dlq.ReasonExhausted, Error: "database unavailable", Attempts: 5, FailedAt: time.Now()})
		dl.Partition, dl.Offset = int32(i%3), int64(i/3)
		recs[i] = dl
	}
	spec := Spec{From: "tasks.dlq"}
	if err := spec.Validate(); err != nil {
		b.Fatal(err)
	}
	var ranges []kafka.PartitionRange
	for p := range int32(3) {
		ranges = append(ranges, kafka.PartitionRange{Topic: "tasks.dlq", Partition: p, Start: 0, End: 1 << 40})
	}
	cls := newClassifier(nil, &Plan{Spec: spec}, nil, nil)
	prov := NewProvenance("run-1", "fix deployed")
	var hs headerStripper
	var sl slab
	at := replayAt(time.Now())
	ctx := context.Background()
	b.ReportAllocs()
	type pending struct {
		tk   ticket
		send dedup.ReplaySend
	}
	const lag = 2 * batchSize
	var inflight []pending
	i := 0
	tr := newTracker(ranges, dedup.RunCounts{})
	for b.Loop() {
		if i%n == 0 { // the offsets start again: a new run
			tr, inflight = newTracker(ranges, dedup.RunCounts{}), inflight[:0]
		}
		batch := recs[i%n : i%n+batchSize]
		ds, err := cls.classify(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		for k := range ds {
			d := &ds[k]
			tk := tr.read(d)
			out := prov.outgoingWith(&hs, &sl, d.rec, d.count, d.target, d.partition, at)
			// Acknowledgements come a producer's buffer later.
			inflight = append(inflight, pending{tk, dedup.ReplaySend{SourceTopic: d.rec.Topic, SourcePartition: d.rec.Partition,
				SourceOffset: d.rec.Offset, EventID: d.eventID, TargetTopic: out.Topic, TargetOffset: int64(k)}})
			if len(inflight) > lag {
				a := inflight[0]
				inflight = inflight[1:]
				if tr.ack(a.tk, a.send, nil) >= DefaultFlushRecords {
					_, _, _ = tr.snapshot()
				}
			}
		}
		i += batchSize
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/record")
}

// TestTrackerQueueSlides keeps a window of records in flight far longer than the queue's array,
// acknowledging them out of order, and checks that the checkpoint is the contiguous prefix
// throughout and that, once the window's array is there, the tracker allocates nothing more.
func TestTrackerQueueSlides(t *testing.T) {
	const window, n = 64, 5000
	tr := newTracker([]kafka.PartitionRange{{Topic: "d", Partition: 0, Start: 0, End: n}}, dedup.RunCounts{})
	recs := make([]decision, n)
	for i := range recs {
		recs[i] = decision{rec: &kgo.Record{Topic: "d", Partition: 0, Offset: int64(i)}, outcome: OutcomeSend}
	}
	tr.sends = make([]dedup.ReplaySend, 0, n)
	var inFlight []ticket
	next := 0
	// step reads one record and, with a full window, acknowledges the second oldest in flight
	// before the oldest: the checkpoint must wait for the oldest.
	step := func() {
		inFlight = append(inFlight, tr.read(&recs[next]))
		next++
		if len(inFlight) < window {
			return
		}
		tr.ack(inFlight[1], dedup.ReplaySend{}, nil)
		if got, want := tr.parts[0].done, int64(next-window-1); got != want {
			t.Fatalf("after reading %d: checkpoint %d, want %d", next, got, want)
		}
		tr.ack(inFlight[0], dedup.ReplaySend{}, nil)
		if got, want := tr.parts[0].done, int64(next-window+1); got != want {
			t.Fatalf("after reading %d: checkpoint %d, want %d", next, got, want)
		}
		inFlight = append(inFlight[:0], inFlight[2:]...)
	}
	for next < 4*window {
		step()
	}
	// AllocsPerRun runs its function once before it counts: each run steps through a third of
	// what is left, and is counted whole.
	m := (n - next) / 3
	if allocs := testing.AllocsPerRun(1, func() {
		for range m {
			step()
		}
	}); allocs != 0 {
		t.Fatalf("%.0f allocations over %d records in the steady state", allocs, m)
	}
}
