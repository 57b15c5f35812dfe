package groups

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
	"github.com/fieldwork/fieldwork/internal/wording"
)

func summaryColumns(p *output.Printer) []output.Column[groups.Summary] {
	return []output.Column[groups.Summary]{
		{Name: "group", Value: func(s groups.Summary) string { return s.Group }},
		{Name: "state", Value: func(s groups.Summary) string { return s.State }},
		{Name: "type", Value: func(s groups.Summary) string { return cmdutil.OrDash(s.Type) }},
		{Name: "members", Value: func(s groups.Summary) string { return strconv.Itoa(s.Members) }},
		{Name: "topics", Value: func(s groups.Summary) string { return cmdutil.OrDash(strings.Join(s.Topics, ",")) }},
		{Name: "total lag", Value: func(s groups.Summary) string {
			if !s.LagKnown {
				return p.Styles.Warn.Render("unknown")
			}
			return lagText(p, s.TotalLag)
		}},
		{Name: "error", Value: func(s groups.Summary) string { return s.Error }, Optional: true},
	}
}

func lagText(p *output.Printer, lag int64) string {
	s := strconv.FormatInt(lag, 10)
	if lag > 0 {
		return p.Styles.Warn.Render(s)
	}
	return s
}

// commitText says whether a commit moved: how long ago, or for how long it was seen still.
func commitText(p *output.Printer, rep *groups.Report, gp groups.Partition) string {
	switch {
	case gp.Committed < 0:
		return p.Styles.Dim.Render("no commit")
	case rep.WatchedMS <= 0 && gp.Lag == 0:
		return "caught up"
	case rep.WatchedMS <= 0:
		return p.Styles.Dim.Render("read once")
	case gp.CommitMoved:
		return "moved " + seconds(gp.UnchangedForMS) + " ago"
	case gp.Lag == 0:
		return "caught up"
	}
	return p.Styles.Bad.Render("stuck: unchanged for ≥ " + seconds(gp.UnchangedForMS))
}

// seconds is ms milliseconds as a duration to the second.
func seconds(ms int64) string {
	return timespec.Format((time.Duration(ms) * time.Millisecond).Round(time.Second))
}

// typeText is a group's type as groups list says it (classic, consumer, share), with the
// protocol its members speak when it is not a consumer's (a Kafka Connect group: classic
// (connect)).
func typeText(typ, protocolType string) string {
	if protocolType != "" && protocolType != "consumer" && protocolType != typ {
		return cmdutil.OrDash(typ) + " (" + protocolType + ")"
	}
	return cmdutil.OrDash(typ)
}

func describeSections(p *output.Printer, rep *groups.Report) []output.Section {
	if rep.Share != nil {
		return shareSections(p, rep)
	}
	st := p.Styles
	watched := "one read"
	if rep.WatchedMS > 0 {
		watched = "commits compared over " + seconds(rep.WatchedMS)
	}
	overview := output.Section{Title: "Consumer group " + rep.Group, Fields: [][2]string{
		{"state", rep.State + st.Dim.Render(rebalancing(rep.State))},
		{"type", typeText(rep.Type, rep.ProtocolType)},
		{"assignor", cmdutil.OrDash(rep.Protocol)},
		{"coordinator", strconv.Itoa(int(rep.Coordinator))},
		{"members", strconv.Itoa(len(rep.Members))},
		{"total lag", lagText(p, rep.TotalLag)},
		{"read at", cmdutil.FormatTime(rep.ReadAt) + st.Dim.Render(" ("+watched+")")},
	}}
	if stuck := rep.Stuck(); len(stuck) > 0 {
		var at []string
		for _, s := range stuck {
			at = append(at, kafka.RecordAddress{Topic: s.Topic, Partition: s.Partition, Offset: s.Committed}.String())
		}
		overview.Fields = append(overview.Fields, [2]string{"stuck at", st.Bad.Render(strings.Join(at, ", "))})
	}
	members := output.Section{Title: "Members", Header: []string{"client id", "host", "instance id", "assigned", "member id"}, WideOnly: []string{"member id"}}
	for _, m := range rep.Members {
		members.Rows = append(members.Rows, []string{m.ClientID, strings.TrimPrefix(m.Host, "/"), cmdutil.OrDash(m.InstanceID), cmdutil.OrDash(strings.Join(m.Assigned, ",")), m.MemberID})
	}
	parts := output.Section{Title: "Partitions", Header: []string{"topic", "partition", "committed", "log end", "lag", "member", "commit"}}
	for _, gp := range rep.Partitions {
		committed, lag := strconv.FormatInt(gp.Committed, 10), lagText(p, gp.Lag)
		if gp.Committed < 0 {
			committed, lag = "-", "-"
		}
		parts.Rows = append(parts.Rows, []string{gp.Topic, strconv.Itoa(int(gp.Partition)), committed, strconv.FormatInt(gp.LogEnd, 10),
			lag, cmdutil.OrDash(gp.Member), commitText(p, rep, gp)})
	}
	return []output.Section{overview, members, parts}
}

