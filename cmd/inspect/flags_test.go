package inspect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	inspectcmd "github.com/fieldwork/fieldwork/cmd/inspect"
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
	// The topic with --topic, as the commands that read a topic name it; or both, the same; or
	// the flag twice, the same.
	for _, args := range [][]string{{"--topic", "orders"}, {"-t", "orders"}, {"orders", "--topic", "orders"}, {"-t", "orders", "--topic", "orders"}} {
		topic = nil
		cmd = inspectcmd.NewCmdInspectTopic(cmdutil.TestFactory(), func(_ context.Context, o *inspectcmd.InspectTopicOptions) error { topic = o; return nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil || topic == nil || topic.Topic != "orders" {
			t.Fatalf("topic %v: %v %+v", args, err, topic)
		}
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
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"inspect", "topic"}, Want: "takes one topic, as its argument or with --topic (got none)"},
		{Args: []string{"inspect", "topic", "a", "b"}, Want: "takes one topic (got 2 arguments)"},
		{Args: []string{"inspect", "validate", "a", "--topic", "b"}, Want: "takes one topic: the argument names a, --topic b"},
		{Args: []string{"inspect", "topic", "--topic", "a", "-t", "b"}, Want: `the flag takes one value, and "a" came first`},
		{Args: []string{"inspect", "records", "--topic", "a b"}, Want: `invalid argument "a b" for "-t, --topic" flag`},
		{Args: []string{"inspect", "topic", "t", "--sample", "-1"}, Want: "--sample -1"},
		{Args: []string{"inspect", "record", "tasks/0"}, Want: `record address "tasks/0": no offset (want TOPIC/PARTITION/OFFSET, e.g. tasks/0/14)`},
		{Args: []string{"inspect", "record", "a/b/0/1"}, Want: "too many slashes"},
		{Args: []string{"inspect", "record", "tasks", "0", "1"}, Want: "takes one record address"},
		{Args: []string{"inspect", "aggregate", "tasks"}, Want: "takes a topic and an aggregate id: two arguments, or --topic and one (got 1 argument)"},
		{Args: []string{"inspect", "aggregate", "--topic", "tasks", "a", "b", "c"}, Want: "takes a topic and an aggregate id: two arguments, or --topic and one (got 3 arguments)"},
		{Args: []string{"inspect", "aggregate", "-t", "orders", "tasks", "task-1"}, Want: "takes one topic: the argument names tasks, --topic orders"},
		{Args: []string{"inspect", "aggregate", "-t", "a/b", "task-1"}, Want: `invalid argument "a/b" for "-t, --topic" flag`},
		{Args: []string{"inspect", "aggregate", "tasks", "x", "--max-events", "0"}, Want: `"0" for "--max-events" flag: must be at least 1`},
		{Args: []string{"inspect", "validate", "tasks", "--start-offset", "1", "--since", "1h"}, Want: "not both"},
		{Args: []string{"inspect", "validate", "tasks", "--start-offset", "9", "--end-offset", "3"}, Want: "--end-offset 3 is before --start-offset 9"},
		{Args: []string{"inspect", "validate", "tasks", "--start-offset", "-1"}, Want: "offsets are not negative"},
		{Args: []string{"inspect", "validate", "tasks", "--partition", "-2"}, Want: "partitions are numbered from 0"},
		{Args: []string{"inspect", "validate", "tasks", "--since", "yesterday"}, Want: `--since: "yesterday" is not a time`},
		{Args: []string{"inspect", "validate", "tasks", "--max-examples", "0"}, Want: `"0" for "--max-examples" flag: must be at least 1`},
		{Args: []string{"inspect", "validate", "tasks", "--partition", "x"}, Want: `invalid argument "x"`},
		{Args: []string{"inspect", "nosuch"}, Want: `unknown command "nosuch"`},
	})
}

func TestInspectHelp(t *testing.T) {
	r := roottest.Run(t, map[string]string{}, "inspect")
	if r.Code != 0 || !strings.Contains(r.Stdout, "\n  validate ") || !strings.Contains(r.Stdout, "Commands:") {
		t.Fatalf("inspect: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = roottest.Run(t, map[string]string{}, "inspect", "validate", "--help")
	for _, want := range []string{"--memory-entries", "--since", "fieldwork help details inspect validate"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("validate --help lacks %q:\n%s", want, r.Stdout)
		}
	}
	r = roottest.Run(t, map[string]string{}, "help", "details", "inspect", "validate")
	for _, want := range []string{"split_aggregate", "Exit code 0 when the stream is clean, 3"} {
		if !strings.Contains(strings.Join(strings.Fields(r.Stdout), " "), want) {
			t.Errorf("help details inspect validate lacks %q:\n%s", want, r.Stdout)
		}
	}
	// One spelling of a record address in help: the old @ form is read, never shown.
	r = roottest.Run(t, map[string]string{}, "inspect", "record", "--help")
	if r.Code != 0 || !strings.Contains(r.Stdout, "record TOPIC/PARTITION/OFFSET") || strings.Contains(r.Stdout, "@") {
		t.Errorf("record --help:\n%s", r.Stdout)
	}
}
