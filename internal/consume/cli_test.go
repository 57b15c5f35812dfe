package consume_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCLI runs the `fieldwork consume` scripts under testdata/consume against the built
// binary. Scripts that need the real broker start with `[!broker] skip`: when
// FIELDWORK_TEST_BROKERS is set the test creates a topic and its dead-letter topic, seeded
// with a small sample stream (120 events, 6 duplicates, 2 stale versions, 3 poison records),
// and the scripts share it, each with consumer groups of its own.
func TestCLI(t *testing.T) {
	bin := buildFieldwork(t)
	var topic string
	if os.Getenv("FIELDWORK_TEST_BROKERS") != "" {
		topic, _ = topics(t, 2)
		recs, _, err := sample.Generate(sample.Options{Seed: 3, Aggregates: 20, EventsPerAggregate: 6, DuplicateFraction: 0.05, Stale: 2, Poison: 3})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Produce(t, producer(t), sample.KgoRecords(topic, recs)...)
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("..", "..", "testdata", "consume"),
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+e.Getenv("PATH"))
			e.Setenv("HOME", e.WorkDir)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, ".config"))
			e.Setenv("NO_COLOR", "1")
			if topic != "" {
				e.Setenv("FIELDWORK_BROKERS", os.Getenv("FIELDWORK_TEST_BROKERS"))
				e.Setenv("TOPIC", topic)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "broker" {
				return topic != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// fieldwork-exit WANT ARGS... runs fieldwork and fails unless it exits with WANT.
			"fieldwork-exit": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 1 {
					ts.Fatalf("usage: fieldwork-exit WANT ARGS...")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("fieldwork-exit: %v", err)
				}
				err = ts.Exec("fieldwork", args[1:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("fieldwork: %v", err)
				}
				if got != want {
					ts.Fatalf("fieldwork exited %d, want %d (%v)", got, want, err)
				}
			},
		},
	})
}
