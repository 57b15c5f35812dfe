package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

const mib = 1 << 20

// largeTopics creates a source topic and its dead-letter topic with the given
// max.message.bytes each.
func largeTopics(t *testing.T, partitions int32, sourceMax, dlqMax int) (source, dlqTopic string) {
	t.Helper()
	source = testenv.Name(t, "fwc")
	dlqTopic = source + ".dlq"
	cl := testenv.Client(t)
	createTopicWith(t, cl, source, partitions, map[string]string{"max.message.bytes": strconv.Itoa(sourceMax)})
	createTopicWith(t, cl, dlqTopic, 1, map[string]string{"max.message.bytes": strconv.Itoa(dlqMax)})
	return source, dlqTopic
}

// bigProducer writes records of up to 16 MiB to the partition each record names.
func bigProducer(t *testing.T) *kgo.Client {
	return testenv.Client(t, kgo.ProducerBatchMaxBytes(16*mib), kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

// poisonValue is a value of n bytes that starts like a CloudEvent and is not JSON. The rest
// is random letters, which the producer's compression cannot shrink: the broker compares
// the compressed batch with max.message.bytes.
func poisonValue(n int) []byte {
	v := []byte(`{"specversion":"1.0","id":"ev-poison","type":"task.created","data":"`)
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	for len(v) < n {
		v = append(v, byte('a'+rng.IntN(26)))
	}
	return v
}

// bigEvent is a valid CloudEvent whose data carries a title of n bytes.
func bigEvent(t *testing.T, topic string, partition int32, id, aggID string, n int) *kgo.Record {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"specversion": "1.0", "id": id, "type": sample.TypeCreated, "source": "/test", "aggregatetype": "task",
		"aggregateid": aggID, "aggregateversion": 1, "time": "2025-03-03T09:00:00Z",
		"data": map[string]any{"task_id": aggID, "status": "open", "title": strings.Repeat("t", n)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := ceRecord(topic, aggID, b)
	r.Partition = partition
	return r
}

func smallEvent(t *testing.T, topic string, partition int32, id, aggID string) *kgo.Record {
	r := ceRecord(topic, aggID, ceValue(t, id, sample.TypeCreated, aggID, 1))
	r.Partition = partition
	return r
}

func poisonRecord(topic string, partition int32, n int) *kgo.Record {
	r := ceRecord(topic, "task-poison", poisonValue(n))
	r.Partition = partition
	return r
}

// TestLargePoisonDeadLetteredWhole: a 2 MiB record that is not JSON, on a topic and a
// dead-letter topic that both allow 8 MiB, is dead-lettered whole, byte for byte; a valid
// 2 MiB event in the other partition is applied; both partitions are committed to their end.
func TestLargePoisonDeadLetteredWhole(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, dlqTopic := largeTopics(t, 2, 8*mib, 8*mib)
	recs := []*kgo.Record{
		smallEvent(t, topic, 0, "ev-before", "task-0001"),
		poisonRecord(topic, 0, 2*mib),
		smallEvent(t, topic, 0, "ev-after", "task-0002"),
		bigEvent(t, topic, 1, "ev-big", "task-0003", 2*mib),
		smallEvent(t, topic, 1, "ev-after-big", "task-0004"),
	}
	testenv.Produce(t, bigProducer(t), recs...)
	poison := recs[1]

	group := testenv.Name(t, "audit-large")
	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	stats := run(t, engineOpts(t, st, h, topic, group))
	if stats.Processed != 4 || stats.DeadLettered != 1 || stats.DeadLettersBounded != 0 {
		t.Errorf("stats %+v; want 4 processed, 1 dead-lettered whole", stats)
	}
	dls := readAll(t, dlqTopic)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	d := dls[0]
	if !bytes.Equal(d.Value, poison.Value) || string(d.Key) != string(poison.Key) {
		t.Errorf("dead letter value %d bytes, key %q; want the poison's %d bytes and key byte for byte", len(d.Value), d.Key, len(poison.Value))
	}
	if v, ok := header(d, dlq.HeaderValueOmitted); ok {
		t.Errorf("a whole dead letter carries %s = %q", dlq.HeaderValueOmitted, v)
	}
	if p, _ := header(d, dlq.HeaderPartition); p != "0" {
		t.Errorf("fw.dlq.partition %q", p)
	}
	if o, _ := header(d, dlq.HeaderOffset); o != strconv.FormatInt(poison.Offset, 10) {
		t.Errorf("fw.dlq.offset %q, want %d", o, poison.Offset)
	}
	audit := tableName(t, st, schema, handlers.TableAuditLog)
	if n := queryInt(t, st, `SELECT coalesce(max(length(data)), 0) FROM `+audit+` WHERE consumer = $1 AND event_id = 'ev-big'`, group); n < 2*mib {
		t.Errorf("the 2 MiB event: data of %d bytes recorded, want over %d", n, 2*mib)
	}
	if n := queryInt(t, st, `SELECT count(DISTINCT event_id) FROM `+audit+` WHERE consumer = $1`, group); n != 4 {
		t.Errorf("%d events recorded, want 4", n)
	}
	if behind, _ := groupLag(t, testenv.Client(t), group, topic); len(behind) > 0 {
		t.Errorf("partitions not committed to their end: %v", behind)
	}
	t.Logf("2 MiB poison dead-lettered whole (%d bytes), 2 MiB event applied; stats %+v", len(d.Value), stats)
}

// TestPoisonLargerThanTheDeadLetterTopic: a poison record larger than the dead-letter topic
// accepts is dead-lettered as a bounded copy — coordinates, headers, error, and the value cut
// (the limit known at start) or left out (the limit lowered while the consumer runs, so that
// the broker refuses the whole one) — and its partition moves on.
func TestPoisonLargerThanTheDeadLetterTopic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// dlqMax is the dead-letter topic's max.message.bytes at start; lowerTo, when
		// positive, is set once the consumer has started.
		dlqMax, lowerTo int
		// wantCut: the value is a non-empty prefix; otherwise it is left out.
		wantCut bool
		// why is in fw.dlq.value_omitted.
		why string
	}{
		{name: "cut to the limit read at start", dlqMax: mib, wantCut: true, why: "its topic accepts"},
		{name: "refused by the broker, sent without its value", dlqMax: 8 * mib, lowerTo: mib, why: kerr.MessageTooLarge.Message},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, schema := pgStore(t)
			topic, dlqTopic := largeTopics(t, 2, 8*mib, c.dlqMax)
			prod := bigProducer(t)
			testenv.Produce(t, prod, smallEvent(t, topic, 0, "ev-first", "task-0001"), smallEvent(t, topic, 1, "ev-other", "task-0005"))

			group := testenv.Name(t, "audit-bounded")
			// Partition 0's first event is held until the poison is produced: a consumer
			// with nothing in flight could be idle long enough to stop while the test
			// changes the dead-letter topic.
			gate := make(chan struct{})
			h := &watching{named: handler(t, st, schema, handlers.NameAudit, group, handlers.Config{}), gate: gate, first: map[int32]int{}}
			e, _, runErr := startEngine(t, engineOpts(t, st, h, topic, group), 2*time.Minute)
			waitUntil(t, runErr, "the first events", func() bool { return h.calls() >= 2 })
			if c.lowerTo > 0 {
				lowerMaxMessageBytes(t, dlqTopic, c.lowerTo)
			}
			poison := poisonRecord(topic, 0, 2*mib)
			poison.Headers = append(poison.Headers, kgo.RecordHeader{Key: "trace-id", Value: []byte("abc-123")})
			testenv.Produce(t, prod, poison, smallEvent(t, topic, 0, "ev-after", "task-0002"))
			close(gate)
			if err := <-runErr; err != nil {
				t.Fatalf("run: %v", err)
			}
			stats := e.Stats()

			var dls []*kgo.Record
			for _, r := range readAll(t, dlqTopic) {
				if _, probe := header(r, "probe"); !probe {
					dls = append(dls, r)
				}
			}
			if len(dls) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dls))
			}
			d := dls[0]
			exact := map[string]string{
				dlq.HeaderTopic: topic, dlq.HeaderPartition: "0", dlq.HeaderOffset: strconv.FormatInt(poison.Offset, 10),
				dlq.HeaderGroup: group, dlq.HeaderReason: dlq.ReasonMalformed, dlq.HeaderValueBytes: strconv.Itoa(len(poison.Value)),
				"trace-id": "abc-123", sample.HeaderContentType: sample.ContentType,
			}
			for k, v := range exact {
				if got, ok := header(d, k); !ok || got != v {
					t.Errorf("header %s = %q (present %v), want %q", k, got, ok, v)
				}
			}
			if e, _ := header(d, dlq.HeaderError); e == "" {
				t.Error("no fw.dlq.error")
			}
			why, _ := header(d, dlq.HeaderValueOmitted)
			if !strings.Contains(why, c.why) {
				t.Errorf("%s = %q, want it to say %q", dlq.HeaderValueOmitted, why, c.why)
			}
			switch {
			case string(d.Key) != string(poison.Key):
				t.Errorf("key %q, want %q", d.Key, poison.Key)
			case c.wantCut && (len(d.Value) == 0 || len(d.Value) > mib || !bytes.HasPrefix(poison.Value, d.Value)):
				t.Errorf("value of %d bytes; want a prefix of the original, at most 1 MiB", len(d.Value))
			case !c.wantCut && len(d.Value) != 0:
				t.Errorf("value of %d bytes; want none", len(d.Value))
			}
			if stats.DeadLettered != 1 || stats.DeadLettersBounded != 1 || stats.Processed != 3 {
				t.Errorf("stats %+v; want 3 processed, 1 dead letter, bounded", stats)
			}
			if behind, _ := groupLag(t, testenv.Client(t), group, topic); len(behind) > 0 {
				t.Errorf("partitions not committed to their end: %v", behind)
			}
			t.Logf("bounded copy: %d of %d value bytes kept, %s = %q", len(d.Value), len(poison.Value), dlq.HeaderValueOmitted, why)
		})
	}
}

