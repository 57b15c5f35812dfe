package kafka_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestTopicNames lists the real broker's topics by prefix, sorted, without Kafka's own.
func TestTopicNames(t *testing.T) {
	c := testenv.Cluster(t)
	prefix := testenv.Name(t, "names")
	for _, suffix := range []string{".b", ".a"} {
		testenv.CreateTopic(t, prefix+suffix, 1, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := c.TopicNames(ctx, prefix)
	if err != nil || !slices.Equal(got, []string{prefix + ".a", prefix + ".b"}) {
		t.Fatalf("TopicNames(%q) = %v, %v", prefix, got, err)
	}
	all, err := c.TopicNames(ctx, "")
	if err != nil || !slices.Contains(all, prefix+".a") || !slices.IsSorted(all) {
		t.Fatalf("all topics: %v, %v", all, err)
	}
	for _, name := range all {
		if strings.HasPrefix(name, "__") {
			t.Errorf("internal topic %s listed", name)
		}
	}
}

func TestRangesText(t *testing.T) {
	for _, tc := range []struct {
		ranges []kafka.PartitionRange
		want   string
	}{
		{nil, "no partitions"},
		{[]kafka.PartitionRange{{Partition: 0, Start: 0, End: 42}, {Partition: 1, Start: 5, End: 5}}, "0: 0..41  1: empty"},
		{[]kafka.PartitionRange{{Partition: 3, Start: 7, End: 8}}, "3: 7..7"},
	} {
		if got := kafka.RangesText(tc.ranges); got != tc.want {
			t.Errorf("RangesText(%v) = %q, want %q", tc.ranges, got, tc.want)
		}
	}
}
