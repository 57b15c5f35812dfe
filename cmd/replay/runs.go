package replay

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// ReplayRunsOptions are the inputs of `replay runs`.
type ReplayRunsOptions struct {
	Status string
	Limit  int
	// MarkTruncated is --mark-truncated: a listing cut at --limit says so.
	MarkTruncated cmdutil.TruncationFlag
}

// NewCmdReplayRuns builds `replay runs`.
func NewCmdReplayRuns(f *cmdutil.Factory, runF func(context.Context, *ReplayRunsOptions) error) *cobra.Command {
	opts := &ReplayRunsOptions{}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "The replay journal's runs, newest first",
		Long: `List the executed replay runs the journal holds, newest first: id, status (running,
completed, interrupted, failed), when, who and why, what was read and where it went, and the
counts (selected, sent, quarantined, skipped). A run marked running whose process is gone
(killed) can be resumed with replay resume.`,
		Example: `  fieldwork replay runs
  fieldwork replay runs --status interrupted -o json | jq -r '.[].run_id'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Status != "" && !slices.Contains(dedup.RunStatuses, opts.Status) {
				return fwerr.Usagef("--status %q: want one of %s", opts.Status, strings.Join(dedup.RunStatuses, ", "))
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, replayRunsRun)
		},
	}
	cmd.Flags().StringVar(&opts.Status, "status", "", "only runs with this status: "+strings.Join(dedup.RunStatuses, ", "))
	cmdutil.LimitVar(cmd.Flags(), &opts.Limit, dedup.DefaultRunsLimit, "runs", 0, "")
	opts.MarkTruncated.Register(cmd.Flags(), f.Streams)
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(dedup.RunStatuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func replayRunsRun(ctx context.Context, opts *ReplayRunsOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Status: opts.Status, Limit: cmdutil.ReadLimit(opts.Limit)})
	if err != nil {
		return err
	}
	return cmdutil.WriteAtMost(p, runs, opts.Limit, &opts.MarkTruncated, replayRunColumns, "runs", "no replay runs in the journal")
}
