// Package tui is `fieldwork triage`: an interactive dead-letter console on a terminal, a thin
// view over the domain paths the commands use (docs/design.md §4, the console: the scan
// and status rule of internal/dlq, the one replay flow of internal/replay, the markers of
// internal/dedup). It has no status rule and no replay of its own: it reads through a
// Backend and renders the record, the plan and the markers with the commands' own renderers
// (Views).
//
// Screens: the dead-letter topics (counts by status and reason, growth since the console
// opened), one topic's dead letters by failure cause, one cause's dead letters, one
// dead letter in full, a replay's plan (confirmed with a reason), its progress and outcome,
// and an event's markers. The model is driven by Bubble Tea; tests drive Update and View.
package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// DefaultPoll is how often the console reads new dead letters and looks statuses up again.
const DefaultPoll = 2 * time.Second

// Views are the commands' renderers of what the console shows in full, so that a record reads
// as `dlq show` prints it, a plan as `replay` prints it and markers as `processed get` prints
// them, escaped by the terminal rule (docs/design.md §4.1). Each returns text at most width
// columns wide where it can.
type Views struct {
	// Record renders a dead letter's detail: dlq.NewDetail with, for a share group's, its
	// original record set (dlq.Detail.SetOriginal) once the backend has read it.
	Record func(det dlq.Detail, width int) string
	Plan   func(rep *replay.Report, width int) string
	// Question is what an executed plan asks (replay's confirmation): shown above the reason.
	Question  func(rep *replay.Report) string
	Processed func(eventID, consumer string, rows []dedup.MarkerRow, width int) string
}

// Options configure New.
type Options struct {
	Backend Backend
	Views   Views
	// ReadOnly hides every action (replay, marking): for principals with read ACLs only.
	ReadOnly bool
	// NoColor draws without colour (NO_COLOR).
	NoColor bool
	// Poll is how often new dead letters are read (DefaultPoll when 0).
	Poll time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Copy puts text on a clipboard of the caller's (nil: the terminal's, OSC 52).
	Copy func(string) error
	// Consumer is the consumer whose markers `p` shows ("" each dead letter's group).
	Consumer string
}

type screen int

const (
	screenTopics screen = iota
	screenCauses
	screenList
	screenRecord
	screenPlan
	screenRun
	screenProcessed
)

// item is a dead letter the console holds, with its status (updated in place).
type item struct {
	dlq.Entry
	addr string
	// cause is the dead letter's cause (causeOf), worked out once when the entry is read, not
	// on every render.
	cause cause
	// original is the dead letter's original record, read (Backend.Original) when its record
	// screen is first opened; originalRead says it was, originalErr why it could not be.
	original     *dlq.Original
	originalRead bool
	originalErr  error
}

// selection is what a replay is asked for: records of one topic, and how they were chosen.
type selection struct {
	topic   string
	records []string
	label   string
}

// Messages of the model.
type (
	tickMsg time.Time
	readMsg struct {
		topics  []string
		entries []dlq.Entry
		// statuses are the statuses looked up again, by address.
		statuses map[string]dlq.StatusInfo
		err      error
	}
	planMsg struct {
		sel selection
		res *replay.FlowResult
		err error
	}
	progressMsg replay.FlowProgress
	runDoneMsg  struct {
		res *replay.FlowResult
		err error
	}
	processedMsg struct {
		eventID, consumer string
		rows              []dedup.MarkerRow
		err               error
	}
	originalMsg struct {
		it       *item
		original *dlq.Original
		err      error
	}
)

