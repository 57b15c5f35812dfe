package dlq

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// dlqProgress is the progress line of a scan of dead-letter topics, labelled with the topics.
func dlqProgress(s *output.Streams, verb string, topics []string) *output.Progress {
	label := verb + " " + strings.Join(topics, ", ")
	if len(topics) > 3 {
		label = fmt.Sprintf("%s %d dead-letter topics", verb, len(topics))
	}
	return output.NewProgress(s, output.ProgressOptions{Label: label})
}

// dlqScanProgress is dlqProgress as a scan's callback and the function that ends the line.
func dlqScanProgress(s *output.Streams, verb string, topics []string) (func(done, total int64), func()) {
	p := dlqProgress(s, verb, topics)
	return p.Update, p.Stop
}

// dlqOriginal writes a dead letter's original position as a record address; an incomplete
// one (its headers do not say everything) is shown with "?" for what is not known, a
// display only: no command takes it as an address.
func dlqOriginal(d dlq.DeadLetter) string {
	if d.OriginalTopic == "" && d.OriginalPartition == nil && d.OriginalOffset == nil {
		return "-"
	}
	if d.OriginalTopic != "" && d.OriginalPartition != nil && d.OriginalOffset != nil {
		return kafka.RecordAddress{Topic: d.OriginalTopic, Partition: *d.OriginalPartition, Offset: *d.OriginalOffset}.String()
	}
	topic, part, off := d.OriginalTopic, "?", "?"
	if topic == "" {
		topic = "?"
	}
	if d.OriginalPartition != nil {
		part = fmt.Sprint(*d.OriginalPartition)
	}
	if d.OriginalOffset != nil {
		off = fmt.Sprint(*d.OriginalOffset)
	}
	return topic + "/" + part + "/" + off
}

// dlqOneLine folds whitespace (newlines of a message or stack trace) into single spaces, for
// a table cell.
func dlqOneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// dlqNothingFound says why a listing is empty.
func dlqNothingFound(topics []string, res dlq.ScanResult) string {
	switch {
	case res.Read == 0:
		return "no dead letters in " + strings.Join(topics, ", ")
	case res.Matched == 0:
		return fmt.Sprintf("no dead letters match the filters (%d read)", res.Read)
	}
	return fmt.Sprintf("no dead letters have the status asked for (%d matched the filters)", res.Matched)
}

// dlqListColumns are the table's columns: STATUS when statuses are looked up, PROBLEMS when a
// dead letter has header problems, ERROR CLASS when one has a class. A table on a terminal too narrow for it leaves ORIGINAL,
// EVENT ID and CONVENTION out, then cuts the widest cells (messages first) to fit, unless
// --wide (output.Printer.TableWidth).
func dlqListColumns(p *output.Printer, withStatus bool, now time.Time) []output.Column[dlq.Entry] {
	st := p.Styles
	cols := []output.Column[dlq.Entry]{
		{Name: "dead letter", Value: func(e dlq.Entry) string { return e.Address().String() }},
		{Name: "duplicates", Optional: true, Value: func(e dlq.Entry) string {
			// A share group's other dead letters of the same record, folded into this row;
			// with --follow, a later one is its own row, marked with the first's address.
			if e.DuplicateOf != nil {
				return st.Warn.Render("of " + e.DuplicateOf.String())
			}
			if len(e.Duplicates) == 0 {
				return "-"
			}
			return st.Warn.Render("+" + strconv.Itoa(len(e.Duplicates)))
		}},
		{Name: "original", WideOnly: true, Value: func(e dlq.Entry) string { return dlqOriginal(e.DeadLetter) }},
		{Name: "reason", Value: func(e dlq.Entry) string {
			if e.Reason == dlq.ReasonMalformed {
				return st.Bad.Render(e.Reason)
			}
			return cmdutil.OrDash(e.Reason)
		}},
		{Name: "error class", Optional: true, Value: func(e dlq.Entry) string { return cmdutil.OrDash(e.ErrorClass) }},
		{Name: "message", Value: func(e dlq.Entry) string { return cmdutil.OrDash(dlqOneLine(e.ErrorMessage)) }},
		{Name: "root cause", Optional: true, Value: func(e dlq.Entry) string { return cmdutil.OrDash(dlqOneLine(e.RootCause)) }},
		{Name: "event id", WideOnly: true, Value: func(e dlq.Entry) string { return cmdutil.OrDash(e.EventID) }},
		{Name: "age", Value: func(e dlq.Entry) string {
			if e.Timestamp.IsZero() {
				return "-"
			}
			return dlq.FormatAge(now.Sub(e.Timestamp))
		}},
		{Name: "convention", WideOnly: true, Value: func(e dlq.Entry) string { return string(e.Convention) }},
		{Name: "schema", Optional: true, Value: func(e dlq.Entry) string { return e.SchemaLabel() }},
	}
	if withStatus {
		cols = append(cols, output.Column[dlq.Entry]{Name: "status", Value: func(e dlq.Entry) string {
			return cmdutil.StatusText(st, e.Status.Status)
		}}, output.Column[dlq.Entry]{Name: "last replay", Optional: true, WideOnly: true, Value: func(e dlq.Entry) string {
			return dlqLastReplay(e.Status)
		}})
	}
	return append(cols, output.Column[dlq.Entry]{Name: "problems", Optional: true, Value: func(e dlq.Entry) string {
		if prob := dlqProblems(e.DeadLetter); prob != "" {
			return st.Warn.Render(prob)
		}
		return "-"
	}})
}

