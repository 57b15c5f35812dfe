package consume

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestConsumeFlags(t *testing.T) {
	var got *ConsumeOptions
	f := cmdutil.TestFactory()
	c := NewCmdConsume(f, func(_ context.Context, o *ConsumeOptions) error { got = o; return nil })
	c.SetArgs([]string{"--topic", "tasks", "--topic", "orders", "--group", "g", "--handler", "projection",
		"--migrate", "--max-attempts", "3", "--batch-max", "100", "--stop-when-idle", "5s", "--schema", "billing",
		"--metrics-addr", "", "--log-format", "json", "--instance-id", "c-1"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Topics, ",") != "tasks,orders" || got.Group != "g" || got.Handler != "projection" || !got.Migrate ||
		got.MaxAttempts != 3 || got.BatchMax != 100 || got.StopWhenIdle != 5*time.Second || got.MetricsAddr != "" ||
		got.LogFormat != "json" || got.InstanceID != "c-1" || got.Naming.Schema != "billing" || got.ShutdownTimeout != 30*time.Second {
		t.Errorf("options %+v", got)
	}
}

// TestConsumeShareGroupFlags: --share-group with its own flags; --max-attempts, not given,
// leaves the runner's share-group default (one attempt per delivery), given, is kept.
func TestConsumeShareGroupFlags(t *testing.T) {
	for _, tc := range []struct {
		extra []string
		want  int
	}{{nil, 0}, {[]string{"--max-attempts", "3"}, 3}} {
		var got *ConsumeOptions
		c := NewCmdConsume(cmdutil.TestFactory(), func(_ context.Context, o *ConsumeOptions) error { got = o; return nil })
		c.SetArgs(append([]string{"--topic", "tasks", "--share-group", "workers", "--handler", "projection",
			"--start-earliest", "--version-guard"}, tc.extra...))
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.ShareGroup != "workers" || got.Group != "" || !got.StartEarliest || !got.VersionGuard || got.MaxAttempts != tc.want {
			t.Errorf("%v: options %+v", tc.extra, got)
		}
	}
}

func TestConsumeUsageErrors(t *testing.T) {
	base := []string{"--topic", "tasks", "--group", "g"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--group", "g", "--handler", "audit"}, "--topic is required"},
		{[]string{"--topic", "t", "--handler", "audit"}, "--group or --share-group is required"},
		{append(base, "--share-group", "s", "--handler", "audit"), "--group and --share-group"},
		{append(base, "--handler", "audit", "--start-earliest"), "--start-earliest applies to --share-group only"},
		{[]string{"--topic", "t", "--share-group", "s", "--handler", "audit", "--instance-id", "i"}, "--instance-id applies to a consumer group"},
		{base, "--handler is required"},
		{append(base, "--handler", "email"), `--handler "email"`},
		{append(base, "--handler", "webhook"), "needs --webhook-url"},
		{append(base, "--handler", "audit", "--webhook-url", "http://x"), "webhook only"},
		{append(base, "--handler", "audit", "--max-attempts", "0"), `"0" for "--max-attempts" flag: must be at least 1`},
		{append(base, "--handler", "audit", "--batch-max", "0"), "--batch-max 0"},
		{append(base, "--handler", "audit", "--log-format", "xml"), "--log-format"},
		{append(base, "--handler", "audit", "--log-level", "loud"), "--log-level"},
		{append(base, "--handler", "audit", "--metrics-addr", "9464"), "--metrics-addr"},
		{append(base, "--handler", "audit", "--topic", " "), `invalid argument " " for "-t, --topic" flag: no topic name`},
	}
	for _, tc := range cases {
		c := NewCmdConsume(cmdutil.TestFactory(), func(context.Context, *ConsumeOptions) error { t.Fatal("ran"); return nil })
		c.SetArgs(tc.args)
		err := c.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) || fwerr.KindOf(err) != fwerr.KindUsage {
			t.Errorf("%v: %v; want usage error with %q", tc.args, err, tc.want)
		}
	}
}
