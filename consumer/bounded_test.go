package consumer

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

// encodedBatch is the size of a record batch holding r alone as Kafka encodes it (61 bytes of
// batch header, then the record), with the largest deltas a batch of dead letters can give it.
func encodedBatch(r *kgo.Record) int {
	kr := kmsg.Record{TimestampDelta64: 1 << 41, OffsetDelta: 1 << 20, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	body := kr.AppendTo(nil)
	kr.Length = int32(len(body) - 1) // the encoding above had a 1-byte length of 0
	return 61 + len(kr.AppendTo(nil))
}

func TestBatchBytes(t *testing.T) {
	headers := []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}, {Key: "empty"}}
	cases := []struct {
		name string
		rec  *kgo.Record
	}{
		{"empty", &kgo.Record{}},
		{"nil key, small value", &kgo.Record{Value: []byte("x")}},
		{"key, value, headers", &kgo.Record{Key: []byte("task-1"), Value: bytes.Repeat([]byte("v"), 300), Headers: headers}},
		{"2 MiB", &kgo.Record{Key: []byte("task-1"), Value: bytes.Repeat([]byte("v"), 2<<20), Headers: headers}},
		{"many headers", &kgo.Record{Value: []byte("{}"), Headers: bytes16Headers(200)}},
	}
	for _, c := range cases {
		got, want := batchBytes(c.rec), encodedBatch(c.rec)
		// Never less than Kafka counts (a dead letter the engine thinks fits must fit), and
		// close: franz-go's 4 bytes of batch length, varints at their largest.
		if got < want || got > want+20 {
			t.Errorf("%s: batchBytes = %d, encoded batch = %d", c.name, got, want)
		}
	}
}

func bytes16Headers(n int) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, n)
	for i := range out {
		out[i] = kgo.RecordHeader{Key: "h" + strconv.Itoa(i), Value: bytes.Repeat([]byte("x"), 16)}
	}
	return out
}

func TestBoundedCopy(t *testing.T) {
	orig := &kgo.Record{Topic: "tasks", Partition: 2, Offset: 41, Key: []byte("task-7"), Value: bytes.Repeat([]byte("{"), 2<<20),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/json")}}}
	whole := dlq.NewDeadLetter(orig, dlq.Meta{Topic: "tasks.dlq", Group: "g", Handler: "projection", Reason: dlq.ReasonMalformed, Error: "value is not JSON", Attempts: 1})
	const why = "the dead letter is too large"
	base, _ := boundedCopy(whole, why, 0, true)
	baseBytes := batchBytes(base)
	cases := []struct {
		name     string
		limit    int
		omit     bool
		wantKept func(kept int) bool
	}{
		{"1 MiB: cut to fit", 1 << 20, false, func(k int) bool { return k > 1<<20-baseBytes-16 && k < 1<<20 }},
		{"just above the copy without value: cut", baseBytes + 100, false, func(k int) bool { return k > 80 && k <= 100 }},
		{"below the copy without value: left out", baseBytes - 1, false, func(k int) bool { return k == 0 }},
		{"asked to leave it out", 1 << 20, true, func(k int) bool { return k == 0 }},
		{"the whole value fits: left out, cutting would not help", 8 << 20, false, func(k int) bool { return k == 0 }},
	}
	for _, c := range cases {
		rec, kept := boundedCopy(whole, why, c.limit, c.omit)
		if !c.wantKept(kept) || len(rec.Value) != kept {
			t.Errorf("%s: kept %d (value %d bytes), base %d bytes", c.name, kept, len(rec.Value), baseBytes)
		}
		if kept > 0 && batchBytes(rec) > c.limit {
			t.Errorf("%s: copy of %d bytes over the limit %d", c.name, batchBytes(rec), c.limit)
		}
		if !bytes.Equal(rec.Value, whole.Value[:kept]) || string(rec.Key) != "task-7" || rec.Topic != "tasks.dlq" {
			t.Errorf("%s: value is not the original's prefix, or key or topic changed", c.name)
		}
		n := len(whole.Headers)
		if len(rec.Headers) != n+2 || rec.Headers[0].Key != "content-type" {
			t.Fatalf("%s: headers %d, want the %d of the whole dead letter and 2 more", c.name, len(rec.Headers), n)
		}
		for i, h := range whole.Headers {
			if rec.Headers[i].Key != h.Key || !bytes.Equal(rec.Headers[i].Value, h.Value) {
				t.Errorf("%s: header %s changed", c.name, h.Key)
			}
		}
		if h := rec.Headers[n]; h.Key != dlq.HeaderValueOmitted || !strings.Contains(string(h.Value), "too large") {
			t.Errorf("%s: %s = %q", c.name, h.Key, h.Value)
		}
		if h := rec.Headers[n+1]; h.Key != dlq.HeaderValueBytes || string(h.Value) != strconv.Itoa(2<<20) {
			t.Errorf("%s: %s = %q", c.name, h.Key, h.Value)
		}
	}
	if len(whole.Headers) != len(base.Headers)-2 || len(whole.Value) != 2<<20 {
		t.Error("boundedCopy changed the whole dead letter")
	}
}
