package groups

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// ErrActive is returned (wrapped, naming the members) when a skip, a reset or an undo finds
// the group with members: the broker refuses an operator's commit for a group with members, and
// a live member would commit over it anyway.
var ErrActive = errors.New("the consumer group has active members")

// SkipOptions select what a skip steps over: from the group's committed offset on
// Topic/Partition, Count records (1 when none of the three is given), or up to ToOffset, or
// up to the first record at or after ToTime.
type SkipOptions struct {
	Group     string
	Topic     string
	Partition int32
	Count     int64
	ToOffset  *int64
	ToTime    time.Time
	// DeadLetterTopic receives the parked records; "" is Topic + dlq.DefaultTopicSuffix.
	DeadLetterTopic string
	// Schemas decodes a registry-framed record for the plan, as inspect record does.
	Schemas *schema.Decoder
}

// SkipPlan is what a skip would do: move Group's commit on Topic/Partition from Committed to
// NewOffset, parking the records in between in DeadLetterTopic first.
type SkipPlan struct {
	Group           string `json:"group"`
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	State           string `json:"state"`
	Committed       int64  `json:"committed_offset"`
	NewOffset       int64  `json:"new_offset"`
	LogEnd          int64  `json:"high_watermark"`
	Offsets         int64  `json:"offsets"`
	DeadLetterTopic string `json:"dead_letter_topic"`
	// Record is the record at the committed offset, the one the group is stuck on, decoded as
	// `inspect record` shows it; nil when that offset holds no readable record.
	Record *inspect.RecordReport `json:"record"`
	// Reason is the --reason the skip is asked with (nil without one).
	Reason *string `json:"reason"`
	// Members are the group's members; a skip is refused while there are any.
	Members []Member `json:"members"`
}

// Address is the record the group is stuck on.
func (p *SkipPlan) Address() kafka.RecordAddress {
	return kafka.RecordAddress{Topic: p.Topic, Partition: p.Partition, Offset: p.Committed}
}

// active is ErrActive naming the members, or nil.
func active(group string, ms []Member) error {
	if len(ms) == 0 {
		return nil
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name()
	}
	return fmt.Errorf("refusing to move the offsets of consumer group %s: %w (%d: %s); stop them first (the broker refuses an operator's commit while the group has members, and a member would commit over it)",
		group, ErrActive, len(ms), strings.Join(names, ", "))
}

