package dlq

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// deliver is what the broker does to a produced record: it gets a partition, an offset, and
// timestamps at millisecond precision.
func deliver(r *kgo.Record, partition int32, offset int64) *kgo.Record {
	out := *r
	out.Partition, out.Offset = partition, offset
	out.Timestamp = time.UnixMilli(r.Timestamp.UnixMilli())
	return &out
}

func TestNewDeadLetterRoundTrip(t *testing.T) {
	origTS := time.Date(2026, 3, 14, 12, 59, 58, 123_000_000, time.FixedZone("CET", 3600))
	first := time.Date(2026, 3, 14, 12, 0, 0, 1, time.UTC)
	failed := time.Date(2026, 3, 14, 13, 0, 0, 987_654_321, time.FixedZone("X", -7200))
	orig := &kgo.Record{
		Topic: "tasks", Partition: 2, Offset: 1041, Timestamp: origTS,
		Key:   []byte("task-7\xff"),
		Value: []byte(`{"specversion":"1.0","id":"evt-from-value","type":"t","source":"/s"}`),
		Headers: []kgo.RecordHeader{
			{Key: "content-type", Value: []byte("application/cloudevents+json")},
			{Key: "bin\xfe", Value: []byte{0, 1, 2, 0xff}},
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: ReplayHeaderCount, Value: []byte("1")},
		},
	}
	meta := Meta{
		Group: "task-projector", Handler: "projection", EventID: "evt-7", Reason: ReasonExhausted,
		Error: "apply: upstream 503\nsecond line", Attempts: 5, FirstFailedAt: first, FailedAt: failed,
	}
	dl := NewDeadLetter(orig, meta)
	if dl.Topic != "tasks.dlq" {
		t.Errorf("topic %q", dl.Topic)
	}
	if !dl.Timestamp.Equal(failed) {
		t.Errorf("record timestamp %v, want %v", dl.Timestamp, failed)
	}
	// The original headers come first, byte for byte, then fieldwork's.
	for i, h := range orig.Headers {
		g := dl.Headers[i]
		if g.Key != h.Key || !bytes.Equal(g.Value, h.Value) || (g.Value == nil) != (h.Value == nil) {
			t.Fatalf("header %d = %q, want %q", i, g, h)
		}
	}
	wantFw := []kgo.RecordHeader{
		{Key: HeaderTopic, Value: []byte("tasks")},
		{Key: HeaderPartition, Value: []byte("2")},
		{Key: HeaderOffset, Value: []byte("1041")},
		{Key: HeaderTimestamp, Value: []byte("2026-03-14T11:59:58.123Z")},
		{Key: HeaderGroup, Value: []byte("task-projector")},
		{Key: HeaderHandler, Value: []byte("projection")},
		{Key: HeaderEventID, Value: []byte("evt-7")},
		{Key: HeaderReason, Value: []byte("exhausted")},
		{Key: HeaderError, Value: []byte("apply: upstream 503\nsecond line")},
		{Key: HeaderAttempts, Value: []byte("5")},
		{Key: HeaderFirstFailedAt, Value: []byte("2026-03-14T12:00:00.000000001Z")},
		{Key: HeaderFailedAt, Value: []byte("2026-03-14T15:00:00.987654321Z")},
	}
	if got := dl.Headers[len(orig.Headers):]; !reflect.DeepEqual(got, wantFw) {
		t.Errorf("fw.dlq headers\n got %q\nwant %q", got, wantFw)
	}

	// The dead letter shares no memory with the original.
	orig.Key[0], orig.Value[0], orig.Headers[1].Value[0] = 'X', 'X', 'X'
	if dl.Key[0] == 'X' || dl.Value[0] == 'X' || dl.Headers[1].Value[0] == 'X' {
		t.Fatal("the dead letter aliases the original's bytes")
	}
	orig.Key[0], orig.Value[0], orig.Headers[1].Value[0] = 't', '{', 0

	got := Parse(deliver(dl, 0, 77))
	utc := func(t time.Time) *time.Time { u := t.UTC(); return &u }
	want := DeadLetter{
		Topic: "tasks.dlq", Partition: 0, Offset: 77, Timestamp: time.UnixMilli(failed.UnixMilli()).UTC(),
		Convention:    ConventionFieldwork,
		OriginalTopic: "tasks", OriginalPartition: ptr[int32](2), OriginalOffset: ptr[int64](1041), OriginalTimestamp: utc(origTS),
		Group: "task-projector", Handler: "projection", Reason: ReasonExhausted,
		ErrorMessage: meta.Error, Attempts: 5, FirstFailedAt: utc(first), FailedAt: utc(failed),
		EventID: "evt-7", EventIDSource: HeaderEventID, Key: orig.Key, Value: orig.Value, ReplayCount: 1,
	}
	for _, h := range dl.Headers {
		want.Headers = append(want.Headers, envelope.Header{Key: h.Key, Value: h.Value})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, want)
	}
	checkInvariants(t, deliver(dl, 0, 77), got)
}

