package tui

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/look"
	"github.com/fieldwork/fieldwork/internal/look/status"
	"github.com/fieldwork/fieldwork/internal/printable"
)

// styles are look's tones, which the command tables show too; with NO_COLOR they draw nothing
// (the cursor's row is still marked with look.CursorMark).
type styles struct {
	title, header, cursor, dim, bad lipgloss.Style
	help                            help.Styles
	color                           bool
}

func newStyles(noColor bool) styles {
	if noColor {
		return styles{} // no escape sequence at all; the cursor's row is marked with "›"
	}
	r := lipgloss.NewStyle
	s := styles{
		title:  look.Title.Style(),
		header: look.Header.Style(),
		cursor: look.Cursor.Style(),
		dim:    look.Dim.Style(),
		bad:    look.Bad.Style(),
		color:  true,
	}
	s.help = help.Styles{
		ShortKey: r().Bold(true), ShortDesc: r(), ShortSeparator: r().Faint(true),
		FullKey: r().Bold(true), FullDesc: r(), FullSeparator: r().Faint(true),
		Ellipsis: r().Faint(true),
	}
	return s
}

// escape is the terminal form of text from a record or the broker (docs/design.md §4.1).
func escape(s string) string { return printable.Escape(s) }

// oneLine folds whitespace into single spaces, for a cell.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cause is what a dead letter failed of: the key its dead letters are known by (the failure's
// fingerprint, dlq.FingerprintOf: its error class and message with ids, numbers and quoted
// values normalised away, the one rule dlq stats --group-by fingerprint and --fingerprint
// use), and its label, the normalised cause.
type cause struct{ key, label string }

func causeOf(d dlq.DeadLetter) cause {
	fp := dlq.FingerprintOf(d)
	label := oneLine(fp.Cause)
	if label == "" {
		label = "(no error given)"
	}
	return cause{key: fp.ID, label: label}
}

// causeGroup is one failure cause of a topic's dead letters.
type causeGroup struct {
	cause
	items       []*item
	first, last time.Time
	originals   []string
	statuses    map[dlq.Status]int
}

// row is a line of a list screen: a topic, a failure cause or a dead letter.
type row struct {
	topic string
	cause *causeGroup
	item  *item
}

// visible reports whether it passes the status filter.
func (m *Model) visible(it *item) bool {
	return m.statusOf == "" || it.Status.Status == m.statusOf
}

// causes are the open topic's dead letters that pass the status filter, by cause, the
// largest first.
func (m *Model) causes() []*causeGroup {
	by := map[string]*causeGroup{}
	var out []*causeGroup
	for _, it := range m.byTopic[m.topic] {
		if !m.visible(it) {
			continue
		}
		c := it.cause
		g := by[c.key]
		if g == nil {
			g = &causeGroup{cause: c, first: it.Timestamp, last: it.Timestamp, statuses: map[dlq.Status]int{}}
			by[c.key] = g
			out = append(out, g)
		}
		g.items = append(g.items, it)
		if it.Timestamp.Before(g.first) {
			g.first = it.Timestamp
		}
		if it.Timestamp.After(g.last) {
			g.last = it.Timestamp
		}
		if it.OriginalTopic != "" && !slices.Contains(g.originals, it.OriginalTopic) {
			g.originals = append(g.originals, it.OriginalTopic)
		}
		g.statuses[it.Status.Status]++
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].items) > len(out[j].items) })
	return out
}

// causeItems are the dead letters of the open topic's cause key that pass the status filter.
func (m *Model) causeItems(key string) []*item {
	for _, g := range m.causes() {
		if g.key == key {
			return g.items
		}
	}
	return nil
}

// rows are the lines of the list screen, through its filter.
func (m *Model) rows() []row {
	f := strings.ToLower(m.filters[m.screen])
	match := func(parts ...string) bool {
		if f == "" {
			return true
		}
		for _, p := range parts {
			if strings.Contains(strings.ToLower(p), f) {
				return true
			}
		}
		return false
	}
	var out []row
	switch m.screen {
	case screenTopics:
		for _, t := range m.topics {
			if match(t) {
				out = append(out, row{topic: t})
			}
		}
	case screenCauses:
		for _, g := range m.causes() {
			if match(append([]string{g.label}, g.originals...)...) {
				out = append(out, row{cause: g})
			}
		}
	case screenList:
		for _, it := range m.causeItems(m.causeKey) {
			if match(it.addr, it.EventID, string(it.Status.Status), it.OriginalTopic, string(it.Key)) {
				out = append(out, row{item: it})
			}
		}
	}
	return out
}

// column is a table column; flex columns share what the fixed ones leave, and optional ones
// are left out, the last first, on a terminal too narrow for them.
type column struct {
	title    string
	width    int
	flex     bool
	right    bool
	optional bool
}

