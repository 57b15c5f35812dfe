package dlq_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestDLQListFollow: dlq list --follow lists what is there, then prints the dead letters
// produced after it started, as they arrive, in every format, and ends with exit 0 when
// interrupted. A dead letter that does not pass the filter is not printed.
func TestDLQListFollow(t *testing.T) {
	brokers := testenv.Brokers(t)
	for _, tc := range []struct {
		format string
		line   func(id string) *regexp.Regexp
	}{
		{"jsonl", func(id string) *regexp.Regexp { return regexp.MustCompile(`(?m)^\{.*"event_id":"` + id + `".*\}$`) }},
		{"json", func(id string) *regexp.Regexp { return regexp.MustCompile(`"event_id": "` + id + `"`) }},
		{"csv", func(id string) *regexp.Regexp { return regexp.MustCompile(`(?m)^.*,` + id + `,.*$`) }},
		{"table", func(id string) *regexp.Regexp { return regexp.MustCompile(`(?m)^.*\s` + id + `\s.*$`) }},
	} {
		t.Run(tc.format, func(t *testing.T) {
			topic := dlqTopic(t, 1, nil)
			cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
			produce := func(id, reason string) {
				orig := &kgo.Record{Topic: "orders", Value: []byte(`{"event_id":"` + id + `"}`)}
				testenv.Produce(t, cl, dlq.NewDeadLetter(orig, dlq.Meta{Topic: topic, Group: "billing", Reason: reason, Error: "boom", EventID: id}))
			}
			produce("before-1", dlq.ReasonRejected)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, _, done := roottest.Start(ctx, "--brokers", brokers, "dlq", "list", "--topic", topic, "--no-status",
				"--dlq-reason", "rejected", "--follow", "-o", tc.format)
			roottest.WaitFor(t, out, tc.line("before-1"), done)

			produce("after-1", dlq.ReasonExhausted) // filtered out
			produce("after-2", dlq.ReasonRejected)
			roottest.WaitFor(t, out, tc.line("after-2"), done)
			produce("after-3", dlq.ReasonRejected)
			roottest.WaitFor(t, out, tc.line("after-3"), done)
			cancel()
			r := <-done
			if r.Code != 0 {
				t.Fatalf("exit %d after the interruption, want 0: %v", r.Code, r.Err)
			}
			got := out.String()
			if strings.Contains(got, "after-1") {
				t.Fatalf("a dead letter the filter leaves out was printed:\n%s", got)
			}
			for _, id := range []string{"before-1", "after-2", "after-3"} {
				if n := len(tc.line(id).FindAllString(got, -1)); n != 1 {
					t.Fatalf("%s printed %d times:\n%s", id, n, got)
				}
			}
			if tc.format == "json" && !strings.HasSuffix(strings.TrimSpace(got), "]") {
				t.Fatalf("the json array is not closed at the end:\n%s", got)
			}
		})
	}
}