// TestNewDeadLetterNanosecondTimestamp: the original timestamp keeps any precision it has.
func TestNewDeadLetterNanosecondTimestamp(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	d := Parse(NewDeadLetter(&kgo.Record{Topic: "a", Timestamp: ts}, Meta{Reason: ReasonRejected, FailedAt: ts}))
	if d.OriginalTimestamp == nil || !d.OriginalTimestamp.Equal(ts) {
		t.Fatalf("original timestamp %v, want %v", d.OriginalTimestamp, ts)
	}
}

// TestNewDeadLetterReplacesOldHeaders: a replayed dead letter that fails again gets one set of
// fw.dlq.* headers, describing the new failure; everything else is kept in order.
func TestNewDeadLetterReplacesOldHeaders(t *testing.T) {
	old := NewDeadLetter(&kgo.Record{Topic: "tasks", Partition: 1, Offset: 5, Value: []byte(`{"event_id":"e1"}`)},
		Meta{Group: "g1", Handler: "h1", Reason: ReasonRejected, Error: "first", Attempts: 1, FailedAt: time.Unix(100, 0)})
	replayed := &kgo.Record{Topic: "tasks", Partition: 0, Offset: 90, Value: old.Value, Timestamp: time.Unix(200, 0)}
	replayed.Headers = append(replayed.Headers, kgo.RecordHeader{Key: "FW.DLQ.REASON", Value: []byte("malformed")})
	replayed.Headers = append(replayed.Headers, old.Headers...)
	replayed.Headers = append(replayed.Headers,
		kgo.RecordHeader{Key: ReplayHeaderCount, Value: []byte("1")},
		kgo.RecordHeader{Key: SpringOriginalTopic, Value: []byte("legacy")},
	)
	dl := NewDeadLetter(replayed, Meta{Group: "g2", Reason: ReasonExhausted, Error: "second", Attempts: 3, FailedAt: time.Unix(300, 0)})

	counts := map[string]int{}
	var others []string
	for _, h := range dl.Headers {
		k := strings.ToLower(h.Key)
		if strings.HasPrefix(k, HeaderPrefix) {
			counts[k]++
		} else {
			others = append(others, h.Key)
		}
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("%s appears %d times", k, n)
		}
	}
	if want := []string{ReplayHeaderCount, SpringOriginalTopic}; !reflect.DeepEqual(others, want) {
		t.Errorf("other headers %q, want %q", others, want)
	}
	if _, ok := counts[HeaderHandler]; ok {
		t.Errorf("the old handler header survived")
	}
	d := Parse(deliver(dl, 0, 1))
	if d.OriginalTopic != "tasks" || fmtPtr(d.OriginalOffset) != "90" || fmtPtr(d.OriginalPartition) != "0" ||
		d.Group != "g2" || d.Handler != "" || d.Reason != ReasonExhausted || d.ErrorMessage != "second" ||
		d.Attempts != 3 || d.ReplayCount != 1 || d.EventID != "e1" {
		t.Fatalf("parsed %+v", d)
	}
	// The Spring header is kept, and Parse says it did not read it.
	if len(d.HeaderProblems) != 1 || d.HeaderProblems[0].Header != SpringOriginalTopic {
		t.Fatalf("problems %+v", d.HeaderProblems)
	}
}