// fit leaves out the optional columns that do not fit and sizes the flex columns to width
// (the cursor mark takes two columns, a blank separates columns). kept are the indexes of the
// columns kept.
func fit(cols []column, width int) (out []column, kept []int) {
	used := func(cs []column) int {
		n := 2
		for _, c := range cs {
			n += c.width + 1
		}
		return n
	}
	for i := range cols {
		kept = append(kept, i)
	}
	for used(pick(cols, kept)) > width {
		drop := -1
		for k, i := range kept {
			if cols[i].optional {
				drop = k
			}
		}
		if drop < 0 {
			break
		}
		kept = slices.Delete(kept, drop, drop+1)
	}
	out = pick(cols, kept)
	flex := 0
	for _, c := range out {
		if c.flex {
			flex++
		}
	}
	spare := max(0, width-used(out))
	for i := range out {
		if out[i].flex {
			out[i].width += spare / flex
			spare -= spare / flex
			flex--
		}
	}
	return out, kept
}

func pick[T any](s []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, s[i])
	}
	return out
}

// cutLines cuts each line of text wider than w display columns with the ellipsis.
func cutLines(text string, w int) string {
	if w <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if lipgloss.Width(l) > w {
			lines[i] = ansi.Truncate(l, w, look.Ellipsis)
		}
	}
	return strings.Join(lines, "\n")
}

// cell is text cut (with …) and padded to w display columns; text is already escaped.
func cell(s string, w int, right bool) string {
	s = ansi.Truncate(s, w, look.Ellipsis)
	pad := strings.Repeat(" ", max(0, w-lipgloss.Width(s)))
	if right {
		return pad + s
	}
	return s + pad
}

// table draws the header and the rows from first, at most n, the cursor's row marked.
func (m *Model) table(cols []column, cells [][]string, styleOf func(i, col int) *lipgloss.Style, cur, n int) []string {
	var titles []string
	for _, c := range cols {
		titles = append(titles, c.title)
	}
	cols, kept := fit(cols, m.width)
	line := func(prefix string, cs []string, i int) string {
		var b strings.Builder
		b.WriteString(prefix)
		for k, c := range cols {
			if k > 0 {
				b.WriteByte(' ')
			}
			txt := cell(cs[kept[k]], c.width, c.right)
			if i >= 0 && styleOf != nil {
				if st := styleOf(i, kept[k]); st != nil {
					txt = st.Render(txt)
				}
			}
			b.WriteString(txt)
		}
		return b.String()
	}
	out := []string{m.st.header.Render(line("  ", titles, -1))}
	first := 0
	if cur >= n {
		first = cur - n + 1
	}
	for i := first; i < len(cells) && i < first+n; i++ {
		prefix := "  "
		if i == cur {
			prefix = look.CursorMark
		}
		l := line(prefix, cells[i], i)
		if i == cur {
			l = m.st.cursor.Render(l)
		}
		out = append(out, l)
	}
	return out
}

// statusStyle is the style of a dead letter's status (internal/look/status, as the tables show
// it); nil for a plain one, or without colour.
func (m *Model) statusStyle(st dlq.Status) *lipgloss.Style {
	t := status.Tone(st)
	if !m.st.color || t == look.Plain {
		return nil
	}
	s := t.Style()
	return &s
}

func (m *Model) age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return dlq.FormatAge(m.o.Now().Sub(t))
}

// View is the screen, on the terminal's alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	return v
}

// render draws the screen: a title, the body, a line for the filter or the last outcome, and
// the help bar.
func (m *Model) render() string {
	m.keys.canMark = m.screen == screenList
	m.keys.onPlan = m.screen == screenPlan && m.reason.Focused()
	m.keys.onRun = m.screen == screenRun
	m.keys.onRecord = m.screen == screenRecord
	body := m.body()
	h := m.bodyHeight()
	if m.screen == screenPlan {
		h += 1 + len(m.question()) // the question and the reason are part of the body
	}
	lines := strings.Split(cutLines(body, m.width), "\n")
	if len(lines) > h+1 {
		lines = lines[:h+1]
	}
	for len(lines) < h+1 {
		lines = append(lines, "")
	}
	var foot string
	switch {
	case m.filtering:
		foot = m.filter.View()
	case m.readErr != "":
		foot = m.st.bad.Render(cell(escape("read: "+m.readErr), m.width, false))
	case m.note != "":
		foot = cell(escape(m.note), m.width, false)
	case m.filters[m.screen] != "":
		foot = m.st.dim.Render(cell(escape("filter: "+m.filters[m.screen]+" (esc clears)"), m.width, false))
	}
	// The help bar is cut to the width here: the help model goes past it when not even its
	// ellipsis fits.
	var hl []string
	for _, l := range strings.Split(m.help.View(m.keys), "\n") {
		hl = append(hl, ansi.Truncate(l, m.width, look.Ellipsis))
	}
	helpView := strings.Join(hl, "\n")
	if m.help.ShowAll {
		// The full help takes the bottom of the body.
		hl := strings.Split(helpView, "\n")
		lines = lines[:max(1, len(lines)-(len(hl)-1))]
	}
	return strings.Join(append(lines, foot, helpView), "\n")
}

