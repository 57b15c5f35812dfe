package dlq

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func ptr[T any](v T) *T { return &v }

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// expect is what a table test checks of a DeadLetter; Problems are substrings, one per
// HeaderProblem in order, written "header: problem".
type expect struct {
	Convention        Convention
	OriginalTopic     string
	OriginalPartition *int32
	OriginalOffset    *int64
	OriginalTimestamp string // RFC 3339, "" for nil
	Group, Handler    string
	Reason            string
	ErrorClass        string
	ErrorMessage      string // substring
	StackTrace        string // substring
	Attempts          int
	EventID           string
	ReplayCount       int
	Problems          []string
	// RootCause is compared exactly; EventIDSource, RetryTopics and OriginalKey only when set.
	RootCause     string
	EventIDSource string
	RetryTopics   []string
	OriginalKey   *string
}

func (e expect) check(t *testing.T, d DeadLetter) {
	t.Helper()
	ts := ""
	if d.OriginalTimestamp != nil {
		ts = d.OriginalTimestamp.Format(time.RFC3339Nano)
	}
	type pair struct {
		name      string
		got, want string
		substring bool
	}
	for _, p := range []pair{
		{"convention", string(d.Convention), string(e.Convention), false},
		{"original topic", d.OriginalTopic, e.OriginalTopic, false},
		{"original partition", fmtPtr(d.OriginalPartition), fmtPtr(e.OriginalPartition), false},
		{"original offset", fmtPtr(d.OriginalOffset), fmtPtr(e.OriginalOffset), false},
		{"original timestamp", ts, e.OriginalTimestamp, false},
		{"group", d.Group, e.Group, false},
		{"handler", d.Handler, e.Handler, false},
		{"reason", d.Reason, e.Reason, false},
		{"error class", d.ErrorClass, e.ErrorClass, false},
		{"error message", d.ErrorMessage, e.ErrorMessage, true},
		{"stack trace", d.StackTrace, e.StackTrace, true},
		{"attempts", fmt.Sprint(d.Attempts), fmt.Sprint(e.Attempts), false},
		{"event id", d.EventID, e.EventID, false},
		{"replay count", fmt.Sprint(d.ReplayCount), fmt.Sprint(e.ReplayCount), false},
		{"root cause", d.RootCause, e.RootCause, false},
	} {
		if p.substring && !strings.Contains(p.got, p.want) || !p.substring && p.got != p.want {
			t.Errorf("%s = %q, want %q", p.name, p.got, p.want)
		}
		if p.substring && p.want == "" && p.got != "" {
			t.Errorf("%s = %q, want empty", p.name, p.got)
		}
	}
	if e.EventIDSource != "" && d.EventIDSource != e.EventIDSource {
		t.Errorf("event id source = %q, want %q", d.EventIDSource, e.EventIDSource)
	}
	if e.RetryTopics != nil && !reflect.DeepEqual(d.RetryTopics, e.RetryTopics) {
		t.Errorf("retry topics = %q, want %q", d.RetryTopics, e.RetryTopics)
	}
	if e.OriginalKey != nil && (!d.HasOriginalKey || string(d.OriginalKey) != *e.OriginalKey) {
		t.Errorf("original key = %q (%v), want %q", d.OriginalKey, d.HasOriginalKey, *e.OriginalKey)
	}
	var got []string
	for _, hp := range d.HeaderProblems {
		got = append(got, hp.Header+": "+hp.Problem)
	}
	if len(got) != len(e.Problems) {
		t.Fatalf("header problems %q, want %d like %q", got, len(e.Problems), e.Problems)
	}
	for i := range got {
		if !strings.Contains(got[i], e.Problems[i]) {
			t.Errorf("header problem %d = %q, want it to contain %q", i, got[i], e.Problems[i])
		}
	}
}

