package inspect

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Records reads a run of topic's records, as `kcat -C -t T -o -N -e` does: the records sel
// selects, and of each partition's range only its last `last` offsets when last > 0. It reads
// the offsets fixed when it starts and never waits for new records, one partition after the
// other in partition order, each in offset order, and calls fn with each record as a report
// (its bytes, its envelope decoded through d or why it does not decode; RecordOf). A non-nil
// error from fn stops the read and is returned.
func Records(ctx context.Context, c *kafka.Cluster, d *schema.Decoder, topic string, sel kafka.Selection, last int64, fn func(*RecordReport) error) error {
	ranges, err := c.Plan(ctx, topic, sel)
	if err != nil {
		return err
	}
	return c.ReadInOrder(ctx, LastOffsets(ranges, last), func(rec *kgo.Record) error { return fn(RecordOf(ctx, d, rec)) }, nil)
}

// LastOffsets narrows each range to its last `last` offsets (every range whole when last is
// 0 or less).
func LastOffsets(ranges []kafka.PartitionRange, last int64) []kafka.PartitionRange {
	out := make([]kafka.PartitionRange, len(ranges))
	for i, r := range ranges {
		if last > 0 && r.Len() > last {
			r.Start = r.End - last
		}
		out[i] = r
	}
	return out
}
