package ttytest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

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
	term.WaitFor(within, "the topic with 5 pending", func(out string) bool {
		return strings.Contains(out, "TOPIC") && strings.Contains(out, "reasons: exhausted 5")
	})
	// One arrives while the console is open: it is read, and counted as new.
	triageDeadLetters(t, src, dlqTopic, "late", "", "db down", 1)
	term.WaitForText(within, "reasons: exhausted 6")
	term.WaitForText(within, "+1")

	// Filter the topics, open the topic: its dead letters grouped by cause.
	term.Type("/" + dlqTopic[len(dlqTopic)-6:] + "\r")
	term.WaitForText(within, "filter: "+dlqTopic[len(dlqTopic)-6:])
	term.Type("\r")
	term.WaitForText(within, "SchemaError: field title missing")
	// Filter the groups down to the database failure and replay the whole group.
	term.Type("/db down\r")
	term.WaitForText(within, "filter: db down")
	// One dead letter in full, as dlq show prints it, and back.
	typed := func(keys string, what ...string) string {
		t.Helper()
		from := len(term.Output())
		term.Type(keys)
		return term.WaitFor(within, strings.Join(what, " and "), func(out string) bool {
			for _, w := range what {
				if !strings.Contains(out[from:], w) {
					return false
				}
			}
			return true
		})
	}
	typed("\r", "PARTITION/OFFSET")
	typed("\r", "Original record", "Failure")
	typed("\x1b", "PARTITION/OFFSET")
	typed("\x1b", "COUNT PENDING CAUSE")
	// The plan, as replay's dry run prints it, then the reason.
	out := typed("r", "to send      4", "reason: ")
	if q := fmt.Sprintf("send 4 records from %s (4 to %s)?", dlqTopic, src); !strings.Contains(strings.Join(strings.Fields(out), ""), strings.Join(strings.Fields(q), "")) {
		// The question is wrapped to the width, never cut.
		t.Errorf("the plan does not ask %q:\n%q", q, out)
	}
	term.Type("database is back\r")
	term.WaitForText(within, "completed: 4 sent")
	// The statuses are looked up again: the journal has the sends.
	term.WaitForText(within, "now: 0 pending · 4 replayed")

	// The consumer processes the copies: the console shows them resolved.
	if code, _, stderr := fieldwork(t, env, "consume", "--topic", src, "--group", "billing", "--handler", "audit", "--schema", sch, "--migrate", "--dlq-topic", dlqTopic,
		"--stop-when-idle", "2s", "--metrics-addr", ""); code != 0 {
		t.Fatalf("consume: exit %d: %s", code, stderr)
	}
	term.WaitForText(within, "0 replayed · 4 resolved")

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
	term.WaitForText(within, "reasons: exhausted 20")
	term.Type("\r")
	term.WaitForText(within, "COUNT PENDING CAUSE")
	term.Type("r")
	term.WaitForText(within, "reason: ")
	term.Type("slowly\r")
	term.WaitForText(within, "sending: 1 of 20 sent")
	term.Type("\x03")
	code, out := term.Wait()
	if code != 130 {
		t.Errorf("Ctrl-C during a replay: exit %d, want 130\n%s", code, out)
	}
	m := regexp.MustCompile(`continue it with: fieldwork replay resume (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay resume line:\n%q", out)
	}
	if code, stdout, stderr := fieldwork(t, env, "replay", "show", m[1], "--schema", sch, "-o", "json"); code != 0 || !regexp.MustCompile(`"status": *"interrupted"`).MatchString(stdout) {
		t.Errorf("replay show %s: exit %d\n%s%s", m[1], code, stdout, stderr)
	}
	if code, _, stderr := fieldwork(t, env, "replay", "resume", m[1], "--schema", sch, "--yes"); code != 0 {
		t.Fatalf("replay resume: exit %d: %s", code, stderr)
	}
	if n := endOffset(t, src); n < 20 {
		t.Errorf("after the resume %s holds %d records, want the 20 at least", src, n)
	}
}
