package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// ReplayResumeOptions are the inputs of `replay resume`.
type ReplayResumeOptions struct {
	replayDeps
	RunID string
	Force bool
	Rate  cmdutil.RateFlag
	// RateGiven is whether --rate was given: it then overrides the run's journaled rate.
	RateGiven bool
	// Worker joins the run's workers (--worker): a run recorded with replay --workers.
	Worker bool
	// SessionTimeout is a worker's group session timeout (--session-timeout).
	SessionTimeout time.Duration
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
pid exists, from another host until its journal has been silent for 30s; --force overrides.

--worker --execute joins a run recorded for workers (replay --execute --workers) as one of its
workers, on this machine or any other with the same brokers and store: it joins the consumer
group fieldwork-replay-RUN on the run's source topic and sends the partitions Kafka assigns
it, each from its checkpoint, journaling each partition's checkpoint and counts while it
holds it. On a rebalance (a worker joins or leaves) it stops reading, awaits and journals
what it has in flight, and releases its partitions before the group goes on; a worker killed
without leaving has its partitions taken over after --session-timeout, from their
checkpoints (what it sent beyond them, at most its duplicate window, is sent again). The
rate is the run's (or --rate), shared by the partitions left: a worker holding k of the n
partitions not yet done sends at most rate*k/n records per second, and raises its share as
the others finish (it says so on stderr). A worker exits 0 when every partition of the run
is done, whichever worker did it (3 when the run quarantined records or left incomplete ones
out, as a replay does); SIGINT checkpoints and releases its partitions and exits 130,
leaving the run to the others. replay show RUN tells which worker holds which partition. A worker asks
nothing: the plan was checked and confirmed when the run was recorded. --worker without
--execute previews: it prints the run as replay show does (what each partition has left,
and which worker holds it) and sends nothing.`,

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
	cmd.Flags().BoolVar(&opts.Force, "force", false, "take over a run marked running even if its process may be alive, and resume while another run is replaying from the same topic")
	opts.Rate.Register(cmd.Flags())
	cmd.Flags().Lookup("rate").Usage = "send at most this many records per second, in place of the rate the run was journaled with (0: no cap)"
	cmd.Flags().BoolVar(&opts.Worker, "worker", false, "with --execute: join the run's workers (a run recorded with replay --execute --workers) and send the partitions the group assigns; without it, preview the run")
	cmd.Flags().Var(timespec.NewDurationValue(&opts.SessionTimeout, 0).AllowZero(), "session-timeout", "with --worker: the group session timeout, after which a dead worker's partitions move (default 10s)")
	return cmd
}

func replayResumeRun(ctx context.Context, opts *ReplayResumeOptions, cl *cmdutil.Clients) error {
	gcpace.Floor(opts.Getenv, gcpace.ReplayFloor)
	if opts.Worker && !opts.Execute {
		return replayWorkerPreview(ctx, opts, cl)
	}
	if opts.Worker {
		return replayWorkerRun(ctx, opts, cl)
	}
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
	return opts.runFlow(ctx, cl, plan, a, replay.FlowOptions{Rate: float64(opts.Rate), RateGiven: opts.RateGiven, Sample: -1, Force: opts.Force})
}

// replayWorkerPreview is `replay resume RUN --worker` without --execute: the run as `replay
// show` prints it (what each partition has left, and which worker holds it), nothing sent.
func replayWorkerPreview(ctx context.Context, opts *ReplayResumeOptions, cl *cmdutil.Clients) error {
	run, cps, err := replay.WorkerRun(ctx, cl.Store, opts.RunID)
	if err != nil {
		return err
	}
	if err := showRun(ctx, cl, run, cps); err != nil {
		return err
	}
	cmdutil.Note(opts.Streams, "a preview: nothing was sent; add --execute to join the run's workers (consumer group "+replay.GroupName(run.ID)+")")
	return nil
}

// replayWorkerRun is `replay resume RUN --worker --execute`: one worker of a run shared by workers, its
// summary on stdout when it leaves.
func replayWorkerRun(ctx context.Context, opts *ReplayResumeOptions, cl *cmdutil.Clients) error {
	wo := replay.WorkerOptions{Rate: float64(opts.Rate), RateGiven: opts.RateGiven, SessionTimeout: opts.SessionTimeout}
	wo.OnAssigned = func(ps []int32) {
		fmt.Fprintf(opts.Streams.ErrText(), "worker of run %s: assigned %s\n", opts.RunID, partitionList(ps))
	}
	wo.OnShare = func(perSecond float64) {
		fmt.Fprintf(opts.Streams.ErrText(), "worker of run %s: its share of the rate: %s\n", opts.RunID, replay.RateText(perSecond))
	}
	sum, err := replay.RunWorker(ctx, cl.Kafka, cl.Store, opts.RunID, wo)
	if sum != nil {
		if perr := cl.Printer.Object(sum, workerSummarySections(cl.Printer, sum)); err == nil {
			err = perr
		}
	}
	return err
}
