package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// fakeBackend is a Backend whose dead letters the test writes: the model's tests are about
// what the console shows and asks for, the domain paths under it have tests of their own
// (and internal/ttytest drives the console against the real services).
type fakeBackend struct {
	mu       sync.Mutex
	topics   []string
	pending  []dlq.Entry // what the next Read returns
	statuses map[string]dlq.Status
	replays  []fakeReplay
	toSend   int64 // what the executed check finds (-1: the dry run's)
	block    chan struct{}
	noStore  bool
	// originals are the original records Original returns, by the dead letter's address;
	// originalReads counts the reads.
	originals     map[string]dlq.Original
	originalReads int
}

func (b *fakeBackend) Original(_ context.Context, e dlq.Entry) (*dlq.Original, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.originalReads++
	o, ok := b.originals[e.Address().String()]
	if !ok {
		return nil, errors.New("no such original")
	}
	return &o, nil
}

type fakeReplay struct {
	topic   string
	records []string
	reason  string
}

func (b *fakeBackend) Read(context.Context) ([]string, []dlq.Entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.pending
	b.pending = nil
	return slices.Clone(b.topics), out, nil
}

func (b *fakeBackend) Statuses(_ context.Context, ds []dlq.DeadLetter) ([]dlq.StatusInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]dlq.StatusInfo, len(ds))
	for i, d := range ds {
		out[i] = dlq.StatusInfo{Status: b.statuses[d.Address().String()]}
	}
	return out, nil
}

func (b *fakeBackend) CanReplay() string {
	if b.noStore {
		return "no store"
	}
	return ""
}

func (b *fakeBackend) Replay(ctx context.Context, topic string, records []string, reason string, confirm func(replay.Check) error, progress func(replay.FlowProgress)) (*replay.FlowResult, error) {
	b.mu.Lock()
	b.replays = append(b.replays, fakeReplay{topic, slices.Clone(records), reason})
	toSend, block := int64(len(records)), b.block
	if reason != "" && b.toSend >= 0 {
		toSend = b.toSend
	}
	b.mu.Unlock()
	rep := &replay.Report{Source: topic, Counts: replay.Counts{Selected: int64(len(records)), ToSend: toSend}}
	if reason == "" {
		return &replay.FlowResult{Report: rep, Notices: []replay.Notice{{Kind: replay.NoticeDryRun, Text: "dry run"}}}, nil
	}
	if err := confirm(replay.Check{Report: rep}); err != nil {
		return &replay.FlowResult{Report: rep}, err
	}
	progress(replay.FlowProgress{Stage: replay.StageSend, Read: 1, Total: 2, ToSend: toSend, Send: replay.Progress{Sent: 1}})
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			sum := &replay.Summary{RunID: "run-1", Status: dedup.RunInterrupted}
			return &replay.FlowResult{Summary: sum, Notices: []replay.Notice{{Kind: replay.NoticeResume,
				Text: "run run-1 is interrupted; continue it with: fieldwork replay resume run-1"}}}, fmt.Errorf("replay: %w", ctx.Err())
		}
	}
	b.mu.Lock()
	for _, r := range records {
		b.statuses[r] = dlq.StatusReplayed
	}
	b.mu.Unlock()
	sum := &replay.Summary{RunID: "run-1", Status: dedup.RunCompleted, Counts: dedup.RunCounts{Selected: toSend, Sent: toSend}}
	return &replay.FlowResult{Report: rep, Summary: sum}, nil
}

func (b *fakeBackend) Processed(_ context.Context, eventID, consumer string) ([]dedup.MarkerRow, error) {
	return []dedup.MarkerRow{{Consumer: consumer, EventID: eventID}}, nil
}

func (b *fakeBackend) replayed() []fakeReplay {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.replays)
}

// deadLetter is a dead letter of topic at offset, failed with class and msg.
func deadLetter(topic string, offset int64, class, msg string, st dlq.Status) dlq.Entry {
	orig := &kgo.Record{Topic: "tasks", Offset: offset, Key: []byte(fmt.Sprintf("task-%d", offset)), Value: []byte(`{}`)}
	rec := dlq.NewDeadLetter(orig, dlq.Meta{Topic: topic, Reason: dlq.ReasonExhausted, Error: msg, ErrorClass: class, Group: "billing",
		EventID: fmt.Sprintf("evt-%d", offset)})
	rec.Offset = offset
	rec.Timestamp = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC).Add(time.Duration(offset) * time.Minute)
	return dlq.Entry{DeadLetter: dlq.Parse(rec), Status: dlq.StatusInfo{Status: st}}
}

