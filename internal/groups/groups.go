// Package groups is what fieldwork knows about consumer groups (docs/design.md §3.6): the
// groups of a cluster with their state and lag (List), one group's members, assignments,
// committed offsets, lag and whether its commits move (Describe, Watcher), and the one
// action that moves a group's offsets, parking the records it steps over in a dead-letter
// topic first (PlanSkip, Skip, PlanUndo, Undo). Lag is kafka.Lag, the rule `inspect topic`
// uses too.
package groups

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// commits could not be read (Error says why).
	TotalLag int64  `json:"total_lag"`
	LagKnown bool   `json:"lag_known"`
	Error    string `json:"error,omitempty"`
}

// List lists every consumer group of the cluster, by name: its state, type, member count,
// the topics it has commits on and its total lag. A group that cannot be described or whose
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
	described, _ := c.Admin.DescribeGroups(ctx, names...)
	commits, failed := c.GroupCommits(ctx, names...)
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
		if d, ok := described[name]; ok && d.Err == nil {
			s.Members = len(d.Members)
			if s.State == "" {
				s.State = d.State
			}
		}
		if ferr := failed[name]; ferr != nil {
			s.Error = ferr.Error()
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
	LogEnd    int64 `json:"log_end_offset"`
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
	Group        string      `json:"group"`
	State        string      `json:"state"`
	ProtocolType string      `json:"protocol_type"`
	Protocol     string      `json:"protocol"`
	Coordinator  int32       `json:"coordinator"`
	Members      []Member    `json:"members"`
	Partitions   []Partition `json:"partitions"`
	TotalLag     int64       `json:"total_lag"`
	// ReadAt is when the offsets were read; WatchedMS is how long the commits have been
	// watched by then, in milliseconds (0 after a single read).
	ReadAt    time.Time `json:"read_at"`
	WatchedMS int64     `json:"watched_ms"`
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
	seen  map[string]commitSeen
}

type commitSeen struct {
	at    int64
	since time.Time
	moved bool
}

// NewWatcher watches group.
func NewWatcher(c *kafka.Cluster, group string) *Watcher {
	return &Watcher{c: c, group: group, seen: map[string]commitSeen{}}
}

// Read describes the group now: its state and members, each assigned or committed
// partition's commit, log end and lag, and for each commit whether it moved since the
// previous reads. A group the cluster does not know is an error that says so.
func (w *Watcher) Read(ctx context.Context, now time.Time) (*Report, error) {
	d, err := describe(ctx, w.c, w.group)
	if err != nil {
		return nil, err
	}
	commits, failed := w.c.GroupCommits(ctx, w.group)
	if ferr := failed[w.group]; ferr != nil {
		return nil, ferr
	}
	cm := commits[w.group]
	if cm == nil {
		cm = kafka.Commits{}
	}
	if d.State == "Dead" && len(cm) == 0 {
		return nil, fwerr.Usagef("consumer group %q does not exist (groups list shows the groups)", w.group)
	}
	if w.first.IsZero() {
		w.first = now
	}
	rep := &Report{Group: w.group, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol,
		Coordinator: d.Coordinator.NodeID, Members: []Member{}, Partitions: []Partition{}, ReadAt: now, WatchedMS: now.Sub(w.first).Milliseconds()}
	owner := map[string]string{}
	for _, mem := range membersOf(d) {
		for _, addr := range mem.Assigned {
			owner[addr] = mem.Name()
		}
		rep.Members = append(rep.Members, mem)
	}
	// An assigned partition without a commit is shown too, at -1.
	for _, m := range d.Members {
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					if cm[t.Topic] == nil {
						cm[t.Topic] = map[int32]int64{}
					}
					if _, ok := cm[t.Topic][p]; !ok {
						cm[t.Topic][p] = -1
					}
				}
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
			addr := fmt.Sprintf("%s/%d", t, p)
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
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return rep, nil
}

// Describe reads group twice, interval apart (once when interval is 0), so that the report
// says which commits moved in between: a group whose lag grows while its commits stand still
// is stuck. An interruption while it waits is an interruption error.
func Describe(ctx context.Context, c *kafka.Cluster, group string, interval time.Duration, now func() time.Time) (*Report, error) {
	w := NewWatcher(c, group)
	rep, err := w.Read(ctx, now())
	if err != nil || interval <= 0 {
		return rep, err
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
	case <-t.C:
	}
	return w.Read(ctx, now())
}

// describe is the one DescribeGroups call of the package, its denial classified.
func describe(ctx context.Context, c *kafka.Cluster, group string) (kadm.DescribedGroup, error) {
	ds, err := c.Admin.DescribeGroups(ctx, group)
	if err != nil && len(ds) == 0 {
		return kadm.DescribedGroup{}, kafka.Denied(fmt.Errorf("describe consumer group %s: %w", group, err), kafka.OpDescribe, kafka.ResourceGroup, group)
	}
	d, ok := ds[group]
	if !ok {
		return kadm.DescribedGroup{}, fmt.Errorf("describe consumer group %s: no answer", group)
	}
	if d.Err != nil {
		if errors.Is(d.Err, kerr.GroupIDNotFound) {
			return kadm.DescribedGroup{}, fwerr.Usagef("consumer group %q does not exist (groups list shows the groups)", group)
		}
		return kadm.DescribedGroup{}, kafka.Denied(fmt.Errorf("describe consumer group %s: %w", group, d.Err), kafka.OpDescribe, kafka.ResourceGroup, group)
	}
	return d, nil
}

// membersOf are d's members with their assignments.
func membersOf(d kadm.DescribedGroup) []Member {
	out := []Member{}
	for _, m := range d.Members {
		mem := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []string{}}
		if m.InstanceID != nil {
			mem.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					mem.Assigned = append(mem.Assigned, fmt.Sprintf("%s/%d", t.Topic, p))
				}
			}
		}
		slices.Sort(mem.Assigned)
		out = append(out, mem)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