// TestParseConventions checks, per convention, what Parse reads from each fixture record in
// testdata/dlq: the expectations are written here by hand, independently of the golden files.
func TestParseConventions(t *testing.T) {
	ms := "2026-03-14T09:26:53.589Z"
	tests := map[string]map[string]expect{
		"spring": {
			"DefaultErrorHandler, every header": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](3), OriginalOffset: ptr[int64](42),
				OriginalTimestamp: ms, Group: "order-service", ErrorClass: "java.lang.IllegalStateException",
				ErrorMessage: "no such customer", StackTrace: "OrderListener.java:42", EventID: "evt-spring-1",
			},
			"ErrorHandlingDeserializer failure": {
				Convention: ConventionSpring, OriginalTopic: "orders", OriginalPartition: ptr[int32](0), OriginalOffset: ptr[int64](5),
				OriginalTimestamp: ms, Group: "order-service", Reason: ReasonMalformed,
				ErrorClass: "org.springframework.kafka.support.serializer.DeserializationException", ErrorMessage: "failed to deserialize",
			},
			"key deserialization failure": {
				Convention: ConventionSpring, OriginalTopic: "orders", OriginalPartition: ptr[int32](2), OriginalOffset: ptr[int64](99),
				Reason: ReasonMalformed, ErrorClass: "org.springframework.kafka.support.serializer.DeserializationException",
				ErrorMessage: "failed to deserialize key", StackTrace: "bad key",
			},
			"truncated partition header (3 bytes)": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalOffset: ptr[int64](42),
				ErrorClass: "java.lang.RuntimeException", EventID: "evt-plain-19",
				Problems: []string{"kafka_dlt-original-partition: want 4 bytes, got 3"},
			},
			"integers written as decimal text and with the wrong width": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](4), OriginalOffset: ptr[int64](42),
				OriginalTimestamp: ms,
				Problems: []string{
					`kafka_dlt-original-partition: want 4 big-endian bytes, got decimal text "4": read as 4`,
					"kafka_dlt-original-offset: want 8 bytes, got 4: read as a big-endian int32, 42",
					`kafka_dlt-original-timestamp: want 8 big-endian bytes, got decimal text "1773480413589"`,
				},
			},
			"partition as 4 ASCII digits and as 8 bytes": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](1234),
				Problems: []string{
					`kafka_dlt-original-partition: want 4 big-endian bytes, got decimal text "1234"`,
					"KAFKA_DLT-ORIGINAL-OFFSET: negative offset -1",
				},
			},
			"8-byte partition, empty offset": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](3),
				Problems: []string{
					"kafka_dlt-original-partition: want 4 bytes, got 8: read as a big-endian int64, 3",
					"kafka_dlt-original-offset: want 8 bytes, got 0",
				},
			},
			"retry topics: the first original headers are the true original": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](1), OriginalOffset: ptr[int64](100),
				ErrorClass: "org.springframework.kafka.listener.ListenerExecutionFailedException", ErrorMessage: "timeout",
				Attempts: 3, EventID: "evt-plain-20", RetryTopics: []string{"orders-retry-0"},
			},
			"retry topics (@RetryableTopic): kafka_original-* and kafka_exception-*, two hops": {
				Convention: ConventionSpring, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](3),
				OriginalOffset: ptr[int64](42), OriginalTimestamp: ms, Group: "order-service",
				ErrorClass: "java.lang.IllegalStateException", ErrorMessage: "threw exception", StackTrace: "Caused by: java.lang.IllegalStateException",
				RootCause: "java.lang.IllegalStateException: no such customer: c-17", Attempts: 3,
				EventID: "evt-retry-1", EventIDSource: EventIDFromEnvelope, RetryTopics: []string{"orders-retry-0", "orders-retry-1"},
			},
		},
		"connect": {
			"sink task put failure": {
				Convention: ConventionConnect, Reason: ReasonRejected, OriginalTopic: "customers", OriginalPartition: ptr[int32](2), OriginalOffset: ptr[int64](1234567),
				Handler: "jdbc-sink", ErrorClass: "org.apache.kafka.connect.errors.ConnectException",
				ErrorMessage: "duplicate key", StackTrace: "JdbcSinkTask.java:100", EventID: "evt-connect-1",
			},
			"converter failure: the message is generic, the cause is in the stack trace": {
				Convention: ConventionConnect, Reason: ReasonMalformed, OriginalTopic: "clicks", OriginalPartition: ptr[int32](1),
				OriginalOffset: ptr[int64](523), Handler: "s3-sink", ErrorClass: "org.apache.kafka.connect.errors.DataException",
				ErrorMessage: "failed due to serialization error: ", StackTrace: "JsonConverter.java:333",
				RootCause: "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('o' (code 111)): was expecting comma to separate Object entries",
			},
			"transformation failure": {
				Convention: ConventionConnect, Reason: ReasonRejected, OriginalTopic: "clicks", OriginalPartition: ptr[int32](0),
				OriginalOffset: ptr[int64](77), Handler: "s3-sink", ErrorClass: "org.apache.kafka.connect.errors.DataException",
				ErrorMessage: "Only Struct objects supported", EventID: "evt-smt-1",
			},
			"value converter failure": {
				Convention: ConventionConnect, OriginalTopic: "clicks", OriginalPartition: ptr[int32](0), OriginalOffset: ptr[int64](88),
				Handler: "s3-sink", Reason: ReasonMalformed, ErrorClass: "org.apache.kafka.connect.errors.DataException",
				ErrorMessage: "serialization error",
			},
			"unreadable partition and offset, topic not a topic name": {
				Convention: ConventionConnect, Reason: ReasonRejected, OriginalTopic: "clicks and views", Handler: "s3-sink",
				Problems: []string{
					`__connect.errors.topic: "clicks and views" is not a valid topic name`,
					`__connect.errors.partition: not an integer: "two"`,
					`__connect.errors.offset: integer out of range: "99999999999999999999"`,
				},
			},
		},
		"watermill": {
			"poison queue middleware": {
				Convention: ConventionWatermill, OriginalTopic: "payments", Handler: "payments_handler",
				ErrorMessage: "card declined: permanent", EventID: "evt-wm-1",
			},
			"no handler: the subscriber names it": {
				Convention: ConventionWatermill, OriginalTopic: "payments", Handler: "payments-subscriber",
				ErrorMessage: "bad\uFFFDbytes",
				Problems:     []string{"reason_poisoned: not valid UTF-8 at byte offset 3"},
			},
			"no envelope id: the message uuid is the event id": {
				Convention: ConventionWatermill, OriginalTopic: "payments", Handler: "charge",
				ErrorMessage: "cannot unmarshal amount", EventID: "2b6f1b4e-8d0a-4f59-a2a1-5c3f0d9e7a10", EventIDSource: WatermillMessageUUID,
			},
		},
		"smallrye": {
			"nack with a cause": {
				Convention: ConventionSmallRye, Reason: ReasonRejected, OriginalTopic: "movies", OriginalPartition: ptr[int32](1), OriginalOffset: ptr[int64](17),
				ErrorClass: "java.lang.RuntimeException", ErrorMessage: "Something went wrong; caused by: connection reset", EventID: "evt-sr-1",
				RootCause: "connection reset",
			},
			"deserialization failure": {
				Convention: ConventionSmallRye, OriginalTopic: "movies", OriginalPartition: ptr[int32](0), OriginalOffset: ptr[int64](3),
				Reason: ReasonMalformed, ErrorClass: "io.smallrye.reactive.messaging.kafka.fault.DeserializationFailure",
				ErrorMessage: "deserialization failed",
			},
			"dead-lettered twice: its own headers come first": {
				Convention: ConventionSmallRye, Reason: ReasonRejected, OriginalTopic: "dead-letter-topic-movies", OriginalPartition: ptr[int32](0), OriginalOffset: ptr[int64](0),
				ErrorClass: "java.lang.IllegalArgumentException", ErrorMessage: "second failure",
			},
			"produced by hand with kcat (strings only, no class)": {
				Convention: ConventionSmallRye, Reason: ReasonRejected, OriginalTopic: "orders", OriginalPartition: ptr[int32](2), OriginalOffset: ptr[int64](7),
			},
		},
		"fieldwork": {
			"every header": {
				Convention: ConventionFieldwork, OriginalTopic: "tasks", OriginalPartition: ptr[int32](2), OriginalOffset: ptr[int64](1041),
				OriginalTimestamp: "2026-03-14T12:59:58.123Z", Group: "task-projector", Handler: "projection", Reason: ReasonExhausted,
				ErrorMessage: "upstream 503", Attempts: 5, EventID: "evt-7",
			},
			"malformed, no event id header: read from the value": {
				Convention: ConventionFieldwork, OriginalTopic: "tasks", OriginalPartition: ptr[int32](0), OriginalOffset: ptr[int64](12),
				Reason: ReasonMalformed, ErrorMessage: "not an integer", EventID: "evt-8",
			},
			"replayed twice, then dead-lettered again": {
				Convention: ConventionFieldwork, OriginalTopic: "tasks", OriginalPartition: ptr[int32](1), OriginalOffset: ptr[int64](900),
				Reason: ReasonRejected, EventID: "evt-9", ReplayCount: 2,
			},
			"unreadable values are listed": {
				Convention: ConventionFieldwork, OriginalTopic: "tasks", Group: "gro\uFFFDup", Reason: "bored",
				Problems: []string{
					"fw.dlq.partition: partition -1 out of range",
					`fw.dlq.offset: not an integer: "12x"`,
					`fw.dlq.timestamp: not an RFC 3339 time: "yesterday"`,
					"fw.dlq.group: not valid UTF-8 at byte offset 3",
					`fw.dlq.reason: unknown reason "bored"`,
					"fw.dlq.attempts: negative count -3",
					`fw.replay.count: not an integer: "many"`,
				},
			},
			"fieldwork and Spring headers together: fieldwork is read": {
				Convention: ConventionFieldwork, OriginalTopic: "tasks", OriginalPartition: ptr[int32](0), OriginalOffset: ptr[int64](1),
				Reason:   ReasonUnsupported,
				Problems: []string{"kafka_dlt-original-topic: not read: the record also has fieldwork dead-letter headers"},
			},
		},
		"karafka": {
			"Karafka 2.4+: original_* headers, the original partition as the key": {
				Convention: ConventionKarafka, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](2),
				OriginalOffset: ptr[int64](15), Group: "karafka_app_order_consumer", Attempts: 3, EventID: "evt-karafka-1",
				OriginalKey: ptr("order-15"),
			},
			"Karafka before 2.4: source_* headers, a record without a key": {
				Convention: ConventionKarafka, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](0),
				OriginalOffset: ptr[int64](8), Group: "karafka_app_order_consumer", Attempts: 1, EventID: "evt-karafka-2",
				OriginalKey: ptr(""),
			},
		},
		"wolverine": {
			"dead letter with an inner exception": {
				Convention: ConventionWolverine, Reason: ReasonExhausted, OriginalTopic: "payments", OriginalPartition: ptr[int32](1),
				OriginalOffset: ptr[int64](33), ErrorClass: "System.InvalidOperationException", ErrorMessage: "Charge failed",
				StackTrace: "Gateway.cs:line 41", RootCause: "System.Net.Http.HttpRequestException: Response status code does not indicate success: 402 (Payment Required).",
				EventID: "018e3f9a-7b2c-7d4e-9f01-23456789abcd", EventIDSource: MessageIDHeader,
			},
			"serializer failure": {
				Convention: ConventionWolverine, Reason: ReasonMalformed, OriginalTopic: "payments", OriginalPartition: ptr[int32](0),
				OriginalOffset: ptr[int64](34), ErrorClass: "System.Text.Json.JsonException", ErrorMessage: "invalid start of a property name",
			},
		},
		"datacontract": {
			"a CONDITION rule refused a write": {
				Convention: ConventionDataContract, Reason: ReasonRejected, OriginalTopic: "orders", Handler: "checkTotal",
				ErrorClass: "rule checkTotal (WRITE) on orders-value", ErrorMessage: "Expr failed: 'message.total > 0'", EventID: "evt-dc-1",
			},
		},
		"kafkastreams": {
			"LogAndContinueExceptionHandler, a value that did not deserialize": {
				Convention: ConventionKafkaStreams, Reason: ReasonMalformed, OriginalTopic: "payments", OriginalPartition: ptr[int32](1),
				OriginalOffset: ptr[int64](812), ErrorClass: "org.apache.kafka.common.errors.SerializationException",
				ErrorMessage: "Size of data received by IntegerDeserializer is not 4", StackTrace: "IntegerDeserializer.java:30",
			},
			"LogAndContinueProcessingExceptionHandler, a processor that threw": {
				Convention: ConventionKafkaStreams, Reason: ReasonRejected, OriginalTopic: "payments", OriginalPartition: ptr[int32](0),
				OriginalOffset: ptr[int64](813), ErrorClass: "java.lang.IllegalStateException", ErrorMessage: "Processing failed",
				StackTrace: "PaymentProcessor.java:42", EventID: "evt-streams-1", RootCause: "java.lang.ArithmeticException: amount overflows a long",
			},
		},
		"sharegroup": {
			"rejected by a member, copy off: coordinates only": {
				Convention: ConventionShareGroup, Reason: ReasonRejected, OriginalTopic: "payments", OriginalPartition: ptr[int32](1),
				OriginalOffset: ptr[int64](815), Group: "billing", Attempts: 1, ErrorMessage: ShareMessageRejected,
			},
			"delivery count exceeded, copy on": {
				Convention: ConventionShareGroup, Reason: ReasonExhausted, OriginalTopic: "payments", OriginalPartition: ptr[int32](0),
				OriginalOffset: ptr[int64](816), Group: "billing", Attempts: 5, ErrorMessage: ShareMessageExhausted,
				EventID: "evt-share-1", EventIDSource: EventIDFromEnvelope,
			},
			"a message the broker does not write, an unreadable count": {
				Convention: ConventionShareGroup, OriginalTopic: "payments", OriginalPartition: ptr[int32](0),
				OriginalOffset: ptr[int64](817), Group: "billing", ErrorMessage: "Acquisition lock timed out.",
				Problems: []string{`__dlq.errors.delivery.count: not an integer: "many"`},
			},
		},
		"uberkafka": {
			"DLQMetadata in the key, the original key inside it": {
				Convention: ConventionUberKafka, Reason: ReasonExhausted, OriginalTopic: "orders", OriginalPartition: ptr[int32](1),
				OriginalOffset: ptr[int64](77), OriginalTimestamp: "2026-03-14T09:27:00.001Z", Attempts: 3, EventID: "evt-uber-1",
				OriginalKey: ptr("order-77"),
			},
			"a key that is not a DLQMetadata stays unknown": {Convention: ConventionUnknown},
		},
		"unknown": {
			"no headers, non-UTF-8 key":                                      {Convention: ConventionUnknown, EventID: "evt-u-1"},
			"headers of no known convention, non-UTF-8 header key and value": {Convention: ConventionUnknown},
			"tombstone": {Convention: ConventionUnknown},
			"Debezium outbox record: its id header is the event id": {
				Convention: ConventionUnknown, EventID: "4f1e7c9a-1b2c-4d3e-8f90-a1b2c3d4e5f6", EventIDSource: MessageIDHeader,
			},
			"Spring message id, JSON-encoded by the header mapper": {
				Convention: ConventionUnknown, EventID: "6d3c2b1a-0000-4000-8000-000000000001", EventIDSource: SpringMessageID,
			},
		},
	}
	for _, file := range fixtureFiles(t) {
		want, ok := tests[file]
		if !ok {
			t.Errorf("no expectations for testdata/dlq/%s.json", file)
			continue
		}
		fixtures := loadFixtures(t, file)
		if len(fixtures) != len(want) {
			t.Errorf("%s: %d fixtures, %d expectations", file, len(fixtures), len(want))
		}
		for _, fx := range fixtures {
			t.Run(file+"/"+fx.Name, func(t *testing.T) {
				e, ok := want[fx.Name]
				if !ok {
					t.Fatalf("no expectation")
				}
				r := fx.Record.record(t)
				d := Parse(r)
				checkInvariants(t, r, d)
				e.check(t, d)
			})
		}
	}
}