// console is a model on a fake backend, sized 80×24, its first read done.
type console struct {
	t *testing.T
	m *Model
	b *fakeBackend
	// copied is what the model put on the clipboard.
	copied []string
}

func newConsole(t *testing.T, b *fakeBackend, readOnly bool) *console {
	t.Helper()
	c := &console{t: t, b: b}
	if b.statuses == nil {
		b.statuses = map[string]dlq.Status{}
	}
	for _, e := range b.pending {
		b.statuses[e.Address().String()] = e.Status.Status
	}
	views := Views{
		Record: func(det dlq.Detail, width int) string {
			out := fmt.Sprintf("Dead letter %s\n  error  %s\n  value  %s", det.Address(), escape(det.ErrorMessage), escape(string(det.Value)))
			if o := det.Original; o != nil {
				out += "\n  original  " + string(o.State)
				if o.Record != nil {
					out += " " + escape(string(o.Record.Value))
				}
			}
			for _, n := range det.Replay.Notes {
				out += "\n  note  " + escape(n)
			}
			return out
		},
		Plan: func(rep *replay.Report, width int) string {
			return fmt.Sprintf("Plan: %d to send from %s", rep.Counts.ToSend, rep.Source)
		},
		Question: func(rep *replay.Report) string { return fmt.Sprintf("send %d records", rep.Counts.ToSend) },
		Processed: func(id, consumer string, rows []dedup.MarkerRow, width int) string {
			return fmt.Sprintf("Event %s: %d markers of %s", id, len(rows), consumer)
		},
	}
	now := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	c.m = New(context.Background(), Options{Backend: b, Views: views, ReadOnly: readOnly, NoColor: true, Poll: time.Hour,
		Now: func() time.Time { return now }, Copy: func(s string) error { c.copied = append(c.copied, s); return nil }})
	c.m.noTick = true
	c.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	c.run(c.m.Init())
	return c
}

// send hands msg to the model and runs the commands it returns, but not the poll's tick.
func (c *console) send(msg tea.Msg) {
	c.t.Helper()
	_, cmd := c.m.Update(msg)
	c.run(cmd)
}

// run runs cmd and what follows from it: a batch's commands, the messages they return; ticks
// and blinks are dropped (the test decides when the console polls).
func (c *console) run(cmd tea.Cmd) {
	c.t.Helper()
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case nil, tickMsg:
	case tea.BatchMsg:
		for _, cm := range msg {
			c.run(cm)
		}
	case tea.QuitMsg:
		c.m.quitting = true
	default:
		if strings.HasPrefix(fmt.Sprintf("%T", msg), "cursor.") {
			return // the text inputs' cursor blinks
		}
		c.send(msg)
	}
}

