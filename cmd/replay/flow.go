package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// runFlow runs the one replay flow (replay.Flow, through cmdutil.RunAction) for `replay` and
// `replay resume` as a asks, and renders what it did: progress on stderr while it runs, the
// plan and the question on a terminal when it asks, then the dry run's report or the run's
// summary on stdout and its notices on stderr.
func (d replayDeps) runFlow(ctx context.Context, cl *cmdutil.Clients, plan *replay.Plan, a cmdutil.ActionFlags, o replay.FlowOptions) error {
	p, st := cl.Printer, cl.Store
	fl := &flowView{d: d, from: plan.Spec.From}
	if st != nil {
		fl.table = st.Table()
	}
	v := cmdutil.ActionView[*replay.FlowResult]{Prompt: fl.prompt, Show: fl.show}
	if d.Streams.ErrTTY {
		v.Progress = fl.progress
	}
	out, err := cmdutil.RunAction(ctx, cl, a, replay.Flow(cl.Kafka, st, plan, o), v)
	fl.clear()
	res := out.Plan
	var perr error
	switch {
	case res.Summary != nil:
		perr = p.Object(res.Summary, replaySummarySections(p, res.Summary))
	case !a.Execute && res.Report != nil:
		perr = p.Object(res.Report, replayPlanSections(p, res.Report, false))
	}
	fl.notices(res.Notices)
	if err == nil {
		err = perr
	}
	return err
}

// flowView is the terminal side of one flow.
type flowView struct {
	d replayDeps
	// scan and send are the progress lines of the two stages, nil until the stage starts.
	scan, send *output.Progress
	from       string
	// table is shown above the question: the journal's store.
	table string
	// shown counts the notices already printed (with the question).
	shown int
}

// progress keeps the progress line up to date: the scan's records read, then the send's
// figures. Both are output.Progress lines, redrawn by time whatever the rate.
func (f *flowView) progress(ap action.Progress) {
	fp, _ := ap.Of.(replay.FlowProgress)
	switch fp.Stage {
	case replay.StageScan:
		if f.scan == nil {
			f.scan = output.NewProgress(f.d.Streams, output.ProgressOptions{Label: "planning " + f.from})
		}
		f.scan.Update(fp.Read, fp.Total)
	case replay.StageSend:
		if f.send == nil {
			f.scan.Stop()
			total := max(fp.ToSend, 0) // a single pass is not counted beforehand
			f.send = output.NewProgress(f.d.Streams, output.ProgressOptions{Label: "replaying", Unit: "sent", Total: total})
		}
		pr := fp.Send
		pct := int64(100)
		if fp.Total > 0 {
			pct = min(100, fp.Read*100/fp.Total)
		}
		f.send.Set(pr.Sent)
		f.send.SetNote(fmt.Sprintf("%d quarantined, %d skipped, read %d%%", pr.Counts.Quarantined, pr.Counts.Skipped, pct))
	}
}

// clear ends the progress lines before anything else is written.
func (f *flowView) clear() {
	f.scan.Stop()
	f.send.Stop()
}

// show prints, on a terminal, the plan an executed replay asks about before the question:
// the selection and its filters, the counts, the targets, and the warnings.
func (f *flowView) show(res *replay.FlowResult) error {
	f.clear()
	es := *f.d.Streams
	es.Out, es.OutTTY = es.ErrOut, es.ErrTTY
	ep := output.NewPrinter(&es, output.FormatTable)
	if err := ep.Object(res.Report, replayPlanSections(ep, res.Report, true)); err != nil {
		return err
	}
	fmt.Fprintln(es.ErrOut)
	f.notices(res.Notices)
	return nil
}

// prompt is the question of an executed replay; elsewhere than on a terminal
// cmdutil.ConfirmPrompt refuses it without --yes.
func (f *flowView) prompt(res *replay.FlowResult) cmdutil.Prompt {
	f.clear()
	p := replayConfirmPrompt(res.Report)
	p.Kafka, p.Store = true, f.table
	return p
}

// notices prints the notices not printed yet, one a line on stderr; on a terminal each is
// wrapped to its width, as the prompt they may stand above is (docs/design.md §4.1).
func (f *flowView) notices(ns []replay.Notice) {
	width := 0
	if f.d.Streams.ErrTTY {
		width = f.d.Streams.ErrWidth
	}
	for _, n := range ns[min(f.shown, len(ns)):] {
		for _, line := range output.Wrap(n.String(), width) {
			fmt.Fprintln(f.d.Streams.ErrText(), line)
		}
	}
	f.shown = max(f.shown, len(ns))
}

// replayConfirmPrompt says what will be sent where: the question, completing "refusing to …",
// and the counts per target topic.
func replayConfirmPrompt(rep *replay.Report) cmdutil.Prompt {
	verb := "send"
	if rep.RunID != "" {
		verb = "resume run " + rep.RunID + ": send"
	}
	var dests []string
	seen := map[string]int64{}
	var order []string
	for _, t := range rep.Targets {
		if _, ok := seen[t.Topic]; !ok {
			order = append(order, t.Topic)
		}
		seen[t.Topic] += t.Records
	}
	for _, t := range order {
		dests = append(dests, fmt.Sprintf("%d to %s", seen[t], t))
	}
	q := fmt.Sprintf("%s %s from %s (%s)", verb, wording.Plural(rep.Counts.ToSend, "record"), rep.Source, strings.Join(dests, ", "))
	if len(dests) == 0 {
		q = fmt.Sprintf("%s no records from %s", verb, rep.Source)
	}
	var notes []string
	if rep.Counts.Quarantined > 0 {
		notes = append(notes, fmt.Sprintf("%d quarantined", rep.Counts.Quarantined))
	}
	if rep.Counts.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d skipped as processed", rep.Counts.Skipped))
	}
	if rep.Counts.AlreadyReplayed > 0 {
		notes = append(notes, fmt.Sprintf("%d left out: replayed before and settled", rep.Counts.AlreadyReplayed))
	}
	if len(notes) > 0 {
		q += "; " + strings.Join(notes, ", ")
	}
	return cmdutil.Prompt{Question: q, Counts: dests}
}
