package dev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// tourSteps are the command lines of the README's tour: the shell block that exports
// FIELDWORK_BROKERS, each with the exit code its comment names ("# exit 3"), 0 otherwise.
func tourSteps(t *testing.T) (lines []string, codes []int) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```sh\nexport FIELDWORK_BROKERS=")
	block, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatal(`README.md has no shell block that exports FIELDWORK_BROKERS`)
	}
	exit := regexp.MustCompile(`#.*\bexit (\d+)\b`)
	for _, line := range strings.Split(block, "\n") {
		if !strings.HasPrefix(line, "fieldwork ") {
			continue // the export line: the test sets the connection itself
		}
		code := 0
		if m := exit.FindStringSubmatch(line); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
		lines, codes = append(lines, line), append(codes, code)
	}
	if len(lines) < 5 {
		t.Fatalf("the tour has %d fieldwork lines:\n%s", len(lines), block)
	}
	return lines, codes
}

// TestTheREADMETour serves `fieldwork dev` and runs the README's tour through bash against it,
// line by line on a terminal 80 columns wide, with the binary a reader builds: each line exits
// as its comment says, prints what the README's transcript shows (modulo times), and at
// the end every dead letter the sandbox's buggy release rejected is settled (resolved, or
// stale where the task already had a newer version), while the
// malformed ones, which no replay can cure, are not.
func TestTheREADMETour(t *testing.T) {
	lines, codes := tourSteps(t)
	bash := testenv.Tool(t, "bash")
	bin := testenv.Fieldwork(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "fieldwork-dev.db")
	addr, out, _, done := roottest.StartDev(t, ctx, "--dsn", dsn, "-o", "json")
	var info struct {
		Consumed *struct {
			Release              string           `json:"release"`
			Rejects              string           `json:"rejects"`
			DeadLetteredByReason map[string]int64 `json:"dead_lettered_by_reason"`
		} `json:"consumed"`
	}
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil {
		t.Fatalf("dev -o json: %v\n%s", err, out.String())
	}
	c := info.Consumed
	if c == nil || c.Release != "1.4" || c.DeadLetteredByReason[dlq.ReasonRejected] == 0 || c.DeadLetteredByReason[dlq.ReasonMalformed] != 3 {
		t.Fatalf("the sandbox's consumer: %+v, want release 1.4 with rejected and 3 malformed dead letters", c)
	}
	rejected := int(c.DeadLetteredByReason[dlq.ReasonRejected])

	env := testenv.CleanEnviron(t.TempDir(), "FIELDWORK_BROKERS="+addr, "FIELDWORK_DSN="+dsn, "USER=tester",
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(line string) (int, string, string) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		defer rcancel()
		cmd := exec.CommandContext(rctx, bash, "-c", line)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok && rctx.Err() == nil {
			return ee.ExitCode(), stdout.String(), stderr.String()
		} else if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, stderr.String())
		}
		return 0, stdout.String(), stderr.String()
	}
	// statuses counts the dead letters by reason and status.
	statuses := func() map[string]int {
		t.Helper()
		code, stdout, stderr := run("fieldwork dlq list --topic tasks.dlq --consumer task-projection --limit 0 -o jsonl")
		if code != 0 {
			t.Fatalf("dlq list: exit %d\n%s", code, stderr)
		}
		n := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var e struct{ Reason, Status string }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("dlq list -o jsonl: %v: %q", err, l)
			}
			n[e.Reason+" "+e.Status]++
		}
		return n
	}

	if n := statuses(); n["rejected pending"] != rejected || n["rejected resolved"] != 0 {
		t.Fatalf("before the tour: %v, want %d rejected pending and none resolved", n, rejected)
	}
	// Each line on a terminal 80 columns wide, as a reader runs it: its exit code as its
	// comment says, what it printed the README's transcript (checkTranscript).
	outs := make([]string, len(lines))
	for i, line := range lines {
		term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Env: append(env, "NO_COLOR=1"), Timeout: 2 * time.Minute}, bash, "-c", line)
		code, out := term.Wait()
		if code != codes[i] {
			t.Fatalf("tour step %d, %s: exit %d, want %d\nterminal:\n%s", i+1, line, code, codes[i], out)
		}
		outs[i] = screen(out)
	}
	checkTranscript(t, lines, outs)
	n := statuses()
	// Settled: resolved where the reopen took effect, stale where the task had a newer version.
	if n["rejected resolved"]+n["rejected stale"] != rejected || n["rejected resolved"] == 0 || n["rejected stale"] == 0 ||
		n["rejected pending"] != 0 || n["rejected replayed"] != 0 {
		t.Errorf("after the tour: %v, want all %d rejected dead letters resolved or stale (some of each)", n, rejected)
	}
	if n["malformed resolved"] != 0 || n["malformed pending"]+n["malformed unknown"] != 3 {
		t.Errorf("after the tour: %v, want the 3 malformed dead letters still pending or unknown", n)
	}
	cancel()
	<-done
}
