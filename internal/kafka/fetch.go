package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// ErrNoRecord is returned (wrapped) when an offset inside a partition's bounds holds no
// readable record: compacted away, aborted, or a transaction marker.
var ErrNoRecord = errors.New("no record at this offset")

// Fetch reads the one record at topic/partition/offset. A missing topic is an
// *UnknownTopicError; a partition or offset outside the topic is a usage error that gives the
// valid range; an offset at or beyond the last stable offset (an open transaction) says so;
// an offset inside the bounds that holds no record wraps ErrNoRecord.
func (c *Cluster) Fetch(ctx context.Context, topic string, partition int32, offset int64) (*kgo.Record, error) {
	bounds, err := c.Bounds(ctx, topic)
	if err != nil {
		return nil, err
	}
	addr := RecordAddress{Topic: topic, Partition: partition, Offset: offset}
	b, err := PartitionOf(topic, bounds, partition)
	if err != nil {
		return nil, err
	}
	switch {
	case b.HighWatermark <= b.LogStart:
		return nil, fwerr.NotFoundf("offset %d is outside %s/%d, which holds no records", offset, topic, partition)
	case offset < b.LogStart || offset >= b.HighWatermark:
		return nil, fwerr.NotFoundf("offset %d is outside %s/%d, whose records are at offsets %d..%d", offset, topic, partition, b.LogStart, b.HighWatermark-1)
	case offset >= b.LastStable:
		return nil, fmt.Errorf("%s is not readable yet: it is at or beyond the last stable offset %d (an open transaction)", addr, b.LastStable)
	}
	r := PartitionRange{Topic: topic, Partition: partition, Start: offset, End: offset + 1, LogStart: b.LogStart, HighWatermark: b.HighWatermark}
	var found *kgo.Record
	err = c.Read(ctx, []PartitionRange{r}, func(rec *kgo.Record) error {
		if rec.Offset == offset {
			found = rec
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", addr, err)
	}
	if found == nil {
		return nil, fmt.Errorf("%s: %w (compacted away, aborted, or a transaction marker)", addr, ErrNoRecord)
	}
	return found, nil
}
