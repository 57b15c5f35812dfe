package faults_test

import (
	"fmt"
	"time"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// fault is what a test does to a service in the middle of a run: down takes it away,
// settle (when set) waits for what follows from it (a new partition leader), up brings it
// back. Each returns a line for the report.
type fault struct {
	down, settle, up func() string
	// brokerStays: the brokers serve while the fault lasts (a database down, one broker of
	// three killed), so the rest of the stream is produced then, and the consumer must meet
	// the fault (a warning in its log) before up; otherwise it is produced after up.
	brokerStays bool
}

// consumeThroughFault runs one `fieldwork consume` on stream s: the first half of the stream
// is produced, and once the group has committed a fifth of it, the fault comes; the rest is
// produced (during the fault or after it, as f says); once the group's commits reach the end
// offsets the consumer is stopped with SIGTERM. The invariant: every event's effect exactly
// once, every poison record dead-lettered, nothing else, the consumer exits 0.
func (w *world) consumeThroughFault(s *stream, f fault) string {
	w.t.Helper()
	return w.consumeThroughFaultIn(s, func(string) fault { return f })
}

// consumeThroughFaultIn is consumeThroughFault with a fault that needs the group's name.
func (w *world) consumeThroughFaultIn(s *stream, faultOf func(group string) fault) string {
	t := w.t
	t.Helper()
	started := time.Now()
	group := testenv.Name(t, "fwf-projection")
	f := faultOf(group)
	half := len(s.recs) / 2
	w.produce(s.recs[:half])
	c := w.consume("consume", group, s.topic)
	at := testenv.WaitProgress(t, w.adm, progressWithin, c.Done(), "a fifth of the first half committed",
		func(g testenv.GroupProgress) bool { return g.Committed >= int64(half/5) }, group, s.topic)

	before := warnings(c)
	downed := f.down()
	if f.settle != nil {
		downed += "; " + f.settle()
	}
	if f.brokerStays {
		w.produce(s.recs[half:])
		waitFor(t, time.Minute, c.Done(), "the consumer meeting the fault (a warning in its log)", func() bool { return warnings(c) > before })
	}
	upped := f.up()
	if !f.brokerStays {
		w.produce(s.recs[half:])
	}
	end := testenv.WaitCaughtUp(t, w.adm, caughtUpWithin, c.Done(), group, s.topic)
	stop(t, c)
	effects := w.checkEffects(s, group, nil)
	return join(
		"stream:   "+s.describe(),
		fmt.Sprintf("fault:    at %d of %d records committed (the first half produced): %s; %s", at.Committed, half, downed, upped),
		fmt.Sprintf("consumer: %d warnings in its log (%d before the fault), committed %d of %d at the end", warnings(c), before, end.Committed, end.End),
		"effects:  "+effects,
		fmt.Sprintf("run time: %s", time.Since(started).Round(100*time.Millisecond)))
}
