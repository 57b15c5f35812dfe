package groups

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// The group types, as ListGroups names them (Summary.Type, Report.Type).
const (
	TypeClassic  = "classic"
	TypeConsumer = "consumer"
	// TypeShare is a share group (KIP-932): its members read the same partitions at once, each
	// record acquired, then accepted, released or rejected; it has start offsets, not commits.
	TypeShare = "share"
)

// ShareNotReported says what the admin API does not tell of a share group, so that no one
// reads its absence as zero.
const ShareNotReported = "in-flight and acquired records and their delivery counts are not reported by the admin API (the broker keeps them in __share_group_state); lag is the broker's count of records from the start offset to the log end not yet acknowledged"

// SharePartition is a share group's position on one partition.
type SharePartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// StartOffset is the share-partition start offset: every record before it is accepted,
	// rejected or archived; -1 when the group has not started the partition yet.
	StartOffset int64 `json:"start_offset"`
	LogEnd      int64 `json:"high_watermark"`
	// Lag is the broker's: the records from the start offset to the log end not yet
	// acknowledged (-1: not reported, or not started).
	Lag int64 `json:"lag"`
	// Members are the members assigned the partition (a share group assigns one partition to
	// several members at once).
	Members []string `json:"members"`
}

// ShareReport is what `groups describe` adds for a share group.
type ShareReport struct {
	Partitions []SharePartition `json:"partitions"`
	// NotReported is ShareNotReported.
	NotReported string `json:"not_reported"`
	// DeadLetters is the check of the group's dead-letter path (CheckDeadLetterPath).
	DeadLetters *DeadLetterPath `json:"dead_letters"`
}

// describeShare describes name as a share group: ok is false when it is none (or the broker
// knows no share groups); a denial is classified.
func describeShare(ctx context.Context, c *kafka.Cluster, name string) (group, bool, error) {
	c.AwaitGroupCoordinators(ctx, name)
	ss, err := c.Admin.DescribeShareGroups(ctx, name)
	d, ok := ss[name]
	switch {
	case !ok:
		if err != nil && kafka.IsAuthorization(kafka.Denied(err, kafka.OpDescribe, kafka.ResourceGroup, name)) {
			return group{}, false, kafka.Denied(fmt.Errorf("describe share group %s: %w", name, err), kafka.OpDescribe, kafka.ResourceGroup, name)
		}
		return group{}, false, nil
	case d.Err != nil:
		if errors.Is(d.Err, kerr.GroupIDNotFound) || errors.Is(d.Err, kerr.UnsupportedVersion) {
			return group{}, false, nil
		}
		return group{}, false, kafka.Denied(fmt.Errorf("describe share group %s: %w", name, d.Err), kafka.OpDescribe, kafka.ResourceGroup, name)
	case d.GroupState == "Dead":
		return group{}, false, nil
	}
	return share(d), true, nil
}

func share(d kadm.DescribedShareGroup) group {
	g := group{Type: TypeShare, State: d.GroupState, ProtocolType: TypeShare, Protocol: d.Assignor, Coordinator: d.Coordinator.NodeID, Members: []Member{}}
	for _, m := range d.Members {
		mem := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []string{}}
		for t, ps := range m.Assignment {
			for p := range ps {
				mem.assigned = append(mem.assigned, kafka.TopicPartition{Topic: t, Partition: p})
			}
		}
		g.Members = append(g.Members, mem.sorted())
	}
	return g
}

// commitsOf are what a reset moves of group d: a share group's start offsets, another group's
// committed offsets.
func commitsOf(ctx context.Context, c *kafka.Cluster, d group, name string) (kafka.Commits, error) {
	if d.Type != TypeShare {
		return c.CommitsOf(ctx, name)
	}
	starts, err := shareStartsOf(ctx, c, name)
	if err != nil {
		return nil, err
	}
	return starts.Commits(), nil
}

// shareStartsOf is ShareGroupStarts of one group.
func shareStartsOf(ctx context.Context, c *kafka.Cluster, name string) (kafka.ShareStarts, error) {
	starts, failed := c.ShareGroupStarts(ctx, name)
	if err := failed[name]; err != nil {
		return nil, err
	}
	if s := starts[name]; s != nil {
		return s, nil
	}
	return kafka.ShareStarts{}, nil
}

