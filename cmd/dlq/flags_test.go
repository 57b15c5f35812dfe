package dlq_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	dlqcmd "github.com/fieldwork/fieldwork/cmd/dlq"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/output"
)

// TestDLQUsageErrors: bad flags and arguments exit 2 with a message and no output, before
// anything connects (no broker is configured here, which would otherwise be the error).
func TestDLQUsageErrors(t *testing.T) {
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"dlq", "list", "--topic", "a.dlq", "--pattern", "x"}, Want: "choose either --topic or --pattern, not both"},
		{Args: []string{"dlq", "list", "--pattern", "("}, Want: `--pattern "(" is not a regular expression`},
		// A filter that takes one value, given two (a filter that takes several says so:
		// --dlq-reason, --status, --topic here).
		{Args: []string{"dlq", "list", "--original-topic", "a", "--original-topic", "b"}, Want: `invalid argument "b" for "--original-topic" flag: the flag takes one value, and "a" came first`},
		{Args: []string{"dlq", "list", "--topic", ""}, Want: `invalid argument "" for "-t, --topic" flag: no topic name`},
		{Args: []string{"dlq", "list", "--dlq-reason", "bogus"}, Want: `--dlq-reason "bogus": want one of malformed, unsupported, rejected, exhausted, parked or unknown`},
		// The filters are checked as replay checks them (dlq.FilterSpec.Compile).
		{Args: []string{"dlq", "list", "--original-topic", "no/such topic"}, Want: `invalid argument "no/such topic" for "--original-topic" flag: a topic name holds only ASCII letters, digits, '.', '_' and '-', not '/'`},
		{Args: []string{"replay", "--topic", "t.dlq", "--original-topic", "no/such topic"}, Want: `invalid argument "no/such topic" for "--original-topic" flag: a topic name holds only ASCII letters, digits, '.', '_' and '-', not '/'`},
		{Args: []string{"inspect", "topic", "no/such topic"}, Want: `topic "no/such topic": a topic name holds only ASCII letters, digits, '.', '_' and '-', not '/'`},
		// The filter's old name is refused, with its new one.
		{Args: []string{"dlq", "list", "--reason", "malformed"}, Want: "unknown flag: --reason: the dead-letter reason filter is now --dlq-reason"},
		{Args: []string{"dlq", "stats", "--reason=malformed"}, Want: "unknown flag: --reason: the dead-letter reason filter is now --dlq-reason"},
		{Args: []string{"dlq", "stats", "--dlq-reason", "bogus"}, Want: `--dlq-reason "bogus"`},
		{Args: []string{"dlq", "list", "--error", "a("}, Want: `--error "a(" is not a regular expression`},
		{Args: []string{"dlq", "list", "--since", "yesterday"}, Want: `--since: "yesterday" is not a time`},
		{Args: []string{"dlq", "list", "--since", "1h", "--until", "2h"}, Want: "is not after --since"},
		{Args: []string{"dlq", "list", "--key", "a", "--key-base64", "YQ=="}, Want: "choose either --key or --key-base64, not both"},
		{Args: []string{"dlq", "list", "--key-base64", "%%%"}, Want: "--key-base64: illegal base64 data"},
		{Args: []string{"dlq", "list", "--limit", "-1"}, Want: `invalid argument "-1" for "-n, --limit" flag: must be 0 (no limit) or more`},
		{Args: []string{"dlq", "list", "--status", "done"}, Want: `--status "done": want some of pending, replayed, resolved, stale, unknown`},
		{Args: []string{"dlq", "list", "--status", "pending"}, Want: "--status needs the dedup store: pass --dsn"},
		{Args: []string{"dlq", "list", "--consumer", "billing"}, Want: "--consumer needs the dedup store: pass --dsn"},
		{Args: []string{"dlq", "list", "--consumer", "billing", "--no-status", "--dsn", "sqlite:x.db"}, Want: "--consumer is about the status, which --no-status turns off"},
		{Args: []string{"dlq", "list", "--status", "pending", "--no-status", "--dsn", "sqlite:x.db"}, Want: "--status is about the status, which --no-status turns off"},
		{Args: []string{"dlq", "list", "extra"}, Want: "fieldwork dlq list takes no arguments: name the topic with --topic extra"},
		{Args: []string{"dlq", "list", "not/a/topic"}, Want: `unknown command "not/a/topic" for "fieldwork dlq list"`},
		{Args: []string{"dlq", "list", "--no-such-flag"}, Want: "unknown flag: --no-such-flag"},
		{Args: []string{"dlq", "list", "-o", "yaml"}, Want: `unknown output format "yaml"`},
		{Args: []string{"dlq", "show"}, Want: "fieldwork dlq show needs a dead-letter address, TOPIC/PARTITION/OFFSET, or --event-id ID"},
		{Args: []string{"dlq", "show", "a.dlq/0/1", "b.dlq/0/2"}, Want: "takes one dead-letter address"},
		{Args: []string{"dlq", "show", "a.dlq/0"}, Want: `record address "a.dlq/0": no offset`},
		{Args: []string{"dlq", "show", "a.dlq/x/1"}, Want: `partition "x" is not a number from 0`},
		{Args: []string{"dlq", "show", "a.dlq/0/1", "--event-id", "e"}, Want: "give either a dead-letter address or --event-id, not both"},
		{Args: []string{"dlq", "show", "a.dlq/0/1", "--topic", "a.dlq"}, Want: "--topic selects what --event-id scans"},
		{Args: []string{"dlq", "show", "--event-id", ""}, Want: `invalid argument "" for "--event-id" flag: empty: name an event id`},
		{Args: []string{"dlq", "stats", "--group-by", "colour"}, Want: `cannot group by "colour"`},
		{Args: []string{"dlq", "stats", "--group-by", "reason,reason"}, Want: `"reason" is named twice`},
		{Args: []string{"dlq", "stats", "--window", "0s"}, Want: `"0s": must be more than 0`},
		{Args: []string{"dlq", "stats", "--window", "soon"}, Want: `invalid argument "soon" for "--window"`},
		{Args: []string{"dlq", "stats", "--status", "pending"}, Want: "unknown flag: --status"},
	})
}

