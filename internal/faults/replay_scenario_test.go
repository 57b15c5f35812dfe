package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// replayRate caps the replay's records per second, so that the run lasts several seconds and
// the fault lands in its middle (some 3,400 dead letters at 500 a second: about 7s).
const replayRate = "500"

// replaySummary is what `fieldwork replay --execute -o json` and `replay resume` print.
type replaySummary struct {
	RunID           string          `json:"run_id"`
	Status          string          `json:"status"`
	Counts          dedup.RunCounts `json:"counts"`
	DuplicateWindow int64           `json:"duplicate_window"`
	Error           string          `json:"error"`
}

// replayThroughFault: a third of the tasks (every event, duplicate and stale re-emit of them)
// were dead-lettered by an earlier consumer whose database was away; their originals are in
// an older topic. The rest of the stream, poison included, is in the source topic. The test
// replays the dead letters into the source topic (`replay --topic T.dlq --to T --execute`),
// while `fieldwork consume` runs on it, and brings the fault once the journal shows part of
// the run sent. A replay that stops on the fault is resumed (`replay resume RUN`), as the
// runbook says. The invariant: the journal says completed, every dead letter sent, each
// checkpoint at its end; each journaled send is in the target with the run's provenance; no
// dead letter from outside the run and none sent more than the duplicate window allows; and
// the consumer has every event's effect exactly once, every poison record dead-lettered.
func (w *world) replayThroughFault(s *stream, f fault) string {
	t := w.t
	t.Helper()
	started := time.Now()
	group := testenv.Name(t, "fwf-projection")
	old := s.topic + ".old"
	testenv.CreateTopicOn(t, w.brokers, old, 3, w.replicas, nil)
	parked := 0
	for i, r := range s.recs {
		if s.man.Kind(i) != sample.KindPoison && parkedTask(string(r.Key)) {
			r.Topic = old
			parked++
		}
	}
	w.produce(s.recs)
	var dls []*kgo.Record
	for _, r := range s.recs {
		if r.Topic == old {
			dls = append(dls, dlq.NewDeadLetter(r, dlq.Meta{Topic: s.dlq, Reason: dlq.ReasonExhausted,
				Error: "connect to the projection database: connection refused", Group: group, Handler: "projection", Attempts: 5}))
		}
	}
	w.produce(dls)
	seeded := map[string]bool{}
	for _, d := range dls {
		seeded[invariant.Addr(d.Topic, d.Partition, d.Offset)] = true
	}

	st := w.store()
	rp := testenv.StartProc(t, "replay", []string{"USER=oncall"}, w.bin, "replay", "--brokers", w.brokers, "--dsn", w.dsn,
		"--schema", w.schema, "--topic", s.dlq, "--to", s.topic, "--execute", "--yes",
		"--reason", "projection database back", "--rate", replayRate, "-o", "json")
	var run dedup.ReplayRun
	waitFor(t, progressWithin, rp.Done(), "the replay journaling a sixth of its run", func() bool {
		runs, err := st.ReplayRuns(context.Background(), dedup.ReplayRunFilter{})
		if err == nil && len(runs) == 1 {
			run = runs[0]
		}
		return run.Sent >= int64(len(dls)/6)
	})
	// The run's range is fixed now: the consumer's own dead letters, written to the same
	// topic, come after it.
	c := w.consume("consume", group, s.topic)

	downed := f.down()
	atDown, _, err := st.ReplayRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if atDown.Status == dedup.RunCompleted {
		t.Fatalf("the replay finished before the fault: %+v", atDown)
	}
	if f.settle != nil {
		downed += "; " + f.settle()
	}
	upped := f.up()

	code, err := rp.Wait(replayWithin)
	if err != nil {
		t.Fatal(err)
	}
	var sum replaySummary
	if code == 0 {
		sum = parseSummary(t, rp)
	} else {
		_ = json.Unmarshal([]byte(rp.Stdout()), &sum) // a failed run may print its summary
	}
	outcome := fmt.Sprintf("exit %d, %s, %d sent by it", code, sum.Status, sum.Counts.Sent)
	if code != 0 {
		t.Logf("the replay stopped on the fault (exit %d): %s", code, rp.Tail(5))
		res := testenv.StartProc(t, "replay-resume", nil, w.bin, "replay", "resume", run.ID, "--brokers", w.brokers,
			"--dsn", w.dsn, "--schema", w.schema, "--execute", "--yes", "-o", "json")
		rcode, err := res.Wait(replayWithin)
		if err != nil || rcode != 0 {
			t.Fatalf("replay resume %s: exit %d, %v\n%s", run.ID, rcode, err, res.Tail(20))
		}
		sum = parseSummary(t, res)
		outcome += fmt.Sprintf("; resumed: exit 0, %s", sum.Status)
	}

	testenv.WaitCaughtUp(t, w.adm, caughtUpWithin, c.Done(), group, s.topic)
	stop(t, c)

	jf, probs, err := invariant.Journal(context.Background(), st, run.ID, dls, testenv.ReadTopic(t, w.brokers, s.topic), int(sum.DuplicateWindow))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	effects := w.checkEffects(s, group, seeded)
	return join(
		"stream:   "+s.describe(),
		fmt.Sprintf("replay:   %d dead letters (every record of %d of the %d tasks) --to %s at --rate %s", len(dls), countParked(s.man), len(s.man.Aggregates), s.topic, replayRate),
		fmt.Sprintf("fault:    at %d of %d journaled as sent: %s; %s", atDown.Sent, len(dls), downed, upped),
		"outcome:  "+outcome,
		"journal:  "+jf.String(),
		"effects:  "+effects,
		fmt.Sprintf("run time: %s", time.Since(started).Round(100*time.Millisecond)))
}

// parkedTask says whether a task's events are the ones dead-lettered earlier: one in three.
func parkedTask(key string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(key, "task-"))
	return err == nil && n%3 == 0
}

func countParked(man sample.Manifest) int {
	n := 0
	for _, a := range man.Aggregates {
		if parkedTask(a.ID) {
			n++
		}
	}
	return n
}

func parseSummary(t interface {
	Helper()
	Fatalf(string, ...any)
}, p *testenv.Proc) replaySummary {
	t.Helper()
	var sum replaySummary
	if err := json.Unmarshal([]byte(p.Stdout()), &sum); err != nil {
		t.Fatalf("%s summary: %v\nstdout: %s\nstderr: %s", p.Name, err, p.Stdout(), p.Tail(20))
	}
	return sum
}
