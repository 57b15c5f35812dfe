package ttytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestSkipPromptOnATerminal: an executed groups skip on a terminal asks after the plan (the
// record it would park, decoded), naming the cluster, the store, the move and the reason; n
// exits 6 and neither parks nor moves anything; y does both.
func TestSkipPromptOnATerminal(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	topic := testenv.Topic(t, 1, nil)
	dlqTopic := topic + ".dlq"
	testenv.CreateTopic(t, dlqTopic, 1, nil)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	testenv.Produce(t, cl, &kgo.Record{Key: []byte("k0"), Value: []byte(`{"event_id":"e-0"}`)}, &kgo.Record{Key: []byte("k1"), Value: []byte("POISON")})
	group := testenv.Name(t, "g")
	adm := kadm.NewClient(testenv.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteGroups(context.Background(), group) })
	commit := func() int64 {
		os, err := adm.FetchOffsetsForTopics(ctx, group, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := os.Lookup(topic, 0)
		return o.At
	}
	args := []string{"groups", "skip", group, "--topic", topic, "--partition", "0", "--schema", sch, "--execute", "--reason", "INC-9"}

	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 120, Env: env, Stdin: true}, testenv.Fieldwork(t), args...)
	shown := strings.ReplaceAll(term.WaitForText(within, "? [y/N] "), "\r\n", "\n")
	for _, want := range []string{"Record " + topic + "/0/1", "POISON", "  cluster  " + testenv.Brokers(t) + "\n",
		`"` + sch + `"."processed_events"`, fmt.Sprintf("group %s on %s/0: 1 → 2", group, topic), "  reason   INC-9\n",
		fmt.Sprintf("Park 1 record of %s/0 in %s and move consumer group %s from offset 1 to 2? [y/N]", topic, dlqTopic, group)} {
		if !strings.Contains(shown, want) && !strings.Contains(strings.Join(strings.Fields(shown), " "), want) {
			t.Errorf("the prompt lacks %q:\n%s", want, shown)
		}
	}
	term.Type("n\r")
	if code, out := term.Wait(); code != 6 || !strings.Contains(out, "cancelled") {
		t.Fatalf("answered n: exit %d, want 6 and \"cancelled\":\n%s", code, out)
	}
	if n := endOffset(t, dlqTopic); n != 0 || commit() != 1 {
		t.Fatalf("answered n: %d parked, commit %d; want none and 1", n, commit())
	}

	term = testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 120, Env: env, Stdin: true}, testenv.Fieldwork(t), args...)
	term.WaitForText(within, "? [y/N] ")
	term.Type("y\r")
	if code, out := term.Wait(); code != 0 || !strings.Contains(out, "Skipped") {
		t.Fatalf("answered y: exit %d:\n%s", code, out)
	}
	if n := endOffset(t, dlqTopic); n != 1 || commit() != 2 {
		t.Fatalf("answered y: %d parked, commit %d; want 1 and 2", n, commit())
	}
}