// PlanSkip reads the group and the partition and returns the plan. A group with members is
// planned and refused: the plan comes back with an error wrapping ErrActive that names them.
// A group without a commit on the partition, or a target offset that is not past the commit
// and within the partition, is a usage error.
func PlanSkip(ctx context.Context, c *kafka.Cluster, o SkipOptions) (*SkipPlan, error) {
	bounds, err := c.Bounds(ctx, o.Topic)
	if err != nil {
		return nil, err
	}
	b, err := kafka.PartitionOf(o.Topic, bounds, o.Partition)
	if err != nil {
		return nil, err
	}
	d, commits, err := describeCommits(ctx, c, o.Group)
	if err != nil {
		return nil, err
	}
	if d.Type == TypeShare {
		return nil, fwerr.Usagef("%s is a share group: it has no commit to step past; a member rejects the poison record (the broker dead-letters it, groups check says whether it can), and groups reset moves its start offsets", o.Group)
	}
	committed, ok := commits[o.Topic][o.Partition]
	if !ok {
		return nil, fwerr.Usagef("consumer group %s has no committed offset on %s/%d: nothing to skip from (groups describe %s shows its offsets)", o.Group, o.Topic, o.Partition, o.Group)
	}
	dlqTopic := o.DeadLetterTopic
	if dlqTopic == "" {
		dlqTopic = o.Topic + dlq.DefaultTopicSuffix
	}
	p := &SkipPlan{Group: o.Group, Topic: o.Topic, Partition: o.Partition, State: d.State, Committed: committed,
		LogEnd: b.HighWatermark, DeadLetterTopic: dlqTopic, Members: []Member{}}
	p.Members = append(p.Members, d.Members...)
	switch {
	case o.ToOffset != nil:
		p.NewOffset = *o.ToOffset
	case !o.ToTime.IsZero():
		after, err := c.OffsetsAfter(ctx, o.Topic, o.ToTime)
		if err != nil {
			return nil, err
		}
		p.NewOffset = after[o.Partition]
	default:
		p.NewOffset = committed + max(o.Count, 1)
	}
	if p.NewOffset == committed && (o.ToOffset != nil || !o.ToTime.IsZero()) {
		// The commit is at the target already (the same skip run again): nothing to park or
		// move, whoever the group's members are (Skip's check ends it there).
		return p, nil
	}
	switch {
	case committed >= b.LastStable:
		return nil, fwerr.Usagef("consumer group %s is at the end of %s/%d (offset %d): it is not stuck on a record there", o.Group, o.Topic, o.Partition, committed)
	case p.NewOffset <= committed:
		return nil, fwerr.Usagef("the new offset %d is not past the group's committed offset %d on %s/%d: a skip only moves forward (--undo restores a skip)", p.NewOffset, committed, o.Topic, o.Partition)
	case p.NewOffset > b.LastStable:
		return nil, fwerr.Usagef("the new offset %d is past the end of %s/%d (%d): --count, --to-offset and --to-datetime stay within the partition", p.NewOffset, o.Topic, o.Partition, b.LastStable)
	}
	p.Offsets = p.NewOffset - committed
	if committed >= b.LogStart {
		rec, err := c.Fetch(ctx, o.Topic, o.Partition, committed)
		switch {
		case err == nil:
			p.Record = inspect.RecordOf(ctx, o.Schemas, rec)
		case !errors.Is(err, kafka.ErrNoRecord):
			return nil, err
		}
	}
	return p, active(o.Group, p.Members)
}

// PartitionMove is one partition's move in the journal: from OldOffset (the commit it found:
// committed_offset, as a plan names it) to NewOffset, and how many records were parked on the
// way (a skip's; a reset parks none).
type PartitionMove struct {
	// Topic is the partition's topic; "" in a skip's journal, whose action names its one topic.
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	// OldOffset and NewOffset are nil for no commit: a reset of a partition the group had not
	// committed on moves from none, and its undo back to none.
	OldOffset *int64 `json:"committed_offset"`
	NewOffset *int64 `json:"new_offset"`
	Parked    int64  `json:"parked"`
}

