package replay

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
)

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
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, replayShowRun)
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

func replayShowRun(ctx context.Context, opts *ReplayShowOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	run, cps, err := st.ReplayRun(ctx, opts.RunID)
	if err != nil {
		return err
	}
	targets, err := st.ReplayTargetCounts(ctx, opts.RunID)
	if err != nil {
		return err
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
	sections := []output.Section{head}
	// The journaled selection, as its plan printed it; as it is written when it is not a
	// replay spec (a run of another version).
	var spec replay.Spec
	if err := json.Unmarshal(d.replayRunView.Selection, &spec); err == nil && spec.From != "" {
		sections = append(sections, replaySelectionSection(spec.Selection(), spec.Filters()))
	} else {
		head.Fields = append(head.Fields, [2]string{"selection", string(d.replayRunView.Selection)})
		sections[0] = head
	}
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
	return append(sections, cps, targets)
}