// dlqProblems joins a dead letter's header problems: "header: problem; …".
func dlqProblems(d dlq.DeadLetter) string {
	var problems []string
	for _, hp := range d.HeaderProblems {
		problems = append(problems, hp.Header+": "+hp.Problem)
	}
	return strings.Join(problems, "; ")
}

// dlqCSVColumns are the CSV columns of `dlq list`: one field per column, bytes as text (or
// base64 in key_base64 when the key is not text), times in RFC 3339 with every digit.
var dlqCSVColumns = []output.Column[dlq.Entry]{
	{Name: "topic", Value: func(e dlq.Entry) string { return e.Topic }},
	{Name: "partition", Value: func(e dlq.Entry) string { return strconv.Itoa(int(e.Partition)) }},
	{Name: "offset", Value: func(e dlq.Entry) string { return strconv.FormatInt(e.Offset, 10) }},
	{Name: "timestamp", Value: func(e dlq.Entry) string { return csvTime(&e.Timestamp) }},
	{Name: "convention", Value: func(e dlq.Entry) string { return string(e.Convention) }},
	{Name: "original_topic", Value: func(e dlq.Entry) string { return e.OriginalTopic }},
	{Name: "original_partition", Value: func(e dlq.Entry) string { return optInt(e.OriginalPartition) }},
	{Name: "original_offset", Value: func(e dlq.Entry) string { return optInt(e.OriginalOffset) }},
	{Name: "original_timestamp", Value: func(e dlq.Entry) string { return csvTime(e.OriginalTimestamp) }},
	{Name: "group", Value: func(e dlq.Entry) string { return e.Group }},
	{Name: "handler", Value: func(e dlq.Entry) string { return e.Handler }},
	{Name: "reason", Value: func(e dlq.Entry) string { return e.Reason }},
	{Name: "error_class", Value: func(e dlq.Entry) string { return e.ErrorClass }},
	{Name: "error_message", Value: func(e dlq.Entry) string { return e.ErrorMessage }},
	{Name: "root_cause", Value: func(e dlq.Entry) string { return e.RootCause }},
	{Name: "attempts", Value: func(e dlq.Entry) string {
		if e.Attempts > 0 {
			return strconv.Itoa(e.Attempts)
		}
		return ""
	}},
	{Name: "event_id", Value: func(e dlq.Entry) string { return e.EventID }},
	{Name: "event_id_source", Value: func(e dlq.Entry) string { return e.EventIDSource }},
	{Name: "key", Value: func(e dlq.Entry) string {
		if t, ok := cmdutil.BytesText(e.Key); ok && e.Key != nil {
			return t
		}
		return ""
	}},
	{Name: "key_base64", Value: func(e dlq.Entry) string {
		if t, ok := cmdutil.BytesText(e.Key); !ok && e.Key != nil {
			return t
		}
		return ""
	}},
	{Name: "status", Value: func(e dlq.Entry) string { return string(e.Status.Status) }},
	{Name: "header_problems", Value: func(e dlq.Entry) string { return dlqProblems(e.DeadLetter) }},
	{Name: "schema", Value: func(e dlq.Entry) string { return e.SchemaLabel() }},
}

