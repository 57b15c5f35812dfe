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
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

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

// world is a source topic of sample events and its dead-letter topic, written by the super
// user. A clean world has no poison record and its dead-letter topic holds a dead letter
// ("rejected") of each of its first deadLetters events; a poisoned one has poison records and
// an empty dead-letter topic, for a consumer to fill.
type world struct {
	topic, dlq  string
	records     int
	poison      int
	deadLetters int
	manifest    sample.Manifest
}

func cleanWorld(t *testing.T) world { return newWorld(t, 0, 3) }

func poisonedWorld(t *testing.T) world { return newWorld(t, 3, 0) }

func newWorld(t *testing.T, poison, deadLetters int) world {
	t.Helper()
	w := world{topic: testenv.Name(t, "orders"), poison: poison, deadLetters: deadLetters}
	w.dlq = w.topic + dlq.DefaultTopicSuffix
	cl := testenv.Client(t)
	testenv.CreateTopic(t, w.topic, 2, nil)
	testenv.CreateTopic(t, w.dlq, 2, nil)
	t.Cleanup(func() {
		testenv.DeleteTopic(t, cl, w.topic)
		testenv.DeleteTopic(t, cl, w.dlq)
	})
	opts := sample.DefaultOptions(7)
	opts.Aggregates, opts.EventsPerAggregate, opts.Stale, opts.Poison = 4, 3, 0, poison
	recs, manifest, err := sample.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	w.manifest = manifest
	kr := sample.KgoRecords(w.topic, recs)
	testenv.Produce(t, cl, kr...)
	w.records = len(kr)
	var dead []*kgo.Record
	for _, r := range kr[:deadLetters] {
		dead = append(dead, dlq.NewDeadLetter(r, dlq.Meta{Group: w.topic + "-projection", Handler: "projection", Reason: "rejected", Error: "handler refused it"}))
	}
	if len(dead) > 0 {
		testenv.Produce(t, cl, dead...)
	}
	return w
}

// endOffsets sums the high watermarks of topic's partitions.
func endOffsets(t *testing.T, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(testenv.Client(t)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// store is a migrated PostgreSQL schema of the test's own, reached over TLS (verify-full
// against the test CA; the server says it negotiated TLS): the store flags.
func store(t *testing.T) []string {
	t.Helper()
	dsn := testenv.TLSDSN(t)
	testenv.RequireTLS(t, dsn)
	flags := []string{"--dsn", dsn, "--schema", testenv.PGSchema(t, "fwaccess_")}
	if r := run(t, nil, append([]string{"db", "migrate"}, flags...)...); r.code != 0 {
		t.Fatal(r)
	}
	if r := run(t, nil, append([]string{"db", "status", "-o", "jsonl"}, flags...)...); r.code != 0 || !strings.Contains(r.stdout, `"state":"up_to_date"`) {
		t.Fatalf("db status over TLS: want up to date\n%s", r)
	}
	return flags
}

// expect runs fieldwork as p and fails the test unless it exits with code.
func expect(t *testing.T, p *testenv.Principal, code int, args ...string) result {
	t.Helper()
	r := as(t, p, nil, args...)
	if r.code != code {
		t.Fatalf("want exit %d\n%s", code, r)
	}
	return r
}

// denied checks that r exited 5 and that stderr names the operation on the resource.
func denied(t *testing.T, r result, want string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)not authorized: `+regexp.QuoteMeta(want)+`(;|$)`).MatchString(r.stderr) || r.code != 5 {
		t.Errorf("want exit 5 with %q\n%s", "not authorized: "+want, r)
	}
}