func TestNewDeadLetterDefaults(t *testing.T) {
	before := time.Now()
	orig := &kgo.Record{Topic: "orders", Value: []byte(`{"event_id":"evt-42","aggregate_version":"x"}`)} // malformed, id readable
	dl := NewDeadLetter(orig, Meta{Reason: ReasonMalformed})
	if dl.Topic != "orders.dlq" {
		t.Errorf("topic %q", dl.Topic)
	}
	if dl.Key != nil {
		t.Errorf("nil key became %q", dl.Key)
	}
	d := Parse(deliver(dl, 0, 0))
	if d.EventID != "evt-42" {
		t.Errorf("event id %q, want the one readable from the value", d.EventID)
	}
	if d.FailedAt == nil || d.FailedAt.Before(before.Add(-time.Second)) || d.FailedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("failed at %v, want now", d.FailedAt)
	}
	if d.FirstFailedAt == nil || !d.FirstFailedAt.Equal(*d.FailedAt) {
		t.Errorf("first failed at %v, want failed at %v", d.FirstFailedAt, d.FailedAt)
	}
	if d.OriginalTimestamp != nil || d.Group != "" || d.Attempts != 0 || len(d.HeaderProblems) != 0 {
		t.Errorf("parsed %+v", d)
	}
	for _, h := range dl.Headers {
		switch h.Key {
		case HeaderTimestamp, HeaderGroup, HeaderHandler, HeaderError, HeaderAttempts:
			t.Errorf("header %s written with nothing to say: %q", h.Key, h.Value)
		}
	}
	if got := NewDeadLetter(orig, Meta{Topic: "poison", Reason: ReasonMalformed}).Topic; got != "poison" {
		t.Errorf("meta.Topic ignored: %q", got)
	}
	if got := NewDeadLetter(nil, Meta{Topic: "poison"}); got == nil || got.Topic != "poison" {
		t.Errorf("nil original: %+v", got)
	}
}

// allDeadLetterHeaders is one header of every kind each convention writes.
var allDeadLetterHeaders = []string{
	HeaderTopic, HeaderPartition, HeaderOffset, HeaderTimestamp, HeaderGroup, HeaderHandler, HeaderEventID,
	HeaderReason, HeaderError, HeaderAttempts, HeaderFirstFailedAt, HeaderFailedAt,
	SpringOriginalTopic, SpringOriginalPartition, SpringOriginalOffset, SpringOriginalTimestamp,
	SpringOriginalTimestampType, SpringOriginalConsumerGroup, SpringExceptionFQCN, SpringExceptionCauseFQCN,
	SpringExceptionMessage, SpringExceptionStacktrace, SpringKeyExceptionFQCN, SpringKeyExceptionMessage,
	SpringKeyExceptionStack, SpringRetryAttempts, "retry_topic-backoff-timestamp", "retry_topic-original-timestamp",
	ConnectTopic, ConnectPartition, ConnectOffset, ConnectConnectorName, ConnectTaskID, ConnectStage,
	ConnectClassName, ConnectExceptionClassName, ConnectExceptionMessage, ConnectExceptionStacktrace,
	WatermillTopic, WatermillHandler, WatermillSubscriber, WatermillReason,
	SmallRyeTopic, SmallRyePartition, SmallRyeOffset, SmallRyeReason, SmallRyeCause,
	SmallRyeExceptionClassName, SmallRyeCauseClassName, SmallRyeDeserializationReason, "deserialization-failure-data",
	SpringRetryOriginalTopic, SpringRetryOriginalPartition, SpringRetryOriginalOffset, SpringRetryOriginalTimestamp,
	"kafka_original-timestamp-type", SpringRetryExceptionFQCN, SpringRetryExceptionCauseFQCN,
	SpringRetryExceptionMessage, SpringRetryExceptionStack, SpringRetryKeyExceptionFQCN, SpringRetryKeyExceptionMsg,
	SpringRetryKeyExceptionStack,
	KarafkaTopic, KarafkaPartition, KarafkaOffset, KarafkaConsumerGroup, KarafkaKey, KarafkaAttempts,
	KarafkaOldTopic, KarafkaOldPartition, KarafkaOldOffset, KarafkaOldGroup, KarafkaOldKey, KarafkaOldAttempts,
	WolverineExceptionType, WolverineExceptionMessage, WolverineExceptionStack, WolverineDestination,
	WolverinePartition, WolverineOffset, WolverineFailedAt,
	RuleName, RuleMode, RuleSubject, RuleTopic, RuleException,
	"Kafka_DLT-Original-Topic", "FW.DLQ.TOPIC", "Kafka_Original-Topic", "__RULE.NAME",
}