// TestSpringIntegerShapes reads the Spring partition and offset headers in every shape a
// producer has been seen to write, and some it should not.
func TestSpringIntegerShapes(t *testing.T) {
	tests := []struct {
		name      string
		partition []byte
		want      *int32
		problem   string // substring; "" for none
	}{
		{"4 bytes", []byte{0, 0, 0, 4}, ptr[int32](4), ""},
		{"4 bytes, large", []byte{0, 1, 0, 0}, ptr[int32](65536), ""},
		{"3 bytes", []byte{0, 0, 4}, nil, "want 4 bytes, got 3"},
		{"5 bytes", []byte{0, 0, 0, 0, 4}, nil, "want 4 bytes, got 5"},
		{"empty", []byte{}, nil, "want 4 bytes, got 0"},
		{"nil", nil, nil, "want 4 bytes, got 0"},
		{"8 bytes", []byte{0, 0, 0, 0, 0, 0, 0, 4}, ptr[int32](4), "want 4 bytes, got 8: read as a big-endian int64, 4"},
		{"8 bytes, too big", []byte{0, 0, 0, 1, 0, 0, 0, 0}, nil, "out of range"},
		{"decimal text", []byte("12"), ptr[int32](12), `got decimal text "12": read as 12`},
		{"4 ASCII digits", []byte("0012"), ptr[int32](12), `got decimal text "0012"`},
		{"negative", []byte{0xff, 0xff, 0xff, 0xff}, nil, "partition -1 out of range"},
		{"negative text", []byte("-1"), nil, "partition -1 out of range"},
		{"not a number", []byte("ab"), nil, "want 4 bytes, got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &kgo.Record{Topic: "orders.DLT", Headers: []kgo.RecordHeader{
				{Key: SpringOriginalTopic, Value: []byte("orders")},
				{Key: SpringOriginalPartition, Value: tt.partition},
			}}
			d := Parse(r)
			checkInvariants(t, r, d)
			if fmtPtr(d.OriginalPartition) != fmtPtr(tt.want) {
				t.Errorf("partition %s, want %s", fmtPtr(d.OriginalPartition), fmtPtr(tt.want))
			}
			found := false
			for _, p := range d.HeaderProblems {
				if p.Header != SpringOriginalPartition {
					t.Errorf("problem on %s: %s", p.Header, p.Problem)
				}
				found = found || tt.problem != "" && strings.Contains(p.Problem, tt.problem)
			}
			if tt.problem == "" && len(d.HeaderProblems) > 0 || tt.problem != "" && !found {
				t.Errorf("problems %+v, want one containing %q", d.HeaderProblems, tt.problem)
			}
			if topic, p, ok := d.Source(); !ok || topic != "orders" || fmtPtr(p) != fmtPtr(tt.want) {
				t.Errorf("Source() = %q, %s, %v", topic, fmtPtr(p), ok)
			}
		})
	}
}