// TestDLQNoBroker: without a broker configured, the commands say so (exit 2) and never hang.
func TestDLQNoBroker(t *testing.T) {
	for _, args := range [][]string{{"dlq", "list"}, {"dlq", "stats"}, {"dlq", "show", "a.dlq/0/0"}} {
		r := roottest.Run(t, map[string]string{}, args...)
		if r.Code != root.ExitUsage || !strings.Contains(r.Stderr, "no Kafka brokers configured") {
			t.Errorf("%v: exit %d %q", args, r.Code, r.Stderr)
		}
	}
}

// TestDLQListFlags checks what the flags become, without any network.
func TestDLQListFlags(t *testing.T) {
	s, _, _, _ := output.Test()
	f := &cmdutil.Factory{Streams: s, Getenv: func(k string) string {
		if k == "FIELDWORK_DSN" {
			return "sqlite:/nonexistent/x.db" // configured, never opened while parsing
		}
		return ""
	}}
	var got *dlqcmd.DLQListOptions
	cmd := dlqcmd.NewCmdDLQList(f, func(_ context.Context, o *dlqcmd.DLQListOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--topic", "a.dlq", "--topic", "b.DLT", "--dlq-reason", "malformed,rejected", "--dlq-reason", "unknown",
		"--error", "time(out)?", "--original-topic", "tasks", "--group", "g", "--key-base64", "/2tlef4=", "--event-id", "e",
		"--since", "2h", "--status", "pending,replayed", "--consumer", "billing", "--limit", "0"})
	start := time.Now()
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	fl := got.Filter
	if !slices.Equal(got.TopicFlags.Topics, []string{"a.dlq", "b.DLT"}) || got.Pattern != nil || got.Limit != 0 ||
		!slices.Equal(fl.Reasons, []string{"malformed", "rejected", "unknown"}) || !fl.ErrorRegexp.MatchString("timeout") ||
		fl.OriginalTopic != "tasks" || fl.Group != "g" || string(fl.Key) != "\xffkey\xfe" || fl.EventID != "e" ||
		fl.Since.Before(start.Add(-2*time.Hour-time.Minute)) || fl.Since.After(time.Now().Add(-2*time.Hour)) || !fl.Until.IsZero() ||
		!slices.Equal(got.Statuses, []dlq.Status{dlq.StatusPending, dlq.StatusReplayed}) || got.StatusFlags.Consumer != "billing" {
		t.Errorf("options %+v\nfilter %+v", got, fl)
	}
	// An empty --key selects empty and absent keys; no --key does not filter.
	if err := dlqParseOnly(f, []string{"--key", ""}, func(o *dlqcmd.DLQListOptions) {
		if o.Filter.Key == nil || len(o.Filter.Key) != 0 {
			t.Errorf("--key '': %q", o.Filter.Key)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := dlqParseOnly(f, nil, func(o *dlqcmd.DLQListOptions) {
		if o.Filter.Key != nil || o.Limit != dlqcmd.DefaultDLQListLimit || o.Pattern != nil || len(o.TopicFlags.Topics) != 0 {
			t.Errorf("defaults: %+v", o)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

func dlqParseOnly(f *cmdutil.Factory, args []string, check func(*dlqcmd.DLQListOptions)) error {
	cmd := dlqcmd.NewCmdDLQList(f, func(_ context.Context, o *dlqcmd.DLQListOptions) error { check(o); return nil })
	// Never nil: cobra would read the test binary's own arguments (-test.run, -update).
	cmd.SetArgs(append([]string{}, args...))
	return cmd.Execute()
}

// TestDLQStoreDown: a configured store that cannot be reached is a connect error (exit 4)
// that points at --no-status.
func TestDLQStoreDown(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	env["FIELDWORK_DSN"] = "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2"
	r := roottest.Run(t, env, "dlq", "list", "--pattern", "^no-such-topic-at-all$")
	if r.Code != root.ExitConnect || !strings.Contains(r.Stderr, "hint: --no-status reads the dead letters without the store") || strings.Contains(r.Stderr, "secret") {
		t.Errorf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = roottest.Run(t, env, "dlq", "list", "--pattern", "^no-such-topic-at-all$", "--no-status", "-o", "json")
	if r.Code != 0 || r.Stdout != "[]\n" {
		t.Errorf("--no-status: exit %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
}
