package kafka_test

import (
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// Each partitioner places keys as its client does, computed here from the clients' own
// definitions: Kafka's murmur2 test vectors (the Java client's UtilsTest), librdkafka's
// unsigned CRC-32 modulo, sarama's signed FNV-1a.
func TestKeyPartitionAsEachClient(t *testing.T) {
	for key, h := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, "abc": 479470107,
	} {
		for _, n := range []int{1, 3, 7, 64} {
			want := int32(int(uint32(h)&0x7fffffff) % n)
			if got, ok := kafka.PartitionerMurmur2.KeyPartition([]byte(key), n); !ok || got != want {
				t.Errorf("murmur2 %q over %d: %d, want %d", key, n, got, want)
			}
		}
	}
	for i := range 2000 {
		key, n := fmt.Sprintf("key-%d", i*7919), 1+i%13
		if got, _ := kafka.PartitionerCRC32.KeyPartition([]byte(key), n); got != int32(crc32.ChecksumIEEE([]byte(key))%uint32(n)) {
			t.Fatalf("crc32 %q over %d: %d", key, n, got)
		}
		if got, _ := kafka.PartitionerFNV1a.KeyPartition([]byte(key), n); got != testenv.SaramaPartition(key, int32(n)) {
			t.Fatalf("fnv1a %q over %d: %d, want %d", key, n, got, testenv.SaramaPartition(key, int32(n)))
		}
	}
	// A null key is spread by all; an empty one is hashed, except by librdkafka's
	// consistent_random, which spreads it.
	for _, p := range kafka.Partitioners {
		if _, ok := p.KeyPartition(nil, 3); ok {
			t.Errorf("%s places a null key", p)
		}
		if _, ok := p.KeyPartition([]byte{}, 3); ok != (p != kafka.PartitionerCRC32) {
			t.Errorf("%s: an empty key placed: %v", p, ok)
		}
	}
	if _, err := kafka.ParsePartitioner("xxhash"); err == nil {
		t.Error("xxhash accepted")
	}
	if p, err := kafka.ParsePartitioner(""); err != nil || p != kafka.PartitionerMurmur2 {
		t.Errorf("default partitioner %q %v", p, err)
	}
}
