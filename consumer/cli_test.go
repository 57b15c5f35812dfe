package consumer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCLI runs the `fieldwork consume` scripts under testdata/consume against the built
// binary, with the harness every package's scripts share (testenv.ScriptParams: its
// commands, and [env:NAME], which fails where the services are required). Scripts that need
// the real broker start with `[!env:FIELDWORK_TEST_BROKERS] skip`: when it is set the test
// creates a topic and its dead-letter topic, seeded with a small sample stream (120 events,
// 6 duplicates, 2 stale versions, 3 poison records), and the scripts share it ($TOPIC), each
// with consumer groups of its own.
func TestCLI(t *testing.T) {
	bin := testenv.Fieldwork(t)
	var topic string
	if os.Getenv("FIELDWORK_TEST_BROKERS") != "" {
		topic, _ = topics(t, 2)
		produceSample(t, producer(t), topic, sample.Options{Seed: 3, Aggregates: 20, EventsPerAggregate: 6, DuplicateFraction: 0.05, Stale: 2, Poison: 3})
	}
	p := testenv.ScriptParams(filepath.Join("..", "testdata", "consume"))
	shared := p.Setup
	p.Setup = func(e *testscript.Env) error {
		if err := shared(e); err != nil {
			return err
		}
		// The built binary, not the test's own: signals and exit codes are a process's.
		e.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+e.Getenv("PATH"))
		e.Setenv("NO_COLOR", "1")
		if topic != "" {
			e.Setenv("FIELDWORK_BROKERS", os.Getenv("FIELDWORK_TEST_BROKERS"))
			e.Setenv("TOPIC", topic)
		}
		return nil
	}
	testscript.Run(t, p)
}
