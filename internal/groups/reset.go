package groups

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// The targets of a reset (ResetTarget.To), as kafka-consumer-groups --reset-offsets names
// them.
const (
	ResetEarliest = "earliest" // each partition's log start
	ResetLatest   = "latest"   // each partition's log end (high watermark)
	ResetOffset   = "offset"   // ResetTarget.Offset
	ResetDatetime = "datetime" // the first record at or after ResetTarget.Time
	ResetShift    = "shift-by" // the committed offset plus ResetTarget.Shift
)

// ResetTarget is where a reset moves the commits: To, with the value it takes (the others
// nil).
type ResetTarget struct {
	To     string     `json:"to"`
	Offset *int64     `json:"offset"`
	Time   *time.Time `json:"time"`
	Shift  *int64     `json:"shift_by"`
}

// ResetOptions select a reset: Group's commits on Topics (none: every topic it has commits
// on), on Partitions of them (none: every partition of a topic named, every committed one
// otherwise), moved to Target.
type ResetOptions struct {
	Group      string
	Topics     []string
	Partitions []int32
	Target     ResetTarget
}

// ResetPartition is one partition of a reset plan: its commit now (nil: none), where the
// reset puts it, the difference, the partition's bounds, and whether the target lay outside
// them and was clamped to the nearer one.
type ResetPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed *int64 `json:"committed_offset"`
	NewOffset int64  `json:"new_offset"`
	Delta     *int64 `json:"delta"`
	LogStart  int64  `json:"log_start_offset"`
	LogEnd    int64  `json:"high_watermark"`
	Clamped   bool   `json:"clamped"`
}

// Moves says whether the reset changes this partition's commit.
func (p ResetPartition) Moves() bool { return p.Committed == nil || *p.Committed != p.NewOffset }

// ResetPlan is what a reset would do: move Group's commit on each of Partitions to its
// NewOffset. Changes counts the partitions whose commit moves (0: the plan changes nothing),
// Clamped those whose target was outside the partition.
type ResetPlan struct {
	Group string `json:"group"`
	// Type is the group's type: a share group's reset moves its start offsets.
	Type       string           `json:"type"`
	State      string           `json:"state"`
	Target     ResetTarget      `json:"target"`
	Topics     []string         `json:"topics"`
	Partitions []ResetPartition `json:"partitions"`
	Changes    int              `json:"changes"`
	Clamped    int              `json:"clamped"`
	// Reason is the --reason the reset is asked with (nil without one).
	Reason *string `json:"reason"`
	// Members are the group's members; a reset is refused while there are any.
	Members []Member `json:"members"`
}

// Check is the one rule of a target, before anything is asked of the cluster: a known kind,
// with the value it takes, an offset not negative. A failure is a usage error naming the flag.
func (t ResetTarget) Check() error {
	switch t.To {
	case ResetEarliest, ResetLatest:
	case ResetOffset:
		if t.Offset == nil || *t.Offset < 0 {
			return fwerr.Usagef("--to-offset: offsets are not negative")
		}
	case ResetDatetime:
		if t.Time == nil || t.Time.IsZero() {
			return fwerr.Usagef("--to-datetime: a time is needed")
		}
	case ResetShift:
		if t.Shift == nil {
			return fwerr.Usagef("--shift-by: a number of offsets is needed")
		}
	default:
		return fwerr.Usagef("say where the commits go: --to-earliest, --to-latest, --to-offset N, --to-datetime T or --shift-by ±N")
	}
	return nil
}

// PlanReset reads the group, its commits and the partitions' bounds, and returns the plan.
// A group that does not exist, a topic or partition that does not exist, a group without
// commits when no topic is named, and a --shift-by of a partition without a commit are
// errors (the missing ones as every command says them); a group with members is planned and
// refused, the plan coming back with an error wrapping ErrActive that names them.
func PlanReset(ctx context.Context, c *kafka.Cluster, o ResetOptions) (*ResetPlan, error) {
	if err := o.Target.Check(); err != nil {
		return nil, err
	}
	d, commits, err := describeCommits(ctx, c, o.Group)
	if err != nil {
		return nil, err
	}
	p := &ResetPlan{Group: o.Group, Type: d.Type, State: d.State, Target: o.Target, Partitions: []ResetPartition{}, Members: []Member{}}
	p.Members = append(p.Members, d.Members...)
	named := len(o.Topics) > 0
	if named {
		for _, t := range o.Topics {
			if !slices.Contains(p.Topics, t) {
				p.Topics = append(p.Topics, t)
			}
		}
	} else {
		for t := range commits {
			p.Topics = append(p.Topics, t)
		}
		slices.Sort(p.Topics)
		if len(p.Topics) == 0 {
			return nil, fwerr.Usagef("consumer group %s has no committed offsets: name the topics to reset with --topic", o.Group)
		}
	}
	for _, topic := range p.Topics {
		parts, err := resetPartitions(ctx, c, o, topic, commits[topic], named)
		if err != nil {
			return nil, err
		}
		p.Partitions = append(p.Partitions, parts...)
	}
	for _, rp := range p.Partitions {
		if rp.Moves() {
			p.Changes++
		}
		if rp.Clamped {
			p.Clamped++
		}
	}
	return p, active(o.Group, p.Members)
}

