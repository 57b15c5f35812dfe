package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Lag is how many offsets lie between a group's committed offset and a partition's log end
// (its high watermark): the one lag rule of `inspect topic`, `groups list` and `groups
// describe`. A commit at or past the end has no lag.
func Lag(committed, logEnd int64) int64 { return max(0, logEnd-committed) }

// Commits are a group's committed offsets: topic → partition → offset.
type Commits map[string]map[int32]int64

// adminOffsets is cs as the admin client's offsets, each with no leader epoch.
func (cs Commits) adminOffsets() kadm.Offsets {
	os := kadm.Offsets{}
	for t, ps := range cs {
		for p, at := range ps {
			os.Add(kadm.Offset{Topic: t, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	return os
}

// CommitsOf is GroupCommits of one group: its committed offsets (empty, never nil, when it has
// none), or the error reading them.
func (c *Cluster) CommitsOf(ctx context.Context, group string) (Commits, error) {
	commits, failed := c.GroupCommits(ctx, group)
	if err := failed[group]; err != nil {
		return nil, err
	}
	if cm := commits[group]; cm != nil {
		return cm, nil
	}
	return Commits{}, nil
}

// GroupCommits fetches the committed offsets of groups in one batch (a partition without a
// commit is left out). A group whose commits cannot be fetched (another group type, no
// DESCRIBE on it) is in the second map with its error, classified by Denied.
func (c *Cluster) GroupCommits(ctx context.Context, groups ...string) (map[string]Commits, map[string]error) {
	out := make(map[string]Commits, len(groups))
	failed := map[string]error{}
	if len(groups) == 0 {
		return out, failed
	}
	c.AwaitGroupCoordinators(ctx, groups...)
	for name, fr := range c.Admin.FetchManyOffsets(ctx, groups...) {
		if fr.Err != nil {
			failed[name] = Denied(fmt.Errorf("fetch the offsets of group %s: %w", name, fr.Err), OpDescribe, ResourceGroup, name)
			continue
		}
		cm := Commits{}
		for t, ps := range fr.Fetched {
			for p, o := range ps {
				if o.Err != nil || o.At < 0 {
					continue
				}
				if cm[t] == nil {
					cm[t] = map[int32]int64{}
				}
				cm[t][p] = o.At
			}
		}
		out[name] = cm
	}
	return out, failed
}

// LogEnds are the high watermarks of every partition of topics: topic → partition → offset.
// A topic that does not exist or cannot be described is left out.
func (c *Cluster) LogEnds(ctx context.Context, topics ...string) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	if len(topics) == 0 {
		return out, nil
	}
	listed, err := c.Admin.ListEndOffsets(ctx, topics...)
	if err != nil && len(listed) == 0 {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, nil
}

// CommitGroupOffsets sets group's committed offsets of topic (partition → offset), as an
// operator's reset does: CommitGroup of one topic.
func (c *Cluster) CommitGroupOffsets(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	return c.CommitGroup(ctx, group, Commits{topic: offsets})
}

// CommitGroup sets group's committed offsets (topic → partition → offset) in one request, as
// an operator's reset does: the broker accepts it only while the group has no members. Each
// partition's error is returned, the first one wrapped with its partition.
func (c *Cluster) CommitGroup(ctx context.Context, group string, offsets Commits) error {
	c.AwaitGroupCoordinators(ctx, group)
	resp, err := c.Admin.CommitOffsets(ctx, group, offsets.adminOffsets())
	if err != nil {
		return Denied(fmt.Errorf("commit the offsets of group %s: %w", group, err), OpRead, ResourceGroup, group)
	}
	var first error
	resp.Each(func(r kadm.OffsetResponse) {
		if r.Err != nil && first == nil {
			first = deniedOn(fmt.Errorf("commit %s/%d for group %s: %w", r.Topic, r.Partition, group, r.Err), OpRead, group, r.Topic)
		}
	})
	return first
}

// deniedOn is Denied of a partition's answer to a request for group: a refusal of its topic
// names READ on the topic (what the broker checks of it for a commit or a delete), any other
// op on the group.
func deniedOn(err error, op, group, topic string) error {
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		return Denied(err, OpRead, ResourceTopic, topic)
	}
	return Denied(err, op, ResourceGroup, group)
}

// DeleteGroupOffsets removes group's committed offsets of the partitions named (topic →
// partitions), so that the group has no commit there, as before it first committed: the
// broker accepts it only while the group is not subscribed to the topic (no members).
func (c *Cluster) DeleteGroupOffsets(ctx context.Context, group string, parts map[string][]int32) error {
	set := kadm.TopicsSet{}
	for t, ps := range parts {
		set.Add(t, ps...)
	}
	c.AwaitGroupCoordinators(ctx, group)
	resp, err := c.Admin.DeleteOffsets(ctx, group, set)
	if err != nil {
		return Denied(fmt.Errorf("delete the offsets of group %s: %w", group, err), OpDelete, ResourceGroup, group)
	}
	var first error
	resp.EachError(func(t string, p int32, err error) {
		if first == nil {
			first = deniedOn(fmt.Errorf("delete the offset of %s/%d for group %s: %w", t, p, group, err), OpDelete, group, t)
		}
	})
	return first
}

// FollowDiscoverEvery is how often Follow asks its discover function for the topics to
// follow: a topic created since, or a partition added, shows up within about this long.
const FollowDiscoverEvery = 5 * time.Second

// Follow reads topic/partition from each start offset on (read committed) and calls fn with
// every record as it arrives, until ctx is done (then it returns nil) or fn fails (its error
// is returned). discover, when set, is asked every FollowDiscoverEvery for the topics to
// follow: every partition of them that is not read yet (a topic created since Follow began, a
// partition added to a followed topic) is then read from its start, since
// every record it holds came after the starts were taken. A round that fails (the broker
// down, a topic gone) is skipped: the next one catches up, and nothing is lost.
func (c *Cluster) Follow(ctx context.Context, starts map[string]map[int32]int64, discover func(context.Context) ([]string, error), fn func(*kgo.Record) error) error {
	consume := map[string]map[int32]kgo.Offset{}
	followed := map[string]map[int32]bool{}
	for t, ps := range starts {
		consume[t], followed[t] = map[int32]kgo.Offset{}, map[int32]bool{}
		for p, o := range ps {
			consume[t][p] = kgo.NewOffset().At(o)
			followed[t][p] = true
		}
	}
	if len(consume) == 0 && discover == nil {
		<-ctx.Done()
		return nil
	}
	cl, err := c.reader(consume)
	if err != nil {
		return err
	}
	defer cl.Close()
	if discover != nil {
		dctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			tick := time.NewTicker(FollowDiscoverEvery)
			defer tick.Stop()
			for {
				select {
				case <-dctx.Done():
					return
				case <-tick.C:
				}
				if add := c.unfollowed(dctx, discover, followed); len(add) > 0 {
					cl.AddConsumePartitions(add)
				}
			}
		}()
	}
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err := fetchError(fetches); err != nil {
			return err
		}
		var stop error
		fetches.EachRecord(func(rec *kgo.Record) {
			if stop == nil {
				stop = fn(rec)
			}
		})
		if stop != nil {
			return stop
		}
	}
}

// unfollowed is what Follow adds in one discovery round: each partition of the topics
// discover names that followed does not hold, from its start (followed is updated). A failed
// round adds nothing.
func (c *Cluster) unfollowed(ctx context.Context, discover func(context.Context) ([]string, error), followed map[string]map[int32]bool) map[string]map[int32]kgo.Offset {
	topics, err := discover(ctx)
	if err != nil || len(topics) == 0 {
		return nil
	}
	details, err := c.Admin.ListTopics(ctx, topics...)
	if err != nil {
		return nil
	}
	add := map[string]map[int32]kgo.Offset{}
	for _, t := range topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			continue
		}
		for p := range d.Partitions {
			if followed[t][p] {
				continue
			}
			if followed[t] == nil {
				followed[t] = map[int32]bool{}
			}
			if add[t] == nil {
				add[t] = map[int32]kgo.Offset{}
			}
			followed[t][p] = true
			add[t][p] = kgo.NewOffset().AtStart()
		}
	}
	return add
}
