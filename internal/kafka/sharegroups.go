package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ShareStart is a share group's position on one partition, as DescribeShareGroupOffsets
// reports it (KIP-932): the share-partition start offset (every record before it is
// acknowledged or archived) and the broker's lag (records from the start offset to the log
// end not yet acknowledged; -1 when the broker does not report it). The records the group holds
// in flight, which are acquired, and their delivery counts are not in the admin API: the
// broker keeps them in __share_group_state.
type ShareStart struct {
	Start int64
	Lag   int64
}

// ShareStarts are a share group's start offsets: topic → partition → start. A partition the
// group has not initialized yet (start offset -1) is left out.
type ShareStarts map[string]map[int32]ShareStart

// Commits are the start offsets alone, in the shape of a consumer group's commits: where a
// reset or an undo of a share group reads and writes.
func (s ShareStarts) Commits() Commits {
	out := Commits{}
	for t, ps := range s {
		for p, st := range ps {
			if out[t] == nil {
				out[t] = map[int32]int64{}
			}
			out[t][p] = st.Start
		}
	}
	return out
}

// ShareGroupStarts fetches the start offsets of share groups in one batch. A group whose offsets
// cannot be fetched is in the second map with its error, classified by Denied. A group the
// broker does not know answers with no offsets, as one that never started does.
func (c *Cluster) ShareGroupStarts(ctx context.Context, groups ...string) (map[string]ShareStarts, map[string]error) {
	out := make(map[string]ShareStarts, len(groups))
	failed := map[string]error{}
	if len(groups) == 0 {
		return out, failed
	}
	c.AwaitGroupCoordinators(ctx, groups...)
	described, err := c.Admin.DescribeShareGroupOffsets(ctx, groups...)
	for _, g := range groups {
		d, ok := described[g]
		switch {
		case !ok && err != nil:
			failed[g] = Denied(fmt.Errorf("describe the offsets of share group %s: %w", g, err), OpDescribe, ResourceGroup, g)
			continue
		case ok && d.Err != nil:
			failed[g] = Denied(fmt.Errorf("describe the offsets of share group %s: %w", g, d.Err), OpDescribe, ResourceGroup, g)
			continue
		}
		starts := ShareStarts{}
		d.Offsets.Each(func(o kadm.ShareOffset) {
			if o.Err != nil || o.StartOffset < 0 {
				return
			}
			if starts[o.Topic] == nil {
				starts[o.Topic] = map[int32]ShareStart{}
			}
			starts[o.Topic][o.Partition] = ShareStart{Start: o.StartOffset, Lag: o.Lag}
		})
		out[g] = starts
	}
	return out, failed
}

// AlterShareGroupStarts sets share group's start offsets (topic → partition → offset) in one
// request, as an operator's reset does: the broker accepts it only while the group has no
// members, and forgets the records in flight. Each partition's error is returned, the first
// one wrapped with its partition.
func (c *Cluster) AlterShareGroupStarts(ctx context.Context, group string, offsets Commits) error {
	c.AwaitGroupCoordinators(ctx, group)
	resp, err := c.Admin.AlterShareGroupOffsets(ctx, group, offsets.adminOffsets())
	if err != nil {
		return Denied(fmt.Errorf("alter the start offsets of share group %s: %w", group, err), OpRead, ResourceGroup, group)
	}
	var first error
	resp.EachError(func(t string, p int32, err error) {
		if first == nil {
			first = deniedOn(fmt.Errorf("alter the start offset of %s/%d for share group %s: %w", t, p, group, err), OpRead, group, t)
		}
	})
	return first
}

// DeleteShareGroupStarts removes share group's start offsets of whole topics (the API deletes
// no single partition), so that the group starts them again by share.auto.offset.reset: the
// broker accepts it only while the group has no members.
func (c *Cluster) DeleteShareGroupStarts(ctx context.Context, group string, topics ...string) error {
	c.AwaitGroupCoordinators(ctx, group)
	resp, err := c.Admin.DeleteShareGroupOffsets(ctx, group, topics...)
	if err != nil {
		return Denied(fmt.Errorf("delete the start offsets of share group %s: %w", group, err), OpDelete, ResourceGroup, group)
	}
	var first error
	resp.EachError(func(t string, err error) {
		if first == nil {
			first = deniedOn(fmt.Errorf("delete the start offsets of %s for share group %s: %w", t, group, err), OpDelete, group, t)
		}
	})
	return first
}
