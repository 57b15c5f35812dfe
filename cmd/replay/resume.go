package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// ReplayResumeOptions are the inputs of `replay resume`.
type ReplayResumeOptions struct {
	replayDeps
	RunID string
	Force bool
	Rate  cmdutil.RateFlag
}

// NewCmdReplayResume builds `replay resume RUN`.
func NewCmdReplayResume(f *cmdutil.Factory, runF func(context.Context, *ReplayResumeOptions) error) *cobra.Command {
	opts := &ReplayResumeOptions{replayDeps: newReplayDeps(f)}
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue an interrupted or failed replay run from its checkpoints",
		Long: `Continue a journaled run that did not complete (interrupted, failed, or marked running by a
process that is gone): each partition from just after its checkpoint to the end offset fixed
when the run was planned (never re-taken, so records that arrived since are not read), with
the run's own selection, filters, target, loop guard and reason. Records the journal shows as
acknowledged are not sent again; only what the interrupted process had sent without the
journal knowing (at most its duplicate window: the producer's buffer plus one journal batch)
can be sent twice, which idempotent consumers absorb.

A run marked running is refused while its process may still drive it: on this host while its
pid exists, from another host until its journal has been silent for 30s; --force overrides.
Like replay --execute it checks the plan first, asks on a terminal (refusing without one
unless --yes), and exits 3 when records were quarantined. A completed run has nothing to
resume (exit 0).`,
		Example: `  fieldwork replay resume 20250102-150405-3f9a1c
  fieldwork replay resume 20250102-150405-3f9a1c --yes --rate 1000`,
		Args: cmdutil.ExactArgs(1, "one run id (see replay runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunID = args[0]
			if err := opts.Rate.Check(); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedJournal|cmdutil.NeedKafka, opts, runF, replayResumeRun)
		},
	}
	opts.RegisterYes(cmd.Flags())
	cmd.Flags().BoolVar(&opts.Force, "force", false, "take over a run marked running even if its process may be alive")
	opts.Rate.Register(cmd.Flags())
	return cmd
}

func replayResumeRun(ctx context.Context, opts *ReplayResumeOptions, cl *cmdutil.Clients) error {
	replayGC(opts.Getenv)
	p, st, c := cl.Printer, cl.Store, cl.Kafka
	plan, err := replay.LoadRun(ctx, c, st, opts.RunID, opts.Force)
	if errors.Is(err, replay.ErrNothingToResume) {
		fmt.Fprintf(opts.Streams.ErrText(), "run %s is completed: nothing to resume\n", opts.RunID)
		return nil
	}
	if err != nil {
		return err
	}
	return opts.runFlow(ctx, p, c, st, plan, replay.FlowOptions{Execute: true, Yes: opts.Yes, Rate: float64(opts.Rate), Sample: -1})
}