// title is the first line: where the console is, the status filter and liveness.
func (m *Model) title() string {
	crumbs := []string{"fieldwork triage"}
	switch m.screen {
	case screenCauses, screenList, screenRecord:
		crumbs = append(crumbs, escape(m.topic))
	}
	if m.screen == screenList || m.screen == screenRecord {
		crumbs = append(crumbs, escape(causeOfKeyLabel(m, m.causeKey)))
	}
	switch m.screen {
	case screenRecord, screenPlan, screenProcessed:
		crumbs = append(crumbs, escape(m.textTitle))
	case screenRun:
		crumbs = append(crumbs, escape("replay "+m.sel.label))
	}
	right := "status: all"
	if m.statusOf != "" {
		right = "status: " + string(m.statusOf)
	}
	if m.o.ReadOnly {
		right += " · read-only"
	}
	right = " " + right
	left := cell(strings.Join(crumbs, " › "), max(1, m.width-lipgloss.Width(right)), false)
	return m.st.title.Render(left) + right
}

func causeOfKeyLabel(m *Model, key string) string {
	for _, it := range m.byTopic[m.topic] {
		if it.cause.key == key {
			return it.cause.label
		}
	}
	return "(none)"
}

func (m *Model) body() string {
	if !m.loaded {
		return m.title() + "\n\n  reading the dead-letter topics…"
	}
	n := m.bodyHeight() - 1
	var lines []string
	switch m.screen {
	case screenTopics:
		lines = m.topicsView(n)
	case screenCauses:
		lines = m.causesView(n)
	case screenList:
		lines = m.listView(n)
	case screenRecord, screenProcessed:
		lines = []string{m.vp.View()}
	case screenPlan:
		m.vp.SetHeight(m.bodyHeight())
		lines = append([]string{m.vp.View()}, m.question()...)
		if m.reason.Focused() {
			lines = append(lines, m.reason.View())
		}
	case screenRun:
		lines = m.runView()
	}
	return m.title() + "\n" + strings.Join(lines, "\n")
}

func (m *Model) topicsView(n int) []string {
	rows := m.rows()
	if len(m.topics) == 0 {
		return []string{"", "  no dead-letter topics found (--topic or --pattern chooses them)"}
	}
	cols := []column{{title: "TOPIC", width: 10, flex: true}, {title: "TOTAL", width: 6, right: true}, {title: "NEW", width: 5, right: true},
		{title: "PENDING", width: 7, right: true}, {title: "REPLAYED", width: 8, right: true, optional: true},
		{title: "RESOLVED", width: 8, right: true, optional: true}, {title: "STALE", width: 5, right: true, optional: true},
		{title: "UNKNOWN", width: 7, right: true, optional: true}}
	var cells [][]string
	for _, r := range rows {
		its := m.byTopic[r.topic]
		var c dlq.StatusCounts
		for _, it := range its {
			c.Add(it.Status.Status)
		}
		growth := len(its) - m.opened[r.topic]
		cells = append(cells, []string{escape(r.topic), fmt.Sprint(len(its)), fmt.Sprintf("+%d", growth),
			fmt.Sprint(c.Pending), fmt.Sprint(c.Replayed), fmt.Sprint(c.Resolved), fmt.Sprint(c.Stale), fmt.Sprint(c.Unknown)})
	}
	cur := min(m.cursor[screenTopics], max(0, len(rows)-1))
	out := m.table(cols, cells, nil, cur, n-2)
	if len(rows) > 0 {
		out = append(out, "", cell("  reasons: "+m.reasons(rows[cur].topic), m.width, false))
	}
	return out
}

