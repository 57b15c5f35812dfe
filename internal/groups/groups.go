// Package groups is what fieldwork knows about consumer groups and share groups
// (docs/design.md §3.7): the groups of a cluster with their state and lag (List), one group's members, assignments,
// committed offsets, lag and whether its commits move (Describe, Watcher), and the actions
// that move a group's offsets: the skip, parking the records it steps over in a dead-letter
// topic first (PlanSkip, Skip), the reset to a target, as kafka-consumer-groups
// --reset-offsets does (PlanReset, Reset), and the undo of either (PlanUndo, Undo). Lag is
// kafka.Lag, the rule `inspect topic` uses too. A share group has start offsets instead of
// commits (share.go): a reset moves them, and its dead-letter path is checked rule by rule
// (CheckDeadLetterPath, CheckShareGroups).
package groups

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Summary is one group as `groups list` shows it.
type Summary struct {
	Group        string   `json:"group"`
	State        string   `json:"state"`
	Type         string   `json:"type"`
	ProtocolType string   `json:"protocol_type"`
	Members      int      `json:"members"`
	Topics       []string `json:"topics"`
	// TotalLag sums the lag of every committed partition; LagKnown is false when the
	// commits could not be read. Error says why the commits could not be read or, when they
	// could, why the group could not be described (Members is then 0, not known).
	TotalLag int64  `json:"total_lag"`
	LagKnown bool   `json:"lag_known"`
	Error    string `json:"error,omitempty"`
}

// List lists every group of the cluster, by name: its state, type (classic, consumer or
// share), member count, the topics it has commits on (a share group: start offsets) and its
// total lag (a share group's is the broker's: ShareLag). A group that cannot be described or whose
// commits cannot be fetched is listed with its error; listing the groups at all being
// denied is an error.
func List(ctx context.Context, c *kafka.Cluster) ([]Summary, error) {
	listed, err := c.Admin.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return nil, kafka.Denied(fmt.Errorf("list consumer groups: %w", err), kafka.OpDescribe, kafka.ResourceCluster, "")
	}
	names := listed.Groups()
	sort.Strings(names)
	out := make([]Summary, 0, len(names))
	if len(names) == 0 {
		return out, nil
	}
	described, undescribed := describeMany(ctx, c, names, listed)
	var offsetNames, shareNames []string
	for _, n := range names {
		if listed[n].GroupType == TypeShare {
			shareNames = append(shareNames, n)
		} else {
			offsetNames = append(offsetNames, n)
		}
	}
	commits, failed := c.GroupCommits(ctx, offsetNames...)
	starts, shareFailed := c.ShareGroupStarts(ctx, shareNames...)
	maps.Copy(failed, shareFailed)
	topics := map[string]bool{}
	for _, cm := range commits {
		for t := range cm {
			topics[t] = true
		}
	}
	ends, err := c.LogEnds(ctx, sortedKeys(topics)...)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		l := listed[name]
		s := Summary{Group: name, State: l.State, Type: l.GroupType, ProtocolType: l.ProtocolType, Topics: []string{}}
		if d, ok := described[name]; ok {
			s.Members = len(d.Members)
			if s.State == "" {
				s.State = d.State
			}
		}
		if derr := undescribed[name]; derr != nil {
			s.Error = derr.Error() // its members are unknown; its commits may still be read
		}
		if ferr := failed[name]; ferr != nil {
			s.Error = ferr.Error()
		} else if l.GroupType == TypeShare {
			s.LagKnown = true
			s.Topics, s.TotalLag = shareSummary(starts[name])
		} else {
			s.LagKnown = true
			for t, ps := range commits[name] {
				s.Topics = append(s.Topics, t)
				for p, at := range ps {
					if end, ok := ends[t][p]; ok {
						s.TotalLag += kafka.Lag(at, end)
					}
				}
			}
			sort.Strings(s.Topics)
		}
		out = append(out, s)
	}
	return out, nil
}

// Member is one member of a group: who it is and what it was assigned.
type Member struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	// Assigned are its partitions, "topic/partition" sorted.
	Assigned []string `json:"assigned"`

	assigned []kafka.TopicPartition
}

// sorted is m with its partitions in order, Assigned written from them.
func (m Member) sorted() Member {
	sort.Slice(m.assigned, func(i, j int) bool { return m.assigned[i].Less(m.assigned[j]) })
	m.Assigned = make([]string, len(m.assigned))
	for i, a := range m.assigned {
		m.Assigned[i] = a.String()
	}
	return m
}

// Name is how a member is named to an operator: its client id and host, and its instance id
// when it has a static one.
func (m Member) Name() string {
	s := m.ClientID + "@" + strings.TrimPrefix(m.Host, "/")
	if m.InstanceID != "" {
		s += " (instance " + m.InstanceID + ")"
	}
	return s
}

