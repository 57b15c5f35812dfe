package ttytest

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// triageDeadLetters writes dead letters of CloudEvents that the audit handler accepts: ids
// evt-<prefix>-0…n-1 of records of src, failed with err (and class, when set) for group billing.
func triageDeadLetters(t *testing.T, src, dlqTopic, prefix, class, err string, n int) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		id := fmt.Sprintf("evt-%s-%d", prefix, i)
		agg := fmt.Sprintf("task-%s-%d", prefix, i)
		orig := &kgo.Record{Topic: src, Offset: int64(i), Key: []byte(agg),
			Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
			Value: []byte(`{"specversion":"1.0","id":"` + id + `","type":"task.created","source":"/tasks","aggregateid":"` + agg +
				`","aggregatetype":"task","aggregateversion":1,"data":{"title":"t"}}`)}
		recs[i] = dlq.NewDeadLetter(orig, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonExhausted, Error: err, ErrorClass: class, Group: "billing", EventID: id})
	}
	testenv.Produce(t, testenv.Client(t), recs...)
}

// screen is what a terminal of 80×24 shows after out: the console draws only the cells that
// change, so its text is read from an emulated screen, not from the bytes written.
func screen(out string) string {
	e := vt.NewEmulator(80, 24)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, e); close(done) }() // the emulator's answers to queries
	_, _ = e.WriteString(out)
	s := e.String()
	// Closing the answers' pipe ends the reader. Not e.Close: it sets a flag that Read checks
	// without synchronisation, a data race under -race.
	if c, ok := e.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
	<-done
	return s
}

// shows waits until the screen shows every one of what.
func shows(t *testing.T, term *testenv.Terminal, what ...string) string {
	t.Helper()
	var last string
	term.WaitFor(within, strings.Join(what, " and "), func(out string) bool {
		last = screen(out)
		for _, w := range what {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	})
	return last
}

// TestTriageOnATerminal drives `fieldwork triage` on an 80×24 pseudo-terminal against the real
// broker and PostgreSQL: the topic with its counts, a dead letter arriving while it is open,
// the filter, a group opened and replayed with a reason, the run's outcome, the replayed
// records resolved once a consumer has processed them, and q quitting with exit 0.
func TestTriageOnATerminal(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	triageDeadLetters(t, src, dlqTopic, "db", "", "db down", 3)
	triageDeadLetters(t, src, dlqTopic, "schema", "SchemaError", "field title missing", 2)

	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Rows: 24, Env: env, Stdin: true},
		testenv.Fieldwork(t), "triage", "--schema", sch, "--topic", dlqTopic, "--poll", "300ms")
	// The topics screen: 5 dead letters, all pending.
	shows(t, term, "TOPIC", "reasons: exhausted 5")
	// One arrives while the console is open: it is read, and counted as new.
	triageDeadLetters(t, src, dlqTopic, "late", "", "db down", 1)
	shows(t, term, "reasons: exhausted 6")
	shows(t, term, "+1")

	// Filter the topics, open the topic: its dead letters grouped by cause.
	term.Type("/" + dlqTopic[len(dlqTopic)-6:] + "\r")
	shows(t, term, "filter: "+dlqTopic[len(dlqTopic)-6:])
	term.Type("\r")
	shows(t, term, "SchemaError: field title missing")
	// Filter the groups down to the database failure and replay the whole group.
	term.Type("/db down\r")
	shows(t, term, "filter: db down")
	// One dead letter in full, as dlq show prints it, and back.
	typed := func(keys string, what ...string) string {
		t.Helper()
		term.Type(keys)
		return shows(t, term, what...)
	}
	typed("\r", "PARTITION/OFFSET")
	typed("\r", "Original record", "Failure")
	typed("\x1b", "PARTITION/OFFSET")
	typed("\x1b", "COUNT PENDING CAUSE")
	// The plan, as replay's dry run prints it, then the reason.
	out := typed("r", "to send      4", "reason:")
	if q := fmt.Sprintf("send 4 records from %s (4 to %s)?", dlqTopic, src); !strings.Contains(strings.Join(strings.Fields(out), ""), strings.Join(strings.Fields(q), "")) {
		// The question is wrapped to the width, never cut.
		t.Errorf("the plan does not ask %q:\n%q", q, out)
	}
	term.Type("database is back\r")
	shows(t, term, "completed: 4 sent")
	// The statuses are looked up again: the journal has the sends.
	shows(t, term, "now: 0 pending · 4 replayed")

	// The consumer processes the copies: the console shows them resolved.
	if code, _, stderr := fieldwork(t, env, "consume", "--topic", src, "--group", "billing", "--handler", "audit", "--schema", sch, "--migrate", "--dlq-topic", dlqTopic,
		"--stop-when-idle", "2s", "--metrics-addr", ""); code != 0 {
		t.Fatalf("consume: exit %d: %s", code, stderr)
	}
	shows(t, term, "0 replayed · 4 resolved")

	term.Type("q")
	if code, _ := term.Wait(); code != 0 {
		t.Errorf("q: exit %d, want 0", code)
	}

	// The statuses the console showed are dlq list's.
	code, stdout, stderr := fieldwork(t, env, "dlq", "list", "--topic", dlqTopic, "--schema", sch, "--status", "resolved", "-o", "jsonl")
	if code != 0 || strings.Count(stdout, "\n") != 4 {
		t.Errorf("dlq list --status resolved: exit %d, %d lines, want 4\n%s%s", code, strings.Count(stdout, "\n"), stdout, stderr)
	}
}

