package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// execSummary is what a run's JSON summary says of how it executed.
type execSummary struct {
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	Resumed   bool   `json:"resumed"`
	Execution *struct {
		Rate      *float64 `json:"rate"`
		RateFrom  string   `json:"rate_from"`
		BatchFrom string   `json:"batch_from"`
	} `json:"execution"`
}

// interruptAt starts the binary with args (a resume of run id, in the child's environment),
// waits until that process drives the run and the journal shows at least sent records sent,
// interrupts it (SIGINT) and returns its JSON summary and stderr: it must exit 130.
func (c *replayChild) interruptAt(t *testing.T, id string, sent int64, args ...string) (execSummary, string) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.environ
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	owner := ":" + strconv.Itoa(cmd.Process.Pid)
	testenv.WaitUntil(t, time.Minute, nil, fmt.Sprintf("process %d driving run %s past %d sent", cmd.Process.Pid, id, sent), func() bool {
		run, _, err := c.st.ReplayRun(context.Background(), id)
		return err == nil && run.Status == dedup.RunRunning && strings.HasSuffix(run.Owner, owner) && run.Sent >= sent
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("%v after SIGINT: %v, want exit 130\n%s\n%s", args, err, out.String(), errOut.String())
	}
	var sum execSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.Status != dedup.RunInterrupted {
		t.Fatalf("summary %+v %v\n%s", sum, err, out.String())
	}
	return sum, errOut.String()
}

// journaledRate is the rate the journal's selection holds for the run (nil: no cap or none).
func journaledRate(t *testing.T, st *dedup.Store, id string) (execution map[string]any) {
	t.Helper()
	run, _, err := st.ReplayRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var sel struct {
		Execution map[string]any `json:"execution"`
	}
	if err := json.Unmarshal([]byte(run.Selection), &sel); err != nil {
		t.Fatalf("selection %s: %v", run.Selection, err)
	}
	return sel.Execution
}

// TestReplayResumeKeepsTheRunsExecution: a replay interrupted (SIGINT) at --rate 400 is
// resumed at 400, says so, and journals it; a resume at --rate 300 overrides it and journals
// 300, which the next resume keeps; a run journaled without its execution (as an earlier
// version wrote it) resumes with no cap and says its rate is unknown. Every record reaches
// the target once.
func TestReplayResumeKeepsTheRunsExecution(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const n = 1200
	child := startReplayChild(t, 2, n, "400")
	st := child.st
	run := child.waitSent(t, 100)
	if err := child.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := child.cmd.Wait(); err == nil {
		t.Fatalf("the replay completed before it was interrupted:\n%s", child.errOut.String())
	}
	if hint := "fieldwork replay resume " + run.ID + " --execute (it keeps --rate 400"; !strings.Contains(child.errOut.String(), hint) {
		t.Fatalf("resume hint: want %q in\n%s", hint, child.errOut.String())
	}
	if ex := journaledRate(t, st, run.ID); ex["rate"] != 400.0 || ex["max_buffered"] != 30000.0 {
		t.Fatalf("journaled execution %v, want rate 400 and the batching", ex)
	}
	resume := func(extra ...string) []string {
		return append([]string{"replay", "resume", run.ID, "--schema", child.schema, "--execute", "--yes", "-o", "json"}, extra...)
	}

	// Resumed without --rate: the run's 400.
	sum, _ := child.interruptAt(t, run.ID, 250, resume()...)
	if e := sum.Execution; !sum.Resumed || e == nil || e.Rate == nil || *e.Rate != 400 || e.RateFrom != "run" || e.BatchFrom != "run" {
		t.Fatalf("first resume: %+v %+v, want rate 400 from the run", sum, sum.Execution)
	}
	// --rate 300 overrides, and is journaled.
	sum, _ = child.interruptAt(t, run.ID, 400, resume("--rate", "300")...)
	if e := sum.Execution; e == nil || e.Rate == nil || *e.Rate != 300 || e.RateFrom != "flag" {
		t.Fatalf("resume --rate 300: %+v", sum.Execution)
	}
	if ex := journaledRate(t, st, run.ID); ex["rate"] != 300.0 {
		t.Fatalf("journaled after the override: %v, want rate 300", ex)
	}
	// The next resume keeps it.
	sum, errOut := child.interruptAt(t, run.ID, 550, resume()...)
	if e := sum.Execution; e == nil || e.Rate == nil || *e.Rate != 300 || e.RateFrom != "run" {
		t.Fatalf("resume after the override: %+v", sum.Execution)
	}
	if !strings.Contains(errOut, "(it keeps --rate 300") {
		t.Fatalf("resume hint after the override:\n%s", errOut)
	}

	// As an earlier version journaled it: no execution. It resumes, with no cap, and says so.
	conn, err := pgx.Connect(context.Background(), testenv.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE `+pgx.Identifier{child.schema, "replay_runs"}.Sanitize()+
		` SET selection = (selection::jsonb - 'execution')::text WHERE id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	if ex := journaledRate(t, st, run.ID); ex != nil {
		t.Fatalf("the journal still has an execution: %v", ex)
	}
	var last execSummary
	if err := json.Unmarshal(child.resume(t, run.ID), &last); err != nil {
		t.Fatal(err)
	}
	if e := last.Execution; last.Status != dedup.RunCompleted || e == nil || e.Rate != nil || e.RateFrom != "unknown" || e.BatchFrom != "unknown" {
		t.Fatalf("resume of a run journaled without its execution: %+v %+v", last, last.Execution)
	}
	sources := replaySources(t, child.src)
	distinct := map[string]bool{}
	for _, s := range sources {
		distinct[s] = true
	}
	if len(sources) != n || len(distinct) != n {
		t.Fatalf("after the resumes: %d records, %d distinct, want %d of each", len(sources), len(distinct), n)
	}
}
