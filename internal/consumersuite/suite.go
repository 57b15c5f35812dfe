// Package consumersuite is the behavioural test every fieldwork consumer passes, whoever
// wrote it: `fieldwork consume` and a team's own service built on the public consumer and
// inbox packages (examples/taskboard) run the same suite against the real Kafka and
// PostgreSQL.
//
// Run produces a task stream (internal/sample) with duplicates, stale versions and poison —
// malformed records and well-formed events the handler rejects — and runs the Target's
// process over it in rounds, each SIGKILLed at a random condition (a number of markers
// written, or of offsets committed), then once cleanly until idle. Then it checks:
//
//   - every good event (first sends and stale re-emits) has exactly one marker, and nothing
//     else has one;
//   - the effects are there exactly once: each aggregate at its highest version, its first
//     sends applied once each (per event, where the target counts side effects per event),
//     stale re-emits marked with the outcome stale and not applied;
//   - every poison record is dead-lettered in fieldwork's convention, with its reason
//     (malformed, unsupported, rejected), nothing else is, and the group is committed to
//     the end of every partition;
//   - the built fieldwork binary agrees: `processed check` finds every good event processed
//     and only the rejected ones missing, `dlq list` lists exactly the poison with their
//     reasons, pending;
//   - an operator's fix: a rejected dead letter edited (`replay --value-file`) and replayed
//     back to the source topic for the target's group is applied by one more run, exactly
//     once, and `dlq list` then calls it resolved.
//
// The package is test support (layer test): nothing outside tests imports it.
package consumersuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// Process is one run of a target's consumer: where it reads and writes.
type Process struct {
	Brokers, DSN string
	// Schema holds the marker table (fieldwork's default name) and the target's own tables.
	Schema          string
	Topic           string
	DeadLetterTopic string
	Group           string
	// InstanceID is the static membership id: the same for every run, so a run after a
	// SIGKILL takes the partitions back without waiting for the session timeout.
	InstanceID string
	// StopWhenIdle is set on the clean runs: the process exits 0 once idle and committed to
	// the end of every partition. Zero on the runs that are killed.
	StopWhenIdle time.Duration
	// Extra are the fieldwork flags Options.Prepare returned (a schema registry's), for
	// every fieldwork command the suite runs and every run of a target that takes them.
	Extra []string
}

// Target is one consumer under test.
type Target struct {
	// Name names the target's processes in the test log.
	Name string
	// Command returns the program, arguments and extra environment of one run.
	Command func(p Process) (bin string, args, env []string)
	// Effects reads what the consumer did, from its own tables in p.Schema (st is a store
	// opened on that schema).
	Effects func(ctx context.Context, st *dedup.Store, p Process) (invariant.Effects, error)
	// Consumer is the consumer name in the markers for a group (nil: the group).
	Consumer func(group string) string
}

// Options size one run of the suite.
type Options struct {
	Stream sample.Options
	// Rejects is the number of well-formed events the handler must reject, half of them of
	// an unknown type (unsupported), half with data that is not a JSON object (rejected).
	// The operator's fix and replay need at least two.
	Rejects int
	// Rounds is the number of runs SIGKILLed mid-consumption, each after producing the next
	// slice of the stream.
	Rounds int
	// Partitions of the source topic (default 4).
	Partitions int32
	// Prepare, when set, rewrites the records before they are produced (in place) and
	// returns fieldwork flags for every fieldwork command (Process.Extra).
	Prepare func(t *testing.T, topic string, recs []*kgo.Record) []string
}

// world is one run of the suite.
type world struct {
	t      *testing.T
	target Target
	o      Options
	proc   Process
	st     *dedup.Store
	s      *stream
	cl     *kgo.Client
	adm    *kadm.Client
	procs  []*testenv.Proc
	kills  int
	report []string
}

func (w *world) consumer() string {
	if w.target.Consumer != nil {
		return w.target.Consumer(w.proc.Group)
	}
	return w.proc.Group
}

