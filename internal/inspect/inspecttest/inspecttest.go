// Package inspecttest seeds topics on the real broker (testenv) for the tests of inspect and
// of its commands: a stream with every kind of problem, produced with franz-go and with kcat,
// and a clean one. Records produced with franz-go carry fixed timestamps (from Base) so
// outputs can be compared with golden files; kcat cannot set a timestamp, so its records
// carry the broker's clock and tests replace those times with a placeholder.
package inspecttest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// Base is the timestamp of the first franz-go record of a seeded stream; each next record is
// one second later.
var Base = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// NameLen is the length of every name Name returns, so that tables holding one keep their
// column widths from run to run.
const NameLen = 24

// Name returns a unique name of exactly NameLen characters: prefix (3 characters), a dash,
// and hex digits.
func Name(prefix string) string {
	s := fmt.Sprintf("%.3s-%020x", prefix+"xxx", uint64(time.Now().UnixNano())+uint64(seq()))
	return s[:NameLen]
}

var counter atomic.Int64

func seq() int64 { return counter.Add(1) << 8 }

// Topic creates a topic with partitions and a name of NameLen characters, as
// testenv.CreateTopic does (its records kept forever: the fixed old timestamps must not be
// aged out while a test runs; deleted at cleanup).
func Topic(t testing.TB, partitions int32) string {
	t.Helper()
	name := Name("fwi")
	testenv.CreateTopic(t, name, partitions, nil)
	return name
}

// Producer returns a franz-go client that writes to topic with explicit partitions.
func Producer(t testing.TB, topic string) *kgo.Client {
	return testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

// Rec is a record for partition p with the i-th fixed timestamp.
func Rec(p int32, i int, key []byte, value string, headers ...string) *kgo.Record {
	r := &kgo.Record{Partition: p, Key: key, Value: []byte(value), Timestamp: Base.Add(time.Duration(i) * time.Second)}
	for j := 0; j+1 < len(headers); j += 2 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[j], Value: []byte(headers[j+1])})
	}
	return r
}

