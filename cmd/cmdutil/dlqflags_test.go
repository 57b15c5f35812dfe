package cmdutil

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// TestDLQFilterSets: each command registers the filters that apply to it, under one name
// each, and --reason is none of them.
func TestDLQFilterSets(t *testing.T) {
	for _, tc := range []struct {
		set  DLQFilterSet
		want []string
	}{
		{DLQWindow | DLQFields | DLQEventID, []string{"dlq-reason", "error", "event-id", "fingerprint", "group", "key", "key-base64", "original-topic", "schema-id", "since", "until"}},
		{DLQWindow | DLQFields, []string{"dlq-reason", "error", "fingerprint", "group", "key", "key-base64", "original-topic", "schema-id", "since", "until"}},
		{DLQWindow | DLQEventID, []string{"event-id", "since", "until"}},
		{DLQFields | DLQEventID, []string{"dlq-reason", "error", "event-id", "fingerprint", "group", "key", "key-base64", "original-topic", "schema-id"}},
	} {
		cmd := &cobra.Command{Use: "x"}
		var fl DLQFilterFlags
		fl.Register(cmd, tc.set)
		var got []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { got = append(got, f.Name) })
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("set %b: flags %v, want %v", tc.set, got, tc.want)
		}
	}

	var st DLQStatusFlags
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	st.Register(fs, DLQStatusFilter)
	if fs.Lookup("consumer") == nil || fs.Lookup("status") == nil || fs.Lookup("no-status") != nil {
		t.Error("status flags with DLQStatusFilter only")
	}
	if err := fs.Parse([]string{"--status", "pending,resolved", "--status", "unknown"}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Statuses(); err != nil || !slices.Equal(got, []dlq.Status{dlq.StatusPending, dlq.StatusResolved, dlq.StatusUnknown}) {
		t.Errorf("statuses %v %v", got, err)
	}
}

func TestDLQFilter(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	var fl DLQFilterFlags
	fl.Register(cmd, DLQWindow|DLQFields|DLQEventID)
	if err := cmd.ParseFlags([]string{"--dlq-reason", "rejected,unknown", "--error", "time(out)?", "--key", "k", "--since", "1h"}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	f, err := fl.Filter(cmd, now)
	if err != nil || !slices.Equal(f.Reasons, []string{"rejected", "unknown"}) || !f.ErrorRegexp.MatchString("timeout") ||
		string(f.Key) != "k" || !f.Since.Equal(now.Add(-time.Hour)) {
		t.Fatalf("filter %+v %v", f, err)
	}
	fl.Reasons = []string{"tired"}
	if _, err := fl.Filter(cmd, now); fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), `--dlq-reason "tired"`) {
		t.Fatalf("bad reason: %v", err)
	}
}

// TestDLQReasonHint: an unknown --reason on a command with dead-letter filters is the filter's
// old name; anywhere else it is cobra's error alone. Both are usage errors.
func TestDLQReasonHint(t *testing.T) {
	run := func(register bool, args ...string) error {
		parent := &cobra.Command{Use: "p"}
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		var fl DLQFilterFlags
		if register {
			fl.Register(cmd, DLQFields)
		} else {
			parent.SetFlagErrorFunc(DLQReasonHint) // inherited by a command without filters
		}
		parent.AddCommand(cmd)
		parent.SetArgs(append([]string{"x"}, args...))
		parent.SilenceErrors, parent.SilenceUsage = true, true
		return parent.Execute()
	}
	for _, args := range [][]string{{"--reason", "malformed"}, {"--reason=malformed"}} {
		err := run(true, args...)
		if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "unknown flag: --reason: the dead-letter reason filter is now --dlq-reason") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if err := run(false, "--reason", "x"); fwerr.KindOf(err) != fwerr.KindUsage || err.Error() != "unknown flag: --reason" {
		t.Errorf("without filters: %v", err)
	}
	if err := run(true, "--bogus"); fwerr.KindOf(err) != fwerr.KindUsage || strings.Contains(err.Error(), "dlq-reason") {
		t.Errorf("another flag: %v", err)
	}
}

// TestDiscoveryLine: the line says what the pattern matched and, when share-group DLQ topics
// were added, how many by prefix and by enable flag, the topics cut to fit 80 columns (at
// least one shown; a terminal wraps what is longer); without them it is as it was.
func TestDiscoveryLine(t *testing.T) {
	plain := discoveryLine(dlq.Discovery{Topics: []string{"a.dlq", "b.dlq"}, Matched: 2}, "the default dead-letter pattern")
	if plain != "2 topics match the default dead-letter pattern: a.dlq, b.dlq" {
		t.Errorf("got %q", plain)
	}
	d := dlq.Discovery{Topics: []string{"a.dlq", "q-orders", "queue-tasks"}, Matched: 1, Prefix: "q-", Prefixed: []string{"q-orders"}, Flagged: []string{"queue-tasks"}}
	if got, want := discoveryLine(d, "the default dead-letter pattern"), "1 topic matches the default dead-letter pattern + 2 share-group DLQs (1 by prefix q-, 1 by enable flag): a.dlq, +2"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	d = dlq.Discovery{Matched: 0, Flagged: []string{"queue-tasks"}}
	for i := range 12 {
		d.Topics = append(d.Topics, fmt.Sprintf("queue-%02d", i))
	}
	got := discoveryLine(d, "the default dead-letter pattern")
	if want := "0 topics match the default dead-letter pattern + 1 share-group DLQ (enable flag): queue-00, +11"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
