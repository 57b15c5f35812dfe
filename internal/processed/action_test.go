package processed_test

import (
	"context"
	"time"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/processed"
)

// pruneCall is what a test asks of a prune: its options, the action's (a dry run, the
// Record) and the hooks, in one literal. Without Confirm an executed prune is Yes.
type pruneCall struct {
	OlderThan time.Duration
	Consumer  string
	BatchSize int
	Topics    []string
	Force     bool
	Now       time.Time
	DryRun    bool
	Journal   action.Record
	Confirm   func(rep *processed.PruneReport, question string) error
	Warn      func(string)
	Progress  func(action.Progress)
}

// runPrune runs processed.Prune as the command does, through action.Run.
func runPrune(ctx context.Context, st *dedup.Store, cluster func(context.Context) (*kafka.Cluster, error), o pruneCall) (*processed.PruneReport, error) {
	h := action.Hooks[*processed.PruneReport]{}
	if o.Confirm != nil {
		h.Confirm = func(rep *processed.PruneReport) error { return o.Confirm(rep, rep.Question()) }
	}
	if o.Warn != nil {
		h.Notice = func(n action.Notice) { o.Warn(n.Text) }
	}
	h.Progress = o.Progress
	out, err := action.Run(ctx, processed.Prune(st, cluster, processed.PruneOptions{
		OlderThan: o.OlderThan, Consumer: o.Consumer, BatchSize: o.BatchSize, Topics: o.Topics, Force: o.Force, Now: o.Now,
	}), action.Options{Execute: !o.DryRun, Yes: o.Confirm == nil, Record: o.Journal}, h)
	return out.Plan, err
}

// forgetCall is what a test asks of an executed forget. Without Confirm it is Yes.
type forgetCall struct {
	Journal action.Record
	Confirm func(plan *processed.ForgetReport, question string) error
}

// runForget runs processed.Forget, executed, as the command does, through action.Run.
func runForget(ctx context.Context, st *dedup.Store, consumer string, ids []string, o forgetCall) (*processed.ForgetReport, error) {
	h := action.Hooks[*processed.ForgetReport]{}
	if o.Confirm != nil {
		h.Confirm = func(plan *processed.ForgetReport) error { return o.Confirm(plan, plan.Question()) }
	}
	out, err := action.Run(ctx, processed.Forget(st, consumer, ids), action.Options{Execute: true, Yes: o.Confirm == nil, Record: o.Journal}, h)
	return out.Result, err
}
