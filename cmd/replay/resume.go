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
	// RateGiven is whether --rate was given: it then overrides the run's journaled rate.
	RateGiven bool
}

// NewCmdReplayResume builds `replay resume RUN`.
func NewCmdReplayResume(f *cmdutil.Factory, runF func(context.Context, *ReplayResumeOptions) error) *cobra.Command {
	opts := &ReplayResumeOptions{replayDeps: newReplayDeps(f)}
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue an interrupted or failed replay run from its checkpoints",
		Long: `Continue a journaled run that did not complete (interrupted, failed, or marked running by a
process that is gone) from its checkpoints, as it was meant to execute. Without --execute it
prints the plan of what is left and sends nothing; with --execute it resumes.

Each partition goes on from just after its checkpoint to the end offset fixed
when the run was planned (never re-taken, so records that arrived since are not read), with
the run's own selection, filters, target, loop guard and reason, and as the run was meant to
execute: its --rate, partitioner and partition rule, edit, stop rule, group and batching, all
journaled with it; the plan and the summary say so (rate 5000/s (from the run)). --rate
overrides the journaled rate (--rate 0: no cap) and is journaled in its place, so that a
second resume keeps it. A run journaled by an earlier version, without its rate, resumes
with no cap, and says that its rate is unknown. Records the journal shows as
acknowledged are not sent again; only what the interrupted process had sent without the
journal knowing (at most its duplicate window: the producer's buffer plus one journal batch)
can be sent twice, which idempotent consumers absorb.

Plan, then execute, as replay: without --execute it prints the plan of what is left (the
ranges from the checkpoints, the counts, the targets, the run's reason) and sends nothing;
with --execute it checks the plan first, asks on a terminal (refusing without one unless
--yes), and exits 3 when records were quarantined. --yes alone resumes too, as it did before
resume had a plan, with a note to say --execute --yes. A completed run has nothing to resume
(exit 0).

A run marked running is refused while its process may still drive it: on this host while its
pid exists, from another host until its journal has been silent for 30s; --force overrides.`,
		Example: `  fieldwork replay resume 20250102-150405-3f9a1c
  fieldwork replay resume 20250102-150405-3f9a1c --execute
  fieldwork replay resume 20250102-150405-3f9a1c --rate 1000 --execute --yes`,
		Args: cmdutil.ExactArgs(1, "one run id (see replay runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunID = args[0]
			opts.RateGiven = cmd.Flags().Changed("rate")
			if err := opts.Rate.Check(); err != nil {
				return err
			}
			if opts.Yes && !opts.Execute {
				// Scripts written before resume had a plan act with --yes alone: they still do.
				opts.Execute = true
				cmdutil.Note(opts.Streams, "--yes without --execute resumes the run, as before: say --execute --yes (without either, replay resume prints the plan of what is left)")
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedJournal|cmdutil.NeedKafka, opts, runF, replayResumeRun)
		},
	}
	cmd.Flags().BoolVar(&opts.Execute, "execute", false, "resume the run: send what is left (default: print the plan of what is left and send nothing)")
	opts.RegisterYes(cmd.Flags())
	cmd.Flags().BoolVar(&opts.Force, "force", false, "take over a run marked running even if its process may be alive")
	opts.Rate.Register(cmd.Flags())
	cmd.Flags().Lookup("rate").Usage = "send at most this many records per second, in place of the rate the run was journaled with (0: no cap)"
	return cmd
}

func replayResumeRun(ctx context.Context, opts *ReplayResumeOptions, cl *cmdutil.Clients) error {
	replayGC(opts.Getenv)
	plan, err := replay.LoadRun(ctx, cl.Kafka, cl.Store, opts.RunID, opts.Force)
	if errors.Is(err, replay.ErrNothingToResume) {
		fmt.Fprintf(opts.Streams.ErrText(), "run %s is completed: nothing to resume\n", opts.RunID)
		return nil
	}
	if err != nil {
		return err
	}
	// A resume keeps its run's id, operator and reason: the reason it sends (fw.replay.reason)
	// is the one its plan and its question show.
	a := opts.ActionFlags
	a.Reason = plan.Resume.Run.Reason
	return opts.runFlow(ctx, cl, plan, a, replay.FlowOptions{Rate: float64(opts.Rate), RateGiven: opts.RateGiven, Sample: -1})
}