// Partition is a group's position on one partition.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the committed offset, -1 when the group has none here (only assigned:
	// where it starts then is the consumer's reset policy, so Lag is 0, not known).
	Committed int64 `json:"committed_offset"`
	LogEnd    int64 `json:"high_watermark"`
	Lag       int64 `json:"lag"`
	// Member is the member assigned the partition ("" when none is).
	Member string `json:"member"`
	// CommitMoved says the commit was seen moving while the group was watched; then
	// UnchangedForMS is how long ago (in milliseconds), else it is how long it was watched
	// without moving (at least that long, then).
	CommitMoved    bool  `json:"commit_moved"`
	UnchangedForMS int64 `json:"commit_unchanged_for_ms"`
}

// Report is one group as `groups describe` shows it.
type Report struct {
	Group string `json:"group"`
	// Type is classic, consumer or share (TypeClassic, TypeConsumer, TypeShare), as groups
	// list says it. ProtocolType is what a classic group's members speak (consumer, connect);
	// Protocol is the assignor that shares the partitions out (range, uniform, …).
	Type         string      `json:"type"`
	State        string      `json:"state"`
	ProtocolType string      `json:"protocol_type"`
	Protocol     string      `json:"assignor"`
	Coordinator  int32       `json:"coordinator"`
	Members      []Member    `json:"members"`
	Partitions   []Partition `json:"partitions"`
	TotalLag     int64       `json:"total_lag"`
	// ReadAt is when the offsets were read; WatchedMS is how long the commits have been
	// watched by then, in milliseconds (0 after a single read).
	ReadAt    time.Time `json:"read_at"`
	WatchedMS int64     `json:"watched_ms"`
	// Share is a share group's start offsets, broker lag and dead-letter path (nil for the
	// other types; Partitions is empty then, a share group having no commits).
	Share *ShareReport `json:"share,omitempty"`
}

// Stuck are the partitions with lag whose commit did not move while watched: the group is
// behind and not progressing there.
func (r *Report) Stuck() []Partition {
	var out []Partition
	if r.WatchedMS <= 0 {
		return nil
	}
	for _, p := range r.Partitions {
		if p.Lag > 0 && !p.CommitMoved && p.Committed >= 0 {
			out = append(out, p)
		}
	}
	return out
}

// Watcher reads one group again and again and remembers when each commit last moved.
type Watcher struct {
	c     *kafka.Cluster
	group string
	first time.Time
	seen  map[kafka.TopicPartition]commitSeen
}

type commitSeen struct {
	at    int64
	since time.Time
	moved bool
}

// NewWatcher watches group.
func NewWatcher(c *kafka.Cluster, group string) *Watcher {
	return &Watcher{c: c, group: group, seen: map[kafka.TopicPartition]commitSeen{}}
}

// Read describes the group now: its state and members, each assigned or committed
// partition's commit, log end and lag, and for each commit whether it moved since the
// previous reads. A group the cluster does not know is an error that says so.
func (w *Watcher) Read(ctx context.Context, now time.Time) (*Report, error) {
	d, cm, err := describeCommits(ctx, w.c, w.group)
	if err != nil {
		return nil, err
	}
	if w.first.IsZero() {
		w.first = now
	}
	rep := &Report{Group: w.group, Type: d.Type, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Coordinator: d.Coordinator, Members: d.Members, Partitions: []Partition{}, ReadAt: now, WatchedMS: now.Sub(w.first).Milliseconds()}
	if d.Type == TypeShare {
		return rep, readShare(ctx, w.c, d, rep)
	}
	owner := map[kafka.TopicPartition]string{}
	for _, mem := range d.Members {
		for _, a := range mem.assigned {
			owner[a] = mem.Name()
			// An assigned partition without a commit is shown too, at -1.
			if cm[a.Topic] == nil {
				cm[a.Topic] = map[int32]int64{}
			}
			if _, ok := cm[a.Topic][a.Partition]; !ok {
				cm[a.Topic][a.Partition] = -1
			}
		}
	}
	topics := make([]string, 0, len(cm))
	for t := range cm {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	ends, err := w.c.LogEnds(ctx, topics...)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		for p, at := range cm[t] {
			addr := kafka.TopicPartition{Topic: t, Partition: p}
			end := ends[t][p]
			part := Partition{Topic: t, Partition: p, Committed: at, LogEnd: end, Member: owner[addr]}
			if at >= 0 {
				part.Lag = kafka.Lag(at, end)
			}
			prev, ok := w.seen[addr]
			switch {
			case !ok:
				prev = commitSeen{at: at, since: now}
			case prev.at != at:
				prev = commitSeen{at: at, since: now, moved: true}
			}
			w.seen[addr] = prev
			part.CommitMoved, part.UnchangedForMS = prev.moved, now.Sub(prev.since).Milliseconds()
			rep.Partitions = append(rep.Partitions, part)
			rep.TotalLag += part.Lag
		}
	}
	sort.Slice(rep.Partitions, func(i, j int) bool {
		a, b := rep.Partitions[i], rep.Partitions[j]
		return kafka.TopicPartition{Topic: a.Topic, Partition: a.Partition}.Less(kafka.TopicPartition{Topic: b.Topic, Partition: b.Partition})
	})
	return rep, nil
}

