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

func TestConsumeUsageErrors(t *testing.T) {
	base := []string{"--topic", "tasks", "--group", "g"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--group", "g", "--handler", "audit"}, "--topic is required"},
		{[]string{"--topic", "t", "--handler", "audit"}, "--group is required"},
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
