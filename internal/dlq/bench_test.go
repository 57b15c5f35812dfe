package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkParse measures Parse on a typical dead letter of each kind: fieldwork's (event id
// in a header) and Spring's (event id decoded from the value).
func BenchmarkParse(b *testing.B) {
	orig := &kgo.Record{
		Topic: "tasks", Partition: 3, Offset: 1041, Timestamp: time.UnixMilli(1773480413589), Key: []byte("task-7"),
		Value: []byte(`{"specversion":"1.0","id":"evt-7","type":"task.created","source":"/tasks","aggregateid":"task-7","aggregateversion":2,"data":{"title":"x"}}`),
	}
	fw := NewDeadLetter(orig, Meta{Group: "g", Handler: "h", Reason: ReasonRejected, Error: "no", Attempts: 1})
	spring := &kgo.Record{Topic: "tasks.DLT", Key: orig.Key, Value: orig.Value, Headers: []kgo.RecordHeader{
		{Key: SpringOriginalTopic, Value: []byte("tasks")},
		{Key: SpringOriginalPartition, Value: []byte{0, 0, 0, 3}},
		{Key: SpringOriginalOffset, Value: []byte{0, 0, 0, 0, 0, 0, 4, 17}},
		{Key: SpringOriginalTimestamp, Value: []byte{0, 0, 1, 0x9c, 0xeb, 0xab, 0x89, 0x95}},
		{Key: SpringOriginalConsumerGroup, Value: []byte("g")},
		{Key: SpringExceptionFQCN, Value: []byte("java.lang.IllegalStateException")},
		{Key: SpringExceptionMessage, Value: []byte("no")},
	}}
	for name, r := range map[string]*kgo.Record{"fieldwork": fw, "spring": spring} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Parse(r)
			}
		})
		// What dlq stats asks for, with the string table a Scan keeps.
		b.Run(name+"/stats", func(b *testing.B) {
			b.ReportAllocs()
			opts := ParseOptions{NoEnvelope: true, NoHeaders: true, NoTimes: true, strings: newInterner()}
			for b.Loop() {
				_ = ParseWith(r, opts)
			}
		})
		// What dlq stats asks for, as a Scan parses: a Parser with the Scan's string table, each
		// record a fresh copy of the header keys.
		b.Run(name+"/scan", func(b *testing.B) {
			b.ReportAllocs()
			p := NewParser(ParseOptions{NoEnvelope: true, NoHeaders: true, NoTimes: true, strings: newInterner()})
			recs := freshCopies(r, 64)
			i := 0
			for b.Loop() {
				_ = p.Parse(recs[i%len(recs)])
				i++
			}
		})
		// What a replay asks for, with a Parser, into a dead letter of its own. Each record is
		// a fresh copy of the header keys, as the Kafka client hands them out.
		b.Run(name+"/replay", func(b *testing.B) {
			b.ReportAllocs()
			p := NewParser(ParseOptions{NoHeaders: true, NoTimes: true})
			recs := freshCopies(r, 64)
			var d DeadLetter // the classifier parses into its batch's array
			i := 0
			for b.Loop() {
				p.ParseInto(recs[i%len(recs)], &d)
				i++
			}
		})
	}
}

// freshCopies returns n copies of r, each with its own copy of the header keys, as the Kafka
// client hands records out.
func freshCopies(r *kgo.Record, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		c := *r
		c.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for j, h := range r.Headers {
			c.Headers[j] = kgo.RecordHeader{Key: string([]byte(h.Key)), Value: h.Value}
		}
		recs[i] = &c
	}
	return recs
}

// BenchmarkListLine measures what dlq list -o jsonl does with each record besides reading it:
// parse it as a Scan does and write its line (Entry.AppendJSON) into a reused buffer.
func BenchmarkListLine(b *testing.B) {
	orig := &kgo.Record{
		Topic: "tasks", Partition: 3, Offset: 1041, Timestamp: time.UnixMilli(1773480413589), Key: []byte("task-7"),
		Value:   []byte(`{"specversion":"1.0","id":"evt-7","type":"task.created","source":"/tasks","aggregateid":"task-7","aggregateversion":2,"data":{"note":"` + strings.Repeat("x", 100) + `"}}`),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
	}
	failed := time.UnixMilli(1773480415589)
	r := NewDeadLetter(orig, Meta{Topic: "tasks", Group: "projector", Handler: "projection", EventID: "evt-7", Reason: ReasonMalformed,
		Error: "task not found", Attempts: 1, FirstFailedAt: failed.Add(-time.Second), FailedAt: failed})
	r.Timestamp = failed
	s := &Scan{}
	read := s.reader()
	ctx := context.Background()
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		line, err = Entry{DeadLetter: read(ctx, r)}.AppendJSON(line[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(line)))
}

// benchDeadLetter is a dead letter as internal/dlq/bench fills its topic with: a CloudEvent of
// about 300 bytes, parsed as a listing parses it.
func benchDeadLetter() DeadLetter {
	orig := &kgo.Record{
		Topic: "tasks", Partition: 3, Offset: 1041, Timestamp: time.UnixMilli(1773480413589), Key: []byte("task-7"),
		Value:   []byte(`{"specversion":"1.0","id":"evt-00000007","type":"task.updated","source":"/tasks","aggregateid":"task-7","aggregateversion":1,"data":{"note":"` + strings.Repeat("x", 100) + `"}}`),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
	}
	failed := time.UnixMilli(1773480415589)
	r := NewDeadLetter(orig, Meta{Topic: "tasks.dlq", Group: "projector", Handler: "projection", EventID: "evt-00000007", Reason: ReasonMalformed,
		Error: "task not found", Attempts: 1, FirstFailedAt: failed.Add(-time.Second), FailedAt: failed})
	r.Timestamp = failed
	return Parse(r)
}

// BenchmarkAppendJSON measures the JSON line of a parsed dead letter alone (Entry.AppendJSON).
func BenchmarkAppendJSON(b *testing.B) {
	e := Entry{DeadLetter: benchDeadLetter()}
	var line []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if line, err = e.AppendJSON(line[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(line)))
}

// BenchmarkEscape measures the string escaper on the value and the headers of a dead letter.
func BenchmarkEscape(b *testing.B) {
	d := benchDeadLetter()
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		out = appendJSONBytes(out[:0], d.Value, "value")
		for _, h := range d.Headers {
			out = appendJSONString(out, h.Key)
			out = appendJSONBytes(out, h.Value, "value")
		}
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkStatsAdd measures what dlq stats does with each parsed dead letter: count it per
// topic and per group of the default grouping (original_topic,reason,error_class).
func BenchmarkStatsAdd(b *testing.B) {
	perTopic, _ := NewStats([]StatsKey{ByTopic}, time.Hour, time.Now())
	groups, _ := NewStats([]StatsKey{ByOriginalTopic, ByReason, ByErrorClass}, time.Hour, time.Now())
	ds := make([]DeadLetter, 64)
	for i := range ds {
		ds[i] = DeadLetter{Topic: "tasks.dlq", Partition: int32(i % 3), Offset: int64(i), Timestamp: time.Now(),
			OriginalTopic: "tasks", Reason: []string{ReasonRejected, ReasonMalformed}[i/32], ErrorClass: "java.lang.IllegalStateException"}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d := ds[i%len(ds)]
		perTopic.Add(&d)
		groups.Add(&d)
		i++
	}
}
