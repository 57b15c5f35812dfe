package inspect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	inspectcmd "github.com/fieldwork/fieldwork/cmd/inspect"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

func TestInspectValidateFlags(t *testing.T) {
	var got *inspectcmd.InspectValidateOptions
	cmd := inspectcmd.NewCmdInspectValidate(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "--partition", "0,2", "--partition", "1", "--start-offset", "5", "--end-offset", "9", "--max-examples", "3", "--memory-entries", "100"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	sel := got.Selection
	if got.Topic != "tasks" || len(sel.Partitions) != 3 || sel.Partitions[2] != 1 || *sel.StartOffset != 5 || *sel.EndOffset != 9 ||
		got.MaxExamples != 3 || got.MemoryEntries != 100 || !sel.Since.IsZero() {
		t.Fatalf("options = %+v selection %+v", got, sel)
	}

	cmd = inspectcmd.NewCmdInspectValidate(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "--since", "2h", "--until", "2025-01-02T00:00:00Z"})
	err := cmd.Execute()
	if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "is not after --since") {
		t.Fatalf("until before since: %v", err)
	}

	cmd = inspectcmd.NewCmdInspectValidate(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectValidateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "--since", "90m"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(got.Selection.Since); d < 89*time.Minute || d > 91*time.Minute || got.Selection.StartOffset != nil {
		t.Fatalf("--since 90m = %v", got.Selection.Since)
	}
}

func TestInspectAggregateFlags(t *testing.T) {
	var got *inspectcmd.InspectAggregateOptions
	cmd := inspectcmd.NewCmdInspectAggregate(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectAggregateOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tasks", "task-42", "--start-offset", "0", "--max-events", "7"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Topic != "tasks" || got.AggregateID != "task-42" || got.MaxEvents != 7 || got.Selection.StartOffset == nil || *got.Selection.StartOffset != 0 || got.Selection.EndOffset != nil {
		t.Fatalf("options = %+v", got)
	}
}

func TestInspectTopicAndRecordFlags(t *testing.T) {
	var topic *inspectcmd.InspectTopicOptions
	cmd := inspectcmd.NewCmdInspectTopic(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectTopicOptions) error { topic = o; return nil })
	cmd.SetArgs([]string{"tasks", "--sample", "5"})
	if err := cmd.Execute(); err != nil || topic.Topic != "tasks" || topic.SampleSize != 5 {
		t.Fatalf("topic: %v %+v", err, topic)
	}
	// topic/partition/offset, and the old topic/partition@offset that dead letters written
	// before still carry in their error headers.
	for _, arg := range []string{"tasks.dlq/2/17", "tasks.dlq/2@17"} {
		var rec *inspectcmd.InspectRecordOptions
		cmd = inspectcmd.NewCmdInspectRecord(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectRecordOptions) error { rec = o; return nil })
		cmd.SetArgs([]string{arg})
		if err := cmd.Execute(); err != nil || rec.Address != (kafka.RecordAddress{Topic: "tasks.dlq", Partition: 2, Offset: 17}) {
			t.Fatalf("record %s: %v %+v", arg, err, rec)
		}
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
		{[]string{"inspect", "record", "tasks/0"}, `record address "tasks/0": no offset (want TOPIC/PARTITION/OFFSET, e.g. tasks/0/14)`},
		{[]string{"inspect", "record", "a/b/0/1"}, "too many slashes"},
		{[]string{"inspect", "record", "tasks", "0", "1"}, "takes one record address"},
		{[]string{"inspect", "aggregate", "tasks"}, "takes a topic and an aggregate id"},
		{[]string{"inspect", "aggregate", "tasks", "x", "--max-events", "0"}, "--max-events 0"},
		{[]string{"inspect", "validate", "tasks", "--start-offset", "1", "--since", "1h"}, "not both"},
		{[]string{"inspect", "validate", "tasks", "--start-offset", "9", "--end-offset", "3"}, "--end-offset 3 is before --start-offset 9"},
		{[]string{"inspect", "validate", "tasks", "--start-offset", "-1"}, "offsets are not negative"},
		{[]string{"inspect", "validate", "tasks", "--partition", "-2"}, "partitions are numbered from 0"},
		{[]string{"inspect", "validate", "tasks", "--since", "yesterday"}, `invalid argument "yesterday" for "--since" flag: "yesterday" is not a time`},
		{[]string{"inspect", "validate", "tasks", "--max-examples", "0"}, "--max-examples 0"},
		{[]string{"inspect", "validate", "tasks", "--partition", "x"}, `invalid argument "x"`},
		{[]string{"inspect", "nosuch"}, `unknown command "nosuch"`},
	}
	for _, tc := range cases {
		r := roottest.Run(t, map[string]string{}, tc.args...)
		if r.Code != root.ExitUsage || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 with %q", tc.args, r.Code, r.Stderr, r.Stdout, tc.want)
		}
	}
}

func TestInspectHelp(t *testing.T) {
	r := roottest.Run(t, map[string]string{}, "inspect")
	if r.Code != 0 || !strings.Contains(r.Stdout, "inspect validate T") || !strings.Contains(r.Stdout, "Available Commands") {
		t.Fatalf("inspect: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = roottest.Run(t, map[string]string{}, "inspect", "validate", "--help")
	for _, want := range []string{"split_aggregate", "--memory-entries", "--since", "Exit code 0 when the stream is clean, 3"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("validate --help lacks %q:\n%s", want, r.Stdout)
		}
	}
	// One spelling of a record address in help: the old @ form is read, never shown.
	r = roottest.Run(t, map[string]string{}, "inspect", "record", "--help")
	if r.Code != 0 || !strings.Contains(r.Stdout, "record TOPIC/PARTITION/OFFSET") || strings.Contains(r.Stdout, "@") {
		t.Errorf("record --help:\n%s", r.Stdout)
	}
}