// Model is the console.
type Model struct {
	o      Options
	ctx    context.Context
	cancel context.CancelFunc
	keys   keyMap
	help   help.Model
	st     styles

	width, height int

	topics   []string
	opened   map[string]int // dead letters per topic at the first read
	byTopic  map[string][]*item
	byAddr   map[string]*item
	fold     *dlq.Folder // the share-group dead letters held, by record
	loaded   bool
	reading  bool
	readErr  string
	statusOf dlq.Status // the status filter; "" every status

	screen   screen
	topic    string // the open topic
	causeKey string // the open cause's key
	record   *item  // the open dead letter
	cursor   map[screen]int
	marks    map[string]bool
	note     string // the last action's outcome, above the help bar

	filtering bool
	filter    textinput.Model
	filters   map[screen]string

	// The replay: the selection, its dry run, the reason, the run.
	sel       selection
	plan      *replay.FlowResult
	reason    textinput.Model
	running   bool
	runCancel context.CancelFunc
	runCh     chan tea.Msg
	progress  *replay.FlowProgress
	runRes    *replay.FlowResult
	runErr    error
	quitAfter bool
	quitting  bool
	// refreshAt is where the next poll's status lookups go on from; refreshCap bounds them.
	refreshAt, refreshCap int
	// noTick leaves the polling to the caller (the model's tests send tickMsg themselves).
	noTick     bool
	vp         viewport.Model
	textTitle  string
	returnTo   screen
	processedE string

	// Final are the lines to print once the console has closed (a run's resume line), and
	// Err its outcome (an interrupted replay: exit 130).
	Final []string
	Err   error
}

// New builds the console; ctx bounds every read and replay it starts.
func New(ctx context.Context, o Options) *Model {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &Model{o: o, ctx: ctx, cancel: cancel, keys: newKeyMap(), help: help.New(), st: newStyles(o.NoColor),
		width: 80, height: 24, opened: map[string]int{}, byTopic: map[string][]*item{}, byAddr: map[string]*item{}, fold: dlq.NewFolder(),
		cursor: map[screen]int{}, marks: map[string]bool{}, filters: map[screen]string{}, refreshCap: refreshPerPoll}
	m.keys.readOnly = o.ReadOnly
	m.filter = newInput("/ ", o.NoColor)
	m.reason = newInput("reason: ", o.NoColor)
	m.vp = viewport.New(viewport.WithWidth(80), viewport.WithHeight(20))
	m.help.Styles = m.st.help
	return m
}

func newInput(prompt string, noColor bool) textinput.Model {
	ti := textinput.New()
	ti.Prompt = prompt
	st := textinput.Styles{} // NO_COLOR: no escape sequence
	if !noColor {
		st = textinput.DefaultStyles(true)
	}
	st.Cursor.Blink = false
	ti.SetStyles(st)
	ti.CharLimit = 500
	return ti
}

// Init reads the dead letters for the first time.
func (m *Model) Init() tea.Cmd { return m.read() }

// read reads what arrived since the last read, and the statuses of the dead letters not yet
// resolved again (a replay's copies get processed while the console is open).
func (m *Model) read() tea.Cmd {
	m.reading = true
	again := m.toRefresh()
	ctx, b := m.ctx, m.o.Backend
	return func() tea.Msg {
		topics, entries, err := b.Read(ctx)
		msg := readMsg{topics: topics, entries: entries, err: err}
		if err == nil && len(again) > 0 {
			infos, err := b.Statuses(ctx, again)
			if err != nil {
				msg.err = err
			} else {
				msg.statuses = make(map[string]dlq.StatusInfo, len(infos))
				for i, d := range again {
					msg.statuses[d.Address().String()] = infos[i]
				}
			}
		}
		return msg
	}
}

// refreshPerPoll bounds the statuses looked up again at each poll, so that a large dead-letter
// topic costs the store a bounded query every --poll.
const refreshPerPoll = 5000

// toRefresh are the dead letters whose status is looked up again at this poll: those that can
// still change (pending, replayed), the last replay's first, then the others in turn, at most
// refreshCap.
func (m *Model) toRefresh() []dlq.DeadLetter {
	var out []dlq.DeadLetter
	seen := map[string]bool{}
	add := func(it *item) bool {
		if len(out) >= m.refreshCap {
			return false
		}
		if it != nil && !seen[it.addr] && (it.Status.Status == dlq.StatusPending || it.Status.Status == dlq.StatusReplayed) {
			seen[it.addr] = true
			out = append(out, it.DeadLetter)
		}
		return true
	}
	for _, a := range m.sel.records {
		add(m.byAddr[a])
	}
	var all []*item
	for _, t := range m.topics {
		all = append(all, m.byTopic[t]...)
	}
	k := 0
	for ; k < len(all) && add(all[(m.refreshAt+k)%len(all)]); k++ {
	}
	if len(all) > 0 {
		m.refreshAt = (m.refreshAt + k) % len(all)
	}
	return out
}