// reasons counts a topic's dead letters by reason, the most frequent first.
func (m *Model) reasons(topic string) string {
	by := map[string]int{}
	for _, it := range m.byTopic[topic] {
		r := it.Reason
		if r == "" {
			r = dlq.ReasonUnknown
		}
		by[r]++
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if by[keys[i]] != by[keys[j]] {
			return by[keys[i]] > by[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", escape(k), by[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

func (m *Model) causesView(n int) []string {
	rows := m.rows()
	if len(rows) == 0 {
		return []string{"", "  no dead letters here" + m.filterSays()}
	}
	cols := []column{{title: "COUNT", width: 5, right: true}, {title: "PENDING", width: 7, right: true},
		{title: "CAUSE", width: 16, flex: true}, {title: "FIRST", width: 5, optional: true}, {title: "LAST", width: 5, optional: true},
		{title: "ORIGINAL", width: 10, optional: true}}
	var cells [][]string
	for _, r := range rows {
		g := r.cause
		cells = append(cells, []string{fmt.Sprint(len(g.items)), fmt.Sprint(g.statuses[dlq.StatusPending]), escape(g.label),
			m.age(g.first), m.age(g.last), escape(strings.Join(g.originals, ","))})
	}
	return m.table(cols, cells, nil, min(m.cursor[screenCauses], len(rows)-1), n)
}

func (m *Model) listView(n int) []string {
	rows := m.rows()
	if len(rows) == 0 {
		return []string{"", "  no dead letters here" + m.filterSays()}
	}
	// The topic is the screen's: a dead letter is its partition and offset here (y copies the
	// whole address).
	cols := []column{{title: "PARTITION/OFFSET", width: 16}, {title: "STATUS", width: 8}, {title: "EVENT ID", width: 12, flex: true, optional: true},
		{title: "ORIGINAL", width: 12, flex: true, optional: true}, {title: "AGE", width: 5, optional: true}}
	// DUPLICATES, as in dlq list: the other dead letters of the row's record (dlq.Folder),
	// shown only when some row has any.
	dups := slices.ContainsFunc(rows, func(r row) bool { return len(r.item.Duplicates) > 0 })
	if dups {
		cols = append(cols, column{title: "DUPLICATES", width: 10, optional: true})
	}
	var cells [][]string
	for _, r := range rows {
		it := r.item
		mark := "  "
		if m.marks[it.addr] {
			mark = look.MarkedMark
		}
		st := status.Word(it.Status.Status)
		orig := look.Absent
		if it.OriginalTopic != "" && it.OriginalPartition != nil && it.OriginalOffset != nil {
			orig = kafka.RecordAddress{Topic: it.OriginalTopic, Partition: *it.OriginalPartition, Offset: *it.OriginalOffset}.String()
		}
		c := []string{fmt.Sprintf("%s%d/%d", mark, it.Partition, it.Offset), st, escape(look.OrAbsent(it.EventID)), escape(orig), m.age(it.Timestamp)}
		if dups {
			c = append(c, "")
			if n := len(it.Duplicates); n > 0 {
				c[len(c)-1] = "+" + strconv.Itoa(n)
			}
		}
		cells = append(cells, c)
	}
	styleOf := func(i, col int) *lipgloss.Style {
		if col == 1 {
			return m.statusStyle(rows[i].item.Status.Status)
		}
		return nil
	}
	out := m.table(cols, cells, styleOf, min(m.cursor[screenList], len(rows)-1), n)
	if len(m.marks) > 0 {
		out = append(out, "", fmt.Sprintf("  %d marked: r replays them", len(m.marks)))
	}
	return out
}

func (m *Model) filterSays() string {
	var s []string
	if m.statusOf != "" {
		s = append(s, "status "+string(m.statusOf))
	}
	if f := m.filters[m.screen]; f != "" {
		s = append(s, "filter "+escape(f))
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

// runView is a replay's progress, then its outcome and the statuses of what it sent.
func (m *Model) runView() []string {
	out := []string{""}
	add := func(s string) { out = append(out, cell("  "+s, m.width, false)) }
	switch p := m.progress; {
	case p == nil:
		add("checking the plan…")
	case p.Stage == "scan":
		add(fmt.Sprintf("checking the plan: read %d of %d", p.Read, p.Total))
	default:
		total := p.ToSend
		if total < 0 {
			total = p.Send.Counts.Selected
		}
		add(fmt.Sprintf("sending: %d of %d sent, %d quarantined, %d skipped", p.Send.Sent, total, p.Send.Counts.Quarantined, p.Send.Counts.Skipped))
	}
	if m.running {
		return out
	}
	out = append(out, "")
	if res := m.runRes; res != nil && res.Summary != nil {
		s := res.Summary
		add(fmt.Sprintf("run %s %s: %d sent, %d quarantined, %d skipped", s.RunID, s.Status, s.Counts.Sent, s.Counts.Quarantined, s.Counts.Skipped))
	}
	if m.runErr != nil {
		out = append(out, m.st.bad.Render(cell("  "+escape(m.runErr.Error()), m.width, false)))
	}
	if res := m.runRes; res != nil {
		for _, n := range res.Notices {
			add(escape(n.String()))
		}
	}
	var c dlq.StatusCounts
	for _, a := range m.sel.records {
		if it := m.byAddr[a]; it != nil {
			c.Add(it.Status.Status)
		}
	}
	out = append(out, "")
	add(fmt.Sprintf("now: %d pending · %d replayed · %d resolved · %d stale · %d unknown (of %d)", c.Pending, c.Replayed, c.Resolved, c.Stale, c.Unknown, len(m.sel.records)))
	add("statuses refresh as the consumer processes the copies; esc: back")
	return out
}
