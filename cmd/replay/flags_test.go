package replay

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// parseReplay runs `replay ARGS` up to its run function and returns the options it would run
// with, or the usage error.
func parseReplay(t *testing.T, args ...string) (*ReplayOptions, error) {
	t.Helper()
	var got *ReplayOptions
	cmd := NewCmdReplay(cmdutil.TestFactory(), func(_ context.Context, o *ReplayOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return got, err
}

func TestReplayFlags(t *testing.T) {
	o, err := parseReplay(t, "tasks.dlq/2/41")
	if err != nil {
		t.Fatal(err)
	}
	s := o.Spec
	if s.From != "tasks.dlq" || s.Record != "tasks.dlq/2/41" || len(s.Partitions) != 1 || s.Partitions[0] != 2 ||
		*s.StartOffset != 41 || *s.EndOffset != 41 || s.MaxReplays != replay.DefaultMaxReplays || s.ToPartition != replay.PartitionAuto || o.Execute {
		t.Fatalf("record address: %+v", s)
	}

	o, err = parseReplay(t, "--topic", "tasks.dlq", "--partition", "1", "--start-offset", "5", "--end-offset", "9",
		"--dlq-reason", "exhausted", "--error", "timeout", "--group", "g", "--original-topic", "tasks", "--key", "task-7",
		"--event-id", "evt-1", "--status", "pending", "--consumer", "billing", "--to", "tasks-retry", "--to-partition", "original",
		"--max-replays", "5", "--execute", "--yes", "--reason", "fix 12", "--rate", "250", "--operator", "ana")
	if err != nil {
		t.Fatal(err)
	}
	s = o.Spec
	if s.From != "tasks.dlq" || *s.StartOffset != 5 || *s.EndOffset != 9 || s.Reasons[0] != "exhausted" || s.Error != "timeout" ||
		s.Group != "g" || s.OriginalTopic != "tasks" || string(s.Key) != "task-7" || s.EventID != "evt-1" ||
		!slices.Equal(s.Statuses, []dlq.Status{dlq.StatusPending}) || s.StatusConsumer != "billing" || s.SkipProcessedFor != "" || s.To != "tasks-retry" || s.ToPartition != "original" || s.MaxReplays != 5 ||
		!o.Execute || !o.Yes || o.Reason != "fix 12" || o.Rate != 250 || o.Operator != "ana" {
		t.Fatalf("flags: %+v %+v", s, o)
	}

	// An empty --key selects empty and absent keys; --key-base64 takes any bytes.
	if o, err = parseReplay(t, "--topic", "t", "--key", ""); err != nil || o.Spec.Key == nil || len(o.Spec.Key) != 0 {
		t.Fatalf("--key '': %q %v", o.Spec.Key, err)
	}
	if o, err = parseReplay(t, "--topic", "t", "--key-base64", "/2tlef4="); err != nil || string(o.Spec.Key) != "\xffkey\xfe" {
		t.Fatalf("--key-base64: %q %v", o.Spec.Key, err)
	}
	if o, err = parseReplay(t, "--topic", "t"); err != nil || o.Spec.Key != nil {
		t.Fatalf("no --key: %q %v", o.Spec.Key, err)
	}
}

// TestReplayStoreFlags: replay names the marker table with the store's flags, as dlq and
// processed do, so --status pending reads an existing table with other column names.
func TestReplayStoreFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ReplayOptions
	cmd := NewCmdReplay(f, func(_ context.Context, o *ReplayOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--topic", "t", "--status", "pending", "--consumer", "c", "--schema", "app", "--table", "seen",
		"--column-event-id", "message_id", "--column-consumer", "svc"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if d := got.Names(); d.Schema != "app" || d.Table != "seen" || d.Columns.EventID != "message_id" || d.Columns.Consumer != "svc" {
		t.Fatalf("store names %+v", d)
	}
}

func TestReplayUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "nothing to read"},
		{[]string{"--topic", "t", "--execute"}, "--execute needs --reason"},
		{[]string{"--topic", "t", "--execute", "--reason", "  "}, "--execute needs --reason"},
		{[]string{"--topic", "t", "--start-offset", "9", "--end-offset", "3"}, "--end-offset 3 is before --start-offset 9"},
		{[]string{"--topic", "t", "--to", "t"}, "refusing to write into t"},
		{[]string{"--topic", "t", "--status", "resolved", "--consumer", "c"}, "a replay selects pending or replayed"},
		{[]string{"--topic", "t", "--skip-processed"}, "--skip-processed needs --consumer"},
		{[]string{"--topic", "t", "--consumer", "c"}, "--consumer is for"},
		{[]string{"--topic", "t", "--to-partition", "spread"}, "--to-partition"},
		{[]string{"--topic", "t", "--max-replays", "0"}, ""}, // 0 means the default
		{[]string{"--topic", "t", "--rate", "-1"}, "--rate"},
		{[]string{"--topic", "t", "--rate", "NaN"}, "--rate NaN: want records per second (0 for no cap)"},
		{[]string{"--topic", "t", "--rate", "+Inf"}, "--rate +Inf: want records per second"},
		{[]string{"--topic", "t", "--rate", "1e-300"}, "--rate 1e-300: at least one record an hour (0.000278/s), or 0 for no cap"},
		{[]string{"a/0/1", "b/0/2"}, "at most one record address"},
		{[]string{"a/0/1", "--topic", "b"}, "the record a/0/1 is in a but --topic says b"},
		{[]string{"a/0/1", "--start-offset", "3"}, "a record address selects one record"},
		{[]string{"a/x/1"}, "record address"},
		{[]string{"--topic", "t", "--dlq-reason", "tired"}, "--dlq-reason"},
		{[]string{"--topic", "t", "--status", "bogus", "--consumer", "c"}, `--status "bogus": want some of pending, replayed, resolved, stale, unknown`},
		{[]string{"--topic", "t", "--status", "pending,resolved", "--consumer", "c"}, "a replay selects pending or replayed"},
		{[]string{"--topic", "t", "--key", "a", "--key-base64", "YQ=="}, "choose either --key or --key-base64"},
		{[]string{"--topic", "t", "--error", "a("}, `--error "a(" is not a regular expression`},
		{[]string{"--topic", "t", "--since", "yesterday"}, "--since"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseReplay(t, tc.args...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || fwerr.KindOf(err) != fwerr.KindUsage {
				t.Fatalf("error %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

func TestReplaySubcommandFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var resume *ReplayResumeOptions
	cmd := NewCmdReplayResume(f, func(_ context.Context, o *ReplayResumeOptions) error { resume = o; return nil })
	cmd.SetArgs([]string{"20250102-150405-3f9a1c", "--yes", "--rate", "100", "--force"})
	if err := cmd.Execute(); err != nil || resume.RunID != "20250102-150405-3f9a1c" || !resume.Yes || resume.Rate != 100 || !resume.Force {
		t.Fatalf("resume: %+v %v", resume, err)
	}
	var runs *ReplayRunsOptions
	cmd = NewCmdReplayRuns(f, func(_ context.Context, o *ReplayRunsOptions) error { runs = o; return nil })
	cmd.SetArgs([]string{"--status", "interrupted", "--limit", "5"})
	if err := cmd.Execute(); err != nil || runs.Status != "interrupted" || runs.Limit != 5 {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	cmd = NewCmdReplayRuns(f, func(context.Context, *ReplayRunsOptions) error { return nil })
	cmd.SetArgs([]string{"--status", "stuck"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Fatalf("runs --status stuck: %v", err)
	}
}

// TestReplayOldFromFlag: --from, the old name of --topic, still selects the topic, with a
// one-line note on stderr that names --topic; it is left out of the help; both given with
// different topics is a usage error.
func TestReplayOldFromFlag(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ReplayOptions
	cmd := NewCmdReplay(f, func(_ context.Context, o *ReplayOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--from", "tasks.dlq", "--dlq-reason", "rejected"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err != nil || got.Spec.From != "tasks.dlq" {
		t.Fatalf("--from: %+v %v", got, err)
	}
	errOut := f.Streams.ErrOut.(interface{ String() string }).String()
	if errOut != "note: --from is now --topic (-t): --from still works\n" {
		t.Errorf("stderr %q", errOut)
	}
	if fl := cmd.Flags().Lookup("from"); fl == nil || !fl.Hidden {
		t.Errorf("--from is not hidden: %+v", fl)
	}
	if o, err := parseReplay(t, "-t", "tasks.dlq", "--from", "tasks.dlq"); err != nil || o.Spec.From != "tasks.dlq" {
		t.Errorf("-t and --from of one topic: %v", err)
	}
	if _, err := parseReplay(t, "--topic", "a.dlq", "--from", "b.dlq"); fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "--from is the old name of --topic") {
		t.Errorf("two topics: %v", err)
	}
}

// TestReplayResumeFlags: replay resume RUN previews (no --execute); --execute acts; --yes alone
// acts too, as it did before resume had a plan, with a note that says --execute --yes.
func TestReplayResumeFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		execute bool
		note    bool
	}{
		{[]string{"run-1"}, false, false},
		{[]string{"run-1", "--rate", "10"}, false, false},
		{[]string{"run-1", "--execute"}, true, false},
		{[]string{"run-1", "--execute", "--yes"}, true, false},
		{[]string{"run-1", "--yes"}, true, true},
	} {
		f := cmdutil.TestFactory()
		var got *ReplayResumeOptions
		cmd := NewCmdReplayResume(f, func(_ context.Context, o *ReplayResumeOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		errOut := f.Streams.ErrOut.(interface{ String() string }).String()
		if got.Execute != tc.execute || strings.Contains(errOut, "say --execute --yes") != tc.note {
			t.Errorf("%q: execute %v, stderr %q; want execute %v, note %v", tc.args, got.Execute, errOut, tc.execute, tc.note)
		}
	}
}
