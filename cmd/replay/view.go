package replay

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// replayTableRows bounds the quarantined records and problems a table lists (JSON lists them
// all, up to the report's own bound).
const replayTableRows = 20

func replayPartitionLabel(p int32) string {
	if p < 0 {
		return "by partitioner"
	}
	return strconv.Itoa(int(p))
}

// replayPlanSections render a scan's report: a dry run's, or (check) the plan a confirmation
// question is about, without the sample.
func replayPlanSections(p *output.Printer, rep *replay.Report, check bool) []output.Section {
	return planSections(p, rep, check, "(warnings on stderr; --strict refuses)")
}

// planSections is replayPlanSections with what the guards line says of where their
// warnings are (stderr for the command, below the plan in the console).
func planSections(p *output.Printer, rep *replay.Report, check bool, guardsNote string) []output.Section {
	st := p.Styles
	title := "Replay plan (dry run: nothing is sent)"
	if check {
		title = "Replay plan"
	}
	head := output.Section{Title: title, Fields: [][2]string{
		{"source", rep.Source},
		{"target", rep.Target},
		{"partitions", replayPlacement(rep.ToPartition, rep.Partitioner)},
	}}
	head.Fields = append(head.Fields, partitionerFields(rep.PartitionerChoices)...)
	head.Fields = append(head.Fields, [2]string{"max replays", strconv.Itoa(rep.MaxReplays)})
	if rep.RunID != "" {
		head.Title = "Resume plan of run " + rep.RunID
	}
	c := rep.Counts
	head.Fields = append(head.Fields,
		[2]string{"read", strconv.FormatInt(c.Read, 10)},
		[2]string{"selected", strconv.FormatInt(c.Selected, 10)},
		[2]string{"to send", strconv.FormatInt(c.ToSend, 10)},
	)
	q := strconv.FormatInt(c.Quarantined, 10)
	if c.Quarantined > 0 {
		q = st.Warn.Render(q)
	}
	head.Fields = append(head.Fields, [2]string{"quarantined", q}, [2]string{"skipped", strconv.FormatInt(c.Skipped, 10)})
	if c.Incomplete > 0 {
		head.Fields = append(head.Fields, [2]string{"incomplete", st.Warn.Render(strconv.FormatInt(c.Incomplete, 10)) + " (" + incompleteLabel(c.Incomplete-c.OriginalGone, c.OriginalGone) + ")"})
	}
	if c.AlreadySent > 0 {
		head.Fields = append(head.Fields, [2]string{"already sent", strconv.FormatInt(c.AlreadySent, 10)})
	}
	if rb := rep.ReplayedBefore; rb.Records > 0 {
		head.Fields = append(head.Fields, [2]string{"replayed before", replayedBeforeLabel(st, rb, rep.Filters.IncludeReplayed)})
	}
	if rep.LostOffsets > 0 {
		head.Fields = append(head.Fields, [2]string{"lost to retention", st.Warn.Render(strconv.FormatInt(rep.LostOffsets, 10))})
	}
	if c.Problems > 0 {
		head.Fields = append(head.Fields, [2]string{"cannot route", st.Bad.Render(strconv.FormatInt(c.Problems, 10))})
	}
	head.Fields = append(head.Fields, [2]string{"for group", replayAimLabel(rep)})
	head.Fields = append(head.Fields, cmdutil.ReasonField(rep.Reason)...)
	if e := rep.Execution; e != nil {
		head.Fields = append(head.Fields, [2]string{"rate", e.RateLabel()})
	}
	if n := len(rep.Guards); n > 0 {
		head.Fields = append(head.Fields, [2]string{"guards", st.Warn.Render(strconv.Itoa(n)) + " " + guardsNote})
	}

	sel := replaySelectionSection(rep.Selection, rep.Filters)

	ranges := output.Section{Title: "Ranges (end offsets fixed now)", Header: []string{"topic", "partition", "start", "last", "offsets"}}
	for _, r := range rep.Ranges {
		start, end := strconv.FormatInt(r.Start, 10), strconv.FormatInt(r.Last, 10)
		if r.Offsets == 0 {
			start, end = "-", "-"
		}
		ranges.Rows = append(ranges.Rows, []string{r.Topic, strconv.Itoa(int(r.Partition)), start, end, strconv.FormatInt(r.Offsets, 10)})
	}

	missing := map[[2]string]bool{}
	for _, m := range rep.Missing {
		missing[[2]string{m.Topic, replayPartitionLabel(m.Partition)}] = true
	}
	targets := output.Section{Title: "Targets", Header: []string{"topic", "partition", "rule", "records"}}
	for _, t := range rep.Targets {
		topic, part := t.Topic, replayPartitionLabel(t.Partition)
		if missing[[2]string{topic, part}] {
			topic = st.Bad.Render(topic + " (does not exist)")
		}
		targets.Rows = append(targets.Rows, []string{topic, part, replayRuleLabel(t.Rule), strconv.FormatInt(t.Records, 10)})
	}
	sections := []output.Section{head, sel, ranges, targets}
	if e := rep.Edit; e != nil {
		s := output.Section{Title: "Edit of " + e.Original + " (only the edited copy is sent, marked fw.replay.edited)", Text: e.Diff}
		if e.Diff == "" {
			s.Text = "value unchanged\n"
		}
		for _, h := range e.Headers {
			s.Text += fmt.Sprintf("header set: %s=%s\n", h.Key, h.Value)
		}
		sections = append(sections, s)
	}
	if s := goneSection(&p.Styles, rep.Incomplete); s != nil {
		sections = append(sections, *s)
	}

	if len(rep.Quarantined) > 0 {
		s := output.Section{Title: fmt.Sprintf("Quarantined (fw.replay.count reached %d)", rep.MaxReplays), Header: []string{"record", "event_id", "replays", "target"}}
		for i, r := range rep.Quarantined {
			if i == replayTableRows {
				s.Rows = append(s.Rows, []string{fmt.Sprintf("… %d more", rep.Counts.Quarantined-int64(i)), "", "", ""})
				break
			}
			s.Rows = append(s.Rows, []string{r.RecordAddress.String(), r.EventID, strconv.Itoa(r.ReplayCount), r.Target})
		}
		sections = append(sections, s)
	}
	if len(rep.Problems) > 0 {
		s := output.Section{Title: "Cannot route"}
		var b strings.Builder
		for i, pr := range rep.Problems {
			if i == replayTableRows {
				fmt.Fprintf(&b, "… %d more\n", rep.Counts.Problems-int64(i))
				break
			}
			b.WriteString(st.Bad.Render(pr) + "\n")
		}
		s.Text = b.String()
		sections = append(sections, s)
	}
	if len(rep.Sample) > 0 && !check {
		s := output.Section{Title: fmt.Sprintf("Sample (first %d selected)", len(rep.Sample)),
			Header:   []string{"record", "outcome", "target", "partition", "key", "event id", "reason", "replays"},
			WideOnly: []string{"partition", "replays"}}
		for _, r := range rep.Sample {
			part := ""
			if r.TargetTopic != "" {
				part = "by partitioner"
				if r.TargetPartition != nil {
					part = strconv.Itoa(int(*r.TargetPartition))
				}
			}
			s.Rows = append(s.Rows, []string{r.RecordAddress.String(), r.Outcome, r.TargetTopic, part, sampleKey(r), r.EventID, r.Reason, strconv.Itoa(r.ReplayCount)})
		}
		sections = append(sections, s)
	}
	return sections
}