// describePoll is how often Describe reads again the commits that have lag, within its
// interval: a few reads a second answer as soon as each of them has moved.
const describePoll = 250 * time.Millisecond

// Describe reads group and answers as soon as the reads tell which commits move: a group
// whose lag stays while its commits stand still is stuck. The first read answers when there
// is nothing to tell (interval 0, a share group, no partition with lag behind a commit: none
// can be stuck); otherwise the group is read again every describePoll until every commit
// with lag has moved (none is stuck) or interval has passed (those that did not are).
// waiting, when set, is called once before the second read. An interruption while it waits
// is an interruption error.
func Describe(ctx context.Context, c *kafka.Cluster, group string, interval time.Duration, now func() time.Time, waiting func()) (*Report, error) {
	w := NewWatcher(c, group)
	rep, err := w.Read(ctx, now())
	if err != nil || interval <= 0 || rep.Share != nil || !rep.lagging() {
		return rep, err
	}
	if waiting != nil {
		waiting()
	}
	t := time.NewTicker(min(describePoll, interval))
	defer t.Stop()
	end := time.NewTimer(interval)
	defer end.Stop()
	for last := false; !last; {
		select {
		case <-ctx.Done():
			return nil, fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		case <-end.C:
			last = true
		case <-t.C:
		}
		if rep, err = w.Read(ctx, now()); err != nil || !rep.lagging() {
			return rep, err
		}
	}
	return rep, nil
}

// lagging says whether a partition has lag behind a commit that has not moved yet: what
// only a later read can tell stuck or not.
func (r *Report) lagging() bool {
	for _, p := range r.Partitions {
		if p.Lag > 0 && p.Committed >= 0 && !p.CommitMoved {
			return true
		}
	}
	return false
}

// group is a described group, from whichever API describes it: DescribeGroups for a classic
// group (a consumer of the classic protocol, Kafka Connect), ConsumerGroupDescribe for a
// group of the consumer protocol (KIP-848), which DescribeGroups does not know.
type group struct {
	// Type is the group's type as ListGroups names it: classic, consumer or share.
	Type                          string
	State, ProtocolType, Protocol string
	Coordinator                   int32
	Members                       []Member
}

// describe describes group. A group the cluster does not know is a usage error; a denial
// is classified.
func describe(ctx context.Context, c *kafka.Cluster, name string) (group, error) {
	c.AwaitGroupCoordinators(ctx, name)
	ds, err := c.Admin.DescribeGroups(ctx, name)
	if err != nil && len(ds) == 0 {
		return group{}, kafka.Denied(fmt.Errorf("describe consumer group %s: %w", name, err), kafka.OpDescribe, kafka.ResourceGroup, name)
	}
	d, ok := ds[name]
	if !ok {
		return group{}, fmt.Errorf("describe consumer group %s: no answer", name)
	}
	if d.Err == nil && d.State != "Dead" {
		return classic(d), nil
	}
	if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return group{}, kafka.Denied(fmt.Errorf("describe consumer group %s: %w", name, d.Err), kafka.OpDescribe, kafka.ResourceGroup, name)
	}
	// Not a classic group: a group of the consumer protocol, a share group, or none.
	cs, err := c.Admin.DescribeConsumerGroups(ctx, name)
	if cd, ok := cs[name]; ok && cd.Err == nil && cd.State != "Dead" {
		return consumer(cd), nil
	}
	if sg, ok, serr := describeShare(ctx, c, name); ok || serr != nil {
		return sg, serr
	}
	if cd, ok := cs[name]; ok && cd.Err != nil && !errors.Is(cd.Err, kerr.GroupIDNotFound) && !errors.Is(cd.Err, kerr.UnsupportedVersion) {
		return group{}, kafka.Denied(fmt.Errorf("describe consumer group %s: %w", name, cd.Err), kafka.OpDescribe, kafka.ResourceGroup, name)
	} else if !ok && err != nil && kafka.IsAuthorization(kafka.Denied(err, kafka.OpDescribe, kafka.ResourceGroup, name)) {
		return group{}, kafka.Denied(fmt.Errorf("describe consumer group %s: %w", name, err), kafka.OpDescribe, kafka.ResourceGroup, name)
	}
	if d.Err == nil {
		return classic(d), nil // Dead: known to have no members; its commits say whether it exists
	}
	return group{}, errNoGroup(name)
}

