package kafka

import (
	"fmt"
	"hash/crc32"
	"hash/fnv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partitioner names how a producer maps a record key to a partition (docs/design.md §3.3):
// the placement of the Java client, the one librdkafka's default partitioner uses, or
// sarama's. The hashes are franz-go's own partitioners, configured as each client hashes.
type Partitioner string

// The partitioners a replay can place keyed records by and `inspect topic` compares.
const (
	// PartitionerMurmur2 is Kafka's Java client (and franz-go's default): murmur2 of the key,
	// its sign bit masked, modulo the partition count.
	PartitionerMurmur2 Partitioner = "murmur2"
	// PartitionerCRC32 is librdkafka's consistent_random, its default (and confluent-kafka-go's,
	// confluent-kafka-python's, kcat's): CRC-32 (IEEE) of the key modulo the partition count,
	// unsigned; an empty or null key is placed at random.
	PartitionerCRC32 Partitioner = "crc32"
	// PartitionerFNV1a is sarama's default hash partitioner: 32-bit FNV-1a of the key read as a
	// signed integer, modulo the partition count, negated when negative.
	PartitionerFNV1a Partitioner = "fnv1a"
)

// Partitioners are the partitioners known, in the order they are shown.
var Partitioners = []Partitioner{PartitionerMurmur2, PartitionerCRC32, PartitionerFNV1a}

// PartitionerNames are Partitioners as strings (flag values, completion).
func PartitionerNames() []string {
	out := make([]string, len(Partitioners))
	for i, p := range Partitioners {
		out[i] = string(p)
	}
	return out
}

// ParsePartitioner reads a partitioner's name; "" is murmur2, Kafka's default.
func ParsePartitioner(s string) (Partitioner, error) {
	if s == "" {
		return PartitionerMurmur2, nil
	}
	for _, p := range Partitioners {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown partitioner %q: want murmur2 (Java, franz-go), crc32 (librdkafka) or fnv1a (sarama)", s)
}

// The key partitioners are franz-go's, configured as each client hashes; they are used for
// keyed records only, which their sticky part never sees, so sharing them is safe.
var keyPartitioners = map[Partitioner]kgo.TopicPartitioner{
	PartitionerMurmur2: kgo.StickyKeyPartitioner(nil).ForTopic(""),
	// SaramaHasher's unsigned modulo (on 64-bit platforms) is librdkafka's consistent one.
	PartitionerCRC32: kgo.StickyKeyPartitioner(kgo.SaramaHasher(crc32.ChecksumIEEE)).ForTopic(""),
	PartitionerFNV1a: kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a)).ForTopic(""),
}

func fnv32a(b []byte) uint32 {
	h := fnv.New32a()
	_, _ = h.Write(b)
	return h.Sum32()
}

// KeyPartition is the partition of n the producer puts key in, and false when it puts the key
// wherever it likes (a null key; for crc32 an empty one too, as librdkafka's
// consistent_random does) or there is no partition.
func (p Partitioner) KeyPartition(key []byte, n int) (int32, bool) {
	if key == nil || n <= 0 || p == PartitionerCRC32 && len(key) == 0 {
		return -1, false
	}
	tp, ok := keyPartitioners[p]
	if !ok {
		tp = keyPartitioners[PartitionerMurmur2]
	}
	return int32(tp.Partition(&kgo.Record{Key: key}, n)), true
}
