package dlq_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// num renders an optional number, "nil" when absent.
func num[T int32 | int64](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func h(key string, value []byte) kgo.RecordHeader { return kgo.RecordHeader{Key: key, Value: value} }
func s(key, value string) kgo.RecordHeader        { return kgo.RecordHeader{Key: key, Value: []byte(value)} }

// readDeadLetters reads every record of topic from the real broker and parses it, keyed by the
// record key.
func readDeadLetters(t *testing.T, topic string) map[string]dlq.DeadLetter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := kafka.Connect(ctx, config.Connection{Brokers: []string{testenv.Brokers(t)}}, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ranges, err := c.Plan(ctx, topic, kafka.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dlq.DeadLetter{}
	err = c.Read(ctx, ranges, func(r *kgo.Record) error {
		// Parse shares the record's memory; franz-go does not reuse it, so keeping is safe.
		out[string(r.Key)] = dlq.Parse(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeadLettersFromTheBroker produces dead letters of every convention to the real broker
// with franz-go (and one with kcat, as an operator would by hand), reads them back through
// kafka.Cluster.Read and checks what Parse makes of them.
func TestDeadLettersFromTheBroker(t *testing.T) {
	brokers := testenv.Brokers(t)
	topic := testenv.Topic(t, 1, nil)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	origTS := time.UnixMilli(1773480413589)

	orig := &kgo.Record{
		Topic: "tasks", Partition: 4, Offset: 1041, Timestamp: origTS, Key: []byte("fieldwork"),
		Value:   []byte(`{"specversion":"1.0","id":"evt-fw","type":"t","source":"/s"}`),
		Headers: []kgo.RecordHeader{s("content-type", "application/cloudevents+json")},
	}
	fw := dlq.NewDeadLetter(orig, dlq.Meta{
		Topic: topic, Group: "projector", Handler: "projection", Reason: dlq.ReasonRejected,
		Error: "no such task", Attempts: 1, FailedAt: time.UnixMilli(1773480420000),
	})
	testenv.Produce(t, cl,
		fw,
		&kgo.Record{Key: []byte("spring"), Value: []byte(`{"event_id":"evt-spring"}`), Headers: []kgo.RecordHeader{
			s(dlq.SpringOriginalTopic, "orders"),
			h(dlq.SpringOriginalPartition, be32(3)),
			h(dlq.SpringOriginalOffset, be64(42)),
			h(dlq.SpringOriginalTimestamp, be64(origTS.UnixMilli())),
			s(dlq.SpringOriginalTimestampType, "CreateTime"),
			s(dlq.SpringOriginalConsumerGroup, "order-service"),
			s(dlq.SpringExceptionFQCN, "org.springframework.kafka.listener.ListenerExecutionFailedException"),
			s(dlq.SpringExceptionCauseFQCN, "java.lang.IllegalStateException"),
			s(dlq.SpringExceptionMessage, "no such customer"),
			s(dlq.SpringExceptionStacktrace, "java.lang.IllegalStateException: no such customer\n\tat X.java:1"),
		}},
		&kgo.Record{Key: []byte("spring-truncated"), Headers: []kgo.RecordHeader{
			s(dlq.SpringOriginalTopic, "orders"),
			h(dlq.SpringOriginalPartition, []byte{0, 0, 3}),
			h(dlq.SpringOriginalOffset, be64(43)),
		}},
		&kgo.Record{Key: []byte("connect"), Value: []byte("x"), Headers: []kgo.RecordHeader{
			s(dlq.ConnectTopic, "customers"), s(dlq.ConnectPartition, "2"), s(dlq.ConnectOffset, "1234567"),
			s(dlq.ConnectConnectorName, "jdbc-sink"), s(dlq.ConnectTaskID, "0"), s(dlq.ConnectStage, "VALUE_CONVERTER"),
			s(dlq.ConnectClassName, "org.apache.kafka.connect.json.JsonConverter"),
			s(dlq.ConnectExceptionClassName, "org.apache.kafka.connect.errors.DataException"),
			s(dlq.ConnectExceptionMessage, "bad json"), s(dlq.ConnectExceptionStacktrace, "trace"),
		}},
		&kgo.Record{Key: []byte("watermill"), Headers: []kgo.RecordHeader{
			s(dlq.WatermillTopic, "payments"), s(dlq.WatermillHandler, "payments_handler"),
			s(dlq.WatermillSubscriber, "*kafka.Subscriber"), s(dlq.WatermillReason, "card declined"),
		}},
		&kgo.Record{Key: []byte("smallrye"), Headers: []kgo.RecordHeader{
			s(dlq.SmallRyeExceptionClassName, "java.lang.RuntimeException"), s(dlq.SmallRyeReason, "Something went wrong"),
			s(dlq.SmallRyeTopic, "movies"), s(dlq.SmallRyePartition, "1"), s(dlq.SmallRyeOffset, "17"),
		}},
		&kgo.Record{Key: []byte("unknown\xff"), Headers: []kgo.RecordHeader{s("x-error", "boom")}},
	)

	kcat := false
	if path, err := exec.LookPath("kcat"); err != nil {
		if testenv.Required() {
			t.Fatal("kcat is not installed: run scripts/services.sh start")
		}
		t.Log("kcat is not installed: skipping the record produced with kcat")
	} else {
		cmd := exec.Command(path, "-b", brokers, "-P", "-t", topic, "-K", ":",
			"-H", "dead-letter-topic=orders", "-H", "dead-letter-offset=7", "-H", "dead-letter-partition=2",
			"-H", "dead-letter-reason=rejected by hand")
		cmd.Stdin = bytes.NewReader([]byte("kcat:{\"event_id\":\"evt-kcat\"}\n"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat: %v\n%s", err, out)
		}
		kcat = true
	}

	got := readDeadLetters(t, topic)
	type want struct {
		conv             dlq.Convention
		topic, partition string
		offset           string
		ts               *time.Time
		group, handler   string
		class, message   string
		reason, eventID  string
		problems         int
	}
	cases := map[string]want{
		"fieldwork": {dlq.ConventionFieldwork, "tasks", "4", "1041", &origTS, "projector", "projection", "", "no such task", dlq.ReasonRejected, "evt-fw", 0},
		"spring": {dlq.ConventionSpring, "orders", "3", "42", &origTS, "order-service", "",
			"java.lang.IllegalStateException", "no such customer", dlq.ReasonExhausted, "evt-spring", 0},
		"spring-truncated": {dlq.ConventionSpring, "orders", "nil", "43", nil, "", "", "", "", dlq.ReasonExhausted, "", 1},
		"connect": {dlq.ConventionConnect, "customers", "2", "1234567", nil, "", "jdbc-sink",
			"org.apache.kafka.connect.errors.DataException", "bad json", dlq.ReasonMalformed, "", 0},
		"watermill":   {dlq.ConventionWatermill, "payments", "nil", "nil", nil, "", "payments_handler", "", "card declined", "", "", 0},
		"smallrye":    {dlq.ConventionSmallRye, "movies", "1", "17", nil, "", "", "java.lang.RuntimeException", "Something went wrong", dlq.ReasonRejected, "", 0},
		"unknown\xff": {dlq.ConventionUnknown, "", "nil", "nil", nil, "", "", "", "", "", "", 0},
	}
	if kcat {
		cases["kcat"] = want{dlq.ConventionSmallRye, "orders", "2", "7", nil, "", "", "", "rejected by hand", dlq.ReasonRejected, "evt-kcat", 0}
	}
	if len(got) != len(cases) {
		t.Errorf("read %d dead letters, want %d", len(got), len(cases))
	}
	if d := got["fieldwork"]; !bytes.Equal(d.Value, orig.Value) || len(d.Headers) == 0 ||
		d.Headers[0].Key != "content-type" || string(d.Headers[0].Value) != "application/cloudevents+json" {
		t.Errorf("fieldwork's dead letter lost the original value or headers: %q %q", d.Value, d.Headers)
	}
	if d := got["spring-truncated"]; len(d.HeaderProblems) != 1 || d.HeaderProblems[0].Header != dlq.SpringOriginalPartition ||
		d.HeaderProblems[0].Problem != "want 4 bytes, got 3" {
		t.Errorf("truncated partition: problems %+v", d.HeaderProblems)
	}
	for key, w := range cases {
		t.Run(key, func(t *testing.T) {
			d, ok := got[key]
			if !ok {
				t.Fatalf("no dead letter with key %q", key)
			}
			if d.Topic != topic || d.Timestamp.IsZero() {
				t.Errorf("dead letter at %s %v", d.Address(), d.Timestamp)
			}
			if d.Convention != w.conv || d.OriginalTopic != w.topic || num(d.OriginalPartition) != w.partition || num(d.OriginalOffset) != w.offset {
				t.Errorf("%s %s/%s@%s, want %s %s/%s@%s", d.Convention, d.OriginalTopic, num(d.OriginalPartition),
					num(d.OriginalOffset), w.conv, w.topic, w.partition, w.offset)
			}
			if (d.OriginalTimestamp == nil) != (w.ts == nil) || w.ts != nil && !d.OriginalTimestamp.Equal(*w.ts) {
				t.Errorf("original timestamp %v, want %v", d.OriginalTimestamp, w.ts)
			}
			if d.Group != w.group || d.Handler != w.handler || d.ErrorClass != w.class || d.ErrorMessage != w.message ||
				d.Reason != w.reason || d.EventID != w.eventID || len(d.HeaderProblems) != w.problems {
				t.Errorf("got %+v\nwant %+v", d, w)
			}
			topic, _, ok := d.Source()
			if ok != (w.topic != "") || topic != w.topic {
				t.Errorf("Source() = %q, %v", topic, ok)
			}
		})
	}
}