func optInt[T int32 | int64](v *T) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(int64(*v), 10)
}

// csvTime writes a time for a program: RFC 3339 with every digit, "" when absent.
func csvTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// dlqTopicList names the topics a scan read, for a message: every one up to ten, else the
// first ten and how many there are.
func dlqTopicList(topics []string) string {
	switch {
	case len(topics) == 0:
		return "no topic"
	case len(topics) > 10:
		// Forty dead-letter topics make a line no one reads: the first ten, and how many.
		return fmt.Sprintf("%d topics (%s, …)", len(topics), strings.Join(topics[:10], ", "))
	}
	return strings.Join(topics, ", ")
}

func dlqShowSections(p *output.Printer, det dlq.Detail, now func() time.Time) []output.Section {
	st := p.Styles
	d := det.DeadLetter
	optNum := func(v any) string {
		switch n := v.(type) {
		case *int32:
			if n != nil {
				return strconv.FormatInt(int64(*n), 10)
			}
		case *int64:
			if n != nil {
				return strconv.FormatInt(*n, 10)
			}
		}
		return st.Warn.Render("unknown")
	}
	age := ""
	if !d.Timestamp.IsZero() {
		age = st.Dim.Render(" (" + dlq.FormatAge(now().Sub(d.Timestamp)) + " ago)")
	}
	head := output.Section{Title: "Dead letter " + d.Address().String(), Fields: [][2]string{
		{"convention", string(d.Convention)},
		{"written", cmdutil.FormatTime(d.Timestamp) + age},
		{"key", cmdutil.BytesDisplay(st, d.Key)},
		{"event_id", dlqEventID(d)},
	}}
	head.Fields = append(head.Fields, cmdutil.KeySchemaFields(d.KeySchema)...)
	if d.HasOriginalKey {
		head.Fields = append(head.Fields, [2]string{"original_key", cmdutil.BytesDisplay(st, d.OriginalKey)})
	}
	if d.ReplayCount > 0 {
		head.Fields = append(head.Fields, [2]string{"replay_count", strconv.Itoa(d.ReplayCount)})
	}
	if det.Status.Status != "" {
		status := cmdutil.StatusText(st, det.Status.Status)
		head.Fields = append(head.Fields, [2]string{"status", status + dlqStatusNote(det.Status)})
	}
	orig := output.Section{Title: "Original record", Fields: [][2]string{
		{"topic", cmdutil.OrDash(d.OriginalTopic)},
		{"partition", optNum(d.OriginalPartition)},
		{"offset", optNum(d.OriginalOffset)},
		{"timestamp", cmdutil.OptTime(d.OriginalTimestamp)},
		{"group", cmdutil.OrDash(d.Group)},
		{"handler", cmdutil.OrDash(d.Handler)},
	}}
	if len(d.RetryTopics) > 0 {
		orig.Fields = append(orig.Fields, [2]string{"retried in", strings.Join(d.RetryTopics, " → ")})
	}
	if d.Convention == dlq.ConventionUnknown {
		orig.Fields, orig.Text = nil, st.Dim.Render("(no dead-letter headers of a known convention: see the headers)")
	}
	orig.Fields = append(orig.Fields, dlqOriginalFields(p, det)...)
	failure := output.Section{Title: "Failure", Fields: [][2]string{
		{"reason", cmdutil.OrDash(d.Reason)},
		{"error_class", cmdutil.OrDash(d.ErrorClass)},
		{"message", cmdutil.OrDash(d.ErrorMessage)},
	}}
	if d.ExpectedSchema != "" {
		failure.Fields = append(failure.Fields, [2]string{"expected_schema", d.ExpectedSchema})
	}
	if d.RootCause != "" {
		failure.Fields = append(failure.Fields, [2]string{"root_cause", d.RootCause})
	}
	if d.Attempts > 0 {
		failure.Fields = append(failure.Fields, [2]string{"attempts", strconv.Itoa(d.Attempts)})
	}
	if d.FirstFailedAt != nil || d.FailedAt != nil {
		failure.Fields = append(failure.Fields, [2]string{"first_failed_at", cmdutil.OptTime(d.FirstFailedAt)}, [2]string{"failed_at", cmdutil.OptTime(d.FailedAt)})
	}
	sections := []output.Section{head, orig, failure}
	if len(d.HeaderProblems) > 0 {
		probs := output.Section{Title: fmt.Sprintf("Header problems (%d)", len(d.HeaderProblems)), Header: []string{"header", "problem"}}
		for _, hp := range d.HeaderProblems {
			probs.Rows = append(probs.Rows, []string{hp.Header, st.Warn.Render(hp.Problem)})
		}
		sections = append(sections, probs)
	}
	if o := det.Original; o != nil && o.Found() && d.CoordinatesOnly() {
		sections = append(sections, dlqRecordHeaders("Original record's headers", p, o.Record.Headers))
	}
	headers := output.Section{Title: fmt.Sprintf("Headers (%d)", len(d.Headers))}
	for _, h := range d.Headers {
		headers.Fields = append(headers.Fields, [2]string{cmdutil.KeyDisplay(h.Key), cmdutil.BytesDisplay(st, h.Value)})
	}
	if len(d.Headers) == 0 {
		headers.Text = st.Dim.Render("(none)")
	}
	sections = append(sections, headers)
	if ev := det.Event; ev != nil {
		sections = append(sections, cmdutil.EventSection(st, ev))
	}
	if m := det.Malformed; m != nil {
		sections = append(sections, cmdutil.MalformedRecordSection(st, m.Format, m.Field, m.Reason))
	}
	if o := det.Original; o != nil && o.Found() && d.CoordinatesOnly() {
		sections = append(sections, cmdutil.ValueSection(st, o.Record.Value, det.ValueJSON, nil))
	} else {
		sections = append(sections, cmdutil.ValueSection(st, d.Value, det.ValueJSON, d.ValueSchema))
	}
	if d.StackTrace != "" {
		sections = append(sections, output.Section{Title: "Stack trace", Text: d.StackTrace})
	}
	replay := output.Section{Title: "Replay", Fields: [][2]string{
		{"target", cmdutil.OrDash(det.Replay.Target)},
		{"dry run", det.Replay.DryRun},
		{"execute", det.Replay.Command},
	}}
	for _, n := range det.Replay.Notes {
		replay.Fields = append(replay.Fields, [2]string{"note", st.Warn.Render(n)})
	}
	return append(sections, replay)
}