// TestTriageNeedsATerminal: off a terminal triage refuses with exit 2 and names dlq list.
func TestTriageNeedsATerminal(t *testing.T) {
	code, stdout, stderr := fieldwork(t, environ(t), "triage")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "fieldwork dlq list") {
		t.Errorf("triage without a terminal: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestTriageCtrlCStopsAReplay: Ctrl-C while a replay (capped at 2 records a second) is sending
// stops it as Ctrl-C stops fieldwork replay's: the run is journaled interrupted, the console
// closes, prints the replay resume line and exits 130; the resume sends the rest.
func TestTriageCtrlCStopsAReplay(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	triageDeadLetters(t, src, dlqTopic, "slow", "", "db down", 20)

	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Rows: 24, Env: env, Stdin: true},
		testenv.Fieldwork(t), "triage", "--schema", sch, "--topic", dlqTopic, "--rate", "2")
	shows(t, term, "reasons: exhausted 20")
	term.Type("\r")
	shows(t, term, "COUNT PENDING CAUSE")
	term.Type("r")
	shows(t, term, "reason:")
	term.Type("slowly\r")
	shows(t, term, "sending: 1 of 20 sent")
	term.Type("\x03")
	code, out := term.Wait()
	if code != 130 {
		t.Errorf("Ctrl-C during a replay: exit %d, want 130\n%s", code, out)
	}
	m := regexp.MustCompile(`continue it with:\s+fieldwork replay resume (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay resume line:\n%q", out)
	}
	if code, stdout, stderr := fieldwork(t, env, "replay", "show", m[1], "--schema", sch, "-o", "json"); code != 0 || !regexp.MustCompile(`"status": *"interrupted"`).MatchString(stdout) {
		t.Errorf("replay show %s: exit %d\n%s%s", m[1], code, stdout, stderr)
	}
	if code, _, stderr := fieldwork(t, env, "replay", "resume", m[1], "--schema", sch, "--execute", "--yes"); code != 0 {
		t.Fatalf("replay resume: exit %d: %s", code, stderr)
	}
	if n := endOffset(t, src); n < 20 {
		t.Errorf("after the resume %s holds %d records, want the 20 at least", src, n)
	}
}

// TestTriageShareGroupDeadLetters drives triage on share-group dead letters that hold only
// coordinates, written with the broker's six headers: two of one record are one row with
// DUPLICATES +1; the record screen shows the original read from the source topic, or says it
// is gone (an offset beyond the source's end: recreated).
func TestTriageShareGroupDeadLetters(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	testenv.Produce(t, testenv.Client(t, kgo.DefaultProduceTopic(src)), &kgo.Record{Key: []byte("task-1"), Value: []byte(`{"title":"from the source"}`)})
	hdr := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	dl := func(offset string) *kgo.Record {
		return &kgo.Record{Topic: dlqTopic, Headers: []kgo.RecordHeader{
			hdr(dlq.ShareTopic, src), hdr(dlq.SharePartition, "0"), hdr(dlq.ShareOffset, offset),
			hdr(dlq.ShareGroup, "billing"), hdr(dlq.ShareDeliveryCount, "1"), hdr(dlq.ShareMessage, dlq.ShareMessageRejected),
		}}
	}
	testenv.Produce(t, testenv.Client(t), dl("0"), dl("0"), dl("5"))

	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Rows: 24, Env: env, Stdin: true},
		testenv.Fieldwork(t), "triage", "--schema", sch, "--topic", dlqTopic, "--poll", "300ms", "--read-only")
	shows(t, term, "reasons: rejected 2")
	term.Type("\r")
	shows(t, term, "COUNT PENDING CAUSE")
	term.Type("\r")
	shows(t, term, "DUPLICATES", "+1")
	term.Type("\r")
	shows(t, term, "found at "+src+"/0/0", "source key        task-1")
	term.Type("\x1b")
	shows(t, term, "PARTITION/OFFSET")
	term.Type("j")
	term.Type("\r")
	shows(t, term, "Dead letter "+dlqTopic+"/0/2", "recreated")
	term.Type("q")
	if code, _ := term.Wait(); code != 0 {
		t.Errorf("q: exit %d, want 0", code)
	}
}