// Run runs the suite against target.
func Run(t *testing.T, target Target, o Options) {
	if testing.Short() {
		t.Skip("consumer suite: not in -short")
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	w := &world{t: t, target: target, o: o}
	began := time.Now()
	w.setUp()
	setUp := time.Since(began)
	w.crashRounds()
	w.cleanRun("final")
	checked := time.Now()
	w.check()
	if t.Failed() {
		return
	}
	w.fieldworkAgrees()
	if o.Rejects >= 2 {
		w.fixAndReplay()
	}
	w.report = append(w.report, fmt.Sprintf("time: %s in all: %s to set up (the stream generated, topics, store), %s of checks and the fix's run",
		time.Since(began).Round(time.Second), setUp.Round(time.Second), time.Since(checked).Round(time.Second)))
	t.Log(strings.Join(w.report, "\n  "))
	if testing.Verbose() {
		fmt.Println(strings.Join(w.report, "\n  "))
	}
}

func (w *world) setUp() {
	t := w.t
	ctx := context.Background()
	schema := testenv.PGSchema(t, "fwsuite_")
	topic := testenv.Name(t, "suite")
	w.proc = Process{
		Brokers: testenv.Brokers(t), DSN: testenv.DSN(t), Schema: schema,
		Topic: topic, DeadLetterTopic: topic + ".dlq",
		// A group of its own: a static member outlives its process by the session timeout,
		// so a fixed name would meet the previous test's member.
		Group: testenv.Name(t, "suite-"+w.target.Name),
	}
	w.proc.InstanceID = w.proc.Group + "-0"
	testenv.CreateTopic(t, topic, w.o.Partitions, nil)
	testenv.CreateTopic(t, w.proc.DeadLetterTopic, 1, nil)
	st, err := dedup.Open(ctx, w.proc.DSN, dedup.Options{Schema: schema})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// The markers are migrated here so that the kill conditions can count them from the
	// start; every target migrates again on start, which must be harmless.
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	w.st = st
	if w.s, err = newStream(topic, w.o.Stream, w.o.Rejects); err != nil {
		t.Fatal(err)
	}
	if w.o.Prepare != nil {
		w.proc.Extra = w.o.Prepare(t, topic, w.s.records())
	}
	w.cl = testenv.Client(t, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	w.adm = kadm.NewClient(w.cl)
	t.Cleanup(func() {
		// The last run's static member stays in the group until its session times out: it is
		// removed first (KIP-345), then the group.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = w.adm.LeaveGroup(ctx, kadm.LeaveGroup(w.proc.Group).InstanceIDs(w.proc.InstanceID))
		if _, err := w.adm.DeleteGroup(ctx, w.proc.Group); err != nil {
			t.Logf("delete group %s: %v", w.proc.Group, err)
		}
	})
}

// start starts one run of the target.
func (w *world) start(name string, idle time.Duration) *testenv.Proc {
	p := w.proc
	p.StopWhenIdle = idle
	bin, args, env := w.target.Command(p)
	pr := testenv.StartProc(w.t, w.target.Name+"-"+name, env, bin, args...)
	w.procs = append(w.procs, pr)
	return pr
}

// crashRounds produces the stream in Rounds slices; after each, a run of the target is
// SIGKILLed once a condition picked at random holds: a number of markers written (between
// those already there and the slice's last), or of offsets committed.
func (w *world) crashRounds() {
	t := w.t
	recs := w.s.records()
	rounds := max(w.o.Rounds, 1)
	chunk := (len(recs) + rounds - 1) / rounds
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 29))
	started := time.Now()
	for round := range rounds {
		lo, hi := round*chunk, min((round+1)*chunk, len(recs))
		if lo < hi {
			testenv.Produce(t, w.cl, recs[lo:hi]...)
		}
		what, cond := w.killCondition(rng, hi)
		p := w.start(fmt.Sprintf("round%02d", round), 0)
		testenv.WaitUntil(t, 2*time.Minute, p.Done(), fmt.Sprintf("round %d: %s", round, what), cond)
		if err := p.Signal(9); err != nil {
			t.Fatalf("round %d: SIGKILL: %v", round, err)
		}
		<-p.Done()
		w.kills++
	}
	w.report = append(w.report, fmt.Sprintf("%s: %d SIGKILLs over %s while consuming", w.target.Name, w.kills, time.Since(started).Round(time.Second)))
	if w.kills != rounds {
		t.Errorf("%d kills, want %d", w.kills, rounds)
	}
}

// killCondition picks when to kill this round's run: in two rounds of three, after a random
// number of new markers (up to nine tenths of those the records produced so far can give),
// else, and when they can give no new marker, after a random number of new committed offsets
// (up to nine tenths of the way to the end).
func (w *world) killCondition(rng *rand.Rand, produced int) (string, func() bool) {
	ctx := context.Background()
	markers := w.markerCount()
	reachable := int64(w.s.reachable(produced))
	prog, err := testenv.Progress(ctx, w.adm, w.proc.Group, w.proc.Topic)
	if err != nil {
		w.t.Fatal(err)
	}
	if reachable > markers && rng.IntN(3) > 0 {
		at := markers + 1 + rng.Int64N(max(1, (reachable-markers)*9/10))
		return fmt.Sprintf("%d markers of %s", at, w.consumer()), func() bool { return w.markerCount() >= at }
	}
	at := prog.Committed + 1 + rng.Int64N(max(1, (prog.End-prog.Committed)*9/10))
	at = min(at, prog.End)
	return fmt.Sprintf("%d offsets committed by %s", at, w.proc.Group), func() bool {
		g, err := testenv.Progress(ctx, w.adm, w.proc.Group, w.proc.Topic)
		return err == nil && g.Committed >= at
	}
}

func (w *world) markerCount() int64 {
	var n int64
	ctx := context.Background()
	err := w.st.InTx(ctx, func(tx *dedup.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM `+w.st.Table()+` WHERE consumer = $1`, w.consumer()).Scan(&n)
	})
	if err != nil {
		w.t.Fatalf("count markers: %v", err)
	}
	return n
}

// cleanRun runs the target until it is idle and committed to the end; it must exit 0.
func (w *world) cleanRun(name string) {
	started := time.Now()
	p := w.start(name, 5*time.Second)
	code, err := p.Wait(5 * time.Minute)
	if err != nil || code != 0 {
		w.t.Fatalf("%s run: exit %d, %v", name, code, err)
	}
	w.report = append(w.report, fmt.Sprintf("%s run to idle: %s", name, time.Since(started).Round(time.Second)))
}