// Structured is a CloudEvents structured-mode value.
func Structured(id, typ, aggregate string, version int64, data string) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"source":"/orders","time":"2025-01-02T03:00:00Z","aggregatetype":"order","aggregateid":%q,"aggregateversion":%d,"data":%s}`,
		id, typ, aggregate, version, data)
}

// Kcat produces each line of lines as one record with kcat (librdkafka), to topic partition p,
// with the given key and headers ("k=v").
func Kcat(t testing.TB, topic string, p int32, key string, headers []string, lines ...string) {
	t.Helper()
	args := []string{"-b", testenv.Brokers(t), "-P", "-t", topic, "-p", fmt.Sprint(p), "-k", key}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// SeedBroken writes a stream with every kind of problem validate knows to a topic of two
// partitions. Partition 0 (franz-go, offsets 0..9):
//
//	0  order-1 v1 e-1 structured, content-type header
//	1  order-1 v2 e-2 CloudEvents binary mode
//	2  order-1 v4 e-3 plain JSON                      (aggregate: gap)
//	3  order-1 v2 e-2 binary, byte for byte again     (redelivery)
//	4  structured with no id, key order-1             (malformed)
//	5  order-1 v3 e-5 structured                      (version_regression)
//	6  order-1 v1 e-1 structured, other data          (conflicting_payload)
//	7  order-2 e-7 plain JSON, no version, non-UTF-8 key and header value (missing_version)
//	8  order-1 v4 e-8 structured                      (duplicate_version)
//	9  e-11 plain JSON, no aggregate id and no key     (missing_aggregate_id)
//
// Partition 1 (kcat, offsets 0..3):
//
//	0  order-1 v5 e-6 structured                      (split_aggregate)
//	1  "not json at all", key order-3                 (malformed)
//	2  order-3 v1 e-9 binary mode
//	3  order-3 binary, version "abc"                  (malformed)
func SeedBroken(t testing.TB, topic string) {
	t.Helper()
	cl := Producer(t, topic)
	key := []byte("order-1")
	ce := []string{"content-type", "application/cloudevents+json"}
	binary := []string{"ce_id", "e-2", "ce_type", "order.paid", "ce_source", "/payments", "ce_specversion", "1.0",
		"ce_time", "2025-01-02T03:00:01Z", "ce_aggregatetype", "order", "ce_aggregateid", "order-1", "ce_aggregateversion", "2"}
	testenv.Produce(t, cl,
		Rec(0, 0, key, Structured("e-1", "order.created", "order-1", 1, `{"total":10}`), ce...),
		Rec(0, 1, key, `{"amount":10}`, binary...),
		Rec(0, 2, key, `{"event_id":"e-3","type":"order.shipped","aggregate_type":"order","aggregate_id":"order-1","aggregate_version":4,"occurred_at":"2025-01-02T03:00:02Z","data":{"carrier":"ups"}}`),
		Rec(0, 3, key, `{"amount":10}`, binary...),
		Rec(0, 4, key, `{"specversion":"1.0","type":"order.cancelled","source":"/orders","aggregateid":"order-1"}`, ce...),
		Rec(0, 5, key, Structured("e-5", "order.updated", "order-1", 3, `{"total":12}`)),
		Rec(0, 6, key, Structured("e-1", "order.created", "order-1", 1, `{"total":99}`)),
		Rec(0, 7, []byte{0xff, 0xfe, 'o', '2'}, `{"event_id":"e-7","type":"order.noted","aggregate_type":"order","aggregate_id":"order-2","data":{"note":"hi"}}`,
			"trace", "\x00\x01\xfe"),
		Rec(0, 8, key, Structured("e-8", "order.updated", "order-1", 4, `{"total":13}`)),
		Rec(0, 9, nil, `{"event_id":"e-11","type":"ping","version":1}`),
	)
	Kcat(t, topic, 1, "order-1", []string{"content-type=application/cloudevents+json"},
		Structured("e-6", "order.closed", "order-1", 5, `{}`))
	Kcat(t, topic, 1, "order-3", nil, "not json at all")
	kcatBinary := func(id, version string) []string {
		return []string{"ce_id=" + id, "ce_type=order.created", "ce_source=/kcat", "ce_specversion=1.0",
			"ce_aggregatetype=order", "ce_aggregateid=order-3", "ce_aggregateversion=" + version}
	}
	Kcat(t, topic, 1, "order-3", kcatBinary("e-9", "1"), `{"sku":"x-1"}`)
	Kcat(t, topic, 1, "order-3", kcatBinary("e-10", "abc"), `{"sku":"x-2"}`)
}

// SeedClean writes a clean stream to partition 0: three aggregates in order, with one
// byte-for-byte redelivery (ordinary under at-least-once, not a problem).
func SeedClean(t testing.TB, topic string) {
	t.Helper()
	cl := Producer(t, topic)
	var recs []*kgo.Record
	i := 0
	for _, agg := range []string{"task-1", "task-2", "task-3"} {
		for v := int64(1); v <= 3; v++ {
			recs = append(recs, Rec(0, i, []byte(agg), Structured(fmt.Sprintf("%s-e%d", agg, v), "task.updated", agg, v, fmt.Sprintf(`{"step":%d}`, v))))
			i++
		}
	}
	recs = append(recs, Rec(0, i, []byte("task-2"), Structured("task-2-e3", "task.updated", "task-2", 3, `{"step":3}`)))
	testenv.Produce(t, cl, recs...)
}

// CommitGroup commits offsets for a new group (exactly NameLen characters) on topic and
// returns its name. The group has no members, so its state is Empty.
func CommitGroup(t testing.TB, topic string, offsets map[int32]int64) string {
	t.Helper()
	group := Name("fwg")
	adm := kadm.NewClient(testenv.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commits := kadm.Offsets{topic: {}}
	for p, o := range offsets {
		commits[topic][p] = kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1}
	}
	resp, err := adm.CommitOffsets(ctx, group, commits)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offsets for %s: %v", group, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteGroups(ctx, group)
	})
	return group
}
