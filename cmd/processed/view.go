package processed

import (
	"fmt"
	"strconv"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// getReport is what `processed get` prints.
type getReport struct {
	EventID   string            `json:"event_id"`
	Consumer  string            `json:"consumer,omitempty"`
	Processed bool              `json:"processed"`
	Markers   []dedup.MarkerRow `json:"markers"`
}

// statsReport is what `processed stats` prints.
type statsReport struct {
	Driver    string                `json:"driver"`
	Table     string                `json:"table"`
	Window    string                `json:"window"`
	WindowMS  int64                 `json:"window_ms"`
	Consumers []dedup.ConsumerStats `json:"consumers"`
	// Sizes is null on SQLite.
	Sizes *dedup.Sizes `json:"sizes"`
}

// missingColumns are the columns of a missing record in csv and in the table.
var missingColumns = []output.Column[processed.MissingRecord]{
	{Name: "topic", Value: func(r processed.MissingRecord) string { return r.Topic }},
	{Name: "partition", Value: func(r processed.MissingRecord) string { return strconv.Itoa(int(r.Partition)) }},
	{Name: "offset", Value: func(r processed.MissingRecord) string { return strconv.FormatInt(r.Offset, 10) }},
	{Name: "timestamp", Value: func(r processed.MissingRecord) string { return cmdutil.FormatTime(r.Timestamp) }},
	{Name: "event_id", Value: func(r processed.MissingRecord) string { return r.EventID }},
	{Name: "type", Value: func(r processed.MissingRecord) string { return r.Type }},
	{Name: "aggregate_id", Value: func(r processed.MissingRecord) string { return r.AggregateID }},
}

func checkSections(p *output.Printer, rep *processed.CheckReport) []output.Section {
	st := p.Styles
	result := st.OK.Render("complete: every event has a marker")
	switch {
	case rep.Unreadable && rep.Events == 0:
		result = st.Bad.Render("unreadable: no record could be read as an event")
	case rep.Unreadable:
		result = st.Bad.Render(fmt.Sprintf("unreadable: %d of %d records malformed (more than %s)", rep.Malformed, rep.Records,
			strconv.FormatFloat(rep.MaxMalformedShare, 'f', -1, 64)))
	case rep.Missing > 0:
		result = st.Bad.Render(fmt.Sprintf("%d missing", rep.Missing))
	case rep.Records == 0:
		result = st.Dim.Render("no records in the range")
	}
	missing := strconv.FormatInt(rep.Missing, 10)
	if rep.Missing > 0 {
		missing = st.Bad.Render(missing)
	}
	overview := output.Section{Title: fmt.Sprintf("Check %s for consumer %s", rep.Topic, rep.Consumer), Fields: [][2]string{
		{"result", result},
		{"offsets read", kafka.RangesText(rep.Ranges)},
		{"markers in", rep.Table},
		{"records", strconv.FormatInt(rep.Records, 10)},
		{"events", strconv.FormatInt(rep.Events, 10)},
		{"with marker", strconv.FormatInt(rep.WithMarker, 10)},
		{"missing", missing},
		{"malformed", strconv.FormatInt(rep.Malformed, 10) + st.Dim.Render(" (not recognisable as events: a consumer dead-letters them, never marks them)")},
	}}
	if d := rep.DominantMalformed; d != nil {
		overview.Fields = append(overview.Fields, [2]string{"most common", fmt.Sprintf("%s: %s", wording.Plural(d.Records, "record"), d.Text())})
	}
	sections := []output.Section{overview}
	if len(rep.MissingRecords) > 0 {
		title := "Missing"
		if rep.MissingTruncated {
			title = fmt.Sprintf("Missing (first %d of %d; -o jsonl streams them all)", len(rep.MissingRecords), rep.Missing)
		}
		s := output.Section{Title: title}
		s.Header, s.Rows = tableRows(rep.MissingRecords, missingColumns)
		sections = append(sections, s)
	}
	if len(rep.MalformedExamples) > 0 {
		sections = append(sections, cmdutil.MalformedRecordsSection("Malformed records", p, rep.MalformedExamples))
	}
	return sections
}

func forgetSections(p *output.Printer, rep *processed.ForgetReport) []output.Section {
	st := p.Styles
	verb := "Removed"
	if rep.DryRun {
		verb = "Dry run (pass --execute to delete): would remove"
	}
	title := fmt.Sprintf("%s %s of %s for %s from %s", verb, wording.Plural(int64(len(rep.Removed)), "marker"),
		wording.Plural(int64(rep.Requested), "event"), consumerText("", rep.Consumer, "every consumer"), rep.Table)
	removed := output.Section{Title: title, Fields: cmdutil.ReasonField(rep.Reason)}
	if len(rep.Removed) > 0 {
		removed.Header, removed.Rows = tableRows(rep.Removed[:min(len(rep.Removed), forgetShown)], markerColumns)
		if len(rep.Removed) > forgetShown {
			removed.Text = st.Dim.Render(fmt.Sprintf("the first %d of %d markers; -o json or csv lists every one", forgetShown, len(rep.Removed)))
		}
	} else {
		removed.Text = st.Dim.Render("(none)")
	}
	sections := []output.Section{removed}
	if len(rep.NotFound) > 0 {
		s := output.Section{Title: fmt.Sprintf("No marker, nothing removed (%d)", len(rep.NotFound)), Header: []string{"event_id"}}
		for _, id := range rep.NotFound[:min(len(rep.NotFound), forgetShown)] {
			s.Rows = append(s.Rows, []string{id})
		}
		if len(rep.NotFound) > forgetShown {
			s.Text = st.Dim.Render(fmt.Sprintf("the first %d of %d event ids; -o json lists every one", forgetShown, len(rep.NotFound)))
		}
		sections = append(sections, s)
	}
	return sections
}

// forgetShown is how many markers, and ids without one, a forget's table shows: a forget of
// 200,000 ids from a file is read by its counts, and a script takes -o json or csv, which list
// every one.
const forgetShown = 100

func getSections(p *output.Printer, rep getReport) []output.Section {
	st := p.Styles
	who := "any consumer"
	if rep.Consumer != "" {
		who = "consumer " + rep.Consumer
	}
	if !rep.Processed {
		return []output.Section{{Title: "Event " + rep.EventID, Text: st.Warn.Render("not processed: no marker for " + who)}}
	}
	verdict := fmt.Sprintf("processed by %s", wording.Plural(int64(len(rep.Markers)), "consumer"))
	if rep.Consumer != "" {
		verdict = "processed by consumer " + rep.Consumer
	}
	s := output.Section{Title: "Event " + rep.EventID + ": " + st.OK.Render(verdict)}
	s.Header, s.Rows = tableRows(rep.Markers, getColumns)
	return []output.Section{s}
}

// getColumns leave out the event id, which is the title.
var getColumns = []output.Column[dedup.MarkerRow]{
	markerColumns[0], markerColumns[2], markerColumns[3], markerColumns[4], markerColumns[5], markerColumns[6], markerColumns[7],
}

func pruneSections(p *output.Printer, rep *processed.PruneReport) []output.Section {
	st := p.Styles
	result := fmt.Sprintf("deleted %s%s processed before %s (older than %s)",
		wording.Plural(rep.Deleted, "marker"), consumerText(" of ", rep.Consumer, ""), cmdutil.FormatTime(rep.ProcessedBefore), rep.OlderThan)
	switch {
	case rep.Candidates == 0:
		result = "nothing to prune: " + result
	case rep.DryRun:
		result = fmt.Sprintf("dry run: would delete %s%s processed before %s (older than %s); pass --execute to delete",
			wording.Plural(rep.Candidates, "marker"), consumerText(" of ", rep.Consumer, ""), cmdutil.FormatTime(rep.ProcessedBefore), rep.OlderThan)
	}
	overview := output.Section{Title: "Prune " + rep.Table, Fields: [][2]string{{"result", st.OK.Render(result)}}}
	horizon := "checked"
	switch {
	case rep.Candidates == 0:
		horizon = "nothing to check"
	case len(rep.Topics) == 0:
		horizon = st.Warn.Render(fmt.Sprintf("unknown: %s recorded no source topic (--force)", wording.Plural(rep.NoTopic, "marker")))
	case !rep.HorizonChecked:
		horizon = st.Warn.Render("not checked (--force)")
	case rep.Forced:
		horizon = st.Warn.Render("checked, overridden by --force")
	}
	overview.Fields = append(overview.Fields, [2]string{"replay horizon", horizon})
	overview.Fields = append(overview.Fields, cmdutil.ReasonField(rep.Reason)...)
	sections := []output.Section{overview}
	if len(rep.Topics) > 0 {
		s := output.Section{Title: "Source topics", Header: []string{"topic", "markers", "retention.ms", "replay horizon", "problem"}}
		for _, h := range rep.Topics {
			ret := "-"
			if h.RetentionMs != nil {
				ret = strconv.FormatInt(*h.RetentionMs, 10)
			}
			problem := "-"
			if h.Problem != "" {
				problem = st.Warn.Render(h.Problem)
			}
			s.Rows = append(s.Rows, []string{h.Topic, strconv.FormatInt(h.Markers, 10), ret, h.Horizon, problem})
		}
		sections = append(sections, s)
	}
	return sections
}

func statsColumns() []output.Column[dedup.ConsumerStats] {
	return []output.Column[dedup.ConsumerStats]{
		{Name: "consumer", Value: func(c dedup.ConsumerStats) string { return c.Consumer }},
		{Name: "markers", Value: func(c dedup.ConsumerStats) string { return strconv.FormatInt(c.Count, 10) }},
		{Name: "first_processed_at", WideOnly: true, Value: func(c dedup.ConsumerStats) string { return cmdutil.OptTime(c.First) }},
		{Name: "last_processed_at", Value: func(c dedup.ConsumerStats) string { return cmdutil.OptTime(c.Last) }},
		{Name: "in_window", Value: func(c dedup.ConsumerStats) string { return strconv.FormatInt(c.InWindow, 10) }},
		{Name: "rate_per_hour", Value: func(c dedup.ConsumerStats) string { return strconv.FormatFloat(c.PerHour, 'f', 1, 64) }},
	}
}

func statsSections(p *output.Printer, rep statsReport) []output.Section {
	cols := statsColumns()
	s := output.Section{Title: fmt.Sprintf("Markers in %s (%s); window: the last %s", rep.Table, rep.Driver, rep.Window)}
	for _, c := range cols {
		s.Header = append(s.Header, c.Name)
		if c.WideOnly {
			s.WideOnly = append(s.WideOnly, c.Name)
		}
	}
	var total int64
	for _, c := range rep.Consumers {
		row := make([]string, len(cols))
		for i, col := range cols {
			row[i] = col.Value(c)
		}
		s.Rows = append(s.Rows, row)
		total += c.Count
	}
	sections := []output.Section{s}
	sum := output.Section{Title: "Totals", Fields: [][2]string{
		{"consumers", strconv.Itoa(len(rep.Consumers))},
		{"markers", strconv.FormatInt(total, 10)},
	}}
	if z := rep.Sizes; z != nil {
		sum.Fields = append(sum.Fields,
			[2]string{"table size", cmdutil.HumanBytes(z.TableBytes)},
			[2]string{"index size", cmdutil.HumanBytes(z.IndexBytes)},
			[2]string{"total size", cmdutil.HumanBytes(z.TotalBytes)})
	} else {
		sum.Fields = append(sum.Fields, [2]string{"size", p.Styles.Dim.Render("not reported on " + rep.Driver)})
	}
	return append(sections, sum)
}

// markerColumns are the columns of a marker in tables and CSV.
var markerColumns = []output.Column[dedup.MarkerRow]{
	{Name: "consumer", Value: func(m dedup.MarkerRow) string { return m.Consumer }},
	{Name: "event_id", Value: func(m dedup.MarkerRow) string { return m.EventID }},
	{Name: "processed_at", Value: func(m dedup.MarkerRow) string { return cmdutil.OptTime(m.ProcessedAt) }},
	{Name: "topic", Value: func(m dedup.MarkerRow) string { return optStr(m.Topic) }},
	{Name: "partition", Value: func(m dedup.MarkerRow) string { return optInt(m.Partition) }},
	{Name: "offset", Value: func(m dedup.MarkerRow) string { return optInt(m.Offset) }},
	{Name: "aggregate_id", Value: func(m dedup.MarkerRow) string { return optStr(m.AggregateID) }},
	{Name: "aggregate_version", Value: func(m dedup.MarkerRow) string { return optInt(m.AggregateVersion) }},
}

func optStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func optInt[T int32 | int64](v *T) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(int64(*v), 10)
}