func membersSection(p *output.Printer, group string, ms []groups.Member) output.Section {
	s := output.Section{Title: fmt.Sprintf("Active members of %s (stop them first)", group), Header: []string{"client id", "host", "instance id", "assigned"}}
	for _, m := range ms {
		s.Rows = append(s.Rows, []string{p.Styles.Bad.Render(m.ClientID), strings.TrimPrefix(m.Host, "/"), cmdutil.OrDash(m.InstanceID), cmdutil.OrDash(strings.Join(m.Assigned, ","))})
	}
	return s
}

func skipPlanSections(p *output.Printer, plan *groups.SkipPlan, dryRun bool) []output.Section {
	st := p.Styles
	title := "Skip plan"
	if dryRun {
		title += " (dry run: nothing is parked or committed)"
	}
	at, parks := [2]string{"stuck at", plan.Address().String()},
		wording.Plural(plan.Offsets, "offset")+" to "+plan.DeadLetterTopic+st.Dim.Render(" (reason parked)")
	if plan.Offsets == 0 {
		// The commit is at the target already: nothing to park, no record to show.
		at[0], parks = "committed", "nothing"+st.Dim.Render(" (the group is there already: nothing to do)")
	}
	over := output.Section{Title: title, Fields: [][2]string{
		{"group", plan.Group + st.Dim.Render(" ("+plan.State+")")},
		at,
		{"new offset", strconv.FormatInt(plan.NewOffset, 10)},
		{"parks", parks},
		{"log end", strconv.FormatInt(plan.LogEnd, 10)},
	}}
	over.Fields = append(over.Fields, cmdutil.ReasonField(plan.Reason)...)
	sections := []output.Section{over}
	if plan.Offsets == 0 {
		return sections
	}
	if len(plan.Members) > 0 {
		sections = append(sections, membersSection(p, plan.Group, plan.Members))
	}
	if plan.Record != nil {
		sections = append(sections, cmdutil.RecordSections(p, plan.Record)...)
	} else {
		sections = append(sections, output.Section{Title: "Record " + plan.Address().String(), Text: st.Dim.Render("no readable record at this offset (compacted, aborted or a transaction marker)")})
	}
	return sections
}

func skipResultSections(p *output.Printer, res *groups.SkipResult) []output.Section {
	plan := res.Plan
	var dls []string
	for _, a := range res.DeadLetters {
		dls = append(dls, a.String())
	}
	if int64(len(dls)) < res.Parked {
		dls = append(dls, fmt.Sprintf("… %d more", res.Parked-int64(len(dls))))
	}
	return []output.Section{{Title: "Skipped", Fields: [][2]string{
		{"run", res.ID},
		{"group", plan.Group},
		{"offset", fmt.Sprintf("%s/%d: %d → %d", plan.Topic, plan.Partition, plan.Committed, plan.NewOffset)},
		{"parked", wording.Plural(res.Parked, "record") + " in " + plan.DeadLetterTopic},
		{"dead letters", cmdutil.OrDash(strings.Join(dls, ", "))},
		{"operator", res.Operator},
		{"reason", res.Reason},
		{"undo", "fieldwork groups skip --undo " + res.ID},
	}}}
}