// dlqOriginalFields say whether the source topic still holds a share group's dead letter's
// original record (dlq.Detail.Original) and, for a dead letter that holds only its
// coordinates, the record's key and timestamp.
func dlqOriginalFields(p *output.Printer, det dlq.Detail) [][2]string {
	st, o := p.Styles, det.Original
	if o == nil {
		return nil
	}
	var out [][2]string
	if det.CoordinatesOnly() {
		out = append(out, [2]string{"payload", st.Warn.Render("coordinates only") + st.Dim.Render(" (the group's DLQ copies no record: errors.deadletterqueue.copy.record.enable=false)")})
	}
	if !o.Found() {
		return append(out, [2]string{"source", st.Warn.Render(string(o.State)) + ": " + o.Detail})
	}
	out = append(out, [2]string{"source", "found at " + kafka.AddressOf(o.Record).String()})
	if det.CoordinatesOnly() {
		out = append(out, [2]string{"source key", cmdutil.BytesDisplay(st, o.Record.Key)}, [2]string{"source timestamp", cmdutil.FormatTime(o.Record.Timestamp.UTC())})
	}
	return out
}

// dlqRecordHeaders is a section of a record's headers.
func dlqRecordHeaders(title string, p *output.Printer, hs []kgo.RecordHeader) output.Section {
	sec := output.Section{Title: fmt.Sprintf("%s (%d)", title, len(hs))}
	for _, h := range hs {
		sec.Fields = append(sec.Fields, [2]string{cmdutil.KeyDisplay(h.Key), cmdutil.BytesDisplay(p.Styles, h.Value)})
	}
	if len(hs) == 0 {
		sec.Text = p.Styles.Dim.Render("(none)")
	}
	return sec
}

// dlqEventID is the event id and where it was read: "evt-1 (from _watermill_message_uuid)".
func dlqEventID(d dlq.DeadLetter) string {
	if d.EventID == "" {
		return "-"
	}
	if d.EventIDSource == "" {
		return d.EventID
	}
	return d.EventID + " (from " + d.EventIDSource + ")"
}