// TestParseNonUTF8 checks that bytes that are not UTF-8, in header keys and values and in the
// record key, are kept exactly and flagged where a convention wants text.
func TestParseNonUTF8(t *testing.T) {
	badKey := "x-\xff\xfe"
	r := &kgo.Record{
		Topic: "t.dlq",
		Key:   []byte{0xc3, 0x28},
		Headers: []kgo.RecordHeader{
			{Key: badKey, Value: []byte{0x80}},
			{Key: "dead-letter-topic", Value: []byte("ord\xffers")},
			{Key: "dead-letter-reason", Value: []byte("bad \xc0 value")},
			{Key: "dead-letter-\xff", Value: []byte("?")},
		},
	}
	d := Parse(r)
	checkInvariants(t, r, d)
	if d.Convention != ConventionSmallRye {
		t.Fatalf("convention %s", d.Convention)
	}
	if d.Headers[0].Key != badKey || string(d.Headers[0].Value) != "\x80" {
		t.Fatalf("raw header changed: %q", d.Headers[0])
	}
	if d.OriginalTopic != "ord\uFFFDers" || d.ErrorMessage != "bad \uFFFD value" {
		t.Errorf("topic %q, message %q", d.OriginalTopic, d.ErrorMessage)
	}
	if _, _, ok := d.Source(); ok {
		t.Errorf("Source() ok for an invalid topic name")
	}
	want := []string{
		"dead-letter-topic: not valid UTF-8 at byte offset 3",
		"dead-letter-topic: \"ord\uFFFDers\" is not a valid topic name",
		"dead-letter-reason: not valid UTF-8 at byte offset 4",
	}
	if len(d.HeaderProblems) != len(want) {
		t.Fatalf("problems %+v, want %q", d.HeaderProblems, want)
	}
	for i, p := range d.HeaderProblems {
		if got := p.Header + ": " + p.Problem; !strings.HasPrefix(got, want[i]) {
			t.Errorf("problem %d = %q, want %q", i, got, want[i])
		}
	}
}