func (m *Model) tick() tea.Cmd {
	if m.noTick {
		return nil
	}
	return tea.Tick(m.o.Poll, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.layout()
		return m, nil
	case tickMsg:
		if m.reading || m.ctx.Err() != nil {
			return m, nil
		}
		return m, m.read()
	case readMsg:
		m.reading = false
		m.merge(msg)
		if m.ctx.Err() != nil {
			return m, nil
		}
		return m, m.tick()
	case planMsg:
		return m, m.planned(msg)
	case progressMsg:
		p := replay.FlowProgress(msg)
		m.progress = &p
		return m, m.waitRun()
	case runDoneMsg:
		return m, m.ran(msg)
	case processedMsg:
		m.showProcessed(msg)
		return m, nil
	case originalMsg:
		it := msg.it
		it.original, it.originalErr, it.originalRead = msg.original, msg.err, true
		if m.screen == screenRecord && m.record == it {
			m.setPage(m.recordText(it))
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	if m.screen == screenRecord || m.screen == screenProcessed || m.screen == screenPlan {
		var cmd tea.Cmd
		m.vp, cmd = m.vp.Update(msg)
		return m, cmd
	}
	return m, nil
}

// merge adds what a read found and the statuses looked up again.
func (m *Model) merge(msg readMsg) {
	if msg.err != nil {
		m.readErr = msg.err.Error()
		return
	}
	m.readErr = ""
	m.topics = msg.topics
	for _, e := range msg.entries {
		addr := e.Address().String()
		if it, ok := m.byAddr[addr]; ok {
			e.Duplicates = it.Duplicates
			it.Entry, it.cause = e, causeOf(e.DeadLetter)
			continue
		}
		// A share group's dead letters of one record are one row, as in dlq list
		// (dlq.Folder): the console holds every dead letter it has read, so a later one
		// (read by a later poll, or found first in another partition's pages) folds into the
		// first whatever the order they arrive in.
		it := &item{Entry: e, addr: addr, cause: causeOf(e.DeadLetter)}
		if m.fold.Fold(&it.Entry) != nil {
			continue
		}
		m.byAddr[addr] = it
		m.byTopic[e.Topic] = append(m.byTopic[e.Topic], it)
	}
	for addr, info := range msg.statuses {
		if it, ok := m.byAddr[addr]; ok {
			it.Status = info
		}
	}
	if !m.loaded {
		for _, t := range m.topics {
			m.opened[t] = len(m.byTopic[t])
		}
		m.loaded = true
	}
	if m.record != nil && m.screen == screenRecord {
		m.setPage(m.recordText(m.record))
	}
}

// key handles a key: the text inputs first, then the keys of the screen.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		return m.quit()
	}
	if runes := []rune(msg.Text); len(runes) > 1 {
		// Keys typed faster than they are read arrive as one message: each is a key of its
		// own ("/" then the filter's text), and text is never taken for a key's name (the
		// word "down" typed into the filter is not the down arrow).
		var cmds []tea.Cmd
		for _, r := range runes {
			cmds = append(cmds, m.key(tea.KeyPressMsg{Code: r, Text: string(r)}))
		}
		return tea.Sequence(cmds...)
	}
	if m.filtering {
		return m.filterKey(msg)
	}
	if m.screen == screenPlan && m.reason.Focused() {
		return m.reasonKey(msg)
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return m.quit()
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
		return nil
	}
	switch m.screen {
	case screenRecord, screenProcessed, screenPlan:
		return m.pageKey(msg)
	case screenRun:
		if key.Matches(msg, m.keys.Back) && !m.running {
			m.goTo(m.returnTo)
		}
		return nil
	}
	return m.listKey(msg)
}

