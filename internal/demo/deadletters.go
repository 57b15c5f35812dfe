package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// dlqEnds returns the end offset of each partition of the dead-letter topic.
func (d *Demo) dlqEnds(ctx context.Context) (map[int32]int64, error) {
	ends, err := d.cluster.Admin.ListEndOffsets(ctx, TopicDLQ)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", TopicDLQ, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", TopicDLQ, err)
	}
	out := map[int32]int64{}
	for _, o := range ends[TopicDLQ] {
		out[o.Partition] = o.Offset
	}
	return out, nil
}

// scan plans a scan of the dead-letter topic, in partition and offset order.
func (d *Demo) scan(ctx context.Context) (*dlq.Scan, error) {
	return dlq.PlanScan(ctx, d.cluster, []string{TopicDLQ}, dlq.ScanOptions{InOrder: true})
}

// deadLettersSince counts, by reason, the dead letters written after the end offsets before.
func (d *Demo) deadLettersSince(ctx context.Context, before map[int32]int64) (map[string]int64, error) {
	s, err := d.scan(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	_, err = s.Run(ctx, dlq.Filter{}, func(dl dlq.DeadLetter) error {
		if dl.Offset >= before[dl.Partition] {
			out[reasonOf(dl)]++
		}
		return nil
	})
	return out, err
}

func reasonOf(dl dlq.DeadLetter) string {
	if dl.Reason == "" {
		return dlq.ReasonUnknown
	}
	return dl.Reason
}

// listDeadLetters is `dlq list --topic tasks.dlq [--status …] --limit 0`: every dead letter
// with its status for the consumer the dead letter names (Group).
func (d *Demo) listDeadLetters(ctx context.Context, statuses []dlq.Status) ([]dlq.Entry, error) {
	s, err := d.scan(ctx)
	if err != nil {
		return nil, err
	}
	entries := []dlq.Entry{}
	_, err = dlq.List(ctx, s, dlq.ListOptions{
		Lookup: dlq.StatusLookup{Store: d.stack.Store()}, Statuses: statuses,
	}, func(e dlq.Entry) error {
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

// deadLetterStats is `dlq stats --topic tasks.dlq --group-by reason`, with statuses.
func (d *Demo) deadLetterStats(ctx context.Context) (*dlq.StatsReport, error) {
	topics := []string{TopicDLQ}
	// Retention is reported when the broker describes it; the embedded one may not.
	retention, err := dlq.DescribeRetention(ctx, d.cluster, topics)
	if err != nil {
		retention = nil
	}
	s, err := dlq.PlanScan(ctx, d.cluster, topics, dlq.ScanOptions{})
	if err != nil {
		return nil, err
	}
	return dlq.Summarise(ctx, s, topics, dlq.SummaryOptions{
		By: []dlq.StatsKey{dlq.ByReason}, Window: 24 * time.Hour, Now: time.Now(),
		Lookup: dlq.StatusLookup{Store: d.stack.Store()}, Retention: retention,
	})
}

// replaySpec is `replay --topic tasks.dlq --dlq-reason rejected`.
func replaySpec() (replay.Spec, error) {
	s := replay.Spec{From: TopicDLQ, FilterSpec: dlq.FilterSpec{Reasons: []string{dlq.ReasonRejected}}}
	return s, s.Validate()
}

// replayFlow runs `fieldwork replay --topic tasks.dlq --dlq-reason rejected` (a dry run) or,
// with execute, the same line with `--execute --yes --reason …`: a new plan and the one replay
// flow the command runs (replay.Flow), so that the demo does what the line it prints does.
func (d *Demo) replayFlow(ctx context.Context, execute bool) (*replay.FlowResult, error) {
	spec, err := replaySpec()
	if err != nil {
		return nil, err
	}
	plan, err := replay.NewPlan(ctx, d.cluster, spec)
	if err != nil {
		return nil, err
	}
	o, a := replay.FlowOptions{Sample: 3}, action.Options{}
	if execute {
		o = replay.FlowOptions{}
		a = action.Options{Execute: true, Yes: true, Record: action.Record{ID: action.NewRunID(time.Now()), At: time.Now(), Operator: d.o.Operator, Reason: ReplayReason}}
	}
	out, err := action.Run(ctx, replay.Flow(d.cluster, d.stack.Store(), plan, o), a, action.Hooks[*replay.FlowResult]{})
	if err != nil {
		return nil, err
	}
	res := out.Plan
	for _, n := range res.Notices {
		if n.Warning() {
			d.say("%s", n.String())
		}
	}
	switch {
	case !execute && res.Report == nil:
		return nil, fmt.Errorf("the replay's dry run reported nothing")
	case execute && res.Summary == nil:
		return nil, fmt.Errorf("the replay sent nothing: no %s dead letters in %s", dlq.ReasonRejected, TopicDLQ)
	}
	return res, nil
}