// replayedBeforeLabel says how many selected dead letters earlier runs sent, which runs, when,
// their status now, and how many the plan leaves out: "29 by run R at T (10 resolved, 19
// stale); 29 left out: settled (--include-replayed sends them)".
func replayedBeforeLabel(st output.Styles, rb replay.ReplayedBefore, included bool) string {
	var runs []string
	for i, r := range rb.Runs {
		if i == 3 {
			runs = append(runs, fmt.Sprintf("%d more runs", len(rb.Runs)-i))
			break
		}
		var by []string
		for _, s := range dlq.Statuses {
			if n := r.Statuses.Of(s); n > 0 {
				by = append(by, fmt.Sprintf("%d %s", n, s))
			}
		}
		runs = append(runs, fmt.Sprintf("%d by run %s at %s (%s)", r.Records, r.RunID, cmdutil.FormatTime(r.At), strings.Join(by, ", ")))
	}
	out := strings.Join(runs, "; ")
	switch {
	case rb.LeftOut > 0:
		out += "; " + st.Warn.Render(fmt.Sprintf("%d left out", rb.LeftOut)) + ": settled, the consumer handled them (--include-replayed sends them)"
	case included:
		out += "; settled ones sent again (--include-replayed)"
	}
	return out
}

// replayAimLabel says which consumer groups a plan's records are for (fw.replay.for).
func replayAimLabel(rep *replay.Report) string {
	switch {
	case rep.Counts.ToSend == 0 && rep.ForGroup == "" && !rep.AllGroups:
		return "- (nothing to send)"
	case rep.AllGroups:
		return "every group (--all-groups)"
	case rep.ForGroupDefault:
		return rep.ForGroup + " (the group every selected dead letter names)"
	case rep.ForGroup != "":
		return rep.ForGroup
	case len(rep.Groups) > 0:
		return "each dead letter's own group: " + strings.Join(rep.Groups, ", ")
	}
	return "every group (no dead letter names one)"
}