// filterKey is a key typed into the filter: enter keeps it, esc clears it, the rest edits it
// (the list filtered as it is typed, from its first row).
func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.Code {
	case tea.KeyEnter:
		m.filtering = false
		m.filter.Blur()
		return nil
	case tea.KeyEscape:
		m.filtering = false
		m.filter.Blur()
		m.filter.SetValue("")
		m.filters[m.screen] = ""
		return nil
	}
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(msg)
	m.filters[m.screen] = m.filter.Value()
	m.cursor[m.screen] = 0
	return cmd
}

// reasonKey is a key typed into the replay plan's reason: the arrows still scroll the plan,
// enter executes the replay, esc cancels it (nothing sent), the rest edits the reason.
func (m *Model) reasonKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.Code {
	case tea.KeyUp, tea.KeyDown, tea.KeyPgUp, tea.KeyPgDown:
		var cmd tea.Cmd
		m.vp, cmd = m.vp.Update(msg)
		return cmd
	case tea.KeyEnter:
		return m.execute()
	case tea.KeyEscape:
		m.reason.Blur()
		m.goTo(m.returnTo)
		m.note = "replay cancelled: nothing was sent"
		return nil
	}
	var cmd tea.Cmd
	m.reason, cmd = m.reason.Update(msg)
	return cmd
}

// pageKey is a key on a screen of text (a dead letter in full, a marker, a replay's plan):
// back, the dead letter's own actions, or scrolling.
func (m *Model) pageKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back):
		m.back()
		return nil
	case m.screen == screenRecord && key.Matches(msg, k.Replay):
		return m.startReplay(selection{topic: m.record.Topic, records: []string{m.record.addr}, label: m.record.addr})
	case m.screen == screenRecord && key.Matches(msg, k.Copy):
		return m.copy("address", m.record.addr)
	case m.screen == screenRecord && key.Matches(msg, k.CopyCmd):
		return m.copy("command", m.record.Replay().Command)
	case m.screen == screenRecord && key.Matches(msg, k.Processed):
		return m.processed(m.record)
	case key.Matches(msg, k.Home):
		m.vp.GotoTop()
		return nil
	case key.Matches(msg, k.End):
		m.vp.GotoBottom()
		return nil
	}
	var cmd tea.Cmd
	m.vp, cmd = m.vp.Update(msg)
	return cmd
}

// listKey is a key on a list screen (topics, causes, dead letters): the cursor, the filter and
// the status cycled, opening, marking, and the actions on the cursor's row.
func (m *Model) listKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	rows := m.rows()
	cur := m.cursor[m.screen]
	switch {
	case key.Matches(msg, k.Up):
		m.cursor[m.screen] = max(0, cur-1)
	case key.Matches(msg, k.Down):
		m.cursor[m.screen] = max(0, min(len(rows)-1, cur+1))
	case key.Matches(msg, k.PageUp):
		m.cursor[m.screen] = max(0, cur-m.bodyHeight())
	case key.Matches(msg, k.PageDown):
		m.cursor[m.screen] = max(0, min(len(rows)-1, cur+m.bodyHeight()))
	case key.Matches(msg, k.Home):
		m.cursor[m.screen] = 0
	case key.Matches(msg, k.End):
		m.cursor[m.screen] = max(0, len(rows)-1)
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.filter.SetValue(m.filters[m.screen])
		m.filter.CursorEnd()
		return m.filter.Focus()
	case key.Matches(msg, k.ClearFilter) && m.filters[m.screen] != "":
		m.filters[m.screen] = ""
	case key.Matches(msg, k.Back):
		m.back()
	case key.Matches(msg, k.Status):
		m.cycleStatus()
	case len(rows) == 0:
		// The keys below act on the cursor's row.
	default:
		return m.rowKey(msg, rows, min(cur, len(rows)-1))
	}
	return nil
}

