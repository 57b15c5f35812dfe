package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func summary(rep *inspect.ValidateReport) map[string]int64 {
	out := map[string]int64{}
	for _, k := range rep.Summary {
		if k.Count > 0 {
			out[k.Kind] = k.Count
		}
	}
	return out
}

func TestValidateBrokenStream(t *testing.T) {
	c := testenv.Cluster(t)
	topic := inspecttest.Topic(t, 2)
	inspecttest.SeedBroken(t, topic)

	rep, err := inspect.Validate(ctx(t), c, topic, kafka.Selection{}, inspect.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		inspect.KindMalformed: 3, inspect.KindMissingVersion: 1, inspect.KindMissingAggregate: 1,
		inspect.KindConflictingPayload: 1, inspect.KindVersionRegression: 1, inspect.KindDuplicateVersion: 1,
		inspect.KindSplitAggregate: 1,
	}
	if got := summary(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("summary = %v, want %v", got, want)
	}
	if rep.Clean() || rep.Problems != 9 || rep.RecordsScanned != 14 || rep.Redeliveries != 1 {
		t.Fatalf("problems %d scanned %d redeliveries %d", rep.Problems, rep.RecordsScanned, rep.Redeliveries)
	}
	// Malformed records are reported with their offsets and the precise reason.
	var malformed []string
	for _, f := range rep.Findings {
		if f.Kind == inspect.KindMalformed {
			malformed = append(malformed, fmt.Sprintf("%d/%d %s", f.Partition, f.Offset, f.Message))
		}
	}
	if len(malformed) != 3 ||
		!strings.HasPrefix(malformed[0], "0/4 "+topic+"/0/4: cloudevents-structured: field \"id\"") ||
		!strings.HasPrefix(malformed[1], "1/1 "+topic+"/1/1: invalid JSON") ||
		!strings.Contains(malformed[2], `cloudevents-binary: field "aggregateversion": not an integer`) {
		t.Fatalf("malformed findings:\n%s", strings.Join(malformed, "\n"))
	}

	// The same lint with one fingerprint in memory spills to disk and finds exactly the same.
	spilled, err := inspect.Validate(ctx(t), c, topic, kafka.Selection{}, inspect.ValidateOptions{MemoryEntries: 1, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !spilled.SpilledToDisk || rep.SpilledToDisk {
		t.Fatalf("spilled: %v with 1 entry, %v with the default", spilled.SpilledToDisk, rep.SpilledToDisk)
	}
	spilled.SpilledToDisk = false
	if !reflect.DeepEqual(spilled, rep) {
		t.Fatalf("spilled report differs:\n%+v\n%+v", spilled, rep)
	}

	// --max-examples bounds the findings kept, never the counts.
	one, err := inspect.Validate(ctx(t), c, topic, kafka.Selection{Partitions: []int32{0}}, inspect.ValidateOptions{MaxExamples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if one.Problems != 6 || len(one.Findings) != 6 {
		t.Fatalf("partition 0: %d problems, %d findings", one.Problems, len(one.Findings))
	}
}

// TestValidateSpillAtScale runs the lint over thousands of events with a memory limit far below
// their number and checks it agrees with the in-memory run, finding the seeded problems.
func TestValidateSpillAtScale(t *testing.T) {
	c := testenv.Cluster(t)
	topic := inspecttest.Topic(t, 1)
	cl := inspecttest.Producer(t, topic)
	var recs []*kgo.Record
	for i := 0; i < 3000; i++ {
		agg := fmt.Sprintf("agg-%d", i%500)
		v := int64(i/500 + 1)
		recs = append(recs, inspecttest.Rec(0, i, []byte(agg), inspecttest.Structured(fmt.Sprintf("ev-%d", i), "t", agg, v, `{}`)))
	}
	// A regression on the first aggregate, and an old event id with a new payload.
	recs = append(recs,
		inspecttest.Rec(0, 3000, []byte("agg-0"), inspecttest.Structured("ev-late", "t", "agg-0", 2, `{}`)),
		inspecttest.Rec(0, 3001, []byte("agg-1"), inspecttest.Structured("ev-1", "t", "agg-1", 1, `{"x":1}`)),
	)
	testenv.Produce(t, cl, recs...)

	mem, err := inspect.Validate(ctx(t), c, topic, kafka.Selection{}, inspect.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	disk, err := inspect.Validate(ctx(t), c, topic, kafka.Selection{}, inspect.ValidateOptions{MemoryEntries: 64, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{inspect.KindVersionRegression: 1, inspect.KindConflictingPayload: 1}
	if got := summary(mem); !reflect.DeepEqual(got, want) || mem.Aggregates != 500 || mem.Events != 3002 {
		t.Fatalf("in memory: %v, %d aggregates, %d events", got, mem.Aggregates, mem.Events)
	}
	if !disk.SpilledToDisk {
		t.Fatal("64 entries for 3000 ids did not spill")
	}
	disk.SpilledToDisk = false
	if !reflect.DeepEqual(disk, mem) {
		t.Fatalf("spilled report differs from in-memory:\n%+v\n%+v", disk, mem)
	}
}

func TestValidateCleanStream(t *testing.T) {
	c := testenv.Cluster(t)
	topic := inspecttest.Topic(t, 1)
	inspecttest.SeedClean(t, topic)
	rep, err := inspect.Validate(ctx(t), c, topic, kafka.Selection{}, inspect.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Events != 10 || rep.Redeliveries != 1 || rep.Aggregates != 3 || len(rep.Findings) != 0 {
		t.Fatalf("clean stream: %+v", rep)
	}
}

func TestTopicLagAndFormats(t *testing.T) {
	c := testenv.Cluster(t)
	topic := inspecttest.Topic(t, 2)
	inspecttest.SeedBroken(t, topic)
	group := inspecttest.CommitGroup(t, topic, map[int32]int64{0: 4, 1: 4})
	rep, err := inspect.Topic(ctx(t), c, topic, inspect.TopicOptions{SampleSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Records != 14 || len(rep.Partitions) != 2 || rep.Partitions[0].HighWatermark != 10 {
		t.Fatalf("partitions: %+v", rep.Partitions)
	}
	// Retention through the one reader: the topic keeps its records forever (retention.ms -1,
	// set on the topic), and the configs shown are the ones it judged.
	if rep.Retention.State != kafka.RetentionForever || rep.Retention.Describe() != "forever" || len(rep.Configs) != 3 ||
		rep.Configs[1].Name != "retention.ms" || rep.Configs[1].Value != "-1" || rep.Configs[1].Source != "topic" {
		t.Fatalf("retention %+v, configs %+v", rep.Retention, rep.Configs)
	}
	// The newest 3 of each partition: offsets 7..9 of partition 0 and 1..3 of partition 1.
	if rep.Sample.Records != 6 || len(rep.Sample.Malformed) != 2 || rep.Sample.Malformed[0].Offset != 1 || rep.Sample.Malformed[0].Partition != 1 {
		t.Fatalf("sample: %+v", rep.Sample)
	}
	var g *inspect.GroupLag
	for i := range rep.Groups {
		if rep.Groups[i].Group == group {
			g = &rep.Groups[i]
		}
	}
	if g == nil || g.State != "Empty" || g.TotalLag != 6 || len(g.Partitions) != 2 || g.Partitions[0].Lag != 6 || g.Partitions[1].Lag != 0 {
		t.Fatalf("group %s: %+v", group, g)
	}
}

func TestUnknownTopic(t *testing.T) {
	c := testenv.Cluster(t)
	missing := inspecttest.Name("nop")
	_, err := inspect.Topic(ctx(t), c, missing, inspect.TopicOptions{})
	var ute *kafka.UnknownTopicError
	if !errors.As(err, &ute) || ute.Topic != missing {
		t.Fatalf("topic: %v", err)
	}
	if _, err := inspect.Validate(ctx(t), c, missing, kafka.Selection{}, inspect.ValidateOptions{}); !errors.As(err, &ute) {
		t.Fatalf("validate: %v", err)
	}
	if _, err := inspect.Aggregate(ctx(t), c, missing, "x", kafka.Selection{}, inspect.AggregateOptions{}); !errors.As(err, &ute) {
		t.Fatalf("aggregate: %v", err)
	}
	if _, err := inspect.Record(ctx(t), c, nil, missing, 0, 0); !errors.As(err, &ute) {
		t.Fatalf("record: %v", err)
	}
}

func TestRecordOutsidePartition(t *testing.T) {
	c := testenv.Cluster(t)
	topic := inspecttest.Topic(t, 2)
	inspecttest.SeedClean(t, topic)
	for _, tc := range []struct {
		p    int32
		o    int64
		want string
	}{
		{0, 10, "offset 10 is outside " + topic + "/0, whose records are at offsets 0..9"},
		{1, 0, "which holds no records"},
		{2, 0, "has no partition 2 (partitions 0..1)"},
	} {
		_, err := inspect.Record(ctx(t), c, nil, topic, tc.p, tc.o)
		if fwerr.KindOf(err) != fwerr.KindNotFound || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("record %d/%d: %v (kind %v), want a not-found error with %q", tc.p, tc.o, err, fwerr.KindOf(err), tc.want)
		}
	}
}

// The sample tells which partitioner placed a topic's keyed records: kcat's (librdkafka's
// CRC-32), sarama's FNV-1a, or franz-go's murmur2; and none where the producers disagree.
// Records a replay wrote are left out (counted apart): the replay placed them, by its own rule.
func TestTopicTellsThePartitioner(t *testing.T) {
	c := testenv.Cluster(t)
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf("account-%d", i*13)
	}
	const parts = 5
	murmur := func(t *testing.T, topic string) {
		var recs []*kgo.Record
		for _, k := range keys {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(`{}`)})
		}
		testenv.Produce(t, testenv.Client(t), recs...)
	}
	// replayedElsewhere writes, as a replay that kept original partitions would, a record of
	// each key one partition past where crc32 puts it.
	replayedElsewhere := func(t *testing.T, topic string) {
		var recs []*kgo.Record
		for _, k := range keys {
			p, _ := kafka.PartitionerCRC32.KeyPartition([]byte(k), parts)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: (p + 1) % parts, Key: []byte(k), Value: []byte(`{}`),
				Headers: []kgo.RecordHeader{{Key: "FW.Replay.Id", Value: []byte("run-1")}}})
		}
		testenv.Produce(t, testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), recs...)
	}
	for _, tc := range []struct {
		name     string
		produce  func(t *testing.T, topic string)
		want     []string
		replayed int64
	}{
		{"kcat", func(t *testing.T, topic string) { testenv.KcatProduceKeyed(t, topic, keys, 2) }, []string{"crc32"}, 0},
		{"sarama", func(t *testing.T, topic string) { testenv.SaramaProduceKeyed(t, topic, parts, keys, 2) }, []string{"fnv1a"}, 0},
		{"franz-go", murmur, []string{"murmur2"}, 0},
		{"mixed", func(t *testing.T, topic string) {
			testenv.KcatProduceKeyed(t, topic, keys, 1)
			testenv.SaramaProduceKeyed(t, topic, parts, keys, 1)
		}, []string{}, 0},
		{"replayed", func(t *testing.T, topic string) {
			testenv.KcatProduceKeyed(t, topic, keys, 1)
			replayedElsewhere(t, topic)
		}, []string{"crc32"}, int64(len(keys))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := testenv.Topic(t, parts, nil)
			tc.produce(t, topic)
			rep, err := inspect.Topic(ctx(t), c, topic, inspect.TopicOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ps := rep.Sample.Partitioners
			if ps.Keyed+ps.Replayed != rep.Sample.Records || ps.Keyed == 0 || ps.Replayed != tc.replayed || !slices.Equal(ps.Matching, tc.want) {
				t.Fatalf("partitioners %+v of %d sampled records: want matching %v", ps, rep.Sample.Records, tc.want)
			}
		})
	}
}