// dlqLastReplay names the latest journaled replay of a dead letter: its run id, or "-".
func dlqLastReplay(s dlq.StatusInfo) string {
	if s.Replay == nil {
		return "-"
	}
	return s.Replay.RunID
}

// dlqStatusNote adds what the status was told from.
func dlqStatusNote(s dlq.StatusInfo) string {
	sent := ""
	if s.Replay != nil {
		sent = fmt.Sprintf("replay run %s sent it to %s at %s", s.Replay.RunID,
			kafka.RecordAddress{Topic: s.Replay.TargetTopic, Partition: s.Replay.TargetPartition, Offset: s.Replay.TargetOffset}.String(), cmdutil.FormatTime(s.Replay.At))
	}
	switch {
	case s.Status == dlq.StatusUnknown && s.Why != "" && sent != "":
		return " (" + s.Why + "; " + sent + ")"
	case s.Status == dlq.StatusUnknown && s.Why != "":
		return " (" + s.Why + ")"
	case s.Status == dlq.StatusReplayed && s.Replay != nil:
		return fmt.Sprintf(" (%s; consumer %s has no marker yet)", sent, s.Consumer)
	case s.Marker != nil:
		at := "at " + cmdutil.OptTime(s.Marker.ProcessedAt)
		if s.Marker.ProcessedAt == nil {
			at = "(its marker keeps no time)"
		}
		what := "processed it " + at
		if s.Status == dlq.StatusStale {
			what = "marked it " + at + " but ignored it as stale: it had a newer version"
		}
		if sent != "" {
			sent = "; " + sent
		}
		return fmt.Sprintf(" (consumer %s %s%s)", s.Consumer, what, sent)
	case s.Consumer != "":
		return " (consumer " + s.Consumer + ")"
	}
	return ""
}

func dlqStatsSections(p *output.Printer, rep *dlq.StatsReport, withStatus bool) []output.Section {
	st := p.Styles
	window := "last " + rep.Window
	topics := output.Section{
		Title:  "Dead-letter topics",
		Header: []string{"topic", "count", "oldest", "newest", window, "per hour", "retention", "oldest deletable"},
		// On a narrow terminal: counts, when retention deletes the oldest, statuses.
		WideOnly: []string{"oldest", "newest", window, "per hour", "retention"},
	}
	if withStatus {
		topics.Header = append(topics.Header, dlqStatusHeader...)
	}
	for _, t := range rep.Topics {
		ret, deletable := "-", "-"
		if t.Retention != nil {
			ret = t.Retention.Describe()
			switch in, ok := t.DeletableIn(rep.Now); {
			case t.Count == 0:
			case t.Retention.State == kafka.RetentionUnknown:
				deletable = st.Warn.Render("unknown")
			case !ok:
				deletable = "never"
			case in <= 0:
				deletable = st.Bad.Render("now (past by " + dlq.FormatAge(-in) + ")")
			case t.RetentionWarning:
				deletable = st.Bad.Render("in " + dlq.FormatAge(in) + " (under a day)")
			default:
				deletable = "in " + dlq.FormatAge(in)
			}
		}
		row := []string{t.Topic, strconv.FormatInt(t.Count, 10), cmdutil.OptTime(t.Oldest), cmdutil.OptTime(t.Newest),
			strconv.FormatInt(t.InWindow, 10), dlqRate(t.RatePerHour), ret, deletable}
		if withStatus {
			row = append(row, dlqStatusCells(t.Statuses)...)
		}
		topics.Rows = append(topics.Rows, row)
	}
	// A grouped field none of the groups has (an error class, often) is left out of the table.
	// With the stale column the statuses no longer fit 80 columns beside two grouped fields:
	// unknown (no event id or no consumer: no work a replay can do) goes first after the times.
	groups := output.Section{Title: "By " + dlqGroupTitle(rep.GroupBy), WideOnly: []string{"oldest", "newest", window, "per hour", "topics", "example", "unknown"}}
	for _, k := range rep.GroupBy {
		for _, name := range dlqKeyColumns(k) {
			name = strings.ReplaceAll(name, "_", " ")
			groups.Header = append(groups.Header, name)
			groups.Optional = append(groups.Optional, name)
		}
	}
	groups.Header = append(groups.Header, "count", "oldest", "newest", window, "per hour")
	if withStatus {
		groups.Header = append(groups.Header, dlqStatusHeader...)
	}
	if rep.Matched > 0 {
		for _, g := range rep.Groups {
			var row []string
			for _, k := range rep.GroupBy {
				for _, v := range dlqKeyCells(g, k) {
					row = append(row, cmdutil.OrDash(v))
				}
			}
			row = append(row, strconv.FormatInt(g.Count, 10), cmdutil.FormatTime(g.Oldest), cmdutil.FormatTime(g.Newest),
				strconv.FormatInt(g.InWindow, 10), dlqRate(g.RatePerHour))
			if withStatus {
				row = append(row, dlqStatusCells(g.Statuses)...)
			}
			groups.Rows = append(groups.Rows, row)
		}
	}
	return []output.Section{topics, groups}
}

