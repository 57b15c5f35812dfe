package inspect

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// scan reads ranges one partition after another, in partition order, each in offset order
// (kafka.Cluster.ReadInOrder). Reading partitions in sequence rather than interleaved makes
// every result deterministic (which record is "first", which examples are kept).
func scan(ctx context.Context, c *kafka.Cluster, ranges []kafka.PartitionRange, progress ProgressFunc, fn func(*kgo.Record) error) error {
	sorted := append([]kafka.PartitionRange(nil), ranges...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Partition < sorted[j].Partition })
	total := kafka.Total(sorted)
	var done int64
	if progress != nil {
		progress(0, total)
	}
	err := c.ReadInOrder(ctx, sorted, func(rec *kgo.Record) error {
		done++
		if progress != nil {
			progress(done, total)
		}
		return fn(rec)
	}, nil)
	if err != nil {
		return err
	}
	if progress != nil {
		progress(total, total)
	}
	return nil
}