func TestParseNil(t *testing.T) {
	d := Parse(nil)
	if d.Convention != ConventionUnknown || d.Headers != nil {
		t.Fatalf("Parse(nil) = %+v", d)
	}
	if _, _, ok := d.Source(); ok {
		t.Fatal("Source() ok for nil")
	}
}

func TestParseHeaderKeysIgnoreASCIICase(t *testing.T) {
	r := &kgo.Record{Headers: []kgo.RecordHeader{
		{Key: "Dead-Letter-Topic", Value: []byte("orders")},
		{Key: "DEAD-LETTER-OFFSET", Value: []byte("9")},
	}}
	d := Parse(r)
	checkInvariants(t, r, d)
	if d.Convention != ConventionSmallRye || d.OriginalTopic != "orders" || fmtPtr(d.OriginalOffset) != "9" {
		t.Fatalf("got %+v", d)
	}
}

func TestSource(t *testing.T) {
	tests := []struct {
		name  string
		d     DeadLetter
		topic string
		part  *int32
		ok    bool
	}{
		{"topic and partition", DeadLetter{OriginalTopic: "orders", OriginalPartition: ptr[int32](3)}, "orders", ptr[int32](3), true},
		{"topic only", DeadLetter{OriginalTopic: "orders"}, "orders", nil, true},
		{"none", DeadLetter{}, "", nil, false},
		{"invalid name", DeadLetter{OriginalTopic: "a b", OriginalPartition: ptr[int32](1)}, "", nil, false},
		{"dot", DeadLetter{OriginalTopic: "."}, "", nil, false},
		{"too long", DeadLetter{OriginalTopic: strings.Repeat("a", 250)}, "", nil, false},
		{"longest", DeadLetter{OriginalTopic: strings.Repeat("a", 249)}, strings.Repeat("a", 249), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topic, part, ok := tt.d.Source()
			if topic != tt.topic || fmtPtr(part) != fmtPtr(tt.part) || ok != tt.ok {
				t.Fatalf("Source() = %q, %s, %v; want %q, %s, %v", topic, fmtPtr(part), ok, tt.topic, fmtPtr(tt.part), tt.ok)
			}
			if part != nil && part == tt.d.OriginalPartition {
				t.Fatal("Source shares the partition pointer")
			}
			rt, rp, rok := tt.d.Route()
			want := int32(-1)
			if tt.part != nil {
				want = *tt.part
			}
			if rt != tt.topic || rp != want || rok != tt.ok {
				t.Fatalf("Route() = %q, %d, %v; want %q, %d, %v", rt, rp, rok, tt.topic, want, tt.ok)
			}
		})
	}
}