// describeCommits describes group and fetches its commits. A group the cluster does not know
// is a usage error, as describe says it.
func describeCommits(ctx context.Context, c *kafka.Cluster, name string) (group, kafka.Commits, error) {
	d, err := describe(ctx, c, name)
	if err != nil {
		return group{}, nil, err
	}
	cm, err := commitsOf(ctx, c, d, name)
	if err != nil {
		return group{}, nil, err
	}
	if d.State == "Dead" && len(cm) == 0 {
		// DescribeGroups answers Dead, without an error, for a group it does not know.
		return group{}, nil, errNoGroup(name)
	}
	return d, cm, nil
}

// describeMany describes the listed groups, each with the API of its type (listed by
// ListGroups; a type other than these, say streams, with the classic API). A group of a
// known type that cannot be described is in the second map with its error, classified by
// Denied.
func describeMany(ctx context.Context, c *kafka.Cluster, names []string, listed kadm.ListedGroups) (map[string]group, map[string]error) {
	out, failed := map[string]group{}, map[string]error{}
	c.AwaitGroupCoordinators(ctx, names...)
	byType := map[string][]string{}
	for _, n := range names {
		typ := listed[n].GroupType
		if typ != TypeConsumer && typ != TypeShare {
			typ = TypeClassic
		}
		byType[typ] = append(byType[typ], n)
	}
	note := func(typ, n string, err error) {
		failed[n] = kafka.Denied(fmt.Errorf("describe %s group %s: %w", typ, n, err), kafka.OpDescribe, kafka.ResourceGroup, n)
	}
	if ns := byType[TypeShare]; len(ns) > 0 {
		ss, err := c.Admin.DescribeShareGroups(ctx, ns...)
		for _, n := range ns {
			if d, ok := ss[n]; ok && d.Err == nil {
				out[n] = share(d)
			} else {
				note(TypeShare, n, cmp.Or(d.Err, err, errNoAnswer))
			}
		}
	}
	if ns := byType[TypeClassic]; len(ns) > 0 {
		ds, err := c.Admin.DescribeGroups(ctx, ns...)
		for _, n := range ns {
			switch d, ok := ds[n]; {
			case ok && d.Err == nil:
				out[n] = classic(d)
			case listed[n].GroupType == "" || listed[n].GroupType == TypeClassic:
				note(TypeClassic, n, cmp.Or(d.Err, err, errNoAnswer))
			} // a group of a type fieldwork does not describe (streams) is left undescribed
		}
	}
	if ns := byType[TypeConsumer]; len(ns) > 0 {
		cs, err := c.Admin.DescribeConsumerGroups(ctx, ns...)
		for _, n := range ns {
			if d, ok := cs[n]; ok && d.Err == nil {
				out[n] = consumer(d)
			} else {
				note(TypeConsumer, n, cmp.Or(d.Err, err, errNoAnswer))
			}
		}
	}
	return out, failed
}

// errNoAnswer is the error of a group the brokers' answer left out.
var errNoAnswer = errors.New("no answer for it")

func classic(d kadm.DescribedGroup) group {
	g := group{Type: TypeClassic, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol, Coordinator: d.Coordinator.NodeID, Members: []Member{}}
	for _, m := range d.Members {
		mem := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []string{}}
		if m.InstanceID != nil {
			mem.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					mem.assigned = append(mem.assigned, kafka.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
		}
		g.Members = append(g.Members, mem.sorted())
	}
	return g
}

func consumer(d kadm.DescribedConsumerGroup) group {
	g := group{Type: TypeConsumer, State: d.State, ProtocolType: "consumer", Protocol: d.AssignorName, Coordinator: d.Coordinator.NodeID, Members: []Member{}}
	for _, m := range d.Members {
		mem := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []string{}}
		if m.InstanceID != nil {
			mem.InstanceID = *m.InstanceID
		}
		for t, ps := range m.Assignment {
			for p := range ps {
				mem.assigned = append(mem.assigned, kafka.TopicPartition{Topic: t, Partition: p})
			}
		}
		g.Members = append(g.Members, mem.sorted())
	}
	return g
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// errNoGroup is the not-found error of a consumer group the cluster does not know.
func errNoGroup(name string) error {
	return fwerr.NotFoundf("consumer group %q does not exist (groups list shows the groups)", name)
}
