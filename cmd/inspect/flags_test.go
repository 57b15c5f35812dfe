package inspect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

func testFactory() *cmdutil.Factory {
	s, _, _, _ := output.Test()
	return &Factory{Streams: s, Getenv: func(string) string { return "" }}
}

func TestParseRecordAddress(t *testing.T) {
	cases := []struct {
		in      string
		topic   string
		p       int32
		o       int64
		wantErr string
	}{
		{in: "tasks/0/42", topic: "tasks", p: 0, o: 42},
		{in: "tasks.dlq/3/0", topic: "tasks.dlq", p: 3, o: 0},
		{in: "tasks/1@7", topic: "tasks", p: 1, o: 7},
		{in: "a/b/2/9", topic: "a/b", p: 2, o: 9},
		{in: "tasks", wantErr: "no offset"},
		{in: "tasks/5", wantErr: "no partition"},
		{in: "/0/1", wantErr: "no topic"},
		{in: "tasks/x/1", wantErr: `partition "x"`},
		{in: "tasks/-1/1", wantErr: `partition "-1"`},
		{in: "tasks/0/-3", wantErr: `offset "-3"`},
		{in: "tasks/0/", wantErr: `offset ""`},
	}
	for _, tc := range cases {
		topic, p, o, err := cmdutil.ParseRecordAddress(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || fwerr.KindOf(err) != fwerr.KindUsage {
				t.Errorf("%q: err %v, want usage error with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || topic != tc.topic || p != tc.p || o != tc.o {
			t.Errorf("%q = %q %d %d %v", tc.in, topic, p, o, err)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if got, _ := cmdutil.ParseWhen("--since", "2h", now); !got.Equal(now.Add(-2 * time.Hour)) {
		t.Errorf("2h = %v", got)
	}
	if got, _ := cmdutil.ParseWhen("--since", "2025-01-02T03:04:05+01:00", now); !got.Equal(time.Date(2025, 1, 2, 2, 4, 5, 0, time.UTC)) {
		t.Errorf("rfc3339 = %v", got)
	}
	if got, err := cmdutil.ParseWhen("--since", "", now); !got.IsZero() || err != nil {
		t.Errorf("empty = %v %v", got, err)
	}
	for _, bad := range []string{"yesterday", "-2h", "0s", "2025-01-02"} {
		if _, err := cmdutil.ParseWhen("--since", bad, now); fwerr.KindOf(err) != fwerr.KindUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestInspectValidateFlags(t *testing.T) {
	var got *InspectValidateOptions
	cmd := NewCmdInspectValidate(testFactory(), func(_ context.Context, o *InspectValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "--partition", "0,2", "--partition", "1", "--start-offset", "5", "--end-offset", "9", "--max-examples", "3", "--memory-entries", "100"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	sel := got.Selection
	if got.Topic != "tasks" || len(sel.Partitions) != 3 || sel.Partitions[2] != 1 || *sel.StartOffset != 5 || *sel.EndOffset != 9 ||
		got.MaxExamples != 3 || got.MemoryEntries != 100 || !sel.Since.IsZero() {
		t.Fatalf("options = %+v selection %+v", got, sel)
	}

	cmd = NewCmdInspectValidate(testFactory(), func(_ context.Context, o *InspectValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "--since", "2h", "--until", "2025-01-02T00:00:00Z"})
	err := cmd.Execute()
	if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "is not after --since") {
		t.Fatalf("until before since: %v", err)
	}

	cmd = NewCmdInspectValidate(testFactory(), func(_ context.Context, o *InspectValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "--since", "90m"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(got.Selection.Since); d < 89*time.Minute || d > 91*time.Minute || got.Selection.StartOffset != nil {
		t.Fatalf("--since 90m = %v", got.Selection.Since)
	}
}

func TestInspectAggregateFlags(t *testing.T) {
	var got *InspectAggregateOptions
	cmd := NewCmdInspectAggregate(testFactory(), func(_ context.Context, o *InspectAggregateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "task-42", "--start-offset", "0", "--max-events", "7"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Topic != "tasks" || got.AggregateID != "task-42" || got.MaxEvents != 7 || got.Selection.StartOffset == nil || *got.Selection.StartOffset != 0 || got.Selection.EndOffset != nil {
		t.Fatalf("options = %+v", got)
	}
}

func TestInspectTopicAndRecordFlags(t *testing.T) {
	var topic *InspectTopicOptions
	cmd := NewCmdInspectTopic(testFactory(), func(_ context.Context, o *InspectTopicOptions) error { topic = o; return nil })
	cmd.SetArgs([]string{"tasks", "--sample", "5"})
	if err := cmd.Execute(); err != nil || topic.Topic != "tasks" || topic.SampleSize != 5 {
		t.Fatalf("topic: %v %+v", err, topic)
	}
	var rec *InspectRecordOptions
	cmd = NewCmdInspectRecord(testFactory(), func(_ context.Context, o *InspectRecordOptions) error { rec = o; return nil })
	cmd.SetArgs([]string{"tasks.dlq/2/17"})
	if err := cmd.Execute(); err != nil || rec.Topic != "tasks.dlq" || rec.Partition != 2 || rec.Offset != 17 {
		t.Fatalf("record: %v %+v", err, rec)
	}
}

// TestInspectUsageErrors runs the root command: usage errors exit 2 before any broker is
// dialled (none is configured here).
func TestInspectUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "topic"}, "takes one topic (got 0 argument(s))"},
		{[]string{"inspect", "topic", "a", "b"}, "takes one topic (got 2 argument(s))"},
		{[]string{"inspect", "topic", "t", "--sample", "-1"}, "--sample -1"},
		{[]string{"inspect", "record", "tasks/0"}, "no partition"},
		{[]string{"inspect", "record", "tasks", "0", "1"}, "takes one record address"},
		{[]string{"inspect", "aggregate", "tasks"}, "takes a topic and an aggregate id"},
		{[]string{"inspect", "aggregate", "tasks", "x", "--max-events", "0"}, "--max-events 0"},
		{[]string{"inspect", "validate", "tasks", "--start-offset", "1", "--since", "1h"}, "not both"},
		{[]string{"inspect", "validate", "tasks", "--start-offset", "9", "--end-offset", "3"}, "--end-offset 3 is before --start-offset 9"},
		{[]string{"inspect", "validate", "tasks", "--start-offset", "-1"}, "offsets are not negative"},
		{[]string{"inspect", "validate", "tasks", "--partition", "-2"}, "partitions are numbered from 0"},
		{[]string{"inspect", "validate", "tasks", "--since", "yesterday"}, `--since "yesterday" is neither`},
		{[]string{"inspect", "validate", "tasks", "--max-examples", "0"}, "--max-examples 0"},
		{[]string{"inspect", "validate", "tasks", "--partition", "x"}, `invalid argument "x"`},
		{[]string{"inspect", "nosuch"}, `unknown command "nosuch"`},
	}
	for _, tc := range cases {
		r := runCLI(t, map[string]string{}, tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 with %q", tc.args, r.code, r.stderr, r.stdout, tc.want)
		}
	}
}

func TestInspectHelp(t *testing.T) {
	r := runCLI(t, map[string]string{}, "inspect")
	if r.code != 0 || !strings.Contains(r.stdout, "inspect validate T") || !strings.Contains(r.stdout, "Available Commands") {
		t.Fatalf("inspect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, map[string]string{}, "inspect", "validate", "--help")
	for _, want := range []string{"split_aggregate", "--memory-entries", "--since", "Exit code 0 when the stream is clean, 3"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("validate --help lacks %q:\n%s", want, r.stdout)
		}
	}
}