// TestParserMatchesParseWith: a Parser reads every fixture as ParseWith does, whatever it read
// before: the fixtures in order, in reverse and interleaved, with every option set.
func TestParserMatchesParseWith(t *testing.T) {
	var recs []*kgo.Record
	for _, file := range fixtureFiles(t) {
		for _, fx := range loadFixtures(t, file) {
			recs = append(recs, fx.Record.record(t))
		}
	}
	if len(recs) < 20 {
		t.Fatalf("only %d fixtures", len(recs))
	}
	var order []int
	for i := range recs {
		order = append(order, i)
	}
	for i := range recs {
		order = append(order, len(recs)-1-i)
	}
	for i := range recs {
		order = append(order, i, (i*7)%len(recs), i)
	}
	for _, opts := range []ParseOptions{{}, {NoEnvelope: true, NoHeaders: true, NoTimes: true}, {NoHeaders: true}} {
		p := NewParser(opts)
		for _, i := range order {
			got, want := p.Parse(recs[i]), ParseWith(recs[i], opts)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("record %d (%+v):\n got %+v\nwant %+v", i, opts, got, want)
			}
		}
	}
}

// A record a replay wrote carries fw.replay.id, in any ASCII case; the other provenance
// headers alone, or a dead letter's, do not make one.
func TestWrittenByReplay(t *testing.T) {
	for _, tc := range []struct {
		headers []kgo.RecordHeader
		want    bool
	}{
		{[]kgo.RecordHeader{{Key: "user", Value: []byte("x")}, {Key: ReplayHeaderID, Value: []byte("run-1")}}, true},
		{[]kgo.RecordHeader{{Key: "FW.REPLAY.ID", Value: nil}}, true},
		{[]kgo.RecordHeader{{Key: ReplayHeaderCount, Value: []byte("1")}, {Key: ReplayHeaderSource, Value: []byte("t/0/1")}}, false},
		{[]kgo.RecordHeader{{Key: HeaderTopic, Value: []byte("orders")}}, false},
		{nil, false},
	} {
		if got := WrittenByReplay(&kgo.Record{Headers: tc.headers}); got != tc.want {
			t.Errorf("headers %v: WrittenByReplay %v, want %v", tc.headers, got, tc.want)
		}
	}
}