// replaySelectionSection says what a plan selects: the source, the partitions, offsets or
// times, and every filter with its value, as the command line spells it.
func replaySelectionSection(sel replay.SelectionReport, f replay.Filters) output.Section {
	s := output.Section{Title: "Selection", Fields: [][2]string{{"source", sel.Source}}}
	if sel.Record != "" {
		s.Fields = append(s.Fields, [2]string{"record", sel.Record})
	} else if sel.Addresses > 0 || sel.EventIDs > 0 {
		s.Fields = append(s.Fields, [2]string{"named", namedLabel(sel.Addresses, sel.EventIDs)})
	} else {
		parts := "all"
		if len(sel.Partitions) > 0 {
			parts = cmdutil.JoinInt32(sel.Partitions)
		}
		s.Fields = append(s.Fields, [2]string{"partitions", parts})
		offsets := "all"
		switch start, end := sel.StartOffset, sel.EndOffset; {
		case start != nil && end != nil:
			offsets = fmt.Sprintf("%d..%d", *start, *end)
		case start != nil:
			offsets = fmt.Sprintf("from %d", *start)
		case end != nil:
			offsets = fmt.Sprintf("through %d", *end)
		}
		if sel.Since.IsZero() && sel.Until.IsZero() {
			s.Fields = append(s.Fields, [2]string{"offsets", offsets})
		}
		if !sel.Since.IsZero() {
			s.Fields = append(s.Fields, [2]string{"since", cmdutil.FormatTime(sel.Since)})
		}
		if !sel.Until.IsZero() {
			s.Fields = append(s.Fields, [2]string{"until", cmdutil.FormatTime(sel.Until)})
		}
	}
	flags := f.Flags()
	if len(flags) == 0 {
		s.Fields = append(s.Fields, [2]string{"filters", "none"})
	}
	for _, fl := range flags {
		v := fl[1]
		switch {
		case fl[0] == "--skip-processed":
			v = "yes: records whose event --consumer processed are counted, not sent"
		case fl[0] == "--include-replayed":
			v = "yes: settled dead letters an earlier run sent are sent too"
		case v == "":
			v = `""`
		}
		s.Fields = append(s.Fields, [2]string{fl[0], v})
	}
	return s
}