// markerList writes markers as a list: absent values are "-" in a table and empty elsewhere.
func markerList(p *output.Printer, ms []dedup.MarkerRow, empty string) error {
	cols := markerColumns
	if p.Format == output.FormatTable {
		cols = make([]output.Column[dedup.MarkerRow], len(markerColumns))
		for i, c := range markerColumns {
			value := c.Value
			cols[i] = output.Column[dedup.MarkerRow]{Name: c.Name, Value: func(m dedup.MarkerRow) string { return cmdutil.OrDash(value(m)) }}
		}
	}
	return output.List(p, ms, cols, empty)
}

// tableRows renders values as the header and rows of a section with the given columns, "-"
// for what is absent.
func tableRows[T any](vs []T, cols []output.Column[T]) (header []string, rows [][]string) {
	for _, c := range cols {
		header = append(header, c.Name)
	}
	for _, v := range vs {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = cmdutil.OrDash(c.Value(v))
		}
		rows = append(rows, row)
	}
	return header, rows
}

// renderForget prints what `processed forget` removed: the report, or in CSV the removed
// markers (the event ids that had none are counted on stderr).
func renderForget(p *output.Printer, rep *processed.ForgetReport) error {
	if p.Format != output.FormatCSV {
		return p.Object(rep, forgetSections(p, rep))
	}
	if err := output.List(p, rep.Removed, markerColumns, ""); err != nil {
		return err
	}
	if len(rep.NotFound) > 0 {
		fmt.Fprintf(p.Streams.ErrText(), "%s had no marker\n", wording.Plural(int64(len(rep.NotFound)), "event id"))
	}
	return nil
}

// RenderGet writes an event's markers as `processed get` shows them, for `fieldwork triage`.
func RenderGet(p *output.Printer, eventID, consumer string, rows []dedup.MarkerRow) error {
	rep := getReport{EventID: eventID, Consumer: consumer, Processed: len(rows) > 0, Markers: rows}
	if rep.Markers == nil {
		rep.Markers = []dedup.MarkerRow{}
	}
	return p.Object(rep, getSections(p, rep))
}
