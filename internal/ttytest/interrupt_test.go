package ttytest

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCtrlCExits130: a command that follows until stopped (dlq list --follow) exits 130
// when Ctrl-C is typed on its terminal, as every command stopped by Ctrl-C does, after what it
// printed: a dead letter written while it follows is shown before.
func TestCtrlCExits130(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := deadLetters(t, 2)
	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Env: env, Stdin: true}, testenv.Fieldwork(t),
		"dlq", "list", "--topic", dlqTopic, "--schema", sch, "--follow", "--no-status", "-o", "jsonl")
	term.WaitFor(within, "the listing", func(out string) bool { return strings.Count(out, `"event_id":"evt-`) == 2 })

	orig := &kgo.Record{Topic: src, Offset: 7, Key: []byte("task-7"), Value: []byte(`{}`)}
	testenv.Produce(t, testenv.Client(t), dlq.NewDeadLetter(orig, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonRejected, Error: "bad", Group: "billing", EventID: "evt-late"}))
	term.WaitForText(within, `"event_id":"evt-late"`)

	term.Type("\x03")
	code, out := term.Wait()
	if code != 130 || !strings.Contains(out, "interrupted") {
		t.Errorf("Ctrl-C while following: exit %d, want 130 and \"interrupted\":\n%s", code, out)
	}
}
