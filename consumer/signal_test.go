package consumer_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestSignals runs `fieldwork consume` as a child process with a webhook receiver that holds
// the first request, so that a batch is in flight when the signals come:
//   - one SIGTERM drains: the batch finishes once the receiver answers, it is committed, and
//     the process exits 0 with its summary;
//   - Ctrl-C (SIGINT) drains the same way, and the process exits 130 (interrupted), as every
//     command stopped by Ctrl-C does, after its summary;
//   - a second SIGTERM abandons the batch at once: exit 130, nothing committed;
//   - a batch still in flight after --shutdown-timeout is abandoned: the process exits
//     (130) within that bound, nothing committed.
func TestSignals(t *testing.T) {
	t.Parallel()
	bin := testenv.Fieldwork(t)
	brokers, dsn := testenv.Brokers(t), testenv.DSN(t)
	st, schema := pgStore(t)
	topic, _ := topics(t, 1)
	cl := producer(t)
	for i, id := range []string{"ev-1", "ev-2", "ev-3"} {
		testenv.Produce(t, cl, ceRecord(topic, "task-0001", ceValue(t, id, sample.TypeCreated, "task-0001", i+1)))
	}

	arrived := make(chan string, 100)
	gates := map[string]chan struct{}{"drain": make(chan struct{}), "sigint": make(chan struct{}), "abort": make(chan struct{}), "timeout": make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		group := strings.TrimPrefix(r.URL.Path, "/")
		var ev struct {
			ID string `json:"event_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		arrived <- group + "/" + ev.ID
		select {
		case <-gates[group]:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer func() {
		for _, g := range gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	}()

	start := func(group string, extra ...string) *child {
		handler(t, st, schema, handlers.NameWebhook, group, handlers.Config{WebhookURL: srv.URL + "/" + group})
		args := append([]string{"consume", "--brokers", brokers, "--dsn", dsn, "--schema", schema, "--topic", topic,
			"--group", group, "--handler", "webhook", "--webhook-url", srv.URL + "/" + group, "--webhook-timeout", "1m",
			"--metrics-addr", "", "--log-format", "json", "-o", "json"}, extra...)
		c := startChild(t, bin, args...)
		for {
			select {
			case got := <-arrived:
				if !strings.HasPrefix(got, group+"/") {
					continue // an earlier phase's
				}
				if got != group+"/ev-1" {
					t.Fatalf("first request %s, want %s/ev-1", got, group)
				}
				return c
			case err := <-c.exited:
				t.Fatalf("%s exited: %v\n%s", group, err, c.logTail(20))
			case <-time.After(time.Minute):
				t.Fatalf("%s: no webhook call within a minute\n%s", group, c.logTail(20))
			}
		}
	}
	exitCode := func(c *child, within time.Duration) (int, time.Duration) {
		t.Helper()
		begin := time.Now()
		select {
		case err := <-c.exited:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), time.Since(begin)
			}
			if err != nil {
				t.Fatal(err)
			}
			return 0, time.Since(begin)
		case <-time.After(within):
			_ = c.cmd.Process.Kill()
			t.Fatalf("still running %s after the signal\n%s", within, c.logTail(20))
		}
		return -1, 0
	}
	deliveries := func(group string) int64 {
		return queryInt(t, st, `SELECT count(*) FROM `+tableName(t, st, schema, handlers.TableWebhookDeliveries)+` WHERE consumer = $1`, group)
	}
	markers := func(group string) int64 {
		return markerCount(t, st, group)
	}

	// One signal: the drain waits for the batch in flight.
	c := start("drain")
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-c.exited:
		t.Fatalf("exited while its batch was in flight: %v\n%s", err, c.logTail(20))
	default:
	}
	close(gates["drain"])
	code, took := exitCode(c, 30*time.Second)
	if code != 0 || !strings.Contains(c.stdout.String(), `"processed": 3`) || deliveries("drain") != 3 || markers("drain") != 3 {
		t.Errorf("drain: exit %d, stdout %s, %d deliveries, %d markers; want 0, 3 processed, 3, 3\n%s",
			code, c.stdout.String(), deliveries("drain"), markers("drain"), c.logTail(10))
	}
	t.Logf("one SIGTERM: drained and exited %d, %s after the receiver answered", code, took.Round(time.Millisecond))

	// Ctrl-C: the same drain, and exit 130.
	c = start("sigint")
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	close(gates["sigint"])
	code, _ = exitCode(c, 30*time.Second)
	if code != 130 || !strings.Contains(c.stdout.String(), `"processed": 3`) || deliveries("sigint") != 3 || markers("sigint") != 3 ||
		!strings.Contains(c.logTail(5), "interrupted") {
		t.Errorf("SIGINT: exit %d, stdout %s, %d deliveries, %d markers; want 130, 3 processed, 3, 3, interrupted\n%s",
			code, c.stdout.String(), deliveries("sigint"), markers("sigint"), c.logTail(10))
	}

	// A second signal: out at once, nothing committed.
	c = start("abort")
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	code, took = exitCode(c, 10*time.Second)
	if code != 130 || deliveries("abort") != 0 || markers("abort") != 0 || !strings.Contains(c.logTail(50), "second signal") {
		t.Errorf("abort: exit %d, %d deliveries, %d markers; want 130, 0, 0\n%s", code, deliveries("abort"), markers("abort"), c.logTail(10))
	}
	t.Logf("two SIGTERMs: exited %d %s after the second", code, took.Round(time.Millisecond))

	// The shutdown timeout bounds the drain.
	c = start("timeout", "--shutdown-timeout", "1s")
	begin := time.Now()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	code, _ = exitCode(c, 15*time.Second)
	took = time.Since(begin)
	if code != 130 || took > 8*time.Second || deliveries("timeout") != 0 || markers("timeout") != 0 ||
		!strings.Contains(c.logTail(50), "abandoning") {
		t.Errorf("timeout: exit %d after %s, %d deliveries, %d markers; want 130 within the bound, 0, 0\n%s",
			code, took, deliveries("timeout"), markers("timeout"), c.logTail(10))
	}
	t.Logf("SIGTERM with --shutdown-timeout 1s and a stuck batch: exited %d after %s", code, took.Round(time.Millisecond))
}

// child is one `fieldwork consume` process.
type child struct {
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	mu       sync.Mutex
	stderr   bytes.Buffer
	assigned chan struct{} // closed when it logs its first assignment
	exited   chan error
}

func startChild(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), assigned: make(chan struct{}), exited: make(chan error, 1)}
	c.cmd.Stdout = &c.stdout
	c.cmd.Env = append(os.Environ(), "NO_COLOR=1")
	errPipe, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.stderr.WriteString(line + "\n")
			c.mu.Unlock()
			if strings.Contains(line, `"partitions assigned"`) {
				once.Do(func() { close(c.assigned) })
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
		c.exited <- c.cmd.Wait()
	}()
	return c
}

func (c *child) logTail(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