// rowKey is a key that acts on the row under the cursor (rows[cur]) of a list screen.
func (m *Model) rowKey(msg tea.KeyPressMsg, rows []row, cur int) tea.Cmd {
	k, r := m.keys, rows[cur]
	switch {
	case key.Matches(msg, k.Open):
		return m.open(r)
	case key.Matches(msg, k.Mark) && m.screen == screenList && !m.o.ReadOnly:
		if m.marks[r.item.addr] {
			delete(m.marks, r.item.addr)
		} else {
			m.marks[r.item.addr] = true
		}
		m.cursor[m.screen] = min(len(rows)-1, m.cursor[m.screen]+1)
	case key.Matches(msg, k.Replay):
		return m.replaySelected(r)
	case key.Matches(msg, k.Copy):
		if r.item != nil {
			return m.copy("address", r.item.addr)
		}
		return m.copy("topic", r.topic)
	case key.Matches(msg, k.CopyCmd):
		return m.copyCommand(r)
	case key.Matches(msg, k.Processed) && r.item != nil:
		return m.processed(r.item)
	}
	return nil
}

// quit ends the console; a replay in flight is stopped first, as Ctrl-C stops the command's
// (the run is journaled interrupted and can be resumed), and the console closes once it has.
func (m *Model) quit() tea.Cmd {
	if m.running {
		m.quitAfter = true
		m.runCancel()
		m.note = "stopping the replay…"
		return nil
	}
	m.cancel()
	m.quitting = true
	return tea.Quit
}

// back goes up one screen.
func (m *Model) back() {
	switch m.screen {
	case screenCauses:
		m.screen = screenTopics
	case screenList:
		m.screen = screenCauses
	case screenRecord:
		m.screen = screenList
	case screenPlan, screenProcessed:
		m.goTo(m.returnTo)
	}
}

// goTo shows screen s again; the record screen gets its record back in the viewport.
func (m *Model) goTo(s screen) {
	if s == screenRecord && m.record != nil {
		m.screen = s
		m.textTitle = m.record.addr
		m.setPage(m.recordText(m.record))
		return
	}
	m.screen = s
}

func (m *Model) cycleStatus() {
	order := append([]dlq.Status{""}, dlq.Statuses...)
	i := slices.Index(order, m.statusOf)
	m.statusOf = order[(i+1)%len(order)]
	m.cursor[screenCauses], m.cursor[screenList] = 0, 0
}

// open goes down into the row under the cursor; a dead letter's original record is read then.
func (m *Model) open(r row) tea.Cmd {
	switch m.screen {
	case screenTopics:
		m.topic, m.screen = r.topic, screenCauses
		m.cursor[screenCauses] = 0
		m.filters[screenCauses] = ""
	case screenCauses:
		m.causeKey, m.screen = r.cause.key, screenList
		m.cursor[screenList] = 0
		m.filters[screenList] = ""
	case screenList:
		return m.showRecord(r.item)
	}
	return nil
}

func (m *Model) showRecord(it *item) tea.Cmd {
	m.record, m.screen = it, screenRecord
	m.textTitle = it.addr
	m.setPage(m.recordText(it))
	if it.originalRead || it.Convention != dlq.ConventionShareGroup {
		return nil
	}
	ctx, b, e := m.ctx, m.o.Backend, it.Entry
	return func() tea.Msg {
		o, err := b.Original(ctx, e)
		return originalMsg{it: it, original: o, err: err}
	}
}

// recordText is a dead letter in full, as dlq show prints it: with its original record once
// read (a share group's dead letter: fetched by its coordinates, or said why it is gone).
func (m *Model) recordText(it *item) string {
	det := dlq.NewDetail(it.Entry)
	var note string
	switch {
	case it.originalErr != nil:
		note = "the original record could not be read: " + escape(it.originalErr.Error()) + "\n\n"
	case it.original != nil:
		det.SetOriginal(*it.original)
	case !it.originalRead && it.Convention == dlq.ConventionShareGroup:
		note = "reading the original record from its coordinates…\n\n"
	}
	return note + m.o.Views.Record(det, m.width)
}

