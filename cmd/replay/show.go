package replay

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// ReplayShowOptions are the inputs of `replay show`.
type ReplayShowOptions struct {
	RunID string
}

// NewCmdReplayShow builds `replay show RUN`.
func NewCmdReplayShow(f *cmdutil.Factory, runF func(context.Context, *ReplayShowOptions) error) *cobra.Command {
	opts := &ReplayShowOptions{}
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "One replay run: selection, counts, checkpoints, targets",
		Long: `Show one journaled run: who ran it, why, when, its status and counts, the selection it was
planned with, each source partition's range (end offsets as fixed when it was planned) and its
checkpoint (the offset through which every record is done), and the acknowledged sends per
target topic and partition.`,
		Example: `  fieldwork replay show 20250102-150405-3f9a1c
  fieldwork replay show 20250102-150405-3f9a1c -o json | jq .checkpoints`,
		Args: cmdutil.ExactArgs(1, "one run id (see replay runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunID = args[0]
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, replayShowRun)
		},
	}
	return cmd
}

func replayShowRun(ctx context.Context, opts *ReplayShowOptions, cl *cmdutil.Clients) error {
	run, cps, err := cl.Store.ReplayRun(ctx, opts.RunID)
	if nf := (*dedup.RunNotFoundError)(nil); errors.As(err, &nf) {
		return fwerr.NotFoundf("%v (see `fieldwork replay runs`)", err)
	}
	if err != nil {
		return err
	}
	return showRun(ctx, cl, run, cps)
}

// showRun prints run as `replay show` does: its counts, checkpoints (what each partition has
// left) and targets.
func showRun(ctx context.Context, cl *cmdutil.Clients, run dedup.ReplayRun, cps []dedup.ReplayCheckpoint) error {
	p := cl.Printer
	targets, err := cl.Store.ReplayTargetCounts(ctx, run.ID)
	if err != nil {
		return err
	}
	d := replayRunDetail{ReplayRun: run, Targets: targets, Checkpoints: make([]replayCheckpointView, len(cps))}
	for i, c := range cps {
		d.Checkpoints[i] = replayCheckpointView{ReplayCheckpoint: c, Remaining: max(0, c.End-c.AckedThrough)}
	}
	return p.Object(d, replayRunSections(p, d))
}