// commitTo moves group's offsets (topic → partition → offset): a share group's start offsets
// (AlterShareGroupOffsets), another group's commits.
func commitTo(ctx context.Context, c *kafka.Cluster, groupType, name string, offsets kafka.Commits) error {
	if groupType == TypeShare {
		return c.AlterShareGroupStarts(ctx, name, offsets)
	}
	return c.CommitGroup(ctx, name, offsets)
}

// shareSummary is a share group's topics and total lag for `groups list` (the broker's lag
// of each started partition; one it does not report adds nothing).
func shareSummary(starts kafka.ShareStarts) ([]string, int64) {
	topics := []string{}
	var lag int64
	for t, ps := range starts {
		topics = append(topics, t)
		for _, st := range ps {
			lag += max(0, st.Lag)
		}
	}
	sort.Strings(topics)
	return topics, lag
}

// readShare fills rep, a share group's report: each partition it has started or is assigned,
// its start offset, the log end and the broker's lag, and the check of its dead-letter path.
func readShare(ctx context.Context, c *kafka.Cluster, d group, rep *Report) error {
	starts, err := shareStartsOf(ctx, c, rep.Group)
	if err != nil {
		return err
	}
	holders := map[kafka.TopicPartition][]string{}
	for _, mem := range d.Members {
		for _, a := range mem.assigned {
			holders[a] = append(holders[a], mem.Name())
		}
	}
	topicSet := map[string]bool{}
	for t := range starts {
		topicSet[t] = true
	}
	for a := range holders {
		topicSet[a.Topic] = true
	}
	topics := sortedKeys(topicSet)
	ends, err := c.LogEnds(ctx, topics...)
	if err != nil {
		return err
	}
	seen := map[kafka.TopicPartition]bool{}
	var parts []SharePartition
	add := func(tp kafka.TopicPartition) {
		if seen[tp] {
			return
		}
		seen[tp] = true
		sp := SharePartition{Topic: tp.Topic, Partition: tp.Partition, StartOffset: -1, Lag: -1, LogEnd: ends[tp.Topic][tp.Partition], Members: holders[tp]}
		if st, ok := starts[tp.Topic][tp.Partition]; ok {
			sp.StartOffset, sp.Lag = st.Start, st.Lag
		}
		if sp.Members == nil {
			sp.Members = []string{}
		}
		sort.Strings(sp.Members)
		parts = append(parts, sp)
	}
	for t, ps := range starts {
		for p := range ps {
			add(kafka.TopicPartition{Topic: t, Partition: p})
		}
	}
	for tp := range holders {
		add(tp)
	}
	sort.Slice(parts, func(i, j int) bool {
		return kafka.TopicPartition{Topic: parts[i].Topic, Partition: parts[i].Partition}.Less(kafka.TopicPartition{Topic: parts[j].Topic, Partition: parts[j].Partition})
	})
	rep.Share = &ShareReport{Partitions: append([]SharePartition{}, parts...), NotReported: ShareNotReported}
	for _, sp := range parts {
		rep.TotalLag += max(0, sp.Lag)
	}
	rep.Share.DeadLetters, err = CheckDeadLetterPath(ctx, c, rep.Group, topics)
	return err
}

// undoShare moves share group name's start offsets back: back are the old offsets, drop the
// partitions the reset started where the group had none. The API deletes a share group's
// offsets of whole topics only, so a topic with a partition to drop is deleted whole and its
// other partitions are set again, to their offsets now (now) or the old ones (back).
func undoShare(ctx context.Context, c *kafka.Cluster, name string, now kafka.Commits, back kafka.Commits, drop map[string][]int32) error {
	set := kafka.Commits{}
	for t, ps := range back {
		set[t] = maps.Clone(ps)
	}
	var topics []string
	for t, ps := range drop {
		topics = append(topics, t)
		for p, at := range now[t] {
			if slices.Contains(ps, p) {
				continue
			}
			if set[t] == nil {
				set[t] = map[int32]int64{}
			}
			if _, ok := set[t][p]; !ok {
				set[t][p] = at
			}
		}
	}
	sort.Strings(topics)
	if len(topics) > 0 {
		if err := c.DeleteShareGroupStarts(ctx, name, topics...); err != nil {
			return fmt.Errorf("nothing was moved: %w", err)
		}
	}
	if len(set) == 0 {
		return nil
	}
	if err := c.AlterShareGroupStarts(ctx, name, set); err != nil {
		if len(topics) > 0 {
			return fmt.Errorf("the start offsets of share group %s on %s were deleted, but not set back (groups journal shows the old offsets): %w", name, strings.Join(topics, ", "), err)
		}
		return err
	}
	return nil
}