// moveText is one partition's move, "orders/3: 7 → 12": its topic the move's, else the
// action's (a skip's moves name none).
func moveText(topic string, m groups.PartitionMove) string {
	return fmt.Sprintf("%s/%d: %s → %s", cmp.Or(m.Topic, topic), m.Partition, groups.OffsetText(m.OldOffset), groups.OffsetText(m.NewOffset))
}

func movesText(topic string, moves []groups.PartitionMove) string {
	var s []string
	for _, m := range moves {
		s = append(s, moveText(topic, m))
	}
	return strings.Join(s, ", ")
}

func undoPlanSections(p *output.Printer, plan *groups.UndoPlan, dryRun bool) []output.Section {
	title := "Undo plan"
	if dryRun {
		title += " (dry run: nothing is committed)"
	}
	a := plan.Undone
	over := output.Section{Title: title, Fields: [][2]string{
		{a.Action, a.ID + p.Styles.Dim.Render(" (by "+a.Operator+" at "+cmdutil.FormatTime(a.At)+": "+a.Reason+")")},
		{"group", a.Group + p.Styles.Dim.Render(" ("+plan.State+")")},
		{"offsets", movesText(a.Topic, plan.Moves)},
	}}
	if a.Action == dedup.ActionSkip {
		over.Fields = append(over.Fields, [2]string{"parked", wording.Plural(a.Parked, "record") + " stay in " + a.DeadLetterTopic + p.Styles.Dim.Render(" (the group reads them again from "+a.Topic+")")})
	}
	over.Fields = append(over.Fields, cmdutil.ReasonField(plan.Reason)...)
	sections := []output.Section{over}
	if len(plan.Members) > 0 {
		sections = append(sections, membersSection(p, a.Group, plan.Members))
	}
	return sections
}

func undoResultSections(_ *output.Printer, res *groups.UndoResult) []output.Section {
	return []output.Section{{Title: "Undone", Fields: [][2]string{
		{"run", res.ID},
		{"undoes", res.Undoes},
		{"group", res.Group},
		{"offsets", movesText(res.Topic, res.Moves)},
		{"operator", res.Operator},
		{"reason", res.Reason},
	}}}
}

var groupActionColumns = []output.Column[dedup.GroupAction]{
	{Name: "run id", Value: func(a dedup.GroupAction) string { return a.ID }},
	{Name: "at", Value: func(a dedup.GroupAction) string { return cmdutil.FormatTime(a.At) }},
	{Name: "action", Value: func(a dedup.GroupAction) string { return a.Action }},
	{Name: "group", Value: func(a dedup.GroupAction) string { return a.Group }},
	{Name: "offsets", Value: func(a dedup.GroupAction) string {
		var moves []groups.PartitionMove
		if json.Unmarshal([]byte(a.Offsets), &moves) != nil {
			return string(a.Offsets)
		}
		return movesText(a.Topic, moves)
	}},
	{Name: "parked", Value: func(a dedup.GroupAction) string { return strconv.FormatInt(a.Parked, 10) }},
	{Name: "dead-letter topic", Value: func(a dedup.GroupAction) string { return a.DeadLetterTopic }, WideOnly: true},
	{Name: "operator", Value: func(a dedup.GroupAction) string { return a.Operator }},
	{Name: "reason", Value: func(a dedup.GroupAction) string { return a.Reason }},
	{Name: "undone by", Value: func(a dedup.GroupAction) string { return a.UndoneBy }, Optional: true},
	{Name: "undoes", Value: func(a dedup.GroupAction) string { return a.Undoes }, Optional: true},
}

