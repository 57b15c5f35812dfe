package dlq_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// convCase is one dead letter as a library writes it, with what fieldwork must read from it
// and what its replay must look like.
type convCase struct {
	name string
	rec  *kgo.Record
	// userHeaders are the record's own headers, which a replay keeps byte for byte, in order;
	// every other header the record carries is its convention's.
	userHeaders []kgo.RecordHeader
	// want, read by `dlq list`.
	conv                      dlq.Convention
	partition                 int32
	offset                    int64
	reason, class, message    string
	rootCause                 string
	eventID, eventIDSource    string
	retryTopics               []string
	replayKey                 []byte
	originalKeyDiffersFromKey bool
}

// user are the headers the original producer wrote: text, bytes that are not text, an empty
// value and a null one.
func user() []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
		{Key: "x-bin", Value: []byte{0x00, 0xff, 0x10, 0x80}},
		{Key: "x-empty", Value: []byte{}},
		{Key: "x-null", Value: nil},
	}
}

// conventionCases are dead letters of every convention, their headers written with the bytes
// each library writes (names and encodings from the libraries' sources: Spring's
// KafkaHeaders and RetryTopicHeaders — big-endian ints —, Kafka Connect's
// DeadLetterQueueReporter, Karafka's DLQ strategy, Wolverine's dead-letter headers, the
// schema registry's DlqAction, uber-go/kafka-client's DLQMetadata protobuf), naming orig as
// the original topic.
func conventionCases(orig string) []convCase {
	be32 := dlqBE32
	be64 := dlqBE64
	ms := dlqBase.Add(-time.Hour).UnixMilli()
	h := func(kv ...any) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i+1 < len(kv); i += 2 {
			v, ok := kv[i+1].([]byte)
			if !ok {
				v = []byte(kv[i+1].(string))
			}
			out = append(out, kgo.RecordHeader{Key: kv[i].(string), Value: v})
		}
		return out
	}
	springTrace := "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method 'public void com.example.OrderListener.on(java.lang.String)' threw exception\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2869)\n" +
		"Caused by: java.lang.IllegalStateException: no such customer: c-17\n" +
		"\tat com.example.OrderListener.on(OrderListener.java:42)\n\t... 15 common frames omitted\n"
	connectTrace := "org.apache.kafka.connect.errors.DataException: Converting byte[] to Kafka Connect data failed due to serialization error: \n" +
		"\tat org.apache.kafka.connect.json.JsonConverter.toConnectData(JsonConverter.java:333)\n" +
		"Caused by: org.apache.kafka.common.errors.SerializationException: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('o' (code 111)): was expecting comma to separate Object entries\n" +
		"\tat org.apache.kafka.connect.json.JsonDeserializer.deserialize(JsonDeserializer.java:66)\n" +
		"Caused by: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('o' (code 111)): was expecting comma to separate Object entries\n" +
		" at [Source: (byte[])\"{\"a\":1 o}\"; line: 1, column: 9]\n\t... 17 more\n"
	wolverineTrace := "System.InvalidOperationException: Charge failed\n" +
		" ---> System.Net.Http.HttpRequestException: Response status code does not indicate success: 402 (Payment Required).\n" +
		"   at Payments.Gateway.Charge(Decimal amount) in /src/Gateway.cs:line 41\n" +
		"   --- End of inner exception stack trace ---\n"
	var meta []byte
	meta = protowire.AppendTag(meta, 1, protowire.VarintType)
	meta = protowire.AppendVarint(meta, 3)
	meta = protowire.AppendTag(meta, 2, protowire.BytesType)
	meta = protowire.AppendString(meta, orig)
	meta = protowire.AppendTag(meta, 3, protowire.VarintType)
	meta = protowire.AppendVarint(meta, 1)
	meta = protowire.AppendTag(meta, 4, protowire.VarintType)
	meta = protowire.AppendVarint(meta, 77)
	meta = protowire.AppendTag(meta, 5, protowire.VarintType)
	meta = protowire.AppendVarint(meta, uint64(dlqBase.Add(-time.Hour).UnixNano()))
	meta = protowire.AppendTag(meta, 6, protowire.BytesType)
	meta = protowire.AppendBytes(meta, []byte("order-77"))

	with := func(conv []kgo.RecordHeader, users []kgo.RecordHeader, userFirst bool) []kgo.RecordHeader {
		if userFirst {
			return append(append([]kgo.RecordHeader{}, users...), conv...)
		}
		return append(append([]kgo.RecordHeader{}, conv...), users...)
	}
	return []convCase{
		{
			name: "spring retry topics",
			rec: &kgo.Record{Key: []byte("order-17"), Value: []byte(`{"event_id":"evt-retry-1"}`), Headers: with(h(
				"kafka_original-topic", orig, "kafka_original-partition", be32(3), "kafka_original-offset", be64(42),
				"kafka_original-timestamp", be64(ms), "kafka_original-timestamp-type", "CreateTime",
				"kafka_dlt-original-consumer-group", "order-service",
				"retry_topic-attempts", be32(3), "retry_topic-backoff-timestamp", []byte{0x01, 0x9c, 0xeb, 0xab, 0x9d, 0x1c},
				"kafka_original-topic", orig+"-retry-0", "kafka_original-partition", be32(0), "kafka_original-offset", be64(7),
				"kafka_original-timestamp", be64(ms+2000), "kafka_original-timestamp-type", "CreateTime",
				"kafka_exception-fqcn", "org.springframework.kafka.listener.ListenerExecutionFailedException",
				"kafka_exception-cause-fqcn", "java.lang.IllegalStateException",
				"kafka_exception-message", "Listener method 'public void com.example.OrderListener.on(java.lang.String)' threw exception",
				"kafka_exception-stacktrace", springTrace,
			), user(), true)},
			conv: dlq.ConventionSpring, partition: 3, offset: 42, reason: dlq.ReasonExhausted,
			class: "java.lang.IllegalStateException", message: "Listener method 'public void com.example.OrderListener.on(java.lang.String)' threw exception",
			rootCause: "java.lang.IllegalStateException: no such customer: c-17", eventID: "evt-retry-1", eventIDSource: "envelope",
			retryTopics: []string{orig + "-retry-0"}, replayKey: []byte("order-17"),
		},
		{
			name: "spring recoverer",
			rec: &kgo.Record{Key: []byte("order-18"), Value: []byte("not json"), Headers: with(h(
				dlq.SpringOriginalTopic, orig, dlq.SpringOriginalPartition, be32(2), dlq.SpringOriginalOffset, be64(9),
				dlq.SpringOriginalTimestamp, be64(ms), dlq.SpringOriginalTimestampType, "CreateTime",
				dlq.SpringOriginalConsumerGroup, "order-service",
				dlq.SpringExceptionFQCN, "org.springframework.kafka.support.serializer.DeserializationException",
				dlq.SpringExceptionMessage, "failed to deserialize",
				dlq.SpringExceptionStacktrace, "org.springframework.kafka.support.serializer.DeserializationException: failed to deserialize\n\tat x\nCaused by: com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'not'\n",
			), user(), true)},
			conv: dlq.ConventionSpring, partition: 2, offset: 9, reason: dlq.ReasonMalformed,
			class: "org.springframework.kafka.support.serializer.DeserializationException", message: "failed to deserialize",
			rootCause: "com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'not'", replayKey: []byte("order-18"),
		},
		{
			name: "connect",
			rec: &kgo.Record{Key: []byte("click-9"), Value: []byte(`{"a":1 o}`), Headers: with(user(), h(
				dlq.ConnectTopic, orig, dlq.ConnectPartition, "1", dlq.ConnectOffset, "523",
				dlq.ConnectConnectorName, "s3-sink", dlq.ConnectTaskID, "0", dlq.ConnectStage, "VALUE_CONVERTER",
				dlq.ConnectClassName, "org.apache.kafka.connect.json.JsonConverter",
				dlq.ConnectExceptionClassName, "org.apache.kafka.connect.errors.DataException",
				dlq.ConnectExceptionMessage, "Converting byte[] to Kafka Connect data failed due to serialization error: ",
				dlq.ConnectExceptionStacktrace, connectTrace,
			), true)},
			conv: dlq.ConventionConnect, partition: 1, offset: 523, reason: dlq.ReasonMalformed,
			class: "org.apache.kafka.connect.errors.DataException", message: "Converting byte[] to Kafka Connect data failed due to serialization error: ",
			rootCause: "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('o' (code 111)): was expecting comma to separate Object entries",
			replayKey: []byte("click-9"),
		},
		{
			name: "karafka",
			rec: &kgo.Record{Key: []byte("2"), Value: []byte(`{"event_id":"evt-karafka-1"}`), Headers: with(user(), h(
				dlq.KarafkaTopic, orig, dlq.KarafkaPartition, "2", dlq.KarafkaOffset, "15",
				dlq.KarafkaConsumerGroup, "karafka_app_order_consumer", dlq.KarafkaKey, "order-15", dlq.KarafkaAttempts, "3",
			), true)},
			conv: dlq.ConventionKarafka, partition: 2, offset: 15, reason: dlq.ReasonExhausted,
			eventID: "evt-karafka-1", eventIDSource: "envelope", replayKey: []byte("order-15"), originalKeyDiffersFromKey: true,
		},
		{
			name: "wolverine",
			rec: &kgo.Record{Key: []byte("payment-33"), Value: []byte(`{"amount":-5}`), Headers: with(h(
				dlq.WolverineExceptionType, "System.InvalidOperationException", dlq.WolverineExceptionMessage, "Charge failed",
				dlq.WolverineExceptionStack, wolverineTrace, dlq.WolverineDestination, "kafka://topic/"+orig,
				dlq.WolverinePartition, "0", dlq.WolverineOffset, "33", dlq.WolverineFailedAt, "2026-03-14T09:26:59.1234567+00:00",
			), append(user(), kgo.RecordHeader{Key: "id", Value: []byte("018e3f9a-7b2c-7d4e-9f01-23456789abcd")}), false)},
			userHeaders: append(user(), kgo.RecordHeader{Key: "id", Value: []byte("018e3f9a-7b2c-7d4e-9f01-23456789abcd")}),
			conv:        dlq.ConventionWolverine, partition: 0, offset: 33, reason: dlq.ReasonExhausted,
			class: "System.InvalidOperationException", message: "Charge failed",
			rootCause: "System.Net.Http.HttpRequestException: Response status code does not indicate success: 402 (Payment Required).",
			eventID:   "018e3f9a-7b2c-7d4e-9f01-23456789abcd", eventIDSource: "id", replayKey: []byte("payment-33"),
		},
		{
			name: "data contract",
			rec: &kgo.Record{Key: []byte("order-41"), Value: []byte(`{"total":-3}`), Headers: with(user(), h(
				dlq.RuleName, "checkTotal", dlq.RuleMode, "WRITE", dlq.RuleSubject, orig+"-value",
				dlq.RuleTopic, orig, dlq.RuleException, "Expr failed: 'message.total > 0'",
			), true)},
			conv: dlq.ConventionDataContract, partition: -1, offset: -1, reason: dlq.ReasonRejected,
			class: "rule checkTotal (WRITE) on " + orig + "-value", message: "Expr failed: 'message.total > 0'",
			replayKey: []byte("order-41"),
		},
		{
			name:        "uber kafka-client",
			rec:         &kgo.Record{Key: meta, Value: []byte(`{"event_id":"evt-uber-1"}`), Headers: user()},
			userHeaders: user(),
			conv:        dlq.ConventionUberKafka, partition: 1, offset: 77, reason: dlq.ReasonExhausted,
			eventID: "evt-uber-1", eventIDSource: "envelope", replayKey: []byte("order-77"), originalKeyDiffersFromKey: true,
		},
		{
			name: "watermill",
			rec: &kgo.Record{Key: []byte("payment-8"), Value: []byte(`{"amount":12}`), Headers: with(h(
				dlq.WatermillTopic, orig, dlq.WatermillHandler, "charge", dlq.WatermillSubscriber, "*kafka.Subscriber",
				dlq.WatermillReason, "card declined",
			), append([]kgo.RecordHeader{{Key: "_watermill_message_uuid", Value: []byte("2b6f1b4e-8d0a-4f59-a2a1-5c3f0d9e7a10")}}, user()...), false)},
			userHeaders: append([]kgo.RecordHeader{{Key: "_watermill_message_uuid", Value: []byte("2b6f1b4e-8d0a-4f59-a2a1-5c3f0d9e7a10")}}, user()...),
			conv:        dlq.ConventionWatermill, partition: -1, offset: -1, message: "card declined",
			eventID: "2b6f1b4e-8d0a-4f59-a2a1-5c3f0d9e7a10", eventIDSource: "_watermill_message_uuid", replayKey: []byte("payment-8"),
		},
	}
}