// replaySummarySections render an executed run's summary.
func replaySummarySections(p *output.Printer, sum *replay.Summary) []output.Section {
	st := p.Styles
	status := sum.Status
	switch status {
	case dedup.RunCompleted:
		status = st.OK.Render(status)
	case dedup.RunFailed:
		status = st.Bad.Render(status)
	default:
		status = st.Warn.Render(status)
	}
	title := "Replay run " + sum.RunID
	if sum.Resumed {
		title += " (resumed)"
	}
	c := sum.Counts
	head := output.Section{Title: title, Fields: [][2]string{
		{"status", status},
		{"operator", sum.Operator},
		{"reason", sum.Reason},
		{"source", sum.Source},
		{"target", sum.Target},
	}}
	head.Fields = append(head.Fields, partitionerFields(sum.PartitionerChoices)...)
	if sum.Status == dedup.RunPlanned {
		// Recorded for workers (--workers): they count as they send; the plan above says what
		// they will, and the journal has nothing to count yet.
		head.Fields = append(head.Fields, [2]string{"sent", "none yet (the workers send it)"})
	} else {
		quarantined := strconv.FormatInt(c.Quarantined, 10)
		if c.Quarantined > 0 {
			quarantined = st.Warn.Render(quarantined)
		}
		head.Fields = append(head.Fields,
			[2]string{"selected", strconv.FormatInt(c.Selected, 10)},
			[2]string{"sent", strconv.FormatInt(c.Sent, 10)},
			[2]string{"quarantined", quarantined},
			[2]string{"skipped", strconv.FormatInt(c.Skipped, 10)},
			[2]string{"this attempt", fmt.Sprintf("%d sent in %.1fs (%.0f records/s)", sum.SentNow, float64(sum.ElapsedMS)/1000, sum.RecordsPerSecond)},
		)
	}
	if e := sum.Execution; e != nil {
		head.Fields = append(head.Fields, [2]string{"rate", e.RateLabel()})
	}
	if sum.IncompleteCount > 0 {
		gone := int64(len(goneRefs(sum.Incomplete)))
		head.Fields = append(head.Fields, [2]string{"incomplete", st.Warn.Render(strconv.FormatInt(sum.IncompleteCount, 10)) + " (" + incompleteLabel(sum.IncompleteCount-gone, gone) + ")"})
	}
	if sum.Error != "" {
		head.Fields = append(head.Fields, [2]string{"error", st.Bad.Render(sum.Error)})
	}
	targets := output.Section{Title: "Sent, per target", Header: []string{"topic", "partition", "records"}}
	for _, t := range sum.Targets {
		targets.Rows = append(targets.Rows, []string{t.Topic, strconv.Itoa(int(t.Partition)), strconv.FormatInt(t.Records, 10)})
	}
	sections := []output.Section{head, targets}
	if len(sum.Quarantined) > 0 {
		s := output.Section{Title: "Quarantined", Header: []string{"record", "event_id", "replays", "target"}}
		for i, r := range sum.Quarantined {
			if i == replayTableRows {
				s.Rows = append(s.Rows, []string{fmt.Sprintf("… %d more", len(sum.Quarantined)-i), "", "", ""})
				break
			}
			s.Rows = append(s.Rows, []string{r.RecordAddress.String(), r.EventID, strconv.Itoa(r.ReplayCount), r.Target})
		}
		sections = append(sections, s)
	}
	if s := goneSection(&p.Styles, sum.Incomplete); s != nil {
		sections = append(sections, *s)
	}
	return sections
}

// partitionerFields are the "partitioner" lines of a plan or a run: the choice made for each
// target topic, unless --partitioner made it.
func partitionerFields(choices []replay.PartitionerChoice) [][2]string {
	var out [][2]string
	for _, ch := range choices {
		if ch.By != replay.ByFlag {
			out = append(out, [2]string{"partitioner", ch.String()})
		}
	}
	return out
}

// workerSummarySections render what one worker of a run shared by workers did.
func workerSummarySections(p *output.Printer, sum *replay.WorkerSummary) []output.Section {
	st := p.Styles
	status := st.Warn.Render(sum.Status)
	if sum.Status == dedup.RunCompleted {
		status = st.OK.Render(sum.Status)
	}
	c := sum.Counts
	head := output.Section{Title: "Replay run " + sum.RunID + " (worker " + sum.Worker + ")", Fields: [][2]string{
		{"run status", status},
		{"group", sum.Group},
		{"partitions", partitionList(sum.Partitions)},
		{"assignments", strconv.Itoa(sum.Assignments)},
		{"this worker", fmt.Sprintf("%d sent in %.1fs", sum.SentNow, float64(sum.ElapsedMS)/1000)},
		{"run selected", strconv.FormatInt(c.Selected, 10)},
		{"run sent", strconv.FormatInt(c.Sent, 10)},
		{"run quarantined", strconv.FormatInt(c.Quarantined, 10)},
		{"run skipped", strconv.FormatInt(c.Skipped, 10)},
	}}
	targets := output.Section{Title: "Sent, per target (the run)", Header: []string{"topic", "partition", "records"}}
	for _, t := range sum.Targets {
		targets.Rows = append(targets.Rows, []string{t.Topic, strconv.Itoa(int(t.Partition)), strconv.FormatInt(t.Records, 10)})
	}
	return []output.Section{head, targets}
}

