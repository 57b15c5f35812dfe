package replay

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

// replayRunView is a journaled run as the commands print it: the selection as JSON, not as a string
// holding JSON.
type replayRunView struct {
	dedup.ReplayRun
	Selection json.RawMessage `json:"selection"`
}

func replayViewOf(r dedup.ReplayRun) replayRunView {
	sel := json.RawMessage(r.Selection)
	if !json.Valid(sel) {
		b, _ := json.Marshal(r.Selection)
		sel = b
	}
	return replayRunView{ReplayRun: r, Selection: sel}
}

// ReplayRunsOptions are the inputs of `replay runs`.
type ReplayRunsOptions struct {
	replayDeps
	Status string
	Limit  int
}

// NewCmdReplayRuns builds `replay runs`.
func NewCmdReplayRuns(f *cmdutil.Factory, runF func(context.Context, *ReplayRunsOptions) error) *cobra.Command {
	opts := &ReplayRunsOptions{replayDeps: newReplayDeps(f)}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "The replay journal's runs, newest first",
		Long: `List the executed replay runs the journal holds, newest first: id, status (running,
completed, interrupted, failed), when, who and why, what was read and where it went, and the
counts (selected, sent, quarantined, skipped). A run marked running whose process is gone
(killed) can be resumed with replay resume.`,
		Example: `  fieldwork replay runs
  fieldwork replay runs --status interrupted -o json | jq -r '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Status != "" && !slices.Contains(dedup.RunStatuses, opts.Status) {
				return fwerr.Usagef("--status %q: want one of %s", opts.Status, strings.Join(dedup.RunStatuses, ", "))
			}
			if opts.Limit < 1 {
				return fwerr.Usagef("--limit %d: must be at least 1", opts.Limit)
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, replayRunsRun)
		},
	}
	cmd.Flags().StringVar(&opts.Status, "status", "", "only runs with this status: "+strings.Join(dedup.RunStatuses, ", "))
	cmd.Flags().IntVar(&opts.Limit, "limit", dedup.DefaultRunsLimit, "at most this many runs")
	return cmd
}

var replayRunColumns = []output.Column[replayRunView]{
	{Name: "id", Value: func(r replayRunView) string { return r.ID }},
	{Name: "status", Value: func(r replayRunView) string { return r.Status }},
	{Name: "created_at", Value: func(r replayRunView) string { return cmdutil.FormatTime(r.CreatedAt) }},
	{Name: "operator", Value: func(r replayRunView) string { return r.Operator }},
	{Name: "source", Value: func(r replayRunView) string { return strings.Join(r.Sources, ",") }},
	{Name: "target", Value: func(r replayRunView) string { return r.Target }},
	{Name: "selected", Value: func(r replayRunView) string { return strconv.FormatInt(r.Selected, 10) }},
	{Name: "sent", Value: func(r replayRunView) string { return strconv.FormatInt(r.Sent, 10) }},
	{Name: "quarantined", Value: func(r replayRunView) string { return strconv.FormatInt(r.Quarantined, 10) }},
	{Name: "skipped", Value: func(r replayRunView) string { return strconv.FormatInt(r.Skipped, 10) }},
	{Name: "reason", Value: func(r replayRunView) string { return r.Reason }},
}

func replayRunsRun(ctx context.Context, opts *ReplayRunsOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Status: opts.Status, Limit: opts.Limit})
	if err != nil {
		return err
	}
	views := make([]replayRunView, len(runs))
	for i, r := range runs {
		views[i] = replayViewOf(r)
	}
	return output.List(p, views, replayRunColumns, "no replay runs in the journal")
}