// keys types s, one key a rune; "\r" is Enter, "\x1b" Esc.
func (c *console) keys(s string) {
	c.t.Helper()
	for _, r := range s {
		switch r {
		case '\r':
			c.send(tea.KeyPressMsg{Code: tea.KeyEnter})
		case '\x1b':
			c.send(tea.KeyPressMsg{Code: tea.KeyEscape})
		case ' ':
			c.send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
		default:
			c.send(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
	}
}

// screen is what the console draws, checked to fit the terminal: as many lines as it is
// high at most, none wider.
func (c *console) screen() string {
	c.t.Helper()
	v := c.m.render()
	lines := strings.Split(v, "\n")
	if len(lines) > c.m.height {
		c.t.Errorf("%d lines on a terminal %d high:\n%s", len(lines), c.m.height, v)
	}
	for _, l := range lines {
		if w := lipgloss.Width(l); w > c.m.width {
			c.t.Errorf("a line %d wide on a terminal %d wide: %q", w, c.m.width, l)
		}
	}
	return v
}

func (c *console) want(texts ...string) string {
	c.t.Helper()
	v := c.screen()
	for _, s := range texts {
		if !strings.Contains(v, s) {
			c.t.Errorf("the screen does not show %q:\n%s", s, v)
		}
	}
	return v
}

// wantRow checks that a line of the screen has these fields (separated by blanks).
func (c *console) wantRow(fields ...string) {
	c.t.Helper()
	v := c.screen()
	for _, l := range strings.Split(v, "\n") {
		if slices.Equal(strings.Fields(l), fields) {
			return
		}
	}
	c.t.Errorf("no line of the screen is %q:\n%s", fields, v)
}

func (c *console) wantNot(texts ...string) {
	c.t.Helper()
	v := c.screen()
	for _, s := range texts {
		if strings.Contains(v, s) {
			c.t.Errorf("the screen shows %q:\n%s", s, v)
		}
	}
}

// sample is two topics: tasks.dlq with three dead letters of one cause and two of another
// (one resolved), orders.dlq with one.
func sample() *fakeBackend {
	return &fakeBackend{topics: []string{"orders.dlq", "tasks.dlq"}, pending: []dlq.Entry{
		deadLetter("tasks.dlq", 0, "", "db down", dlq.StatusPending),
		deadLetter("tasks.dlq", 1, "SchemaError", "field title missing", dlq.StatusPending),
		deadLetter("tasks.dlq", 2, "", "db down", dlq.StatusPending),
		deadLetter("tasks.dlq", 3, "SchemaError", "field title missing", dlq.StatusResolved),
		deadLetter("tasks.dlq", 4, "", "db down", dlq.StatusPending),
		deadLetter("orders.dlq", 0, "", "timeout", dlq.StatusUnknown),
	}, toSend: -1}
}

func TestTopicsScreen(t *testing.T) {
	c := newConsole(t, sample(), false)
	v := c.want("fieldwork triage", "TOPIC", "TOTAL", "NEW", "PENDING", "RESOLVED", "orders.dlq", "tasks.dlq", "reasons: exhausted 1",
		"enter open", "? all keys")
	if !strings.Contains(v, "› orders.dlq") {
		t.Errorf("the cursor is not on the first topic:\n%s", v)
	}
	c.keys("j")
	c.wantRow("›", "tasks.dlq", "5", "+0", "4", "0", "1", "0", "0")
	c.want("reasons: exhausted 5")

	// Live: a dead letter arrives, and one is resolved meanwhile.
	c.b.mu.Lock()
	c.b.pending = []dlq.Entry{deadLetter("tasks.dlq", 5, "", "db down", dlq.StatusPending)}
	c.b.statuses["tasks.dlq/0/0"] = dlq.StatusResolved
	c.b.mu.Unlock()
	c.send(tickMsg(time.Now()))
	c.wantRow("›", "tasks.dlq", "6", "+1", "4", "0", "2", "0", "0")
}

// TestStatusRefreshBounded: each poll looks up at most refreshCap statuses, going round the
// dead letters that can still change, so that every one is looked up again in turn.
func TestStatusRefreshBounded(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.m.refreshCap = 2
	c.b.mu.Lock()
	for a, st := range c.b.statuses {
		if st == dlq.StatusPending {
			c.b.statuses[a] = dlq.StatusResolved
		}
	}
	c.b.mu.Unlock()
	c.keys("j")
	c.send(tickMsg(time.Now()))
	c.wantRow("›", "tasks.dlq", "5", "+0", "2", "0", "3", "0", "0")
	c.send(tickMsg(time.Now()))
	c.wantRow("›", "tasks.dlq", "5", "+0", "0", "0", "5", "0", "0")
}

func TestCausesAndListScreens(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.keys("j\r")
	c.want("tasks.dlq", "COUNT", "CAUSE", "FIRST", "LAST", "ORIGINAL", "db down", "SchemaError: field title missing")
	v := c.screen()
	if strings.Index(v, "db down") > strings.Index(v, "SchemaError") {
		t.Errorf("the larger cause is not first:\n%s", v)
	}
	c.wantRow("›", "3", "3", "db", "down", "1h", "56m", "tasks")
	// The status filter: resolved leaves one cause of one.
	c.keys("ss")
	c.want("status: replayed", "no dead letters here (status replayed)")
	c.keys("s")
	c.want("status: resolved")
	c.wantRow("›", "1", "0", "SchemaError:", "field", "title", "missing", "57m", "57m", "tasks")
	c.wantNot("db down")
	c.keys("s")
	c.want("status: stale", "no dead letters here (status stale)")
	c.keys("ss")
	c.want("status: all")

	// Open the cause: its dead letters.
	c.keys("\r")
	c.want("tasks.dlq › db down", "PARTITION/OFFSET", "STATUS", "EVENT ID", "0/0", "0/2", "0/4", "evt-0", "pending")
	c.wantNot("0/1")
	// Back up, and into the other cause.
	c.keys("\x1bj\r")
	c.want("SchemaError: field title missing", "0/1", "0/3", "resolved")
	c.keys("\x1b\x1b")
	c.want("TOPIC", "orders.dlq")
}

// TestCausesByFingerprint: messages that differ only in ids, numbers or quoted values are one
// cause, as dlq stats --group-by fingerprint counts them.
func TestCausesByFingerprint(t *testing.T) {
	b := &fakeBackend{topics: []string{"orders.dlq"}, pending: []dlq.Entry{
		deadLetter("orders.dlq", 0, "NotFound", "order 1017 not found", dlq.StatusPending),
		deadLetter("orders.dlq", 1, "NotFound", `order 2231 not found`, dlq.StatusPending),
		deadLetter("orders.dlq", 2, "NotFound", "order 4410 not found", dlq.StatusPending),
		deadLetter("orders.dlq", 3, "Timeout", "db down", dlq.StatusPending),
	}, toSend: -1}
	c := newConsole(t, b, false)
	c.keys("\r")
	c.wantRow("›", "3", "3", "NotFound:", "order", "<n>", "not", "found", "1h", "58m", "tasks")
	c.want("Timeout: db down")
	c.wantNot("1017", "2231")
}

func TestFilter(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.keys("/task")
	c.want("/ task")
	c.wantNot("orders.dlq")
	c.keys("\r")
	c.want("filter: task (esc clears)", "› tasks.dlq")
	c.keys("\r")
	c.want("db down")
	c.keys("/schema\r")
	c.want("SchemaError")
	c.wantNot("db down")
	c.keys("\x1b")
	c.want("db down", "SchemaError")
	c.keys("\x1b")
	c.want("TOPIC", "tasks.dlq")
	c.wantNot("orders.dlq") // the topics' filter stays until cleared
	c.keys("\x1b")
	c.want("orders.dlq")
}

// TestKeysTogether: keys that arrive in one message (typed faster than read) act one by one,
// and what follows "/" is the filter's text.
func TestKeysTogether(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.send(tea.KeyPressMsg{Code: '/', Text: "/tasks"})
	c.want("/ tasks")
	c.keys("\r")
	c.send(tea.KeyPressMsg{Code: 'j', Text: "jk"})
	c.want("› tasks.dlq")
	c.keys("\r")
	c.send(tea.KeyPressMsg{Code: '/', Text: "/db"})
	c.send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	c.send(tea.KeyPressMsg{Code: 'd', Text: "down"})
	c.keys("\r")
	c.want("filter: db down (esc clears)")
}

func TestRecordScreen(t *testing.T) {
	b := sample()
	for _, i := range []int{0, 2, 4} {
		b.pending[i] = deadLetter("tasks.dlq", int64(i), "", "db down\x1b]0;owned\a", dlq.StatusPending)
	}
	c := newConsole(t, b, false)
	c.keys("j\r")
	c.want(`db down\x1b]<n>;owned\a`) // the cause, its number normalised away (dlq.FingerprintOf)
	c.keys("\r\r")
	v := c.want("Dead letter tasks.dlq/0/0", `db down\x1b]0;owned\a`)
	if strings.Contains(v, "\x1b]0;") {
		t.Errorf("a record's escape sequence reached the screen: %q", v)
	}
	c.keys("y")
	c.keys("Y")
	c.keys("p")
	if want := []string{"tasks.dlq/0/0", `fieldwork replay tasks.dlq/0/0 --execute --reason "…"`}; !slices.Equal(c.copied, want) {
		t.Errorf("copied %q, want %q", c.copied, want)
	}
	c.want("processed get evt-0", "Event evt-0: 1 markers of billing")
	c.keys("\x1b")
	c.want("Dead letter tasks.dlq/0/0")
	c.keys("\x1b")
	c.want("PARTITION/OFFSET", "0/2")
}

func TestCopyCommands(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.keys("jY\rY\ry")
	want := []string{"fieldwork dlq list --topic tasks.dlq",
		`fieldwork replay --from-file <(printf '%s\n' tasks.dlq/0/0 tasks.dlq/0/2 tasks.dlq/0/4) --execute --reason "…"`, "tasks.dlq/0/0"}
	if !slices.Equal(c.copied, want) {
		t.Errorf("copied %q, want %q", c.copied, want)
	}
	c.want("copied address: tasks.dlq/0/0")
}

// TestReplayCause: r on a cause plans the replay of its dead letters (a dry run), the plan is
// shown and asks for a reason; Enter with one executes the same records with it; the outcome
// and the statuses looked up again are shown.
func TestReplayCause(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.keys("j\rr")
	c.want("replay cause db down (3)", "Plan: 3 to send from tasks.dlq", "send 3 records?", "reason: ", "enter send", "esc cancel")
	c.keys("\r")
	c.want("say why")
	c.keys("db is back\r")
	c.want("run run-1 completed: 3 sent", "now: 0 pending · 3 replayed · 0 resolved · 0 stale · 0 unknown (of 3)")
	want := []fakeReplay{
		{"tasks.dlq", []string{"tasks.dlq/0/0", "tasks.dlq/0/2", "tasks.dlq/0/4"}, ""},
		{"tasks.dlq", []string{"tasks.dlq/0/0", "tasks.dlq/0/2", "tasks.dlq/0/4"}, "db is back"},
	}
	if got := c.b.replayed(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replays %v, want %v", got, want)
	}
	// The consumer processes them: the next poll shows them resolved.
	c.b.mu.Lock()
	for _, a := range want[0].records {
		c.b.statuses[a] = dlq.StatusResolved
	}
	c.b.mu.Unlock()
	c.send(tickMsg(time.Now()))
	c.want("now: 0 pending · 0 replayed · 3 resolved")
	c.keys("\x1b")
	c.wantRow("›", "3", "0", "db", "down", "1h", "56m", "tasks")
}

// TestReplayMarked: marked dead letters are replayed together; the one under the cursor when
// none is marked; Esc on the plan sends nothing.
func TestReplayMarked(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.keys("j\r\r  ")
	c.want("* 0/0", "* 0/2", "2 marked: r replays them")
	c.keys("r")
	c.want("replay 2 marked", "Plan: 2 to send")
	c.keys("\x1b")
	c.want("replay cancelled: nothing was sent", "PARTITION/OFFSET")
	c.keys("r")
	c.keys("why\r")
	c.want("run run-1 completed: 2 sent")
	c.keys("\x1b")
	c.wantNot("marked")
	c.keys("jjr")
	c.want("replay tasks.dlq/0/4")
	c.keys("\x1b\rr") // from the record screen
	c.want("replay tasks.dlq/0/4", "Plan: 1 to send")
	got := c.b.replayed()
	if len(got) != 5 || !slices.Equal(got[2].records, []string{"tasks.dlq/0/0", "tasks.dlq/0/2"}) || got[2].reason != "why" ||
		!slices.Equal(got[4].records, []string{"tasks.dlq/0/4"}) || got[4].reason != "" {
		t.Errorf("replays %v", got)
	}
}

// TestReplayPlanChanged: an executed check that finds another count than the plan shown sends
// nothing and says so.
func TestReplayPlanChanged(t *testing.T) {
	b := sample()
	b.toSend = 2
	c := newConsole(t, b, false)
	c.keys("j\rrwhy\r")
	c.want("the plan changed since it was shown (2 to send now, 3 then): nothing was sent")
}

// TestQuitDuringReplay: q while a replay runs stops it as Ctrl-C stops the command's: the run
// is interrupted, the console closes once it has, and the resume line is kept for after.
func TestQuitDuringReplay(t *testing.T) {
	b := sample()
	b.block = make(chan struct{})
	c := newConsole(t, b, false)
	c.keys("j\rr")
	c.keys("why")
	_, cmd := c.m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	c.m.Update(cmd()) // the first progress report; the rest waits for the run
	c.want("sending: 1 of 3 sent")
	_, cmd = c.m.Update(ctrlC)
	if cmd != nil {
		t.Fatal("the console quit before the replay stopped")
	}
	c.want("stopping the replay")
	c.run(c.m.waitRun())
	if !c.m.quitting {
		t.Error("the console did not quit once the replay stopped")
	}
	if !slices.Equal(c.m.Final, []string{"run run-1 is interrupted; continue it with: fieldwork replay resume run-1"}) {
		t.Errorf("final lines %q", c.m.Final)
	}
	if !errors.Is(c.m.Err, context.Canceled) {
		t.Errorf("outcome %v, want the interruption", c.m.Err)
	}
}

var ctrlC = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}

func TestQuit(t *testing.T) {
	for _, k := range []tea.KeyPressMsg{{Code: 'q', Text: "q"}, ctrlC} {
		c := newConsole(t, sample(), false)
		c.send(k)
		if !c.m.quitting || c.m.Err != nil {
			t.Errorf("%s: quitting %v, err %v", k, c.m.quitting, c.m.Err)
		}
	}
	// q in a filter is a letter; Ctrl-C still quits.
	c := newConsole(t, sample(), false)
	c.keys("/q")
	if c.m.quitting {
		t.Error("q typed into the filter quit")
	}
	c.send(ctrlC)
	if !c.m.quitting {
		t.Error("Ctrl-C in the filter did not quit")
	}
}

func TestReadOnly(t *testing.T) {
	c := newConsole(t, sample(), true)
	c.want("read-only")
	c.wantNot("r replay")
	c.keys("j\r")
	c.wantNot("r replay")
	c.keys("r\r ")
	c.wantNot("space mark", "Plan:", "* 0/")
	c.keys("?")
	c.wantNot("replay", "mark")
	if got := c.b.replayed(); len(got) != 0 {
		t.Errorf("read-only replayed %v", got)
	}
}

func TestNoStore(t *testing.T) {
	b := sample()
	b.noStore = true
	c := newConsole(t, b, false)
	c.keys("j\rr")
	c.want("no store")
	if got := c.b.replayed(); len(got) != 0 {
		t.Errorf("replayed without a store: %v", got)
	}
}

func TestHelp(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.wantNot("copy address")
	c.keys("?")
	c.want("up", "down", "copy address", "copy command", "processed get", "status filter", "mark", "replay", "quit")
	c.keys("?")
	c.wantNot("copy address")
}

// TestResize: the screen follows the terminal's size, down to narrow ones.
func TestResize(t *testing.T) {
	c := newConsole(t, sample(), false)
	for _, size := range [][2]int{{120, 40}, {60, 15}, {40, 10}, {80, 24}} {
		c.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		c.want("tasks.dlq") // screen() checks that it fits
		c.keys("j\r\r\r")
		c.want("Dead letter")
		c.keys("\x1b\x1b\x1bk")
	}
}

// TestStatusColouredAsTheTables: the console draws a dead letter's status in the tables'
// colours (internal/look/status: pending and stale bright yellow, resolved bright green, the
// rest plain), not a palette of its own.
func TestStatusColouredAsTheTables(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.m.st = newStyles(false) // colour, as on a terminal without NO_COLOR
	c.keys("\r\r")            // orders.dlq: its one dead letter's status is unknown
	if v := c.screen(); !strings.Contains(v, " unknown ") || strings.Contains(v, "munknown") {
		t.Errorf("unknown is not drawn plain:\n%q", v)
	}
	c.keys("\x1b\x1bj\r\r") // tasks.dlq, db down: pending
	if v := c.screen(); !strings.Contains(v, "\x1b[93mpending") {
		t.Errorf("pending is not drawn bright yellow, as the tables draw it:\n%q", v)
	}
	c.keys("\x1bj\r") // tasks.dlq, field title missing: pending and resolved
	if v := c.screen(); !strings.Contains(v, "\x1b[92mresolved") {
		t.Errorf("resolved is not drawn bright green, as the tables draw it:\n%q", v)
	}
}

// TestHomeEnd: Home/g and End/G move the cursor to the first and the last row of a list, and
// to the top and the bottom of a page of text.
func TestHomeEnd(t *testing.T) {
	c := newConsole(t, sample(), false)
	c.keys("j\r\r") // tasks.dlq, db down: 0/0, 0/2, 0/4
	c.keys("G")
	c.wantRow("›", "0/4", "pending", "evt-4", "tasks/0/4", "56m")
	c.keys("g")
	c.wantRow("›", "0/0", "pending", "evt-0", "tasks/0/0", "1h")
	c.send(tea.KeyPressMsg{Code: tea.KeyEnd})
	c.wantRow("›", "0/4", "pending", "evt-4", "tasks/0/4", "56m")
	c.send(tea.KeyPressMsg{Code: tea.KeyHome})
	c.wantRow("›", "0/0", "pending", "evt-0", "tasks/0/0", "1h")
}

// TestLinesCutWithEllipsis: a line of a page of text wider than the window is cut with the
// ellipsis, never silently.
func TestLinesCutWithEllipsis(t *testing.T) {
	b := &fakeBackend{topics: []string{"tasks.dlq"}, pending: []dlq.Entry{
		deadLetter("tasks.dlq", 0, "", "the same bytes will fail again "+strings.Repeat("and again ", 12), dlq.StatusPending),
	}, toSend: -1}
	c := newConsole(t, b, false)
	c.keys("\r\r\r")
	v := c.want("Dead letter", "the same bytes will fail again")
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, "and again") && !strings.HasSuffix(strings.TrimRight(l, " "), "…") {
			t.Errorf("a long line is cut without the ellipsis: %q", l)
		}
	}
}

