package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Fetch sizes of a scan. franz-go decodes a whole fetch response into records as soon as it
// arrives, and dead-letter topics compress well (the same headers on every record): the
// 32 MiB fetches of kafka.Cluster.Read became a few hundred MiB of decoded records at once on
// a topic of a million dead letters (the benchmark in internal/dlq/bench). Fetches of at most
// 512 KiB (256 KiB a partition), one in flight while the previous one is processed, keep the
// process under 100 MiB and still read faster than kcat. A broker sends a batch larger than
// the limit anyway, so nothing stalls.
const (
	scanFetchMaxBytes    = 512 << 10
	scanFetchPartBytes   = 256 << 10
	scanConcurrentFetchs = 2
)

// readRanges calls fn for every record of ranges, per partition in offset order (partitions
// interleave), as kafka.Cluster.Read does: up to the planned end offsets and never beyond,
// committed records only, transaction markers skipped but moved past. Its fetches are small
// (see scanFetchMaxBytes), so memory does not follow the topic's size. A non-nil error from
// fn stops the read and is returned as it is.
func readRanges(ctx context.Context, c *kafka.Cluster, ranges []kafka.PartitionRange, fn func(*kgo.Record) error) error {
	remaining := make(map[string]map[int32]int64) // topic → partition → end (exclusive)
	consume := make(map[string]map[int32]kgo.Offset)
	for _, r := range ranges {
		if r.Len() == 0 {
			continue
		}
		if remaining[r.Topic] == nil {
			remaining[r.Topic] = map[int32]int64{}
			consume[r.Topic] = map[int32]kgo.Offset{}
		}
		remaining[r.Topic][r.Partition] = r.End
		consume[r.Topic][r.Partition] = kgo.NewOffset().At(r.Start)
	}
	if len(consume) == 0 {
		return nil
	}
	opts := append(c.Options(),
		kgo.ConsumePartitions(consume),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(scanFetchMaxBytes),
		kgo.FetchMaxPartitionBytes(scanFetchPartBytes),
		kgo.MaxConcurrentFetches(scanConcurrentFetchs),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka reader: %w", err)
	}
	defer cl.Close()
	left := 0
	for _, ps := range remaining {
		left += len(ps)
	}
	for left > 0 {
		// The whole buffered fetch at once: the next one is fetched while this one is parsed.
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fwerr.Wrap(fwerr.KindInterrupted, err)
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var stop error
		fetches.EachPartition(func(ft kgo.FetchTopicPartition) {
			if stop != nil {
				return
			}
			end, ok := remaining[ft.Topic][ft.Partition]
			if !ok {
				return
			}
			for _, rec := range ft.Records {
				if rec.Offset >= end {
					break
				}
				if !rec.Attrs.IsControl() {
					if err := fn(rec); err != nil {
						stop = err
						return
					}
				}
			}
			if n := len(ft.Records); n > 0 && ft.Records[n-1].Offset >= end-1 {
				delete(remaining[ft.Topic], ft.Partition)
				cl.PauseFetchPartitions(map[string][]int32{ft.Topic: {ft.Partition}})
				left--
			}
		})
		if stop != nil {
			return stop
		}
	}
	return nil
}