// targetText is where a reset moves the commits, in words: "to earliest", "to offset 5",
// "to 2026-12-01T10:00:00Z", "by -3".
func targetText(t groups.ResetTarget) string {
	switch {
	case t.Offset != nil:
		return fmt.Sprintf("to offset %d", *t.Offset)
	case t.Time != nil:
		return "to " + cmdutil.FormatTime(*t.Time)
	case t.Shift != nil:
		return fmt.Sprintf("by %+d", *t.Shift)
	}
	return "to " + t.To
}

func resetPlanSections(p *output.Printer, plan *groups.ResetPlan, dryRun bool) []output.Section {
	st := p.Styles
	title := "Reset plan"
	if dryRun {
		title += " (dry run: nothing is committed)"
	}
	changes := fmt.Sprintf("%d of %s", plan.Changes, wording.Plural(int64(len(plan.Partitions)), "partition"))
	if plan.Changes == 0 {
		changes += st.Dim.Render(" (the group is there already: nothing to do)")
	}
	state, committedCol := plan.State, "committed"
	if plan.Type == groups.TypeShare {
		// A share group has start offsets, not commits; a reset forgets its records in flight.
		state, committedCol = plan.State+", share group: start offsets; records in flight are forgotten", "start"
	}
	over := output.Section{Title: title, Fields: [][2]string{
		{"group", plan.Group + st.Dim.Render(" ("+state+")")},
		{"target", targetText(plan.Target)},
		{"moves", changes},
	}}
	if plan.Clamped > 0 {
		over.Fields = append(over.Fields, [2]string{"clamped", st.Warn.Render(wording.Plural(int64(plan.Clamped), "partition")) +
			st.Dim.Render(" (the target lay outside: moved to the log start or end)")})
	}
	over.Fields = append(over.Fields, cmdutil.ReasonField(plan.Reason)...)
	parts := output.Section{Title: "Partitions", Header: []string{"topic", "partition", committedCol, "new", "delta", "clamped", "log start", "log end"}}
	for _, rp := range plan.Partitions {
		committed, delta := st.Dim.Render("none"), "-"
		if rp.Committed != nil {
			committed = strconv.FormatInt(*rp.Committed, 10)
		}
		if rp.Delta != nil {
			delta = strconv.FormatInt(*rp.Delta, 10)
			if *rp.Delta > 0 {
				delta = "+" + delta
			}
		}
		clamped := "-"
		if rp.Clamped {
			clamped = st.Warn.Render("clamped")
		}
		parts.Rows = append(parts.Rows, []string{rp.Topic, strconv.Itoa(int(rp.Partition)), committed, strconv.FormatInt(rp.NewOffset, 10),
			delta, clamped, strconv.FormatInt(rp.LogStart, 10), strconv.FormatInt(rp.LogEnd, 10)})
	}
	sections := []output.Section{over, parts}
	if len(plan.Members) > 0 {
		sections = append(sections, membersSection(p, plan.Group, plan.Members))
	}
	return sections
}

func resetResultSections(_ *output.Printer, res *groups.ResetResult) []output.Section {
	plan := res.Plan
	var moves []string
	for _, rp := range plan.Partitions {
		if rp.Moves() {
			moves = append(moves, fmt.Sprintf("%s/%d: %s → %d", rp.Topic, rp.Partition, groups.OffsetText(rp.Committed), rp.NewOffset))
		}
	}
	return []output.Section{{Title: "Reset", Fields: [][2]string{
		{"run", res.ID},
		{"group", plan.Group},
		{"target", targetText(plan.Target)},
		{"offsets", strings.Join(moves, ", ")},
		{"operator", res.Operator},
		{"reason", res.Reason},
		{"undo", "fieldwork groups reset --undo " + res.ID},
	}}}
}