// replaySelected opens the plan of what the cursor or the marks select: a cause (the causes
// screen), the marked dead letters of the topic, else the one under the cursor.
func (m *Model) replaySelected(r row) tea.Cmd {
	switch m.screen {
	case screenCauses:
		var recs []string
		for _, it := range m.causeItems(r.cause.key) {
			recs = append(recs, it.addr)
		}
		return m.startReplay(selection{topic: m.topic, records: recs, label: fmt.Sprintf("cause %s (%d)", r.cause.label, len(recs))})
	case screenList:
		var marked []string
		for _, it := range m.byTopic[m.topic] {
			if m.marks[it.addr] {
				marked = append(marked, it.addr)
			}
		}
		if len(marked) > 0 {
			return m.startReplay(selection{topic: m.topic, records: marked, label: fmt.Sprintf("%d marked", len(marked))})
		}
		return m.startReplay(selection{topic: m.topic, records: []string{r.item.addr}, label: r.item.addr})
	}
	return nil
}

// startReplay plans the replay: the flow's dry run, whose report the plan screen shows.
func (m *Model) startReplay(sel selection) tea.Cmd {
	if m.o.ReadOnly || len(sel.records) == 0 {
		return nil
	}
	if why := m.o.Backend.CanReplay(); why != "" {
		m.note = why
		return nil
	}
	m.note = "planning the replay of " + sel.label + "…"
	ctx, b := m.ctx, m.o.Backend
	return func() tea.Msg {
		res, err := b.Replay(ctx, sel.topic, sel.records, "", nil, nil)
		return planMsg{sel: sel, res: res, err: err}
	}
}

func (m *Model) planned(msg planMsg) tea.Cmd {
	if msg.err != nil {
		m.note = "replay plan: " + msg.err.Error()
		return nil
	}
	if m.screen != screenPlan {
		m.returnTo = m.screen
	}
	m.sel, m.plan, m.screen, m.note = msg.sel, msg.res, screenPlan, ""
	m.textTitle = "replay " + msg.sel.label
	m.setPage(m.planText())
	m.vp.GotoTop()
	m.reason.SetValue("")
	if m.plan.Report == nil || m.plan.Report.Counts.ToSend == 0 {
		m.note = "nothing to send"
		return nil
	}
	return m.reason.Focus()
}

func (m *Model) planText() string {
	var b strings.Builder
	if m.plan.Report != nil {
		b.WriteString(m.o.Views.Plan(m.plan.Report, m.width))
	}
	for _, n := range m.plan.Notices {
		if n.Kind == replay.NoticeDryRun {
			continue
		}
		b.WriteString("\n" + escape(n.String()))
	}
	return b.String()
}

// execute sends the plan shown, with the reason typed: the same flow, executed; its check must
// find what the plan showed, else nothing is sent.
func (m *Model) execute() tea.Cmd {
	reason := strings.TrimSpace(m.reason.Value())
	if reason == "" {
		m.note = "say why: the reason is journaled with the run and sent as fw.replay.reason"
		return nil
	}
	m.reason.Blur()
	shown := m.plan.Report.Counts.ToSend
	sel := m.sel
	ctx, cancel := context.WithCancel(m.ctx)
	m.running, m.runCancel, m.progress, m.runRes, m.runErr = true, cancel, nil, nil, nil
	m.screen, m.note = screenRun, ""
	ch := make(chan tea.Msg, 16)
	m.runCh = ch
	b := m.o.Backend
	confirm := func(c replay.Check) error {
		if c.Report.Counts.ToSend != shown {
			return fwerr.Wrap(fwerr.KindCancelled, fmt.Errorf("the plan changed since it was shown (%d to send now, %d then): nothing was sent; plan it again", c.Report.Counts.ToSend, shown))
		}
		return nil
	}
	progress := func(p replay.FlowProgress) {
		select {
		case ch <- progressMsg(p):
		default: // the screen shows the latest; a report it missed is not needed
		}
	}
	go func() {
		res, err := b.Replay(ctx, sel.topic, sel.records, reason, confirm, progress)
		ch <- runDoneMsg{res: res, err: err}
	}()
	return m.waitRun()
}

func (m *Model) waitRun() tea.Cmd {
	ch := m.runCh
	if ch == nil {
		return nil
	}
	return func() tea.Msg { return <-ch }
}

