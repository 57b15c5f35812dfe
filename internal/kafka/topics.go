package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// TopicNames lists the cluster's topics whose names start with prefix ("" for all), sorted,
// leaving out Kafka's internal ones (__consumer_offsets, __transaction_state: every name
// starting with "__"): what an operator may name, for shell completion.
func (c *Cluster) TopicNames(ctx context.Context, prefix string) ([]string, error) {
	topics, err := c.Admin.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var out []string
	for _, t := range topics.Names() {
		if !strings.HasPrefix(t, "__") && strings.HasPrefix(t, prefix) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// RangesText writes the offsets a read covers, partition by partition: "0: 0..41  1: empty"
// (inclusive offsets), "no partitions" for none.
func RangesText(ranges []PartitionRange) string {
	var parts []string
	for _, r := range ranges {
		if r.Len() == 0 {
			parts = append(parts, fmt.Sprintf("%d: empty", r.Partition))
		} else {
			parts = append(parts, fmt.Sprintf("%d: %d..%d", r.Partition, r.Start, r.End-1))
		}
	}
	if len(parts) == 0 {
		return "no partitions"
	}
	return strings.Join(parts, "  ")
}
