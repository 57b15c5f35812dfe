package hostile

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

// TestTablesFitTheTerminal: on a terminal 80 columns wide, dlq list and dlq stats over dead
// letters with long messages (some of wide characters) draw no line wider than the terminal,
// so no row wraps: the widest cells end with …. --wide shows them whole, and JSON and CSV
// through a pipe are never cut.
func TestTablesFitTheTerminal(t *testing.T) {
	e, dlqTopic, sch := deadLetterEnv(t, "fww")

	long := "POST https://hooks.example/tasks: 422 Unprocessable Entity: {\"error\": \"the title is longer than the 200 characters the board accepts\"}"
	wide := "拒否されました: タイトルが長すぎます。ボードが受け付けるのは二百文字までです。もう一度お試しください。"
	var letters []hostileRecord
	for i, msg := range []string{long, wide, "short"} {
		dl := dlq.NewDeadLetter(&kgo.Record{Topic: "orders.with.a.rather.long.topic.name", Partition: 0, Offset: int64(i), Value: []byte(`{}`)},
			dlq.Meta{Topic: dlqTopic, Group: "notifier", Handler: "webhook", Reason: dlq.ReasonRejected, Error: msg, ErrorClass: "http_422", Attempts: 1})
		letters = append(letters, hostileRecord{name: msg, key: dl.Key, value: dl.Value, header: dl.Headers})
	}
	produce(t, dlqTopic, letters)

	fits := func(r result) {
		t.Helper()
		text := terminalText(r.stdout)
		for _, line := range strings.Split(text, "\n") {
			if w := twwidth.Width(line); w > 80 {
				t.Errorf("fieldwork %s at 80 columns: a line %d columns wide wraps: %q", cmdline(r.args), w, line)
			}
		}
		if !strings.Contains(text, "…") {
			t.Errorf("fieldwork %s at 80 columns: nothing cut with …:\n%s", cmdline(r.args), text)
		}
	}
	list := []string{"dlq", "list", "--topic", dlqTopic, "--schema", sch, "--limit", "0"}
	narrow := e.onTerminalSized(t, 80, 0, list...)
	fits(narrow)
	if text := terminalText(narrow.stdout); strings.Contains(text, "CONVENTION") || !strings.Contains(text, "MESSAGE") {
		t.Errorf("at 80 columns: want CONVENTION left out, MESSAGE kept:\n%s", text)
	}
	stats := e.onTerminalSized(t, 80, 0, "dlq", "stats", "--topic", dlqTopic, "--group-by", "error_class,original_topic,group")
	fits(stats)
	// The cells are cut, never a header.
	for _, line := range strings.Split(terminalText(stats.stdout), "\n") {
		if strings.Contains(line, "ORIGIN") && strings.Contains(line, "…") {
			t.Errorf("at 80 columns a header is cut: %q", line)
		}
	}

	whole := e.onTerminalSized(t, 80, 0, append(list, "--wide")...)
	if text := terminalText(whole.stdout); !strings.Contains(text, long) || !strings.Contains(text, wide) || !strings.Contains(text, "CONVENTION") {
		t.Errorf("fieldwork %s: messages not whole:\n%s", cmdline(whole.args), text)
	}
	for _, format := range []string{"json", "csv"} {
		r := e.expect(t, 0, append(list, "-o", format)...)
		if !bytes.Contains(r.stdout, []byte("the board accepts")) || !bytes.Contains(r.stdout, []byte(wide)) || bytes.Contains(r.stdout, []byte("…")) {
			t.Errorf("fieldwork %s: cut:\n%s", cmdline(r.args), r.stdout)
		}
	}
}