// ran shows the run's outcome and looks the selection's statuses up again.
func (m *Model) ran(msg runDoneMsg) tea.Cmd {
	m.running, m.runCh = false, nil
	m.runCancel()
	m.runRes, m.runErr = msg.res, msg.err
	if msg.res != nil {
		for _, n := range msg.res.Notices {
			if n.Kind == replay.NoticeResume {
				m.Final = append(m.Final, n.String())
			}
		}
	}
	if msg.err != nil && errors.Is(msg.err, context.Canceled) || fwerr.KindOf(msg.err) == fwerr.KindInterrupted {
		m.Err = msg.err
	}
	m.marks = map[string]bool{}
	if m.quitAfter {
		m.cancel()
		m.quitting = true
		return tea.Quit
	}
	if m.reading {
		return nil // the read under way looks them up
	}
	return m.read()
}

// processed looks the event's markers up, as `processed get` does.
func (m *Model) processed(it *item) tea.Cmd {
	if it.EventID == "" {
		m.note = "this dead letter has no event id to look up"
		return nil
	}
	consumer := m.o.Consumer
	if consumer == "" {
		consumer = it.Group
	}
	ctx, b, id := m.ctx, m.o.Backend, it.EventID
	return func() tea.Msg {
		rows, err := b.Processed(ctx, id, consumer)
		return processedMsg{eventID: id, consumer: consumer, rows: rows, err: err}
	}
}

func (m *Model) showProcessed(msg processedMsg) {
	if msg.err != nil {
		m.note = msg.err.Error()
		return
	}
	if m.screen != screenProcessed {
		m.returnTo = m.screen
	}
	m.screen, m.textTitle = screenProcessed, "processed get "+msg.eventID
	m.setPage(m.o.Views.Processed(msg.eventID, msg.consumer, msg.rows, m.width))
	m.vp.GotoTop()
}

// copy puts text on the clipboard and shows it.
func (m *Model) copy(what, text string) tea.Cmd {
	m.note = "copied " + what + ": " + text
	if m.o.Copy == nil {
		return tea.SetClipboard(text) // OSC 52, through the terminal
	}
	if err := m.o.Copy(text); err != nil {
		m.note = "copy: " + err.Error() + ": " + text
	}
	return nil
}

// copyCommand copies the command line for the runbook: the listing of a topic, the replay of a
// cause or of a dead letter.
func (m *Model) copyCommand(r row) tea.Cmd {
	switch m.screen {
	case screenTopics:
		return m.copy("command", "fieldwork dlq list --topic "+r.topic)
	case screenCauses:
		var addrs []string
		for _, it := range m.causeItems(r.cause.key) {
			addrs = append(addrs, it.addr)
		}
		return m.copy("command", dlq.ReplayCommand(addrs...))
	}
	return m.copy("command", r.item.Replay().Command)
}

// setPage shows text in the viewport, each line wider than the window cut with the ellipsis:
// the viewport itself would cut it silently, and a line cut mid-word must say so.
func (m *Model) setPage(text string) {
	m.vp.SetContent(cutLines(text, m.width))
}

// layout sizes the viewport to the window.
func (m *Model) layout() {
	m.vp.SetWidth(m.width)
	m.vp.SetHeight(m.bodyHeight())
	switch m.screen {
	case screenRecord:
		m.setPage(m.recordText(m.record))
	case screenPlan:
		m.setPage(m.planText())
	}
}

// question is what the plan asks, wrapped to the width, never cut (docs/design.md §4.1); none
// once it has been answered.
func (m *Model) question() []string {
	if m.screen != screenPlan || !m.reason.Focused() || m.plan == nil || m.plan.Report == nil {
		return nil
	}
	q := escape(m.o.Views.Question(m.plan.Report) + "?")
	return strings.Split(lipgloss.NewStyle().Width(m.width).Render(q), "\n")
}

// bodyHeight is the lines between the title and the help bar.
func (m *Model) bodyHeight() int {
	h := m.height - 4
	if m.screen == screenPlan {
		h -= 1 + len(m.question()) // the question and the reason
	}
	return max(1, h)
}
