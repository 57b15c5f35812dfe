package processed

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
)

// ProcessedGetOptions are the inputs of `processed get`.
type ProcessedGetOptions struct {
	cmdutil.StoreDeps
	EventID  string
	Consumer string
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ProcessedGetOptions) NamedConsumer() string { return o.Consumer }

// NewCmdProcessedGet builds `processed get EVENT_ID`.
func NewCmdProcessedGet(f *cmdutil.Factory, runF func(context.Context, *ProcessedGetOptions) error) *cobra.Command {
	opts := &ProcessedGetOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
		Use:   "get EVENT_ID",
		Short: "Whether, when and from which record each consumer processed an event",
		Long: `Show the markers of one event: for every consumer that processed it (or only --consumer),
when, and from which topic, partition and offset it was read.

An event with no marker is an answer, not an error: exit code 0 either way, and the output
says which (in JSON, "processed": false and an empty "markers").`,
		Example: `  fieldwork processed get 0b9c6f7e-3f5a-4c1e-9a59-2f0d1f6c1a10
  fieldwork processed get evt-42 --consumer billing -o json | jq .processed`,
		Args: cmdutil.ExactArgs(1, "one event id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.EventID = args[0]
			if err := dedup.ValidateEventID(opts.EventID); err != nil {
				return cmdutil.StoreError(err, dedup.Options{})
			}
			if cmd.Flags().Changed("consumer") {
				if err := cmdutil.CheckConsumer(opts.Consumer); err != nil {
					return err
				}
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedGetRun)
		},
	}
	cmd.Flags().StringVar(&opts.Consumer, "consumer", "", "only this consumer's marker (default every consumer's)")
	return cmd
}

func processedGetRun(ctx context.Context, opts *ProcessedGetOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	rows, err := st.Get(ctx, opts.EventID, opts.Consumer)
	if err != nil {
		return err
	}
	rep := getReport{EventID: opts.EventID, Consumer: opts.Consumer, Processed: len(rows) > 0, Markers: rows}
	if rep.Markers == nil {
		rep.Markers = []dedup.MarkerRow{}
	}
	if p.Format == output.FormatCSV {
		return output.List(p, rep.Markers, markerColumns, "")
	}
	return p.Object(rep, getSections(p, rep))
}
