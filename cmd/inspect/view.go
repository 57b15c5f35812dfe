package inspect

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
	"github.com/fieldwork/fieldwork/internal/wording"
)

func aggregateSections(p *output.Printer, rep *inspect.AggregateReport) []output.Section {
	st := p.Styles
	parts := cmdutil.JoinInt32(rep.Partitions)
	if len(rep.Partitions) > 1 {
		parts = st.Bad.Render(parts + " (spread over several partitions: broken partition key)")
	} else if parts == "" {
		parts = "-"
	}
	n := rep.Counts
	var cont []string
	cont = append(cont, st.OK.Render(fmt.Sprintf("%d ok", n.OK)))
	for _, c := range []struct {
		n     int
		label string
		bad   bool
	}{
		{n.Gaps, "gaps", true},
		{n.Regressions, "regressions", true},
		{n.Duplicates, "duplicates", n.ConflictingDuplicates > 0},
		{n.Unversioned, "unversioned", false},
	} {
		s := fmt.Sprintf("%d %s", c.n, c.label)
		if c.label == "duplicates" && n.ConflictingDuplicates > 0 {
			s += fmt.Sprintf(" (%d conflicting)", n.ConflictingDuplicates)
		}
		switch {
		case c.n == 0:
		case c.bad:
			s = st.Bad.Render(s)
		default:
			s = st.Warn.Render(s)
		}
		cont = append(cont, s)
	}
	malformed := strconv.FormatInt(rep.MalformedSkipped, 10)
	if rep.MalformedSkipped > 0 {
		malformed = st.Warn.Render(malformed)
	}
	overview := output.Section{Title: fmt.Sprintf("Aggregate %s in %s", rep.AggregateID, rep.Topic), Fields: [][2]string{
		{"events", strconv.Itoa(len(rep.Events))},
		{"partitions", parts},
		{"continuity", strings.Join(cont, ", ")},
		{"records scanned", strconv.FormatInt(rep.RecordsScanned, 10)},
		{"malformed skipped", malformed},
	}}
	// On a narrow terminal the type and the time tell the events apart (completed and
	// reopened must not read alike): they stay whole; the partition (the overview names it:
	// an aggregate's key puts its events in one) and the event id go first.
	events := output.Section{Title: "Events in offset order", Header: []string{"partition", "offset", "timestamp", "version", "type", "event id", "continuity", "note"},
		Keep: []string{"timestamp", "type"}, WideOnly: []string{"partition", "event id"}}
	for _, e := range rep.Events {
		version := "-"
		if e.Version != nil {
			version = strconv.FormatInt(*e.Version, 10)
		}
		note := e.Note
		if e.MatchedBy == "key" {
			note = strings.TrimPrefix(note+"; matched by key only", "; ")
		}
		events.Rows = append(events.Rows, []string{
			strconv.Itoa(int(e.Partition)), strconv.FormatInt(e.Offset, 10), cmdutil.FormatTime(e.Timestamp), version,
			cmdutil.OrDash(e.Type), e.EventID, continuityDisplay(p, e), note,
		})
	}
	sections := []output.Section{overview, events}
	if len(rep.MalformedWithKey) > 0 {
		sections = append(sections, cmdutil.MalformedRecordsSection("Malformed records keyed "+rep.AggregateID, p, rep.MalformedWithKey))
	}
	return sections
}

func continuityDisplay(p *output.Printer, e inspect.AggregateEvent) string {
	switch e.Continuity {
	case inspect.ContinuityOK:
		return p.Styles.OK.Render(e.Continuity)
	case inspect.ContinuityDuplicate:
		if e.SameEventID != nil && *e.SameEventID && e.SamePayload != nil && *e.SamePayload {
			return p.Styles.Warn.Render(e.Continuity)
		}
		return p.Styles.Bad.Render(e.Continuity)
	case inspect.ContinuityUnversioned:
		return p.Styles.Warn.Render(e.Continuity)
	}
	return p.Styles.Bad.Render(e.Continuity)
}