// partitionList is partitions as a line: "0, 2, 5", or "none".
func partitionList(ps []int32) string {
	if len(ps) == 0 {
		return "none"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strconv.Itoa(int(p))
	}
	return strings.Join(out, ", ")
}

var replayRunColumns = []output.Column[dedup.ReplayRun]{
	{Name: "run id", Value: func(r dedup.ReplayRun) string { return r.ID }},
	{Name: "status", Value: func(r dedup.ReplayRun) string { return r.Status }},
	{Name: "created_at", Value: func(r dedup.ReplayRun) string { return cmdutil.FormatTime(r.CreatedAt) }},
	{Name: "operator", Value: func(r dedup.ReplayRun) string { return r.Operator }},
	{Name: "source topics", Value: func(r dedup.ReplayRun) string { return strings.Join(r.Sources, ",") }},
	{Name: "target", Value: func(r dedup.ReplayRun) string { return r.Target }},
	{Name: "selected", Value: func(r dedup.ReplayRun) string { return strconv.FormatInt(r.Selected, 10) }},
	{Name: "sent", Value: func(r dedup.ReplayRun) string { return strconv.FormatInt(r.Sent, 10) }},
	{Name: "quarantined", Value: func(r dedup.ReplayRun) string { return strconv.FormatInt(r.Quarantined, 10) }},
	{Name: "skipped", Value: func(r dedup.ReplayRun) string { return strconv.FormatInt(r.Skipped, 10) }},
	{Name: "reason", Value: func(r dedup.ReplayRun) string { return r.Reason }},
}

// replayRunDetail is what `replay show` prints.
type replayRunDetail struct {
	dedup.ReplayRun
	Checkpoints []replayCheckpointView `json:"checkpoints"`
	Targets     []dedup.TargetCount    `json:"targets"`
}

type replayCheckpointView struct {
	dedup.ReplayCheckpoint
	// Remaining is how many offsets after the checkpoint are left to read.
	Remaining int64 `json:"remaining"`
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
	head.Fields = append(head.Fields, [2]string{"rate", replay.JournaledRateLabel(string(d.Selection))})
	head.Fields = append(head.Fields, partitionerFields(replay.JournaledPartitioners(string(d.Selection)))...)
	sections := []output.Section{head}
	// The journaled selection, as its plan printed it; as it is written when it is not a
	// replay spec (a run of another version).
	var spec replay.Spec
	if err := json.Unmarshal([]byte(d.Selection), &spec); err == nil && spec.From != "" {
		sections = append(sections, replaySelectionSection(spec.SelectionReport(), spec.Filters()))
	} else {
		head.Fields = append(head.Fields, [2]string{"selection", string(d.Selection)})
		sections[0] = head
	}
	shared := len(d.Checkpoints) > 0 && d.Checkpoints[0].Worker != nil
	cps := output.Section{Title: "Checkpoints", Header: []string{"topic", "partition", "start", "last", "acked through", "remaining"}}
	if shared {
		// A run shared by workers: which worker holds each partition, and its counts.
		cps.Header = append(cps.Header, "worker", "selected", "sent", "updated")
		head.Fields = append(head.Fields, [2]string{"workers", fmt.Sprintf("consumer group %s (replay resume %s --worker --execute)", replay.GroupName(d.ID), d.ID)})
		sections[0] = head
	}
	for _, c := range d.Checkpoints {
		start, end, acked := strconv.FormatInt(c.Start, 10), strconv.FormatInt(c.End, 10), strconv.FormatInt(c.AckedThrough, 10)
		if c.End < c.Start {
			start, end = "-", "-"
		}
		if c.AckedThrough < c.Start {
			acked = "-"
		}
		row := []string{c.Topic, strconv.Itoa(int(c.Partition)), start, end, acked, strconv.FormatInt(c.Remaining, 10)}
		if w := c.Worker; shared && w != nil {
			owner := w.Owner
			if owner == "" {
				owner = "-"
			}
			row = append(row, owner, strconv.FormatInt(w.Counts.Selected, 10), strconv.FormatInt(w.Counts.Sent, 10), cmdutil.FormatTime(w.UpdatedAt))
		}
		cps.Rows = append(cps.Rows, row)
	}
	targets := output.Section{Title: "Sent, per target", Header: []string{"topic", "partition", "records"}}
	for _, t := range d.Targets {
		targets.Rows = append(targets.Rows, []string{t.Topic, strconv.Itoa(int(t.Partition)), strconv.FormatInt(t.Records, 10)})
	}
	return append(sections, cps, targets)
}

