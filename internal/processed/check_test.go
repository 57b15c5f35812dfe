package processed_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCheckFindsGapsExactly seeds a topic with events (some written twice) and malformed
// records, marks some of the events, and checks that the gap finder finds exactly the
// unmarked ones, in lookup batches smaller than the range, listed or streamed.
func TestCheckFindsGapsExactly(t *testing.T) {
	c, st := checkServices(t)
	topic := testenv.Topic(t, 2, nil)
	const consumer = "billing"
	prod := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))

	var recs []*kgo.Record
	var markers []dedup.Marker
	for i := range 60 {
		id := fmt.Sprintf("e-%02d", i)
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Key: []byte("a"),
			Value: fmt.Appendf(nil, `{"event_id":%q,"type":"task.updated","aggregate_id":"task-%d","aggregate_version":1}`, id, i)})
		if i%3 != 0 {
			markers = append(markers, dedup.Marker{EventID: id, Topic: topic, Partition: int32(i % 2)})
		}
	}
	// A producer retry: e-01 (marked) and e-03 (not) are written twice, and count twice.
	recs = append(recs, &kgo.Record{Partition: 1, Value: recs[1].Value}, &kgo.Record{Partition: 1, Value: recs[3].Value})
	// Poison: not JSON, and JSON with no event id. Neither is missing: they are malformed.
	recs = append(recs, &kgo.Record{Partition: 0, Value: []byte("not json")}, &kgo.Record{Partition: 1, Value: []byte(`{"type":"x"}`)})
	testenv.Produce(t, prod, recs...)
	mark(t, st, consumer, markers...)
	// Another consumer's markers change nothing.
	mark(t, st, "other", dedup.Marker{EventID: "e-00"}, dedup.Marker{EventID: "e-03"})

	var wantMissing []string
	for i := 0; i < 60; i += 3 {
		wantMissing = append(wantMissing, fmt.Sprintf("e-%02d", i))
	}
	wantMissing = append(wantMissing, "e-03") // its second copy
	slices.Sort(wantMissing)

	rep, err := processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: topic, Consumer: consumer, MaxMissing: 5, LookupBatch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 64 || rep.Events != 62 || rep.WithMarker != 41 || rep.Missing != 21 || rep.Malformed != 2 {
		t.Fatalf("records %d events %d with marker %d missing %d malformed %d, want 64 62 41 21 2",
			rep.Records, rep.Events, rep.WithMarker, rep.Missing, rep.Malformed)
	}
	if len(rep.MissingRecords) != 5 || !rep.MissingTruncated || len(rep.MalformedExamples) != 2 {
		t.Fatalf("listed %d missing (truncated %v), %d malformed", len(rep.MissingRecords), rep.MissingTruncated, len(rep.MalformedExamples))
	}
	for _, m := range rep.MalformedExamples {
		if !strings.Contains(m.Message, fmt.Sprintf("%s/%d/%d: ", topic, m.Partition, m.Offset)) || m.Reason == "" {
			t.Errorf("malformed %+v: the message does not give the record's address, or no reason", m)
		}
	}
	if err := rep.Result(); fwerr.KindOf(err) != fwerr.KindCheck || !strings.Contains(err.Error(), "21 of 62 events") {
		t.Errorf("result: %v", err)
	}
	if s := rep.Summary(); !strings.Contains(s, "checked 64 records of "+topic+" (0: 0..30  1: 0..32)") {
		t.Errorf("summary %q", s)
	}

	// Streamed: every missing record, exactly the unmarked events, none kept in the report.
	var streamed []string
	batches := 0
	rep, err = processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: topic, Consumer: consumer, LookupBatch: 7,
		OnMissing:  func(r processed.MissingRecord) error { streamed = append(streamed, r.EventID); return nil },
		AfterBatch: func() error { batches++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(streamed)
	if fmt.Sprint(streamed) != fmt.Sprint(wantMissing) || len(rep.MissingRecords) != 0 || rep.MissingTruncated {
		t.Fatalf("streamed %v\nwant     %v", streamed, wantMissing)
	}
	if batches != 9 { // 62 events, 7 a lookup
		t.Errorf("%d lookup batches, want 9", batches)
	}

	// One partition, and the JSON the command prints.
	rep, err = processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: topic, Consumer: consumer, MaxMissing: 100,
		Selection: kafka.Selection{Partitions: []int32{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 33 || rep.Missing != 11 || rep.Malformed != 1 || len(rep.MissingRecords) != 11 || len(rep.Ranges) != 1 {
		t.Fatalf("partition 1: records %d missing %d malformed %d", rep.Records, rep.Missing, rep.Malformed)
	}
	keys := jsonFields(rep)
	if want := "[consumer dominant_malformed events malformed malformed_examples max_malformed_share missing missing_records missing_truncated ranges records_read table topic unreadable with_marker]"; fmt.Sprint(keys) != want {
		t.Errorf("json fields %v\nwant        %s", keys, want)
	}

	// All marked: complete.
	var rest []dedup.Marker
	for _, id := range wantMissing {
		rest = append(rest, dedup.Marker{EventID: id})
	}
	mark(t, st, consumer, rest...)
	rep, err = processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: topic, Consumer: consumer})
	if err != nil || rep.Missing != 0 || rep.WithMarker != 62 || rep.Result() != nil {
		t.Fatalf("after marking all: %+v, %v", rep, err)
	}
}

// TestCheckProbesTheStoreFirst: a store whose table does not exist fails before anything is
// read, and a missing topic is the kafka error.
func TestCheckProbesTheStoreFirst(t *testing.T) {
	c := testenv.Cluster(t)
	topic := testenv.Topic(t, 1, nil)
	if _, err := processed.Check(ctx(t), c, pgStore(t, false), processed.CheckOptions{Topic: topic, Consumer: "c"}); err == nil {
		t.Fatal("a store without its table checked")
	}
	_, err := processed.Check(ctx(t), c, pgStore(t, true), processed.CheckOptions{Topic: testenv.Name(t, "missing"), Consumer: "c"})
	var ute *kafka.UnknownTopicError
	if !errors.As(err, &ute) {
		t.Fatalf("missing topic: %v", err)
	}
}
