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
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayRunsRun(cmd.Context(), opts)
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

func replayRunsRun(ctx context.Context, opts *ReplayRunsOptions) error {
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	st, err := opts.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Status: opts.Status, Limit: opts.Limit})
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	views := make([]replayRunView, len(runs))
	for i, r := range runs {
		views[i] = replayViewOf(r)
	}
	return output.List(p, views, replayRunColumns, "no replay runs in the journal")
}

// ReplayShowOptions are the inputs of `replay show`.
type ReplayShowOptions struct {
	replayDeps
	RunID string
}

// NewCmdReplayShow builds `replay show RUN`.
func NewCmdReplayShow(f *cmdutil.Factory, runF func(context.Context, *ReplayShowOptions) error) *cobra.Command {
	opts := &ReplayShowOptions{replayDeps: newReplayDeps(f)}
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
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayShowRun(cmd.Context(), opts)
		},
	}
	return cmd
}

// replayRunDetail is what `replay show` prints.
type replayRunDetail struct {
	replayRunView
	Checkpoints []replayCheckpointView `json:"checkpoints"`
	Targets     []dedup.TargetCount    `json:"targets"`
}

type replayCheckpointView struct {
	dedup.ReplayCheckpoint
	// Remaining is how many offsets after the checkpoint are left to read.
	Remaining int64 `json:"remaining"`
}

func replayShowRun(ctx context.Context, opts *ReplayShowOptions) error {
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	st, err := opts.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	run, cps, err := st.ReplayRun(ctx, opts.RunID)
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	targets, err := st.ReplayTargetCounts(ctx, opts.RunID)
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	d := replayRunDetail{replayRunView: replayViewOf(run), Targets: targets, Checkpoints: make([]replayCheckpointView, len(cps))}
	for i, c := range cps {
		d.Checkpoints[i] = replayCheckpointView{ReplayCheckpoint: c, Remaining: max(0, c.End-c.AckedThrough)}
	}
	return p.Object(d, replayRunSections(p, d))
}

func replayRunSections(p *output.Printer, d replayRunDetail) []output.Section {
	st := p.Styles
	status := d.Status
	switch d.Status {
	case dedup.RunCompleted:
		status = st.OK.Render(status)
	case dedup.RunFailed:
		status = st.Bad.Render(status)
	case dedup.RunInterrupted, dedup.RunRunning:
		status = st.Warn.Render(status)
	}
	head := output.Section{Title: "Replay run " + d.ID, Fields: [][2]string{
		{"status", status},
		{"operator", d.Operator},
		{"reason", d.Reason},
		{"source", strings.Join(d.Sources, ", ")},
		{"target", d.Target},
		{"selected", strconv.FormatInt(d.Selected, 10)},
		{"sent", strconv.FormatInt(d.Sent, 10)},
		{"quarantined", strconv.FormatInt(d.Quarantined, 10)},
		{"skipped", strconv.FormatInt(d.Skipped, 10)},
		{"created", cmdutil.FormatTime(d.CreatedAt)},
		{"updated", cmdutil.FormatTime(d.UpdatedAt)},
	}}
	if d.FinishedAt != nil {
		head.Fields = append(head.Fields, [2]string{"finished", cmdutil.FormatTime(*d.FinishedAt)})
	}
	if d.Owner != "" {
		head.Fields = append(head.Fields, [2]string{"process", d.Owner})
	}
	if d.Error != "" {
		head.Fields = append(head.Fields, [2]string{"error", st.Bad.Render(d.Error)})
	}
	head.Fields = append(head.Fields, [2]string{"selection", string(d.replayRunView.Selection)})
	cps := output.Section{Title: "Checkpoints", Header: []string{"topic", "partition", "start", "end", "acked through", "remaining"}}
	for _, c := range d.Checkpoints {
		start, end, acked := strconv.FormatInt(c.Start, 10), strconv.FormatInt(c.End, 10), strconv.FormatInt(c.AckedThrough, 10)
		if c.End < c.Start {
			start, end = "-", "-"
		}
		if c.AckedThrough < c.Start {
			acked = "-"
		}
		cps.Rows = append(cps.Rows, []string{c.Topic, strconv.Itoa(int(c.Partition)), start, end, acked, strconv.FormatInt(c.Remaining, 10)})
	}
	targets := output.Section{Title: "Sent, per target", Header: []string{"topic", "partition", "records"}}
	for _, t := range d.Targets {
		targets.Rows = append(targets.Rows, []string{t.Topic, strconv.Itoa(int(t.Partition)), strconv.FormatInt(t.Records, 10)})
	}
	return []output.Section{head, cps, targets}
}
