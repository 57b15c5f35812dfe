package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// workersRun is a run shared by workers and the worker processes started on it.
type workersRun struct {
	id, schema, bin string
	environ         []string
	st              *dedup.Store
	workers         []*workerProc
}

type workerProc struct {
	cmd         *exec.Cmd
	out, errOut bytes.Buffer
	done        chan error
	// ended is set once the test has seen the process exit (from done).
	ended bool
}

// wait waits for the worker's exit (bounded) and returns its error.
func (w *workerProc) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.done:
		w.ended = true
		return err
	case <-time.After(2 * time.Minute):
		t.Fatalf("a worker did not exit:\n%s", w.errOut.String())
		return nil
	}
}

// pid is the worker's pid as the journal names it (host:pid).
func (w *workerProc) owner() string { return ":" + strconv.Itoa(w.cmd.Process.Pid) }

// newWorkersRun records a run of dlqTopic's dead letters to target for workers (replay
// --execute --workers), at rate records per second for all its workers together.
func newWorkersRun(t *testing.T, env map[string]string, schema, dlqTopic, target, rate string) *workersRun {
	t.Helper()
	r := &workersRun{schema: schema, bin: fieldworkBinary(t), st: replayStore(t, schema)}
	r.environ = append(os.Environ(), "FIELDWORK_BROKERS="+env["FIELDWORK_BROKERS"], "FIELDWORK_DSN="+env["FIELDWORK_DSN"],
		"FIELDWORK_CONFIG="+filepath.Join(t.TempDir(), "absent.yaml"))
	out, errOut := r.fieldwork(t, "replay --workers", "replay", "--schema", schema, "--topic", dlqTopic, "--to", target, "--execute", "--yes",
		"--workers", "--reason", "backlog", "--rate", rate, "-o", "json")
	var sum struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.Status != dedup.RunPlanned {
		t.Fatalf("replay --workers: %v %+v\n%s\n%s", err, sum, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "replay resume "+sum.RunID+" --worker --execute") {
		t.Fatalf("no hint to start the workers:\n%s", errOut.String())
	}
	r.id = sum.RunID
	// --worker without --execute previews: the run as replay show prints it, nothing sent, no
	// member joined.
	out, errOut = r.fieldwork(t, "replay resume --worker (a preview)", "replay", "resume", r.id, "--worker", "--schema", schema, "-o", "json")
	var shown struct {
		ID          string `json:"run_id"`
		Status      string `json:"status"`
		Checkpoints []struct {
			Remaining int64 `json:"remaining"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil || shown.ID != r.id || shown.Status != dedup.RunPlanned ||
		len(shown.Checkpoints) == 0 || shown.Checkpoints[0].Remaining == 0 || !strings.Contains(errOut.String(), "add --execute") {
		t.Fatalf("replay resume --worker without --execute is not a preview: %v %+v\n%s\n%s", err, shown, out.String(), errOut.String())
	}
	t.Cleanup(func() {
		for _, w := range r.workers {
			if !w.ended {
				_ = w.cmd.Process.Kill()
				<-w.done
			}
		}
		adm := kadm.NewClient(testenv.Client(t))
		_, _ = adm.DeleteGroups(context.Background(), replay.GroupName(r.id))
	})
	return r
}

// fieldwork runs the binary with args in the run's environment to its end, and returns its
// stdout and stderr; what names the command in a failure.
func (r *workersRun) fieldwork(t *testing.T, what string, args ...string) (out, errOut *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.environ
	out, errOut = new(bytes.Buffer), new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, errOut.String())
	}
	return out, errOut
}

// start starts one worker process (replay resume RUN --worker).
func (r *workersRun) start(t *testing.T) *workerProc {
	t.Helper()
	w := &workerProc{done: make(chan error, 1)}
	w.cmd = exec.Command(r.bin, "replay", "resume", r.id, "--worker", "--execute", "--schema", r.schema, "--session-timeout", "6s", "-o", "json")
	w.cmd.Env = r.environ
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.errOut
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- w.cmd.Wait() }()
	r.workers = append(r.workers, w)
	return w
}

// waitFor polls the journal until cond holds of the run and its checkpoints (two minutes at
// most) and returns them.
func (r *workersRun) waitFor(t *testing.T, what string, cond func(dedup.ReplayRun, []dedup.ReplayCheckpoint) bool) (dedup.ReplayRun, []dedup.ReplayCheckpoint) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		run, cps, err := r.st.ReplayRun(context.Background(), r.id)
		if err == nil && cond(run, cps) {
			return run, cps
		}
		if time.Now().After(deadline) || run.Status == dedup.RunCompleted {
			var logs strings.Builder
			for i, w := range r.workers {
				fmt.Fprintf(&logs, "worker %d:\n%s\n", i, w.errOut.String())
			}
			t.Fatalf("waiting for %s: %v %+v\n%s", what, err, run, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holds reports whether w holds a partition of the run in the journal.
func holds(w *workerProc, cps []dedup.ReplayCheckpoint) bool {
	for _, c := range cps {
		if c.Worker != nil && strings.HasSuffix(c.Worker.Owner, w.owner()) {
			return true
		}
	}
	return false
}

// finish waits for every worker still running to exit 0, and returns the largest duplicate
// window they report.
func (r *workersRun) finish(t *testing.T) int64 {
	t.Helper()
	var window int64
	for i, w := range r.workers {
		if w.ended {
			continue // the one killed, or interrupted
		}
		if err := w.wait(t); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, w.errOut.String())
		}
		var sum replay.WorkerSummary
		if err := json.Unmarshal(w.out.Bytes(), &sum); err != nil || sum.Status != dedup.RunCompleted {
			t.Fatalf("worker %d summary: %v %+v\n%s", i, err, sum, w.out.String())
		}
		window = max(window, sum.DuplicateWindow)
	}
	return window
}

// checkShow checks `replay show RUN` of a completed run of n records: every partition done and
// released, the partitions' counts adding up to the run's, the targets to its sends.
func (r *workersRun) checkShow(t *testing.T, n int64) {
	t.Helper()
	show := exec.Command(r.bin, "replay", "show", r.id, "--schema", r.schema, "-o", "json")
	show.Env = r.environ
	out, err := show.Output()
	if err != nil {
		t.Fatalf("replay show: %v", err)
	}
	var d struct {
		dedup.ReplayRun
		Checkpoints []struct {
			dedup.ReplayCheckpoint
			Remaining int64 `json:"remaining"`
		} `json:"checkpoints"`
		Targets []dedup.TargetCount `json:"targets"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	if d.Status != dedup.RunCompleted || d.Selected != n || d.Sent != n || d.FinishedAt == nil {
		t.Fatalf("replay show: %s selected %d sent %d, want completed %d", d.Status, d.Selected, d.Sent, n)
	}
	var sel, sent, targets int64
	for _, c := range d.Checkpoints {
		if c.Worker == nil || c.Remaining != 0 || c.AckedThrough != c.End || c.Worker.Owner != "" {
			t.Fatalf("checkpoint of a completed run: %+v worker %+v", c, c.Worker)
		}
		sel += c.Worker.Counts.Selected
		sent += c.Worker.Counts.Sent
	}
	for _, tc := range d.Targets {
		targets += tc.Records
	}
	if sel != n || sent != n || targets < n {
		t.Fatalf("replay show: the partitions count %d selected, %d sent; the targets %d; want %d", sel, sent, targets, n)
	}
}

// checkTarget checks that target holds every one of the n dead letters at least once, and
// returns how many it holds twice or more.
func checkTarget(t *testing.T, target string, n int) int64 {
	t.Helper()
	sources := replaySources(t, target)
	distinct := map[string]bool{}
	for _, s := range sources {
		distinct[s] = true
	}
	if len(distinct) != n {
		t.Fatalf("%s holds %d distinct dead letters of %d", target, len(distinct), n)
	}
	return int64(len(sources) - n)
}

// TestReplayWorkers replays 100,000 dead letters of a topic of four partitions with worker
// processes sharing the run on the group protocol: one worker SIGKILLed mid-run and started
// again (its partitions resumed from their checkpoints, the duplicates within its window), then
// a run whose two workers are joined by a third mid-run, which then leaves (SIGINT): each
// rebalance hands partitions over with nothing sent twice. Each time every record reaches the
// target and replay show agrees.
func TestReplayWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const n = 100_000
	env, schema := replayEnv(t)
	src, dlqTopic := testenv.Topic(t, 4, nil), testenv.Topic(t, 4, nil)
	seedDeadLetters(t, testenv.Client(t), src, dlqTopic, n, 0)

	t.Run("kill", func(t *testing.T) {
		target := testenv.Topic(t, 4, nil)
		r := newWorkersRun(t, env, schema, dlqTopic, target, "25000")
		a, b := r.start(t), r.start(t)
		r.waitFor(t, "both workers holding partitions", func(_ dedup.ReplayRun, cps []dedup.ReplayCheckpoint) bool { return holds(a, cps) && holds(b, cps) })
		r.waitFor(t, "20,000 sent", func(run dedup.ReplayRun, _ []dedup.ReplayCheckpoint) bool { return run.Sent >= 20_000 })
		if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = a.wait(t)
		if run, _, err := r.st.ReplayRun(context.Background(), r.id); err != nil || run.Sent >= n {
			t.Fatalf("the run completed before the kill (make it slower): %v", err)
		}
		r.start(t) // a again, as a new member
		window := r.finish(t)
		r.checkShow(t, n)
		dups := checkTarget(t, target, n)
		t.Logf("kill: %d records sent twice (duplicate window %d)", dups, window)
		if dups > window {
			t.Fatalf("%d duplicates, more than the killed worker's window %d", dups, window)
		}
	})

	t.Run("rebalance", func(t *testing.T) {
		target := testenv.Topic(t, 4, nil)
		// Slower: a rebalance waits for the members' next heartbeats.
		r := newWorkersRun(t, env, schema, dlqTopic, target, "6000")
		a, b := r.start(t), r.start(t)
		r.waitFor(t, "both workers holding partitions", func(_ dedup.ReplayRun, cps []dedup.ReplayCheckpoint) bool { return holds(a, cps) && holds(b, cps) })
		r.waitFor(t, "10,000 sent", func(run dedup.ReplayRun, _ []dedup.ReplayCheckpoint) bool { return run.Sent >= 10_000 })
		c := r.start(t)
		run, _ := r.waitFor(t, "the third worker holding a partition", func(_ dedup.ReplayRun, cps []dedup.ReplayCheckpoint) bool { return holds(c, cps) })
		if run.Sent >= n {
			t.Fatalf("the run completed before the third worker joined: make it slower")
		}
		// The third leaves (SIGINT): its partitions checkpointed and released, the others take
		// them back, again without sending anything twice.
		if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := c.wait(t); err == nil || c.cmd.ProcessState.ExitCode() != 130 {
			t.Fatalf("the third worker after SIGINT: %v, want exit 130\n%s", err, c.errOut.String())
		}
		if _, cps, _ := r.st.ReplayRun(context.Background(), r.id); holds(c, cps) {
			t.Fatalf("the third worker left holding partitions: %+v", cps)
		}
		r.finish(t)
		r.checkShow(t, n)
		if dups := checkTarget(t, target, n); dups != 0 {
			t.Fatalf("a rebalance sent %d records twice", dups)
		}
	})
}

// TestReplayWorkersShareTheRate: two workers share a run's rate by the partitions left. The
// dead-letter topic has two partitions, the second three times the first; each worker holds
// one at 100/s of the run's 200/s, and when the first partition is done the worker holding
// the second raises its share to the whole rate (and says so on stderr). Nothing is sent
// twice and replay show agrees.
func TestReplayWorkersShareTheRate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	// The first partition lasts about 12s at its half of the rate: time enough for both
	// workers to have joined, even on a loaded machine, before it is done.
	sizes := []int{1200, 3600}
	n := sizes[0] + sizes[1]
	env, schema := replayEnv(t)
	src, dlqTopic, target := testenv.Topic(t, 1, nil), testenv.Topic(t, 2, nil), testenv.Topic(t, 2, nil)
	cl := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var origs, dls []*kgo.Record
	for p, size := range sizes {
		for i := range size {
			id := fmt.Sprintf("evt-%d-%05d", p, i)
			o := &kgo.Record{Topic: src, Key: []byte(id), Value: fmt.Appendf(nil, `{"i":%d}`, i),
				Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte(id)}}}
			origs = append(origs, o)
			dl := dlq.NewDeadLetter(o, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonExhausted, Error: "db down", Group: "billing", EventID: id})
			dl.Partition = int32(p)
			dls = append(dls, dl)
		}
	}
	testenv.Produce(t, cl, origs...)
	testenv.Produce(t, cl, dls...)

	r := newWorkersRun(t, env, schema, dlqTopic, target, "200")
	a, b := r.start(t), r.start(t)
	r.waitFor(t, "both workers holding partitions", func(_ dedup.ReplayRun, cps []dedup.ReplayCheckpoint) bool { return holds(a, cps) && holds(b, cps) })
	r.finish(t)
	r.checkShow(t, int64(n))
	if dups := checkTarget(t, target, n); dups != 0 {
		t.Fatalf("%d records sent twice", dups)
	}
	// The shares each worker was told, in order: the one that held the second partition to
	// the end went from half the rate to all of it.
	raised := false
	for _, w := range r.workers {
		var shares []string
		for line := range strings.Lines(w.errOut.String()) {
			if _, share, ok := strings.Cut(strings.TrimSpace(line), "its share of the rate: "); ok {
				shares = append(shares, share)
			}
		}
		if i := slices.Index(shares, "100/s"); i >= 0 && slices.Contains(shares[i+1:], "200/s") {
			raised = true
		}
		t.Logf("worker %s: shares %v", w.owner(), shares)
	}
	if !raised {
		t.Fatalf("no worker raised its share from 100/s to 200/s when the first partition was done:\n%s\n%s", a.errOut.String(), b.errOut.String())
	}
}