// rebalancing is what a classic group's rebalancing state means for whoever waits on it ("" for
// the other states): the members that have not rejoined hold it up, a killed one until its
// session times out.
func rebalancing(state string) string {
	switch state {
	case "PreparingRebalance":
		return " (waiting for every member to rejoin: a member killed without leaving holds the group until its session times out)"
	case "CompletingRebalance":
		return " (waiting for the leader's assignment)"
	}
	return ""
}

// shareSections are a share group's report: its members, its start offsets and the broker's
// lag per partition, what the admin API does not say, and its dead-letter path.
func shareSections(p *output.Printer, rep *groups.Report) []output.Section {
	overview := output.Section{Title: "Share group " + rep.Group, Fields: [][2]string{
		{"state", rep.State},
		{"assignor", cmdutil.OrDash(rep.Protocol)},
		{"coordinator", strconv.Itoa(int(rep.Coordinator))},
		{"members", strconv.Itoa(len(rep.Members))},
		{"total lag", lagText(p, rep.TotalLag)},
		{"delivery limit", strconv.Itoa(rep.Share.DeadLetters.DeliveryLimit)},
		{"read at", cmdutil.FormatTime(rep.ReadAt)},
	}}
	members := output.Section{Title: "Members", Header: []string{"client id", "host", "assigned", "member id"}, WideOnly: []string{"member id"}}
	for _, m := range rep.Members {
		members.Rows = append(members.Rows, []string{m.ClientID, strings.TrimPrefix(m.Host, "/"), cmdutil.OrDash(strings.Join(m.Assigned, ",")), m.MemberID})
	}
	parts := output.Section{Title: "Partitions", Header: []string{"topic", "partition", "start offset", "log end", "lag", "members"}}
	for _, sp := range rep.Share.Partitions {
		start, lag := strconv.FormatInt(sp.StartOffset, 10), lagText(p, sp.Lag)
		if sp.StartOffset < 0 {
			start = p.Styles.Dim.Render("not started")
		}
		if sp.Lag < 0 {
			lag = p.Styles.Dim.Render("not reported")
		}
		parts.Rows = append(parts.Rows, []string{sp.Topic, strconv.Itoa(int(sp.Partition)), start, strconv.FormatInt(sp.LogEnd, 10), lag, cmdutil.OrDash(strings.Join(sp.Members, ", "))})
	}
	unreported := output.Section{Title: "Not reported", Text: p.Styles.Dim.Render(rep.Share.NotReported)}
	return append([]output.Section{overview, members, parts, unreported}, deadLetterSections(p, rep.Share.DeadLetters)...)
}

// deadLetterSections are the check of a share group's dead-letter path: the verdict, then each
// rule and what it found.
func deadLetterSections(p *output.Printer, dl *groups.DeadLetterPath) []output.Section {
	st := p.Styles
	verdict := st.OK.Render(dl.Verdict)
	switch {
	case dl.Lost:
		verdict = st.Bad.Render(dl.Verdict)
	case slices.ContainsFunc(dl.Findings, func(f groups.Finding) bool { return f.Severity == groups.SeverityWarning }):
		verdict = st.Warn.Render(dl.Verdict)
	}
	s := output.Section{Title: "Dead-letter path of " + dl.Group, Fields: [][2]string{
		{"verdict", verdict},
		{"DLQ topic", cmdutil.OrDash(dl.DLQTopic)},
		{"copy record", strconv.FormatBool(dl.CopyRecord)},
	}}
	rules := output.Section{Title: "Rules", Header: []string{"rule", "finding", "detail"}}
	for _, f := range dl.Findings {
		sev := f.Severity
		switch f.Severity {
		case groups.SeverityLoss:
			sev = st.Bad.Render(sev)
		case groups.SeverityWarning:
			sev = st.Warn.Render(sev)
		}
		rules.Rows = append(rules.Rows, []string{f.Rule, sev, f.Message})
	}
	return []output.Section{s, rules}
}