// resetPartitions plans the reset of topic's partitions (the selected ones, every one when
// the topic was named, else those committed): each one's target, clamped to [log start, log
// end].
func resetPartitions(ctx context.Context, c *kafka.Cluster, o ResetOptions, topic string, committed map[int32]int64, named bool) ([]ResetPartition, error) {
	bounds, err := c.Bounds(ctx, topic)
	if err != nil {
		return nil, err
	}
	var sel []kafka.PartitionBounds
	switch {
	case len(o.Partitions) > 0:
		for _, n := range o.Partitions {
			b, err := kafka.PartitionOf(topic, bounds, n)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(sel, func(s kafka.PartitionBounds) bool { return s.Partition == n }) {
				sel = append(sel, b)
			}
		}
	case named:
		sel = bounds
	default:
		for _, b := range bounds {
			if _, ok := committed[b.Partition]; ok {
				sel = append(sel, b)
			}
		}
	}
	var after map[int32]int64
	if o.Target.To == ResetDatetime {
		if after, err = c.OffsetsAfter(ctx, topic, *o.Target.Time); err != nil {
			return nil, err
		}
	}
	out := make([]ResetPartition, 0, len(sel))
	for _, b := range sel {
		rp := ResetPartition{Topic: topic, Partition: b.Partition, LogStart: b.LogStart, LogEnd: b.HighWatermark}
		if at, ok := committed[b.Partition]; ok {
			rp.Committed = &at
		}
		var target int64
		switch o.Target.To {
		case ResetEarliest:
			target = b.LogStart
		case ResetLatest:
			target = b.HighWatermark
		case ResetOffset:
			target = *o.Target.Offset
		case ResetDatetime:
			at, ok := after[b.Partition]
			if !ok {
				at = b.HighWatermark
			}
			target = at
		case ResetShift:
			if rp.Committed == nil {
				return nil, fwerr.Usagef("consumer group %s has no committed offset on %s/%d: --shift-by moves a commit; --to-earliest, --to-offset or --to-datetime set one", o.Group, topic, b.Partition)
			}
			target = *rp.Committed + *o.Target.Shift
		}
		rp.NewOffset = min(max(target, b.LogStart), b.HighWatermark)
		rp.Clamped = rp.NewOffset != target
		if rp.Committed != nil {
			delta := rp.NewOffset - *rp.Committed
			rp.Delta = &delta
		}
		out = append(out, rp)
	}
	return out, nil
}

// ResetResult is what a reset did.
type ResetResult struct {
	ID       string     `json:"run_id"`
	Plan     *ResetPlan `json:"plan"`
	Operator string     `json:"operator"`
	Reason   string     `json:"reason"`
}

// Reset is the reset o selects as an action (action.Run): its plan is PlanReset's (a group
// with members is planned and refused; the plan carries the action's reason), a plan that
// changes no commit is nothing to do (nothing asked, committed or journaled), its execute
// reset's, journaled under the action's Record (its id is the reset's).
func Reset(c *kafka.Cluster, st *dedup.Store, o ResetOptions) action.Steps[*ResetPlan, *ResetResult] {
	return action.Steps[*ResetPlan, *ResetResult]{
		Plan: func(ctx context.Context, e *action.Env) (*ResetPlan, error) {
			p, err := PlanReset(ctx, c, o)
			if p != nil {
				p.Reason = e.Reason()
			}
			return p, err
		},
		Check: func(_ context.Context, _ *action.Env, plan *ResetPlan) error {
			if plan.Changes == 0 {
				return action.ErrNothingToDo
			}
			return nil
		},
		Execute: func(ctx context.Context, e *action.Env, plan *ResetPlan) (*ResetResult, error) {
			return reset(ctx, c, st, plan, e.Record)
		},
	}
}

// reset executes plan: it checks again that the group has no members and that its commits are
// still the plan's, commits every new offset that differs in one request, and journals the
// reset with each partition's old and new offset (so that Undo can restore the old ones).
func reset(ctx context.Context, c *kafka.Cluster, st *dedup.Store, plan *ResetPlan, rec action.Record) (*ResetResult, error) {
	want, commits := map[kafka.TopicPartition]*int64{}, kafka.Commits{}
	var moves []PartitionMove
	for _, rp := range plan.Partitions {
		if !rp.Moves() {
			continue
		}
		want[kafka.TopicPartition{Topic: rp.Topic, Partition: rp.Partition}] = rp.Committed
		if commits[rp.Topic] == nil {
			commits[rp.Topic] = map[int32]int64{}
		}
		commits[rp.Topic][rp.Partition] = rp.NewOffset
		moves = append(moves, PartitionMove{Topic: rp.Topic, Partition: rp.Partition, OldOffset: rp.Committed, NewOffset: &rp.NewOffset})
	}
	if _, _, err := recheck(ctx, c, plan.Group, want); err != nil {
		return nil, err
	}
	if err := commitTo(ctx, c, plan.Type, plan.Group, commits); err != nil {
		return nil, err
	}
	res := &ResetResult{ID: rec.ID, Plan: plan, Operator: rec.Operator, Reason: rec.Reason}
	if err := record(ctx, st, dedup.GroupAction{ID: res.ID, Action: dedup.ActionReset, Group: plan.Group, Topic: strings.Join(plan.Topics, ","),
		Operator: rec.Operator, Reason: rec.Reason}, moves); err != nil {
		return res, err
	}
	return res, nil
}
