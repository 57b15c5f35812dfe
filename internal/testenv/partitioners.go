package testenv

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os/exec"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KcatProduceKeyed writes rounds records per key to topic with kcat, librdkafka's own client,
// and its consistent_random partitioner: CRC-32 placement by a client that is not franz-go.
// Each value is {"event_id":"KEY-ROUND"}.
func KcatProduceKeyed(t testing.TB, topic string, keys []string, rounds int) {
	t.Helper()
	KcatProduceKeyedBy(t, topic, "consistent_random", keys, rounds)
}

// KcatProduceKeyedBy is KcatProduceKeyed with another of librdkafka's partitioners:
// consistent_random (CRC-32), murmur2_random (the Java client's placement) or fnv1a_random
// (sarama's).
func KcatProduceKeyedBy(t testing.TB, topic, partitioner string, keys []string, rounds int) {
	t.Helper()
	var in bytes.Buffer
	for round := range rounds {
		for _, k := range keys {
			fmt.Fprintf(&in, "%s|{\"event_id\":\"%s-%d\"}\n", k, k, round)
		}
	}
	cmd := exec.Command(Kcat(t), "-P", "-b", Brokers(t), "-t", topic, "-K", "|", "-X", "partitioner="+partitioner)
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v: %s", err, out)
	}
}

// SaramaPartition is sarama's default hash partitioner, written out from its definition
// rather than through franz-go: 32-bit FNV-1a read as an int32, modulo n, negated when
// negative.
func SaramaPartition(key string, n int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	p := int32(h.Sum32()) % n
	if p < 0 {
		p = -p
	}
	return p
}

// SaramaProduceKeyed writes rounds records per key to topic (of n partitions) at the partitions
// sarama's default partitioner chooses, with the values of KcatProduceKeyed.
func SaramaProduceKeyed(t testing.TB, topic string, n int32, keys []string, rounds int) {
	t.Helper()
	cl := Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for round := range rounds {
		for _, k := range keys {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: SaramaPartition(k, n), Key: []byte(k),
				Value: fmt.Appendf(nil, `{"event_id":"%s-%d"}`, k, round)})
		}
	}
	Produce(t, cl, recs...)
}
