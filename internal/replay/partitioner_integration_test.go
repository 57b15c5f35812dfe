package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// partitionerKeys are the keys of the partitioner tests: enough that murmur2 places some of
// them elsewhere than crc32 and fnv1a do.
func partitionerKeys() []string {
	keys := make([]string, 24)
	for i := range keys {
		keys[i] = fmt.Sprintf("order-%03d", i*37)
	}
	return keys
}

// siblings maps each key to the one partition its records are in, failing when a key is in
// several (the producer did not place by key).
func siblings(t *testing.T, recs []*kgo.Record) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, r := range recs {
		if p, ok := out[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d of %s", r.Key, p, r.Partition, r.Topic)
		}
		out[string(r.Key)] = r.Partition
	}
	return out
}

// watermillDeadLetter is a Watermill poison record of r: its original topic, no partition.
func watermillDeadLetter(topic string, r *kgo.Record) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{
		{Key: dlq.WatermillTopic, Value: []byte(r.Topic)}, {Key: dlq.WatermillHandler, Value: []byte("orders")},
		{Key: dlq.WatermillReason, Value: []byte("boom")}, {Key: "user", Value: []byte{0, 1, 0xff}},
	}}
}

func TestReplayPlacesKeysWithTheirSiblings(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t)
	keys := partitionerKeys()
	const parts = 6
	for _, tc := range []struct {
		partitioner kafka.Partitioner
		produce     func(t *testing.T, topic string, n int32)
	}{
		{kafka.PartitionerCRC32, func(t *testing.T, topic string, _ int32) { testenv.KcatProduceKeyed(t, topic, keys, 3) }},
		{kafka.PartitionerFNV1a, func(t *testing.T, topic string, n int32) { testenv.SaramaProduceKeyed(t, topic, n, keys, 3) }},
	} {
		t.Run(string(tc.partitioner), func(t *testing.T) {
			src := testenv.Topic(t, parts, nil)
			tc.produce(t, src, parts)
			want := siblings(t, readTopic(t, c, src))
			if len(want) != len(keys) {
				t.Fatalf("%d keys in %s, want %d", len(want), src, len(keys))
			}
			// The test can fail: murmur2 puts some of these keys elsewhere.
			moved := 0
			for k, p := range want {
				if q, _ := kafka.PartitionerMurmur2.KeyPartition([]byte(k), parts); q != p {
					moved++
				}
			}
			if moved == 0 {
				t.Fatal("murmur2 places every key as the producer did: the keys prove nothing")
			}
			var origs []*kgo.Record // one record of each key
			seen := map[string]bool{}
			for _, r := range readTopic(t, c, src) {
				if !seen[string(r.Key)] {
					seen[string(r.Key)] = true
					origs = append(origs, r)
				}
			}

			// Watermill dead letters name no partition: placed by --partitioner.
			dlt := testenv.Topic(t, 2, nil)
			var dls []*kgo.Record
			for _, r := range origs {
				dls = append(dls, watermillDeadLetter(dlt, r))
			}
			testenv.Produce(t, cl, dls...)
			rep, sum, err := execute(t, t.Context(), c, st, Spec{From: dlt, Partitioner: tc.partitioner}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, src, sum.RunID, want, len(keys), true)
			checkRules(t, rep, string(tc.partitioner))

			// fieldwork dead letters name their partition: kept (the counts match).
			dlq2 := testenv.Topic(t, 2, nil)
			deadLetters(t, cl, dlq2, origs, dlq.Meta{Group: "orders"})
			rep, sum, err = execute(t, t.Context(), c, st, Spec{From: dlq2}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, src, sum.RunID, want, len(keys), false)
			checkRules(t, rep, RuleOriginal)

			// Into a topic of another partition count holding the same keys: by the key.
			other := testenv.Topic(t, 4, nil)
			tc.produce(t, other, 4)
			wantOther := siblings(t, readTopic(t, c, other))
			rep, sum, err = execute(t, t.Context(), c, st, Spec{From: dlq2, To: other, Partitioner: tc.partitioner}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, other, sum.RunID, wantOther, len(keys), false)
			checkRules(t, rep, string(tc.partitioner))
		})
	}
}

// checkSiblings checks that the n records run replayed into topic each landed in its key's
// partition, dead-letter headers stripped and (wantUser) the user header kept byte for byte.
func checkSiblings(t *testing.T, c *kafka.Cluster, topic, run string, want map[string]int32, n int, wantUser bool) {
	t.Helper()
	got := 0
	for _, rs := range replayed(readTopic(t, c, topic), run) {
		for _, r := range rs {
			got++
			if p, ok := want[string(r.Key)]; !ok || p != r.Partition {
				t.Errorf("replayed %s landed in %s/%d, its siblings are in partition %d", r.Key, topic, r.Partition, p)
			}
			if wantUser && header(r, "user") != string([]byte{0, 1, 0xff}) || header(r, dlq.WatermillTopic) != "" || header(r, dlq.HeaderTopic) != "" {
				t.Errorf("replayed %s: headers %v", r.Key, r.Headers)
			}
		}
	}
	if got != n {
		t.Errorf("%d records replayed into %s by run %s, want %d", got, topic, run, n)
	}
}

// checkRules checks that every target of the plan got rule.
func checkRules(t *testing.T, rep *Report, rule string) {
	t.Helper()
	var rules []string
	for _, tc := range rep.Targets {
		if tc.Rule != rule {
			rules = append(rules, fmt.Sprintf("%s/%d: %s", tc.Topic, tc.Partition, tc.Rule))
		}
	}
	if len(rep.Targets) == 0 || len(rules) > 0 {
		t.Errorf("targets %v: want every rule %s, not %s", rep.Targets, rule, strings.Join(rules, ", "))
	}
}
