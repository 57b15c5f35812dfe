package dlq

import (
	"context"
	"maps"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FollowOptions select the dead letters Follow hands on, as ListOptions do (without a limit:
// a follow ends when it is interrupted).
type FollowOptions struct {
	Filter   Filter
	Lookup   StatusLookup
	Statuses []Status
	// Pattern, when set, is the pattern the scan's topics were found by (no topic named):
	// topics it matches that are created while Follow runs are followed too, from their
	// first record.
	Pattern *regexp.Regexp
	// Seen are the share-group dead letters already shown (the listing's: see Folder); nil
	// for none. Follow adds those it hands on.
	Seen *Folder
}

// Follow reads the scan's partitions from where the scan's plan ends (the end offsets taken
// when it was planned, so that nothing List showed is shown again and nothing written since
// is missed) and hands emit every new dead letter that passes the filter and the status
// filter, one at a time as it arrives (its status looked up at once; a share group's second
// dead letter of a record marked DuplicateOf the first), until ctx is done: then
// it returns nil. Partitions added to the scan's topics while it runs are read from their
// start, and so are the topics o.Pattern matches that are created while it runs (or that
// were deleted when the scan was planned and are created again), found within
// kafka.FollowDiscoverEvery.
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
	// A share group's dead letter of a record already shown is handed on marked as a
	// duplicate of the first (DuplicateOf): a follow is a stream, and a line printed is not
	// revised to count it, as a listing does (Entry.Duplicates).
	seen := o.Seen
	if seen == nil {
		seen = NewFolder()
	}
	b := NewStatusBatcher(o.Lookup, 1, func(d DeadLetter, info StatusInfo) error {
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, info.Status) {
			return nil
		}
		e := Entry{DeadLetter: d, Status: info}
		if first := seen.Of(&d); first != nil {
			a := first.Address()
			e.DuplicateOf = &a
		} else {
			seen.Remember(&d)
		}
		return emit(e)
	})
	topics := slices.Sorted(maps.Keys(starts))
	topics = append(topics, s.deleted...)
	discover := func(ctx context.Context) ([]string, error) {
		if o.Pattern == nil {
			return topics, nil
		}
		return Topics(ctx, s.c, nil, o.Pattern)
	}
	return s.c.Follow(ctx, starts, discover, func(r *kgo.Record) error {
		d := read(ctx, r)
		if !o.Filter.Match(&d) {
			return nil
		}
		return b.Add(ctx, d)
	})
}
