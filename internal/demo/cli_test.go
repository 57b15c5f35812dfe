package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/demo"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// TestCommandJSONSummary runs `fieldwork demo -o json` through the root command, as a
// newcomer would on a fresh machine: a clean HOME and XDG_CONFIG_HOME (no config file, no
// context), no FIELDWORK_* variables, a temporary working directory. It checks the story's
// outcome from the JSON summary against the sample manifest of the same seed, generated
// here independently.
func TestCommandJSONSummary(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	for _, k := range []string{"FIELDWORK_BROKERS", "FIELDWORK_DSN", "FIELDWORK_CONTEXT", "FIELDWORK_CONFIG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	work := t.TempDir()
	t.Chdir(work)
	t.Setenv("TMPDIR", t.TempDir()) // where the demo's store goes, so that its removal is seen

	s, _, stdout, stderr := output.Test()
	f := &cmdutil.Factory{Streams: s, Getenv: os.Getenv}
	tree := root.NewCmdRoot(f)
	tree.SetArgs([]string{"demo", "-o", "json"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := time.Now()
	if err := tree.ExecuteContext(ctx); err != nil {
		t.Fatalf("fieldwork demo -o json: %v\nstderr:\n%s", err, stderr)
	}
	took := time.Since(started)

	// stdout is one JSON object and nothing else; the story is on stderr.
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	var sum demo.Summary
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("stdout is not a JSON summary: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON value:\n%s", stdout)
	}
	for _, want := range []string{"$ fieldwork dev ", "$ fieldwork consume --topic tasks --group task-projection --handler projection",
		"$ fieldwork dlq list ", "$ fieldwork dlq stats ", "$ fieldwork replay --topic tasks.dlq --dlq-reason rejected ",
		"--execute --yes", "--status resolved", "$ fieldwork processed stats "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the story on stderr does not show %q", want)
		}
	}

	_, m, err := sample.Generate(sample.DefaultOptions(sum.Seed))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Seed != demo.DefaultSeed {
		t.Errorf("seed %d", sum.Seed)
	}
	// Produced: what the manifest says was injected.
	if sum.EventsProduced != m.Records || sum.Produced != m.Counts() {
		t.Errorf("events_produced %d, produced %+v; manifest %+v", sum.EventsProduced, sum.Produced, m.Counts())
	}
	// Processed: every distinct valid event (first sends and stale re-emits) exactly once,
	// one marker each; the poison never.
	distinct := int64(m.UniqueEventIDs())
	if sum.EventsProcessed != distinct || sum.ProcessedMarkers != distinct || sum.Applied+sum.StaleIgnored != distinct {
		t.Errorf("events_processed %d (applied %d + stale %d), processed_markers %d; want %d distinct events",
			sum.EventsProcessed, sum.Applied, sum.StaleIgnored, sum.ProcessedMarkers, distinct)
	}
	// Duplicates: absorbed, all of them.
	if sum.DuplicatesAbsorbed == 0 || sum.DuplicatesAbsorbed != int64(len(m.Duplicates)) {
		t.Errorf("duplicates_absorbed %d; the manifest has %d duplicates", sum.DuplicatesAbsorbed, len(m.Duplicates))
	}
	if sum.StaleIgnored < int64(len(m.Stale)) {
		t.Errorf("stale_ignored %d; the manifest has %d stale versions", sum.StaleIgnored, len(m.Stale))
	}
	// Dead letters: the poison as malformed, the bug's victims as rejected, nothing else.
	if len(sum.DeadLettered) != 2 || sum.DeadLettered["malformed"] != int64(len(m.Poison)) || sum.DeadLettered["rejected"] == 0 {
		t.Errorf("dead_lettered %v; want %d malformed and some rejected", sum.DeadLettered, len(m.Poison))
	}
	// Resolved: exactly those replayed, and every replayable one was replayed.
	if sum.Replayed == 0 || sum.Resolved+sum.Stale != sum.Replayed || sum.Replayed != sum.DeadLettered["rejected"] {
		t.Errorf("replayed %d, resolved %d, stale %d, rejected %d", sum.Replayed, sum.Resolved, sum.Stale, sum.DeadLettered["rejected"])
	}
	if sum.StillPending != int64(len(m.Poison)) || sum.StillPendingByReason["malformed"] != sum.StillPending || len(sum.StillPendingByReason) != 1 {
		t.Errorf("still_pending %d %v; want only the %d malformed", sum.StillPending, sum.StillPendingByReason, len(m.Poison))
	}
	if sum.RecordsDelivered != int64(m.Records)+sum.Replayed {
		t.Errorf("records_delivered %d, want %d produced + %d replayed", sum.RecordsDelivered, m.Records, sum.Replayed)
	}
	if sum.ReplayRunID == "" || sum.Kept {
		t.Errorf("replay_run_id %q, kept %v", sum.ReplayRunID, sum.Kept)
	}
	// The steps, with the command lines they stand for, pointing at the embedded stack.
	if len(sum.Steps) < 6 || sum.Steps[len(sum.Steps)-1].Step != 6 {
		t.Fatalf("steps %+v", sum.Steps)
	}
	for _, st := range sum.Steps {
		if !strings.HasPrefix(st.Command, "fieldwork ") || st.Result == "" || !strings.Contains(st.Command, "--dsn sqlite:") {
			t.Errorf("step %+v", st)
		}
		if strings.Contains(st.Command, "--brokers") && !strings.Contains(st.Command, "--brokers "+sum.Brokers) {
			t.Errorf("step %d does not name the demo's broker %s: %s", st.Step, sum.Brokers, st.Command)
		}
	}
	// Under a minute, as measured here and as reported.
	if took >= time.Minute || sum.ElapsedMS <= 0 || sum.ElapsedMS >= time.Minute.Milliseconds() {
		t.Errorf("took %v (elapsed_ms %d): want under a minute", took, sum.ElapsedMS)
	}
	t.Logf("fieldwork demo -o json took %v (elapsed_ms %d)", took, sum.ElapsedMS)

	// Nothing left behind: the temporary store is removed, the working directory untouched.
	if _, err := os.Stat(sum.Dir); !os.IsNotExist(err) {
		t.Errorf("the demo's directory %s is still there (%v)", sum.Dir, err)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("the working directory holds %d entries", len(ents))
	}
}