// shareDeadLetter is a share group's coordinates-only dead letter at offset of dlq.orders,
// of the record at orders/0/origOff.
func shareDeadLetter(offset, origOff int64) dlq.Entry {
	p := int32(0)
	return dlq.Entry{DeadLetter: dlq.DeadLetter{Topic: "dlq.orders", Offset: offset, Convention: dlq.ConventionShareGroup,
		Reason: dlq.ReasonRejected, ErrorMessage: dlq.ShareMessageRejected, Group: "billing",
		Timestamp:     time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC).Add(time.Duration(offset) * time.Minute),
		OriginalTopic: "orders", OriginalPartition: &p, OriginalOffset: &origOff}, Status: dlq.StatusInfo{Status: dlq.StatusPending}}
}

// TestShareGroupOriginal: a coordinates-only dead letter's record screen shows its original
// record once the backend has read it by its coordinates, read once, or says why it is gone.
func TestShareGroupOriginal(t *testing.T) {
	found := shareDeadLetter(0, 7)
	gone := shareDeadLetter(1, 3)
	b := &fakeBackend{topics: []string{"dlq.orders"}, pending: []dlq.Entry{found, gone}, toSend: -1, originals: map[string]dlq.Original{
		"dlq.orders/0/0": {Topic: "orders", Offset: 7, State: dlq.OriginalFound, Record: &kgo.Record{Topic: "orders", Offset: 7, Value: []byte(`{"task":7}`)}},
		"dlq.orders/0/1": {Topic: "orders", Offset: 3, State: dlq.OriginalCompacted, Detail: "orders/0/3 holds no record: compacted away"},
	}}
	c := newConsole(t, b, false)
	c.keys("\r\r\r")
	c.want("Dead letter dlq.orders/0/0", `original  found {"task":7}`)
	c.keys("\x1b")
	c.send(tea.KeyPressMsg{Code: tea.KeyEnter})
	c.keys("\x1b")
	c.keys("j\r")
	c.want("Dead letter dlq.orders/0/1", "original  compacted")
	c.keys("\x1b\r")
	if b.originalReads != 2 {
		t.Errorf("%d reads of originals, want 2 (one a dead letter)", b.originalReads)
	}
	delete(b.originals, "dlq.orders/0/0")
	c.keys("\x1bk") // a read failing says so
	b.mu.Lock()
	b.pending = []dlq.Entry{shareDeadLetter(2, 9)}
	b.mu.Unlock()
	c.run(c.m.read())
	c.keys("jj\r")
	c.want("Dead letter dlq.orders/0/2", "the original record could not be read: no such original")
}

// TestDuplicatesFolded: a share group's dead letters of one record are one row with their
// count, as in dlq list, whether they are read together or by a later poll.
func TestDuplicatesFolded(t *testing.T) {
	b := &fakeBackend{topics: []string{"dlq.orders"}, pending: []dlq.Entry{shareDeadLetter(0, 7), shareDeadLetter(1, 8), shareDeadLetter(2, 7)}, toSend: -1}
	c := newConsole(t, b, false)
	c.keys("\r\r")
	c.want("DUPLICATES")
	c.wantRow("›", "0/0", "pending", "-", "orders/0/7", "1h", "+1")
	c.wantNot("0/2")
	b.mu.Lock()
	b.pending = []dlq.Entry{shareDeadLetter(3, 7)}
	b.mu.Unlock()
	c.run(c.m.read())
	c.wantRow("›", "0/0", "pending", "-", "orders/0/7", "1h", "+2")
	c.wantNot("0/3")
}
