// Package access runs fieldwork's commands end to end over principals with narrow ACLs on the
// real secure broker (SASL_SSL, SCRAM-SHA-512, the StandardAuthorizer with no ACL meaning
// deny): what each command needs, and how it fails without it (docs/design.md §4).
package access

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveFieldwork()
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("fieldwork %s\nexit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// commandTimeout bounds one run of the binary; the slowest, a consumer waiting out
// --stop-when-idle, takes seconds.
var commandTimeout = 2 * time.Minute

// run runs fieldwork with args and env (beside a clean environment: no FIELDWORK_* of the
// caller, no config file), bounded.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Fieldwork(t), args...)
	// A run that outlives its bound prints its goroutines (SIGQUIT) for the failure report.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	home := t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FIELDWORK_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "FIELDWORK_CONFIG="+filepath.Join(home, "absent.yaml"))
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("fieldwork %v: %v", args, err)
	}
	return r
}

// as runs fieldwork as principal p.
func as(t *testing.T, p *testenv.Principal, env []string, args ...string) result {
	t.Helper()
	return run(t, append(p.Env(), env...), append(append([]string{}, args...), p.Args()...)...)
}

// world is a source topic with sample events (poison included) and its dead-letter topic
// with one dead letter per poison record, written by the super user.
type world struct {
	topic, dlq string
	poison     int
}

func newWorld(t *testing.T) world {
	t.Helper()
	w := world{topic: testenv.Name(t, "orders")}
	w.dlq = w.topic + dlq.DefaultTopicSuffix
	testenv.CreateTopic(t, w.topic, 2, nil)
	testenv.CreateTopic(t, w.dlq, 2, nil)
	opts := sample.DefaultOptions(7)
	opts.Aggregates, opts.EventsPerAggregate = 4, 3
	recs, _, err := sample.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	cl := testenv.Client(t)
	kr := sample.KgoRecords(w.topic, recs)
	testenv.Produce(t, cl, kr...)
	var dead []*kgo.Record
	for _, r := range kr {
		if _, err := envelope.DecodeRecord(r); err != nil {
			dead = append(dead, dlq.NewDeadLetter(r, dlq.Meta{Group: w.topic + "-g", Handler: "projection", Reason: "malformed", Error: err.Error()}))
		}
	}
	if len(dead) == 0 {
		t.Fatal("the sample has no poison record")
	}
	w.poison = len(dead)
	testenv.Produce(t, cl, dead...)
	t.Cleanup(func() {
		testenv.DeleteTopic(t, cl, w.topic)
		testenv.DeleteTopic(t, cl, w.dlq)
	})
	return w
}