// sampleKey is a sample record's key in the table: its text, or its base64 flagged. It is
// whole: the table is fitted to the terminal (output.Truncate on its widest cells), and
// --wide, a pipe, CSV and JSON show it all.
func sampleKey(r replay.SampleRecord) string {
	if r.KeyBase64 != nil {
		return cmdutil.KeyDisplay(string(r.KeyBase64))
	}
	return r.Key
}

// replayPlacement says how a plan places records in partitions (--to-partition, --partitioner;
// without either, "inferred": the plan's partitioner rows say from what).
func replayPlacement(mode string, one *string) string {
	partitioner := "inferred"
	if one != nil {
		partitioner = *one
	}
	switch mode {
	case replay.PartitionOriginal:
		return "original"
	case replay.PartitionKey:
		return "by key (" + partitioner + ")"
	case "":
		return "-"
	}
	return "original while the counts match, else by key (" + partitioner + ")"
}

// replayRuleLabel says why a target partition was chosen (replay.TargetCount.Rule).
func replayRuleLabel(rule string) string {
	switch rule {
	case replay.RuleOriginal:
		return "original partition"
	case replay.RuleSpread:
		return "no key: spread"
	case "":
		return "-"
	}
	return "key, " + rule
}

// PlanQuestion is what an executed plan asks, as `replay --execute` asks it: "send 4 records
// from tasks.dlq (4 to tasks)".
func PlanQuestion(rep *replay.Report) string { return replayConfirmPrompt(rep).Question }

// namedLabel says how many records a selection names one by one (--from-file, the console's
// marked records): "3 addresses", "2 event ids", or both.
func namedLabel(addresses, eventIDs int) string {
	var parts []string
	if addresses > 0 {
		parts = append(parts, wording.Count(int64(addresses), "address", "addresses"))
	}
	if eventIDs > 0 {
		parts = append(parts, wording.Plural(int64(eventIDs), "event id"))
	}
	return strings.Join(parts, ", ")
}

// RenderPlan writes a plan as a dry run of `replay` shows it, for `fieldwork triage`'s plan
// screen.
func RenderPlan(p *output.Printer, rep *replay.Report) error {
	return p.Object(rep, planSections(p, rep, false, "(their warnings follow the plan)"))
}

// incompleteLabel says what incomplete records are: bounded copies, dead letters whose
// original record is gone, or both; never sent either way.
func incompleteLabel(bounded, gone int64) string {
	switch {
	case gone == 0:
		return "bounded copies: never sent"
	case bounded == 0:
		return "original record gone: never sent"
	}
	return fmt.Sprintf("%d bounded copies, %d with the original record gone: never sent", bounded, gone)
}

// goneRefs are the records of refs refused because their original record is gone.
func goneRefs(refs []replay.RecordRef) []replay.RecordRef {
	var out []replay.RecordRef
	for _, r := range refs {
		if r.OriginalGone != "" {
			out = append(out, r)
		}
	}
	return out
}

// goneSection lists the dead letters refused because their original record is gone: where
// each one is and why; nil when there is none.
func goneSection(st *output.Styles, refs []replay.RecordRef) *output.Section {
	gone := goneRefs(refs)
	if len(gone) == 0 {
		return nil
	}
	sec := output.Section{Title: fmt.Sprintf("Not sent: original record gone (%d)", len(gone)), Header: []string{"dead letter", "why"}}
	for _, r := range gone {
		sec.Rows = append(sec.Rows, []string{r.RecordAddress.String(), st.Warn.Render(r.OriginalGone)})
	}
	return &sec
}