// dlqStatsCSV writes the groups, one row each, the grouped fields first.
func dlqStatsCSV(p *output.Printer, rep *dlq.StatsReport, withStatus bool) error {
	var cols []output.Column[dlq.GroupStats]
	for _, k := range rep.GroupBy {
		for i, name := range dlqKeyColumns(k) {
			cols = append(cols, output.Column[dlq.GroupStats]{Name: name, Value: func(g dlq.GroupStats) string { return dlqKeyCells(g, k)[i] }})
		}
	}
	cols = append(cols,
		output.Column[dlq.GroupStats]{Name: "count", Value: func(g dlq.GroupStats) string { return strconv.FormatInt(g.Count, 10) }},
		output.Column[dlq.GroupStats]{Name: "oldest", Value: func(g dlq.GroupStats) string { return csvTime(&g.Oldest) }},
		output.Column[dlq.GroupStats]{Name: "newest", Value: func(g dlq.GroupStats) string { return csvTime(&g.Newest) }},
		output.Column[dlq.GroupStats]{Name: "in_window", Value: func(g dlq.GroupStats) string { return strconv.FormatInt(g.InWindow, 10) }},
		output.Column[dlq.GroupStats]{Name: "rate_per_hour", Value: func(g dlq.GroupStats) string { return strconv.FormatFloat(g.RatePerHour, 'f', -1, 64) }},
	)
	if withStatus {
		for i, name := range dlqStatusHeader {
			cols = append(cols, output.Column[dlq.GroupStats]{Name: name, Value: func(g dlq.GroupStats) string { return dlqStatusCells(g.Statuses)[i] }})
		}
	}
	var groups []dlq.GroupStats
	if rep.Matched > 0 {
		groups = rep.Groups
	}
	return output.List(p, groups, cols, "")
}

// dlqKeyColumns are the columns of one grouping key: its own, and for a fingerprint the cause,
// the original topics and an example dead letter.
func dlqKeyColumns(k dlq.StatsKey) []string {
	if k == dlq.ByFingerprint {
		return []string{string(k), "cause", "topics", "example"}
	}
	return []string{string(k)}
}

// dlqKeyCells are a group's cells of dlqKeyColumns(k).
func dlqKeyCells(g dlq.GroupStats, k dlq.StatsKey) []string {
	if k == dlq.ByFingerprint {
		return []string{g.Fingerprint, g.Cause, strings.Join(g.Topics, ","), g.Example.String()}
	}
	return []string{g.Value(k)}
}

var dlqStatusHeader = []string{"pending", "replayed", "resolved", "stale", "unknown"}

func dlqStatusCells(c *dlq.StatusCounts) []string {
	if c == nil {
		c = &dlq.StatusCounts{}
	}
	return []string{
		strconv.FormatInt(c.Pending, 10), strconv.FormatInt(c.Replayed, 10),
		strconv.FormatInt(c.Resolved, 10), strconv.FormatInt(c.Stale, 10), strconv.FormatInt(c.Unknown, 10),
	}
}

func dlqGroupTitle(by []dlq.StatsKey) string {
	if len(by) == 0 {
		return "all dead letters"
	}
	var s []string
	for _, k := range by {
		s = append(s, strings.ReplaceAll(string(k), "_", " "))
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func dlqRate(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) }

// RenderShow writes one dead letter's detail (dlq.NewDetail, its original record set when
// read) as `dlq show` shows it, for `fieldwork triage`'s record screen.
func RenderShow(p *output.Printer, det dlq.Detail, now func() time.Time) error {
	return p.Object(det, dlqShowSections(p, det, now))
}
