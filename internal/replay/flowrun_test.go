package replay

import (
	"context"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// testFlow is what a test asks of a flow: the FlowOptions, what every action is asked
// (action.Options) and the hooks, in one literal.
type testFlow struct {
	Execute, Yes            bool
	RunID, Operator, Reason string
	Confirm                 func(Check) error
	Progress                func(FlowProgress)
	Editor                  func([]byte) ([]byte, error)
	Rate                    float64
	RateGiven               bool
	Sample                  int
}

// runFlow runs Flow as the command does, through action.Run.
func runFlow(ctx context.Context, c *kafka.Cluster, st *dedup.Store, p *Plan, o testFlow) (*FlowResult, error) {
	h := action.Hooks[*FlowResult]{}
	if o.Confirm != nil {
		h.Confirm = func(res *FlowResult) error { return o.Confirm(res.Check()) }
	}
	if o.Progress != nil {
		h.Progress = func(pr action.Progress) { o.Progress(pr.Of.(FlowProgress)) }
	}
	out, err := action.Run(ctx, Flow(c, st, p, FlowOptions{Editor: o.Editor, Rate: o.Rate, RateGiven: o.RateGiven, Sample: o.Sample}),
		action.Options{Execute: o.Execute, Yes: o.Yes, Record: action.Record{ID: o.RunID, Operator: o.Operator, Reason: o.Reason}}, h)
	return out.Plan, err
}
