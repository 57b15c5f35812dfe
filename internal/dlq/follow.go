package dlq

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FollowOptions select the dead letters Follow hands on, as ListOptions do (without a limit:
// a follow ends when it is interrupted).
type FollowOptions struct {
	Filter   Filter
	Lookup   StatusLookup
	Statuses []Status
}

// Follow reads the scan's partitions from where the scan's plan ends (the end offsets taken
// when it was planned, so that nothing List showed is shown again and nothing written since
// is missed) and hands emit every new dead letter that passes the filter and the status
// filter, one at a time as it arrives (its status looked up at once), until ctx is done: then
// it returns nil. Topics created after the scan was planned are not read.
func Follow(ctx context.Context, s *Scan, o FollowOptions, emit func(Entry) error) error {
	starts := map[string]map[int32]int64{}
	for _, r := range s.ranges {
		if slices.Contains(s.deleted, r.Topic) {
			continue
		}
		if starts[r.Topic] == nil {
			starts[r.Topic] = map[int32]int64{}
		}
		starts[r.Topic][r.Partition] = r.End
	}
	read := s.reader()
	b := NewStatusBatcher(o.Lookup, 1, func(d DeadLetter, info StatusInfo) error {
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, info.Status) {
			return nil
		}
		return emit(Entry{DeadLetter: d, Status: info})
	})
	return s.c.Follow(ctx, starts, func(r *kgo.Record) error {
		d := read(ctx, r)
		if !o.Filter.Match(d) {
			return nil
		}
		return b.Add(ctx, d)
	})
}