// TestConventionsListAndReplay writes a dead letter of every convention to a real topic with
// the header bytes its library writes, lists them (original coordinates, error, root cause,
// reason, event id and where it came from), replays them, and reads the replayed records back
// from the original topic: every convention's headers stripped, the record's own headers kept
// byte for byte and in order, the original key where the convention kept it apart.
func TestConventionsListAndReplay(t *testing.T) {
	orig := testenv.Name(t, "conv")
	testenv.CreateTopic(t, orig, 4, nil)
	deadTopic := orig + "-dlt"
	dlqNamedTopic(t, deadTopic, 1, nil)
	cases := conventionCases(orig)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(deadTopic))
	for i, c := range cases {
		c.rec.Timestamp = dlqBase.Add(time.Duration(i) * time.Second)
		testenv.Produce(t, cl, c.rec)
	}
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "journal.db")
	env := map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": dsn, "USER": "oncall"}
	if r := roottest.Run(t, env, "db", "migrate"); r.Code != 0 {
		t.Fatalf("db migrate: exit %d\n%s", r.Code, r.Stderr)
	}

	// Listed: the original coordinates, error, root cause, reason and event id of each.
	r := roottest.Run(t, env, "dlq", "list", "--topic", deadTopic, "--no-status", "-o", "jsonl")
	if r.Code != 0 {
		t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("dlq list: %d lines, want %d\n%s", len(lines), len(cases), r.Stdout)
	}
	for i, line := range lines {
		var d dlq.DeadLetter
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		c := cases[i]
		t.Run("list/"+c.name, func(t *testing.T) {
			num := func(p32 *int32, p64 *int64) (int32, int64) {
				a, b := int32(-1), int64(-1)
				if p32 != nil {
					a = *p32
				}
				if p64 != nil {
					b = *p64
				}
				return a, b
			}
			p, o := num(d.OriginalPartition, d.OriginalOffset)
			if d.Convention != c.conv || d.OriginalTopic != orig || p != c.partition || o != c.offset {
				t.Errorf("%s %s/%d/%d, want %s %s/%d/%d", d.Convention, d.OriginalTopic, p, o, c.conv, orig, c.partition, c.offset)
			}
			if d.Reason != c.reason || d.ErrorClass != c.class || d.ErrorMessage != c.message || d.RootCause != c.rootCause {
				t.Errorf("reason %q class %q message %q root cause %q,\nwant %q %q %q %q", d.Reason, d.ErrorClass, d.ErrorMessage, d.RootCause,
					c.reason, c.class, c.message, c.rootCause)
			}
			if d.EventID != c.eventID || d.EventIDSource != c.eventIDSource {
				t.Errorf("event id %q from %q, want %q from %q", d.EventID, d.EventIDSource, c.eventID, c.eventIDSource)
			}
			if fmt.Sprint(d.RetryTopics) != fmt.Sprint(c.retryTopics) {
				t.Errorf("retry topics %q, want %q", d.RetryTopics, c.retryTopics)
			}
			if c.originalKeyDiffersFromKey && (!d.HasOriginalKey || !bytes.Equal(d.OriginalKey, c.replayKey)) {
				t.Errorf("original key %q (%v), want %q", d.OriginalKey, d.HasOriginalKey, c.replayKey)
			}
			if len(d.HeaderProblems) > 0 {
				t.Errorf("header problems: %+v", d.HeaderProblems)
			}
		})
	}

	// Replayed back to the original topic.
	r = roottest.Run(t, env, "replay", "--topic", deadTopic, "--execute", "--yes", "--reason", "conventions", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf(`"sent": %d`, len(cases))) {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	got := testenv.ReadTopic(t, testenv.Brokers(t), orig) // the replay waited for every acknowledgement
	if len(got) != len(cases) {
		t.Fatalf("%s holds %d records after the replay, want %d", orig, len(got), len(cases))
	}
	bySource := map[string]*kgo.Record{}
	for _, rec := range got {
		for _, hd := range rec.Headers {
			if hd.Key == dlq.ReplayHeaderSource {
				bySource[string(hd.Value)] = rec
			}
		}
	}
	for i, c := range cases {
		t.Run("replay/"+c.name, func(t *testing.T) {
			rec := bySource[fmt.Sprintf("%s/0/%d", deadTopic, i)]
			if rec == nil {
				t.Fatalf("no replayed record from %s/0/%d among %d", deadTopic, i, len(got))
			}
			if !bytes.Equal(rec.Key, c.replayKey) || !bytes.Equal(rec.Value, c.rec.Value) {
				t.Errorf("key %q value %q, want %q %q", rec.Key, rec.Value, c.replayKey, c.rec.Value)
			}
			want := c.userHeaders
			if want == nil {
				want = user()
			}
			var kept []kgo.RecordHeader
			for _, hd := range rec.Headers {
				if !strings.HasPrefix(hd.Key, dlq.ReplayHeaderPrefix) {
					kept = append(kept, hd)
				}
			}
			if len(kept) != len(want) {
				t.Fatalf("headers kept %q, want %q", kept, want)
			}
			for j := range want {
				if kept[j].Key != want[j].Key || !bytes.Equal(kept[j].Value, want[j].Value) || (kept[j].Value == nil) != (want[j].Value == nil) {
					t.Errorf("header %d = %q: %q, want %q: %q", j, kept[j].Key, kept[j].Value, want[j].Key, want[j].Value)
				}
			}
		})
	}
}

