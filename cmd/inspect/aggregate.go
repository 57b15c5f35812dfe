package inspect

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// InspectAggregateOptions are the inputs of `inspect aggregate`.
type InspectAggregateOptions struct {
	topicScan
	AggregateID string
	MaxEvents   int
}

// NewCmdInspectAggregate builds `inspect aggregate T ID`.
func NewCmdInspectAggregate(f *cmdutil.Factory, runF func(context.Context, *InspectAggregateOptions) error) *cobra.Command {
	opts := &InspectAggregateOptions{}
	cmd := &cobra.Command{
		Use:   "aggregate TOPIC AGGREGATE_ID",
		Short: "The events of one aggregate in offset order, with version continuity flagged",
		Long: `Scan the topic (or the selected partitions, offsets or times) and list the events of one
aggregate in offset order: those whose envelope names the aggregate id, and those whose Kafka
key is the id. Each event's version is checked against the ones before it:

  ok           the first event, or one version above the highest so far
  gap          the version jumped by more than one (versions missing)
  duplicate    a version seen before from the same event id (a redelivery, or the same id
               with a different payload), or another event at the highest version
  regression   another event with a version lower than the highest seen
  unversioned  the event carries no aggregate version

Malformed records are skipped and counted; those keyed by the aggregate id are listed.`,
		Example: `  fieldwork inspect aggregate tasks task-42
  fieldwork inspect aggregate --topic tasks task-42
  fieldwork inspect aggregate tasks task-42 --since 2h -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.AggregateID == "" {
				return fwerr.Usagef("the aggregate id is empty")
			}
			if err := opts.parseSelection(cmd, f.Now()); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, inspectAggregateRun)
		},
	}
	cmdutil.TopicArgThen(cmd, &opts.Topic, "topic to scan", "an aggregate id", &opts.AggregateID)
	opts.sel.Register(cmd)
	cmdutil.CountVar(cmd.Flags(), &opts.MaxEvents, "max-events", inspect.DefaultMaxAggregateEvents, "keep at most this many of the aggregate's events")
	return cmd
}

func inspectAggregateRun(ctx context.Context, opts *InspectAggregateOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	progress := output.NewProgress(cl.Streams, output.ProgressOptions{Label: "scanning " + opts.Topic})
	rep, err := inspect.Aggregate(ctx, c, opts.Topic, opts.AggregateID, opts.Selection, inspect.AggregateOptions{MaxEvents: opts.MaxEvents, Progress: progress.Update, Schemas: cl.Schemas})
	progress.Stop()
	if err != nil {
		return err
	}
	if rep.Truncated {
		fmt.Fprintf(cl.Streams.ErrOut, "warning: only the first %d events are shown (--max-events)\n", opts.MaxEvents)
	}
	return p.Object(rep, aggregateSections(p, rep))
}
