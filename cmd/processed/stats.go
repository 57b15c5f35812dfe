package processed

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// ProcessedStatsOptions are the inputs of `processed stats`.
type ProcessedStatsOptions struct {
	cmdutil.StoreDeps
	Filter dedup.StatsFilter
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ProcessedStatsOptions) NamedConsumer() string { return o.Filter.Consumer }

// NewCmdProcessedStats builds `processed stats`.
func NewCmdProcessedStats(f *cmdutil.Factory, runF func(context.Context, *ProcessedStatsOptions) error) *cobra.Command {
	opts := &ProcessedStatsOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Per consumer: markers, first and last processed, markers per hour; table size",
		Long: `For every consumer (or --consumer): how many markers it has, when the first and the last
were processed, and how many it wrote per hour over --window (ending now). On PostgreSQL
also the marker table's size on disk: table, indexes and total.

It reads the whole table (or the consumer's part of it): on a large table it takes a while.`,
		Example: `  fieldwork processed stats
  fieldwork processed stats --consumer billing --window 1h -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("consumer") {
				if err := cmdutil.CheckConsumer(opts.Filter.Consumer); err != nil {
					return err
				}
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedStatsRun)
		},
	}
	cmd.Flags().StringVar(&opts.Filter.Consumer, "consumer", "", "only this consumer")
	cmd.Flags().Var(timespec.NewDurationValue(&opts.Filter.Window, dedup.DefaultStatsWindow), "window", "span ending now over which markers per hour are counted: 90m, 1d, 2w")
	return cmd
}

func processedStatsRun(ctx context.Context, opts *ProcessedStatsOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	s, err := st.Stats(ctx, opts.Filter)
	if err != nil {
		return err
	}
	rep := statsReport{Driver: st.Driver(), Table: st.TableLabel(), Window: timespec.Format(s.Window),
		WindowMS: s.Window.Milliseconds(), Consumers: s.Consumers, Sizes: s.Sizes}
	if rep.Consumers == nil {
		rep.Consumers = []dedup.ConsumerStats{}
	}
	if p.Format == output.FormatCSV {
		return output.List(p, rep.Consumers, statsColumns(), "")
	}
	return p.Object(rep, statsSections(p, rep))
}