func topicSections(p *output.Printer, rep *inspect.TopicReport) []output.Section {
	st := p.Styles
	records := strconv.FormatInt(rep.Totals.Records, 10)
	if strings.Contains(rep.Retention.CleanupPolicy, "compact") {
		// A compacted topic keeps the newest record of each key: the offsets between log start
		// and high watermark count the records it had, not those it has.
		records = "at most " + records + st.Dim.Render(" (offsets: compaction removes records and keeps their offsets)")
	}
	overview := output.Section{Title: "Topic " + rep.Topic, Fields: [][2]string{
		{"partitions", strconv.Itoa(rep.Totals.Partitions)},
		{"records", records},
	}}
	for _, c := range rep.Configs {
		overview.Fields = append(overview.Fields, [2]string{c.Name, configDisplay(c) + st.Dim.Render(" ("+c.Source+")")})
	}
	overview.Fields = append(overview.Fields, [2]string{"retention", retentionDisplay(st, rep.Retention)})

	// On a narrow terminal the last stable offset (the high watermark's twin without open
	// transactions) goes first, so that every header stays whole.
	parts := output.Section{Title: "Partitions", Header: []string{"partition", "leader", "replicas", "isr", "log start", "last stable", "high watermark", "records"},
		WideOnly: []string{"last stable"}}
	for _, pi := range rep.Partitions {
		leader := strconv.Itoa(int(pi.Leader))
		if pi.Leader < 0 {
			leader = st.Bad.Render("none")
		}
		isr := cmdutil.JoinInt32(pi.ISR)
		if len(pi.ISR) < len(pi.Replicas) {
			isr = st.Warn.Render(isr)
		}
		lso := strconv.FormatInt(pi.LastStable, 10)
		if pi.LastStable < pi.HighWatermark {
			lso = st.Warn.Render(lso + " (open transaction)")
		}
		parts.Rows = append(parts.Rows, []string{
			strconv.Itoa(int(pi.Partition)), leader, cmdutil.JoinInt32(pi.Replicas), isr,
			strconv.FormatInt(pi.LogStart, 10), lso, strconv.FormatInt(pi.HighWatermark, 10), strconv.FormatInt(pi.Records, 10),
		})
	}

	sections := []output.Section{overview, parts}
	if rep.Sample.PerPartition > 0 {
		formats := output.Section{
			Title:  fmt.Sprintf("Envelope formats (newest %d records per partition: %d sampled)", rep.Sample.PerPartition, rep.Sample.Records),
			Header: []string{"format", "records"},
		}
		for _, fc := range rep.Sample.Formats {
			name, n := fc.Format, strconv.FormatInt(fc.Count, 10)
			if fc.Format == inspect.FormatMalformed {
				name, n = st.Bad.Render(name), st.Bad.Render(n)
			}
			formats.Rows = append(formats.Rows, []string{name, n})
		}
		sections = append(sections, formats)
		if len(rep.Sample.Malformed) > 0 {
			sections = append(sections, cmdutil.MalformedRecordsSection("Malformed records in the sample", p, rep.Sample.Malformed))
		}
		if ps := rep.Sample.Partitioners; ps.Keyed > 0 || ps.Replayed > 0 {
			sections = append(sections, partitionersSection(ps, rep.Totals.Partitions))
		}
	}

	groups := output.Section{Title: "Consumer groups", Header: []string{"group", "type", "state", "partition", "committed", "lag"}}
	for _, g := range rep.Groups {
		for _, gp := range g.Partitions {
			lag := strconv.FormatInt(gp.Lag, 10)
			switch {
			case gp.Lag > 0:
				lag = st.Warn.Render(lag)
			case gp.Lag < 0:
				lag = st.Dim.Render("not reported")
			}
			at := strconv.FormatInt(gp.Committed, 10)
			if gp.StartOffset != nil {
				at = "start " + strconv.FormatInt(*gp.StartOffset, 10)
			}
			groups.Rows = append(groups.Rows, []string{g.Group, cmdutil.OrDash(g.Type), g.State, strconv.Itoa(int(gp.Partition)), at, lag})
		}
	}
	if rep.GroupsError != "" {
		groups.Header, groups.Text = nil, st.Warn.Render("cannot list consumer groups: "+rep.GroupsError)
	}
	return append(sections, groups)
}

// retentionDisplay says what the retention configs mean: how long a record stays at least,
// forever and why, or unknown and why (the configs could not be read or do not say).
func retentionDisplay(st output.Styles, r kafka.Retention) string {
	switch r.State {
	case kafka.RetentionKnown:
		return r.Describe()
	case kafka.RetentionForever:
		return "forever" + st.Dim.Render(" ("+r.Why+")")
	}
	return st.Warn.Render("unknown: " + r.Why)
}

// configDisplay adds a reading aid to retention values: -1 is forever/unlimited, milliseconds
// get a duration.
func configDisplay(c inspect.ConfigValue) string {
	n, err := strconv.ParseInt(c.Value, 10, 64)
	if err != nil {
		return c.Value
	}
	switch c.Name {
	case "retention.ms":
		if n < 0 {
			return c.Value + " (forever)"
		}
		return c.Value + " (" + timespec.Format(time.Duration(n)*time.Millisecond) + ")"
	case "retention.bytes":
		if n < 0 {
			return c.Value + " (unlimited)"
		}
	}
	return c.Value
}

