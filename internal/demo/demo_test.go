package demo

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// recorder is a Narrator that keeps what it is told.
type recorder struct {
	steps    []string
	commands []string
	results  []Result
	said     []string
}

func (r *recorder) Step(n int, title string) {
	r.steps = append(r.steps, fmt.Sprintf("%d %s", n, title))
}
func (r *recorder) Command(line string) { r.commands = append(r.commands, line) }
func (r *recorder) Result(res Result)   { r.results = append(r.results, res) }
func (r *recorder) Say(text string)     { r.said = append(r.said, text) }

// TestStory runs the story on its own (no command line) and checks what it tells against
// the manifest of the stream, including the claims the narration makes.
func TestStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := &recorder{}
	d, err := New(Options{Dir: t.TempDir(), Narrator: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	sum, err := d.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v\nsteps so far: %+v", err, sum.Steps)
	}
	// The outcome, checked against the manifest of the same stream generated afresh.
	_, m, err := sample.Generate(sample.DefaultOptions(DefaultSeed))
	if err != nil {
		t.Fatal(err)
	}
	if sum.EventsProduced != m.Records || sum.Produced != m.Counts() {
		t.Errorf("produced %d %+v, manifest %+v", sum.EventsProduced, sum.Produced, m.Counts())
	}
	if want := int64(m.UniqueEventIDs()); sum.EventsProcessed != want || sum.ProcessedMarkers != want {
		t.Errorf("processed %d, markers %d; want %d distinct events", sum.EventsProcessed, sum.ProcessedMarkers, want)
	}
	if sum.DuplicatesAbsorbed != int64(len(m.Duplicates)) || sum.DuplicatesAbsorbed == 0 {
		t.Errorf("duplicates absorbed %d, manifest %d", sum.DuplicatesAbsorbed, len(m.Duplicates))
	}
	if sum.StaleIgnored < int64(len(m.Stale)) {
		t.Errorf("stale ignored %d < %d stale versions produced", sum.StaleIgnored, len(m.Stale))
	}
	if sum.DeadLettered[dlq.ReasonMalformed] != int64(len(m.Poison)) {
		t.Errorf("malformed dead letters %d, poison %d", sum.DeadLettered[dlq.ReasonMalformed], len(m.Poison))
	}
	if sum.Replayed == 0 || sum.Resolved+sum.Stale != sum.Replayed || sum.Replayed != sum.DeadLettered[dlq.ReasonRejected] {
		t.Errorf("replayed %d, resolved %d, stale %d, rejected %d", sum.Replayed, sum.Resolved, sum.Stale, sum.DeadLettered[dlq.ReasonRejected])
	}
	if sum.StillPending != int64(len(m.Poison)) || sum.StillPendingByReason[dlq.ReasonMalformed] != sum.StillPending {
		t.Errorf("still pending %d %v, want the %d poison records", sum.StillPending, sum.StillPendingByReason, len(m.Poison))
	}
	if len(sum.ConsumeRuns) != 2 || sum.ConsumeRuns[1].DeadLettered != 0 || sum.ConsumeRuns[1].Records != sum.Replayed {
		t.Errorf("consume runs %+v", sum.ConsumeRuns)
	}

	// The replayed reopens that applied are those of tasks whose last event was the reopen;
	// the others were superseded by a newer version (as the narration says).
	lastReopened := 0
	for _, a := range m.Aggregates {
		if a.LastType == RejectedType {
			lastReopened++
		}
	}
	if fixed := sum.ConsumeRuns[len(sum.ConsumeRuns)-1]; fixed.Applied != int64(lastReopened) || fixed.Applied+fixed.Stale+fixed.Duplicates != fixed.Records {
		t.Errorf("fixed run %+v: want %d applied (tasks whose last event is %s)", fixed, lastReopened, RejectedType)
	}
	if len(d.Try()) == 0 {
		t.Error("nothing to try")
	}

	if len(rec.steps) != 6 {
		t.Errorf("steps %q", rec.steps)
	}
	for _, c := range rec.commands {
		if !strings.HasPrefix(c, "fieldwork ") {
			t.Errorf("command %q", c)
		}
	}
	if len(sum.Steps) != len(rec.commands) {
		t.Errorf("%d steps recorded, %d commands told", len(sum.Steps), len(rec.commands))
	}
	if len(rec.said) == 0 || len(rec.results) != len(rec.commands) {
		t.Errorf("%d paragraphs, %d results for %d commands", len(rec.said), len(rec.results), len(rec.commands))
	}
}