// TestDLQPatternConfigured: without --topic, dlq list reads the topics the environment's or
// the context's pattern matches, and says on stderr which pattern, from where, and how many
// topics matched; --pattern beats both.
func TestDLQPatternConfigured(t *testing.T) {
	base := testenv.Name(t, "pat")
	names := []string{base + "-dlq", base + "_dlq", base + "_poison", base + ".deadletter", base + "-retry-0", base + ".DLT"}
	for _, n := range names {
		dlqNamedTopic(t, n, 1, nil)
		if !dlq.DefaultTopicPattern.MatchString(n) {
			t.Errorf("the default pattern misses %s", n)
		}
	}
	dlqNamedTopic(t, base+"-events", 1, nil)
	pattern := "^" + strings.ReplaceAll(base, ".", `\.`)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("current_context: staging\ncontexts:\n  staging:\n    brokers: ["+testenv.Brokers(t)+"]\n    dlq_pattern: '"+pattern+"'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := func(r roottest.Result, n int, from string) {
		t.Helper()
		if r.Code != 0 || !strings.Contains(r.Stderr, fmt.Sprintf("%d topics match the dead-letter pattern of %s: ", n, from)) || strings.Contains(r.Stderr, pattern) {
			t.Errorf("exit %d, stderr %q; want %d topics from %s", r.Code, r.Stderr, n, from)
		}
	}
	want(roottest.Run(t, map[string]string{"FIELDWORK_CONFIG": config}, "dlq", "list", "--no-status", "-o", "jsonl"), 7, "context staging")
	want(roottest.Run(t, map[string]string{"FIELDWORK_CONFIG": config, "FIELDWORK_DLQ_PATTERN": pattern}, "dlq", "list", "--no-status", "-o", "jsonl"), 7, "FIELDWORK_DLQ_PATTERN")
	r := roottest.Run(t, map[string]string{"FIELDWORK_CONFIG": config}, "dlq", "list", "--pattern", pattern+".*_", "--no-status", "-o", "jsonl")
	if r.Code != 0 || !strings.Contains(r.Stderr, "2 topics match --pattern "+pattern+".*_: "+base+"_dlq, "+base+"_poison") {
		t.Errorf("--pattern: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = roottest.Run(t, map[string]string{"FIELDWORK_CONFIG": config, "FIELDWORK_DLQ_PATTERN": "("}, "dlq", "list", "--no-status")
	if r.Code != 2 || !strings.Contains(r.Stderr, "FIELDWORK_DLQ_PATTERN") {
		t.Errorf("a bad pattern: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestSpringKafkaDeadLetters writes dead letters with Spring Kafka itself
// (scripts/spring/SpringDeadLetters.java: DeadLetterPublishingRecoverer as DefaultErrorHandler
// uses it, and as the retry topics configure it, after a hop through a retry topic), lists
// them and replays them: Spring's headers are read and then stripped, the producer's kept.
func TestSpringKafkaDeadLetters(t *testing.T) {
	cp := testenv.SpringClasspath(t)
	javac, java := testenv.Tool(t, "javac"), testenv.Tool(t, "java")
	orig := testenv.Name(t, "spring")
	retryTopic, deadTopic := orig+"-retry-0", orig+"-dlt"
	testenv.CreateTopic(t, orig, 4, nil)
	dlqNamedTopic(t, retryTopic, 1, nil)
	dlqNamedTopic(t, deadTopic, 1, nil)
	classes := t.TempDir()
	src := filepath.Join(testenv.ModuleRoot(t), "scripts", "spring", "SpringDeadLetters.java")
	if out, err := exec.Command(javac, "-d", classes, "-cp", cp, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	run := exec.Command(java, "-cp", classes+string(os.PathListSeparator)+cp, "SpringDeadLetters", testenv.Brokers(t), orig, retryTopic, deadTopic)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("java SpringDeadLetters: %v\n%s", err, out)
	}

	dsn := "sqlite:" + filepath.Join(t.TempDir(), "journal.db")
	env := map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": dsn, "USER": "oncall"}
	r := roottest.Run(t, env, "dlq", "list", "--topic", deadTopic, "--no-status", "-o", "jsonl")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 2 {
		t.Fatalf("dlq list: exit %d, %d lines\n%s\n%s", r.Code, len(lines), r.Stdout, r.Stderr)
	}
	wants := []struct {
		offset      int64
		message     string
		eventID     string
		retryTopics []string
		spring      string // a header Spring wrote that names the shape
	}{
		{42, "no such customer: c-17", "evt-spring-real-1", nil, dlq.SpringOriginalTopic},
		{43, "no such customer: c-18, again", "evt-spring-real-2", []string{retryTopic}, dlq.SpringRetryOriginalTopic},
	}
	for i, line := range lines {
		var d dlq.DeadLetter
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		w := wants[i]
		hasHeader := false
		for _, hd := range d.Headers {
			hasHeader = hasHeader || hd.Key == w.spring
		}
		if d.Convention != dlq.ConventionSpring || d.OriginalTopic != orig || d.OriginalPartition == nil || *d.OriginalPartition != 3 ||
			d.OriginalOffset == nil || *d.OriginalOffset != w.offset || !hasHeader {
			t.Errorf("dead letter %d: %s %s/%v/%v, header %s %v\n%s", i, d.Convention, d.OriginalTopic, d.OriginalPartition, d.OriginalOffset, w.spring, hasHeader, line)
		}
		if d.OriginalTimestamp == nil || d.OriginalTimestamp.UnixMilli() != 1773476813589 || d.Group != "order-service" {
			t.Errorf("dead letter %d: original timestamp %v, group %q", i, d.OriginalTimestamp, d.Group)
		}
		if d.ErrorClass != "java.lang.IllegalStateException" || !strings.Contains(d.ErrorMessage, "threw exception") ||
			d.RootCause != "java.lang.IllegalStateException: "+w.message || d.Reason != dlq.ReasonExhausted {
			t.Errorf("dead letter %d: class %q message %q root cause %q reason %q", i, d.ErrorClass, d.ErrorMessage, d.RootCause, d.Reason)
		}
		if d.EventID != w.eventID || fmt.Sprint(d.RetryTopics) != fmt.Sprint(w.retryTopics) || len(d.HeaderProblems) > 0 {
			t.Errorf("dead letter %d: event id %q, retry topics %q, problems %+v", i, d.EventID, d.RetryTopics, d.HeaderProblems)
		}
	}

	if r := roottest.Run(t, env, "db", "migrate"); r.Code != 0 {
		t.Fatalf("db migrate: exit %d\n%s", r.Code, r.Stderr)
	}
	r = roottest.Run(t, env, "replay", "--topic", deadTopic, "--execute", "--yes", "--reason", "spring", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"sent": 2`) {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	got := testenv.ReadTopic(t, testenv.Brokers(t), orig)
	if len(got) != 2 {
		t.Fatalf("%s holds %d records, want 2", orig, len(got))
	}
	want := []kgo.RecordHeader{
		{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
		{Key: "x-bin", Value: []byte{0x00, 0xff, 0x10, 0x80}},
	}
	for _, rec := range got {
		var kept []kgo.RecordHeader
		for _, hd := range rec.Headers {
			if !strings.HasPrefix(hd.Key, dlq.ReplayHeaderPrefix) {
				kept = append(kept, hd)
			}
		}
		if fmt.Sprintf("%q", kept) != fmt.Sprintf("%q", want) {
			t.Errorf("%s/%d/%d: headers kept %q, want %q", rec.Topic, rec.Partition, rec.Offset, kept, want)
		}
	}
}