// TestDeadLetterTopicDeleted: when the dead-letter topic disappears while the consumer runs,
// the partition with a poison record stops at that record (committed up to it, not past),
// the other partition is consumed to its end, and Run fails naming the record.
func TestDeadLetterTopicDeleted(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 2)
	prod := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testenv.Produce(t, prod, smallEvent(t, topic, 0, "ev-0", "task-0001"), smallEvent(t, topic, 1, "ev-1", "task-0002"))

	group := testenv.Name(t, "audit-no-dlq")
	// Partition 0's first event is held until the poison is produced (see above).
	gate := make(chan struct{})
	h := &watching{named: handler(t, st, schema, handlers.NameAudit, group, handlers.Config{}), gate: gate, first: map[int32]int{}}
	o := engineOpts(t, st, h, topic, group)
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	_, _, runErr := startEngine(t, o, 2*time.Minute)
	waitUntil(t, runErr, "the first events", func() bool { return h.calls() >= 2 })
	deleteTopic(t, dlqTopic)

	poison := poisonRecord(topic, 0, 300)
	testenv.Produce(t, prod, poison, smallEvent(t, topic, 0, "ev-0-after", "task-0003"),
		smallEvent(t, topic, 1, "ev-1-after", "task-0004"), smallEvent(t, topic, 1, "ev-1-last", "task-0005"))
	close(gate)
	err := <-runErr
	var halted *consumer.HaltedError
	if !errors.As(err, &halted) {
		t.Fatalf("run: %v; want a HaltedError", err)
	}
	t.Logf("run: %v", err)
	if halted.Topic != topic || halted.Partition != 0 || halted.Offset != poison.Offset || halted.DeadLetterTopic != dlqTopic ||
		!strings.Contains(err.Error(), fmt.Sprintf("%s/0 stopped at offset %d", topic, poison.Offset)) {
		t.Errorf("halted %+v; want %s/0 at offset %d, dead-letter topic %s", halted, topic, poison.Offset, dlqTopic)
	}
	behind, committed := groupLag(t, testenv.Client(t), group, topic)
	if committed[0] != poison.Offset {
		t.Errorf("partition 0 committed at %d, want %d (the poison record, not past it)", committed[0], poison.Offset)
	}
	if len(behind) != 1 || !strings.HasPrefix(behind[0], "0@") {
		t.Errorf("behind %v; want partition 0 only", behind)
	}
	audit := tableName(t, st, schema, handlers.TableAuditLog)
	if n := queryInt(t, st, `SELECT count(*) FROM `+audit+` WHERE consumer = $1 AND event_id IN ('ev-1-after', 'ev-1-last')`, group); n != 2 {
		t.Errorf("partition 1 after the poison: %d of 2 events applied", n)
	}
	checkMetrics(t, reg, map[string]float64{`fieldwork_consume_halted_partitions`: 1})
}

// waitUntil waits, bounded, for cond, failing if the engine stops first.
func waitUntil(t *testing.T, runErr chan error, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case err := <-runErr:
			t.Fatalf("consumer stopped before %s: %v", what, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// lowerMaxMessageBytes sets topic's max.message.bytes to n and waits until the broker
// refuses a record over it (a probe, marked with a "probe" header, that the broker may
// accept until then).
func lowerMaxMessageBytes(t *testing.T, topic string, n int) {
	t.Helper()
	cl := testenv.Client(t, kgo.ProducerBatchMaxBytes(16*mib), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v := strconv.Itoa(n)
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("alter %s: %v", topic, err)
	}
	probe := &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte("p"), n+1024), Headers: []kgo.RecordHeader{{Key: "probe"}}}
	for {
		err := cl.ProduceSync(ctx, probe).FirstErr()
		if errors.Is(err, kerr.MessageTooLarge) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the broker still accepts %d bytes on %s: %v", n+1024, topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func deleteTopic(t *testing.T, topic string) {
	t.Helper()
	testenv.DeleteTopic(t, testenv.Client(t), topic)
}