var findingColumns = []output.Column[inspect.Finding]{
	{Name: "kind", Value: func(f inspect.Finding) string { return f.Kind }},
	{Name: "partition", Value: func(f inspect.Finding) string { return strconv.Itoa(int(f.Partition)) }},
	{Name: "offset", Value: func(f inspect.Finding) string { return strconv.FormatInt(f.Offset, 10) }},
	{Name: "event_id", Value: func(f inspect.Finding) string { return f.EventID }},
	{Name: "aggregate_id", Value: func(f inspect.Finding) string { return f.AggregateID }},
	{Name: "version", Value: func(f inspect.Finding) string {
		if f.Version == nil {
			return ""
		}
		return strconv.FormatInt(*f.Version, 10)
	}},
	{Name: "message", Value: func(f inspect.Finding) string { return f.Message }},
}

func validateSections(p *output.Printer, rep *inspect.ValidateReport) []output.Section {
	st := p.Styles
	result := st.OK.Render("clean")
	if !rep.Clean() {
		result = st.Bad.Render(wording.Plural(rep.Problems, "problem"))
	}
	overview := output.Section{Title: "Validate " + rep.Topic, Fields: [][2]string{
		{"result", result},
		{"offsets read", kafka.RangesText(rep.Ranges)},
		{"records scanned", strconv.FormatInt(rep.RecordsScanned, 10)},
		{"events", strconv.FormatInt(rep.Events, 10)},
		{"aggregates", strconv.FormatInt(rep.Aggregates, 10)},
		{"redeliveries", strconv.FormatInt(rep.Redeliveries, 10) + st.Dim.Render(" (same id, same payload: ordinary)")},
	}}
	if rep.SpilledToDisk {
		overview.Fields = append(overview.Fields, [2]string{"memory", "fingerprints spilled to temporary files"})
	}
	summary := output.Section{Title: "Summary", Header: []string{"kind", "count", "what"}}
	for _, k := range rep.Summary {
		n := strconv.FormatInt(k.Count, 10)
		kind := k.Kind
		if k.Count > 0 {
			n, kind = st.Bad.Render(n), st.Bad.Render(kind)
		}
		summary.Rows = append(summary.Rows, []string{kind, n, k.Description})
	}
	sections := []output.Section{overview, summary}
	if len(rep.Findings) > 0 {
		findings := output.Section{Title: fmt.Sprintf("Findings (up to %d per kind)", rep.MaxExamples), Header: []string{"kind", "partition", "offset", "detail"}}
		for _, f := range rep.Findings {
			findings.Rows = append(findings.Rows, []string{st.Bad.Render(f.Kind), strconv.Itoa(int(f.Partition)), strconv.FormatInt(f.Offset, 10), f.Message})
		}
		sections = append(sections, findings)
	}
	return sections
}

// partitionersSection says which producers' partitioners the sampled keyed records agree with.
func partitionersSection(ps inspect.PartitionerSample, partitions int) output.Section {
	verdict := "none agrees with every keyed record (several producers, or a custom placement)"
	switch {
	case partitions == 1:
		verdict = "one partition: every partitioner agrees"
	case ps.Keyed == 0:
		verdict = "nothing to tell by"
	case len(ps.Matching) > 0:
		verdict = "agree with " + strings.Join(ps.Matching, ", ")
	}
	sampled := fmt.Sprintf("%d keyed records sampled", ps.Keyed)
	if ps.Replayed > 0 {
		sampled += fmt.Sprintf(", %d a replay wrote left out", ps.Replayed)
	}
	s := output.Section{Title: fmt.Sprintf("Partitioners (%s: %s)", sampled, verdict),
		Header: []string{"partitioner", "producers", "agree"}}
	for _, a := range ps.Agrees {
		s.Rows = append(s.Rows, []string{a.Partitioner, partitionerProducers[a.Partitioner], strconv.FormatInt(a.Agree, 10)})
	}
	return s
}

// partitionerProducers names the clients whose default partitioner each one is.
var partitionerProducers = map[string]string{
	string(kafka.PartitionerMurmur2): "Java client, franz-go",
	string(kafka.PartitionerCRC32):   "librdkafka (confluent-kafka-*, kcat)",
	string(kafka.PartitionerFNV1a):   "sarama",
}
