package cmdutil

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

func TestConfirm(t *testing.T) {
	const q = "delete 3 markers of consumer billing"
	terminal := func(answer string) (*Factory, *bytes.Buffer) {
		s, in, _, errOut := output.Test()
		s.InTTY, s.ErrTTY = true, true
		in.WriteString(answer)
		return &Factory{Streams: s, Getenv: func(string) string { return "" }, settings: &Settings{ConfigPath: "/nonexistent/fieldwork.yaml"}}, errOut
	}

	// --yes never asks, terminal or not.
	if err := ConfirmPrompt(TestFactory(), true, Prompt{Question: q}); err != nil {
		t.Errorf("--yes: %v", err)
	}

	// Not a terminal, no --yes: a usage error naming the action and --yes.
	err := ConfirmPrompt(TestFactory(), false, Prompt{Question: q})
	if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "refusing to delete 3 markers of consumer billing without --yes") {
		t.Errorf("non-interactive: %v", err)
	}
	// stdin a terminal but stderr not (or the reverse) is not interactive either.
	f := TestFactory()
	f.Streams.InTTY = true
	if err := ConfirmPrompt(f, false, Prompt{Question: q}); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Errorf("stdin only: %v", err)
	}

	for answer, ok := range map[string]bool{"y\n": true, "YES\n": true, " yes \n": true, "Y": true, "n\n": false, "\n": false, "": false, "yep\n": false} {
		f, errOut := terminal(answer)
		err := ConfirmPrompt(f, false, Prompt{Question: q + "?"})
		prompt := errOut.String()
		if !strings.HasPrefix(prompt, "  context  none (flags and environment)\nDelete 3 markers of consumer billing? [y/N] ") {
			t.Errorf("%q: prompt %q", answer, prompt)
		}
		if ok && err != nil {
			t.Errorf("%q: %v", answer, err)
		}
		if !ok && (!errors.Is(err, ErrNotConfirmed) || fwerr.KindOf(err) != fwerr.KindCancelled) {
			t.Errorf("%q: %v, want ErrNotConfirmed (cancelled, exit 6)", answer, err)
		}
	}
}

// TestConfirmPrompt: above the question, a prompt names the context, the cluster, the store
// (its DSN redacted), the plan's counts per target and the reason.
func TestConfirmPrompt(t *testing.T) {
	s, in, _, errOut := output.Test()
	s.InTTY, s.ErrTTY = true, true
	in.WriteString("n\n")
	env := map[string]string{"FIELDWORK_DSN": "postgres://fw:s3cret@db:5432/fw"}
	f := &Factory{Streams: s, Getenv: func(k string) string { return env[k] },
		settings: &Settings{ConfigPath: "/nonexistent/fieldwork.yaml", Conn: config.Flags{Brokers: []string{"kafka-1:9092", "kafka-2:9092"}}}}
	err := ConfirmPrompt(f, false, Prompt{Question: "send 3 records from orders.dlq", Kafka: true, Store: `"public"."processed_events"`,
		Counts: []string{"2 to orders", "1 to payments"}, Reason: "db is back"})
	if !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("answered no: %v", err)
	}
	got := errOut.String()
	want := "  context  none (flags and environment)\n" +
		"  cluster  kafka-1:9092,kafka-2:9092\n" +
		"  store    postgres://fw:xxxxx@db:5432/fw \"public\".\"processed_events\"\n" +
		"  plan     2 to orders\n" +
		"           1 to payments\n" +
		"  reason   db is back\n" +
		"Send 3 records from orders.dlq? [y/N] "
	if !strings.HasPrefix(got, want) {
		t.Errorf("prompt:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("the prompt shows the password: %s", got)
	}
}