// notDeadLetterHeaders are headers a replay must keep.
var notDeadLetterHeaders = []string{
	ReplayHeaderID, ReplayHeaderSource, ReplayHeaderCount, ReplayHeaderAt, ReplayHeaderReason,
	"ce_id", "ce_type", "content-type", "traceparent", "_watermill_message_uuid", "fw.dlq", "fw.dlqx",
	"kafka_dlt", "topic_poisoned_x", "x_topic_poisoned", "dead-letter", "__connect.errors", "retry_topic",
	"kafka_messageId", "id", "kafka_original", "original_topicx", "__rule", "exception-typex",
	"kafka_correlationId", "", "\xff\xfe", "fw.replay.count.extra",
}

func TestIsDeadLetterHeader(t *testing.T) {
	for _, k := range allDeadLetterHeaders {
		if !IsDeadLetterHeader(k) {
			t.Errorf("IsDeadLetterHeader(%q) = false", k)
		}
	}
	for _, k := range notDeadLetterHeaders {
		if IsDeadLetterHeader(k) {
			t.Errorf("IsDeadLetterHeader(%q) = true", k)
		}
	}
}

func TestStripDeadLetterHeaders(t *testing.T) {
	var in, want []kgo.RecordHeader
	for i := 0; i < max(len(allDeadLetterHeaders), len(notDeadLetterHeaders)); i++ {
		if i < len(notDeadLetterHeaders) {
			h := kgo.RecordHeader{Key: notDeadLetterHeaders[i], Value: []byte{byte(i), 0xff, 0}}
			if i%5 == 0 {
				h.Value = nil
			}
			in = append(in, h)
			want = append(want, h)
		}
		if i < len(allDeadLetterHeaders) {
			in = append(in, kgo.RecordHeader{Key: allDeadLetterHeaders[i], Value: []byte("x")})
		}
	}
	snapshot := append([]kgo.RecordHeader(nil), in...)
	got := StripDeadLetterHeaders(in)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stripped\n got %q\nwant %q", got, want)
	}
	if !reflect.DeepEqual(in, snapshot) {
		t.Fatal("the input was modified")
	}
	if got := StripDeadLetterHeaders([]kgo.RecordHeader{{Key: HeaderReason}}); got != nil {
		t.Fatalf("all stripped: %q, want nil", got)
	}
	// What NewDeadLetter adds, StripDeadLetterHeaders takes away.
	orig := []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: ReplayHeaderCount, Value: []byte("2")}}
	dl := NewDeadLetter(&kgo.Record{Topic: "t", Headers: orig}, Meta{Reason: ReasonRejected, Group: "g", Attempts: 2})
	if got := StripDeadLetterHeaders(dl.Headers); !reflect.DeepEqual(got, orig) {
		t.Fatalf("strip(NewDeadLetter) = %q, want %q", got, orig)
	}
}