// UnmarshalJSON reads a journaled move, also one journaled before the offset it moved from
// was named committed_offset (old_offset then).
func (m *PartitionMove) UnmarshalJSON(b []byte) error {
	type plain PartitionMove
	var j struct {
		plain
		LegacyOld *int64 `json:"old_offset"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = PartitionMove(j.plain)
	if m.OldOffset == nil {
		m.OldOffset = j.LegacyOld
	}
	return nil
}

// JournalOffsets is a journaled action's offsets as groups journal prints them: its moves
// in today's names (committed_offset), whichever version journaled them; text that is not a
// list of moves (a row written by hand) as it is.
func JournalOffsets(t dedup.JSONText) dedup.JSONText {
	var moves []PartitionMove
	if err := json.Unmarshal([]byte(t), &moves); err != nil {
		return t
	}
	b, err := json.Marshal(moves)
	if err != nil {
		return t
	}
	return dedup.JSONText(b)
}

// topicOf is m's topic, the journaled action's (topic) when m names none (a skip's).
func (m PartitionMove) topicOf(topic string) string { return cmp.Or(m.Topic, topic) }

// SkipResult is what a skip did.
type SkipResult struct {
	ID   string    `json:"run_id"`
	Plan *SkipPlan `json:"plan"`
	// Parked is how many records were copied to the dead-letter topic (fewer than the plan's
	// offsets when some hold no record: compacted, aborted, transaction markers).
	Parked int64 `json:"parked"`
	// DeadLetters are the addresses of the first parked copies.
	DeadLetters []kafka.RecordAddress `json:"dead_letters"`
	Operator    string                `json:"operator"`
	Reason      string                `json:"reason"`
}

// maxListedDeadLetters bounds SkipResult.DeadLetters.
const maxListedDeadLetters = 20

// parkBatch is how many parked copies are produced and acknowledged together.
const parkBatch = 500

// Skip is the skip of what o selects as an action (action.Run): its plan is PlanSkip's (a
// group with members is planned and refused), its execute skip's, journaled under the
// action's Record (its id is the skip's).
func Skip(c *kafka.Cluster, st *dedup.Store, o SkipOptions) action.Steps[*SkipPlan, *SkipResult] {
	return action.Steps[*SkipPlan, *SkipResult]{
		Plan: func(ctx context.Context, e *action.Env) (*SkipPlan, error) {
			p, err := PlanSkip(ctx, c, o)
			if p != nil {
				p.Reason = e.Reason()
			}
			return p, err
		},
		Check: func(_ context.Context, _ *action.Env, plan *SkipPlan) error {
			if plan.Offsets == 0 {
				return action.ErrNothingToDo
			}
			return nil
		},
		Execute: func(ctx context.Context, e *action.Env, plan *SkipPlan) (*SkipResult, error) {
			res, err := skip(ctx, c, st, plan, e.Record)
			if err != nil && res != nil && res.Parked > 0 {
				e.Warn(fmt.Sprintf("%s parked in %s before %s", wording.Plural(res.Parked, "record"), plan.DeadLetterTopic, fwerr.Stopped(err)))
			}
			return res, err
		},
	}
}

// skip executes plan: it checks again that the group has no members and that its commit is
// still plan.Committed, commits plan.Committed again (so that a commit the broker refuses
// stops the skip before anything is parked), copies every record of [Committed, NewOffset) to the dead-letter
// topic in fieldwork's convention (reason parked, the group, the operator's reason as the
// error) and waits for their acknowledgements, only then commits NewOffset for the group, and
// journals the skip with both offsets (so that Undo can restore the old one). A failure
// before the commit leaves the group where it was; the copies already acknowledged stay in
// the dead-letter topic, and the error says how many.
func skip(ctx context.Context, c *kafka.Cluster, st *dedup.Store, plan *SkipPlan, rec action.Record) (*SkipResult, error) {
	if _, _, err := recheck(ctx, c, plan.Group, map[kafka.TopicPartition]*int64{{Topic: plan.Topic, Partition: plan.Partition}: &plan.Committed}); err != nil {
		return nil, err
	}
	// The commit that stays where it is, first: it proves that the broker takes this
	// principal's commits for the group (READ on it, the group still empty) before anything is
	// parked, so that a refused commit leaves no copy behind.
	if err := c.CommitGroupOffsets(ctx, plan.Group, plan.Topic, map[int32]int64{plan.Partition: plan.Committed}); err != nil {
		return nil, fmt.Errorf("nothing was parked or moved: %w", err)
	}
	// The dead-letter topic must be there: a producer would wait for it (or have it created
	// with the broker's defaults).
	if err := writable(ctx, c, plan.DeadLetterTopic); err != nil {
		return nil, fmt.Errorf("nothing was parked or moved: %w", err)
	}
	res := &SkipResult{ID: rec.ID, Plan: plan, DeadLetters: []kafka.RecordAddress{}, Operator: rec.Operator, Reason: rec.Reason}
	prod, err := kgo.NewClient(c.Options()...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	defer prod.Close()
	var batch []*kgo.Record
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		results := prod.ProduceSync(context.WithoutCancel(ctx), batch...)
		batch = batch[:0]
		for _, r := range results {
			if r.Err != nil {
				return fmt.Errorf("the group's offset was not moved (%d parked in %s before): %w",
					res.Parked, plan.DeadLetterTopic, kafka.DeniedWrite(r.Err, plan.DeadLetterTopic))
			}
			res.Parked++
			if len(res.DeadLetters) < maxListedDeadLetters {
				res.DeadLetters = append(res.DeadLetters, kafka.RecordAddress{Topic: r.Record.Topic, Partition: r.Record.Partition, Offset: r.Record.Offset})
			}
		}
		return nil
	}
	r := kafka.PartitionRange{Topic: plan.Topic, Partition: plan.Partition, Start: plan.Committed, End: plan.NewOffset, HighWatermark: plan.LogEnd}
	err = c.Read(ctx, []kafka.PartitionRange{r}, func(kr *kgo.Record) error {
		batch = append(batch, dlq.NewDeadLetter(kr, dlq.Meta{Topic: plan.DeadLetterTopic, Group: plan.Group,
			Reason: dlq.ReasonParked, Error: rec.Reason, FailedAt: rec.At}))
		if len(batch) >= parkBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, err
	}
	if err := c.CommitGroupOffsets(ctx, plan.Group, plan.Topic, map[int32]int64{plan.Partition: plan.NewOffset}); err != nil {
		return res, fmt.Errorf("%d records parked in %s, but the group's offset was not moved: %w", res.Parked, plan.DeadLetterTopic, err)
	}
	moves := []PartitionMove{{Partition: plan.Partition, OldOffset: &plan.Committed, NewOffset: &plan.NewOffset, Parked: res.Parked}}
	if err := record(ctx, st, dedup.GroupAction{ID: res.ID, Action: dedup.ActionSkip, Group: plan.Group, Topic: plan.Topic,
		DeadLetterTopic: plan.DeadLetterTopic, Operator: rec.Operator, Reason: rec.Reason, Parked: res.Parked}, moves); err != nil {
		return res, err
	}
	return res, nil
}

// writable says whether topic exists, a denial named as the WRITE the skip needs on it (it
// implies the DESCRIBE asked for here).
func writable(ctx context.Context, c *kafka.Cluster, topic string) error {
	details, err := c.Admin.ListTopics(ctx, topic)
	if err == nil {
		d, ok := details[topic]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("the dead-letter topic: %w", &kafka.UnknownTopicError{Topic: topic})
		default:
			err = d.Err
		}
	}
	if err != nil {
		return kafka.Denied(fmt.Errorf("describe the dead-letter topic %s: %w", topic, err), kafka.OpWrite, kafka.ResourceTopic, topic)
	}
	return nil
}

// record journals a, its offsets moves. A journal that cannot be written fails the command:
// the offsets were moved, and the error says from where to where.
func record(ctx context.Context, st *dedup.Store, a dedup.GroupAction, moves []PartitionMove) error {
	b, err := json.Marshal(moves)
	if err != nil {
		return err
	}
	a.Offsets = dedup.JSONText(b)
	if err := st.RecordGroupAction(ctx, a); err != nil {
		var from []string
		for _, m := range moves {
			from = append(from, fmt.Sprintf("%s/%d from %s to %s", m.topicOf(a.Topic), m.Partition, OffsetText(m.OldOffset), OffsetText(m.NewOffset)))
		}
		return fmt.Errorf("the offsets of group %s were moved (%s), but the journal was not written: %w", a.Group, strings.Join(from, ", "), err)
	}
	return nil
}

// recheck refuses when group has members or its commits are no longer want (nil: no commit;
// the plan is stale: a consumer ran in between).
func recheck(ctx context.Context, c *kafka.Cluster, name string, want map[kafka.TopicPartition]*int64) (group, kafka.Commits, error) {
	d, commits, err := describeCommits(ctx, c, name)
	if err != nil {
		return d, nil, err
	}
	if err := active(name, d.Members); err != nil {
		return d, nil, err
	}
	for tp, at := range want {
		if now := commitOf(commits, tp.Topic, tp.Partition); !sameOffset(now, at) {
			return d, nil, fmt.Errorf("the committed offset of group %s on %s/%d is %s, not %s as planned: it moved since; nothing was changed (plan again)",
				name, tp.Topic, tp.Partition, OffsetText(now), OffsetText(at))
		}
	}
	return d, commits, nil
}

// commitOf is the committed offset of topic/p in commits, nil when there is none.
func commitOf(commits kafka.Commits, topic string, p int32) *int64 {
	if at, ok := commits[topic][p]; ok {
		return &at
	}
	return nil
}

// sameOffset says whether two offsets that may be none (nil) are the same.
func sameOffset(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// OffsetText is an offset that may be none (nil: no commit) in words.
func OffsetText(at *int64) string {
	if at == nil {
		return "none"
	}
	return fmt.Sprint(*at)
}

// UndoPlan is what an undo would do: move the group's commits back to where the skip or
// reset (Undone) found them.
type UndoPlan struct {
	Undone dedup.GroupAction `json:"undone"`
	Moves  []PartitionMove   `json:"moves"`
	State  string            `json:"state"`
	// Reason is the --reason the undo is asked with (nil without one).
	Reason *string `json:"reason"`
	// Members are the group's members; an undo is refused while there are any.
	Members []Member `json:"members"`
}

// PlanUndo reads the skip or reset id from the journal and the group now. One that is not in
// the journal, or was undone already, is a usage error; a group whose commit moved on since
// is refused (undoing would also send the consumer back over what it processed since, or
// forward past what it did not); a group with members is planned and refused with an error
// wrapping ErrActive.
func PlanUndo(ctx context.Context, c *kafka.Cluster, st *dedup.Store, id string) (*UndoPlan, error) {
	a, err := st.GroupAction(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case a == nil:
		return nil, fwerr.NotFoundf("no groups skip or reset %s in the journal (groups journal lists them)", id)
	case a.Action == dedup.ActionUndo:
		return nil, fwerr.Usagef("%s is an undo of %s, not a skip or a reset", id, a.Undoes)
	case a.UndoneBy != "":
		return nil, fwerr.Usagef("%s %s was undone already (by %s)", a.Action, id, a.UndoneBy)
	}
	var moved []PartitionMove
	if err := json.Unmarshal([]byte(a.Offsets), &moved); err != nil {
		return nil, fmt.Errorf("%s %s: its journaled offsets do not read: %w", a.Action, id, err)
	}
	d, commits, err := describeCommits(ctx, c, a.Group)
	if err != nil {
		return nil, err
	}
	p := &UndoPlan{Undone: *a, State: d.State, Members: []Member{}}
	p.Members = append(p.Members, d.Members...)
	for _, m := range moved {
		topic := m.topicOf(a.Topic)
		if now := commitOf(commits, topic, m.Partition); !sameOffset(now, m.NewOffset) {
			if sameOffset(now, m.OldOffset) {
				return nil, fmt.Errorf("refusing to undo %s %s: the committed offset of group %s on %s/%d is %s again, the offset the %s moved it from: the group moved on since and is where the undo would put it (nothing to undo)",
					a.Action, id, a.Group, topic, m.Partition, OffsetText(now), a.Action)
			}
			return nil, fmt.Errorf("refusing to undo %s %s: the committed offset of group %s on %s/%d is %s, not the %s's %s: the group moved on since, and restoring %s would also move it over what it did since",
				a.Action, id, a.Group, topic, m.Partition, OffsetText(now), a.Action, OffsetText(m.NewOffset), OffsetText(m.OldOffset))
		}
		p.Moves = append(p.Moves, PartitionMove{Topic: m.Topic, Partition: m.Partition, OldOffset: m.NewOffset, NewOffset: m.OldOffset})
	}
	return p, active(a.Group, p.Members)
}

// UndoResult is what an undo did.
type UndoResult struct {
	ID       string          `json:"run_id"`
	Undoes   string          `json:"undoes"`
	Group    string          `json:"group"`
	Topic    string          `json:"topic"`
	Moves    []PartitionMove `json:"moves"`
	Operator string          `json:"operator"`
	Reason   string          `json:"reason"`
}

// Undo is the undo of the journaled skip or reset id as an action (action.Run): its plan is
// PlanUndo's, its execute undo's, journaled under the action's Record.
func Undo(c *kafka.Cluster, st *dedup.Store, id string) action.Steps[*UndoPlan, *UndoResult] {
	return action.Steps[*UndoPlan, *UndoResult]{
		Plan: func(ctx context.Context, e *action.Env) (*UndoPlan, error) {
			p, err := PlanUndo(ctx, c, st, id)
			if p != nil {
				p.Reason = e.Reason()
			}
			return p, err
		},
		Execute: func(ctx context.Context, e *action.Env, plan *UndoPlan) (*UndoResult, error) {
			return undo(ctx, c, st, plan, e.Record)
		},
	}
}

// undo executes plan: it checks again that the group has no members and is where the skip or
// reset left it, removes the commits a reset made where the group had none, commits the old
// offsets, and journals the undo naming what it undoes. A skip's parked copies stay in the
// dead-letter topic: the group reads the records again from the source.
func undo(ctx context.Context, c *kafka.Cluster, st *dedup.Store, plan *UndoPlan, rec action.Record) (*UndoResult, error) {
	a := plan.Undone
	want, back, drop := map[kafka.TopicPartition]*int64{}, kafka.Commits{}, map[string][]int32{}
	for _, m := range plan.Moves {
		topic := m.topicOf(a.Topic)
		want[kafka.TopicPartition{Topic: topic, Partition: m.Partition}] = m.OldOffset
		if m.NewOffset == nil {
			drop[topic] = append(drop[topic], m.Partition)
			continue
		}
		if back[topic] == nil {
			back[topic] = map[int32]int64{}
		}
		back[topic][m.Partition] = *m.NewOffset
	}
	d, now, err := recheck(ctx, c, a.Group, want)
	if err != nil {
		return nil, err
	}
	if d.Type == TypeShare {
		if err := undoShare(ctx, c, a.Group, now, back, drop); err != nil {
			return nil, err
		}
		return recordUndo(ctx, st, plan, rec)
	}
	// The commits a reset made where there was none go first: a refusal (DELETE on the group is
	// an ACL of its own) then leaves everything where it was.
	if len(drop) > 0 {
		if err := c.DeleteGroupOffsets(ctx, a.Group, drop); err != nil {
			return nil, fmt.Errorf("nothing was moved: %w", err)
		}
	}
	if len(back) > 0 {
		if err := c.CommitGroup(ctx, a.Group, back); err != nil {
			if len(drop) > 0 {
				return nil, fmt.Errorf("the commits the %s made where group %s had none were removed, but the others were not moved back (groups journal shows their old offsets): %w", a.Action, a.Group, err)
			}
			return nil, err
		}
	}
	return recordUndo(ctx, st, plan, rec)
}

// recordUndo journals the undo plan executed, naming what it undoes.
func recordUndo(ctx context.Context, st *dedup.Store, plan *UndoPlan, rec action.Record) (*UndoResult, error) {
	a := plan.Undone
	res := &UndoResult{ID: rec.ID, Undoes: a.ID, Group: a.Group, Topic: a.Topic, Moves: plan.Moves, Operator: rec.Operator, Reason: rec.Reason}
	if err := record(ctx, st, dedup.GroupAction{ID: res.ID, Action: dedup.ActionUndo, Group: a.Group, Topic: a.Topic,
		DeadLetterTopic: a.DeadLetterTopic, Operator: rec.Operator, Reason: rec.Reason, Undoes: a.ID}, plan.Moves); err != nil {
		return res, err
	}
	return res, nil
}
