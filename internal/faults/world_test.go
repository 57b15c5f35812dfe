package faults_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// Bounds of the waits. They are generous: they only decide when a test gives up, on a
// machine that may be busy with other tests and brokers.
const (
	caughtUpWithin = 4 * time.Minute // a consumer group reaching the end offsets
	progressWithin = 2 * time.Minute // a run getting under way
	exitWithin     = time.Minute     // a process exiting after SIGTERM
	replayWithin   = 4 * time.Minute // a replay finishing
)

// world is where a test runs fieldwork: the brokers, the store (a schema of the test's own,
// migrated for the projection handler) and the binary.
type world struct {
	t        *testing.T
	bin      string
	brokers  string
	replicas int16
	dsn      string
	schema   string
	adm      *kadm.Client
	// consumeArgs are added to every `fieldwork consume` the world starts.
	consumeArgs []string
}

func newWorld(t *testing.T, brokers string, replicas int16, dsn string) *world {
	t.Helper()
	w := &world{t: t, bin: testenv.Fieldwork(t), brokers: brokers, replicas: replicas, dsn: dsn, schema: freshSchema(t, dsn)}
	w.adm = kadm.NewClient(testenv.ClientOn(t, brokers))
	// The store and the handler's table, migrated once here rather than by several
	// `consume --migrate` at once.
	st := w.store()
	h, err := handlers.New(handlers.NameProjection, handlers.Config{Consumer: "migrate", Driver: st.Driver(), Schema: w.schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumerlink.Prepare(context.Background(), st, h, true); err != nil {
		t.Fatalf("migrate schema %s: %v", w.schema, err)
	}
	return w
}

// freshSchema names a schema of the test's own, dropped at cleanup when the database still
// answers (a private server may be gone by then, and its schemas with it).
func freshSchema(t *testing.T, dsn string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	schema := "fwf_" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = testenv.DropSchema(dsn, schema) })
	return schema
}

// store opens the world's store, closed at cleanup.
func (w *world) store() *dedup.Store {
	w.t.Helper()
	st, err := dedup.Open(context.Background(), w.dsn, dedup.Options{Schema: w.schema})
	if err != nil {
		w.t.Fatalf("open the store: %v", err)
	}
	w.t.Cleanup(func() { st.Close() })
	return st
}

// stream is a generated sample stream for one source topic and its dead-letter topic.
type stream struct {
	topic, dlq string
	recs       []*kgo.Record // in the stream's order; partitions and offsets once produced
	man        sample.Manifest
}

// newStream creates the topic (partitions given) and its dead-letter topic (two partitions)
// and generates the stream; nothing is produced yet.
func (w *world) newStream(partitions int32, o sample.Options) *stream {
	w.t.Helper()
	s := &stream{topic: testenv.Name(w.t, "fwf")}
	s.dlq = s.topic + ".dlq"
	testenv.CreateTopicOn(w.t, w.brokers, s.topic, partitions, w.replicas, nil)
	testenv.CreateTopicOn(w.t, w.brokers, s.dlq, 2, w.replicas, nil)
	recs, man, err := sample.Generate(o)
	if err != nil {
		w.t.Fatal(err)
	}
	s.recs, s.man = sample.KgoRecords(s.topic, recs), man
	return s
}

// produce writes recs with a producer of its own, partitioned by key as every Kafka client
// does, acknowledged by all in-sync replicas, idempotent (franz-go's defaults). A producer
// is not kept from one call to the next: one kept across a restart of the single broker
// wrote part of its next records twice and out of order (the broker logged
// OutOfOrderSequenceException for it), which would corrupt the stream under test.
func (w *world) produce(recs []*kgo.Record) {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(w.brokers, ",")...), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		w.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		w.t.Fatalf("produce %d records: %v", len(recs), err)
	}
}

// consume starts `fieldwork consume` with the projection handler, as README.md shows it,
// without --stop-when-idle: the test decides when it is done (the group's commits at the end
// offsets) and stops it with SIGTERM.
func (w *world) consume(name, group, topic string, extra ...string) *testenv.Proc {
	w.t.Helper()
	args := append([]string{"consume", "--brokers", w.brokers, "--dsn", w.dsn, "--schema", w.schema,
		"--topic", topic, "--group", group, "--handler", handlers.NameProjection, "--migrate",
		"--metrics-addr", "", "--log-format", "json", "-o", "json", "--batch-max", "100",
		"--retry-backoff", "20ms", "--retry-backoff-max", "200ms"}, append(w.consumeArgs, extra...)...)
	return testenv.StartProc(w.t, name, nil, w.bin, args...)
}

// stop sends SIGTERM to each process still running and wants exit 0 from each (a drain,
// a commit, a clean leave).
func stop(t *testing.T, procs ...*testenv.Proc) {
	t.Helper()
	for _, p := range procs {
		// A consumer signalled before it consumes is interrupted (exit 130; before fieldwork's
		// main has installed its handler it even dies of the signal) instead of shutting down
		// cleanly: a member restarted just before the end must be consuming first. It is once
		// it logs "consumer starting" (its first line may be an earlier warning).
		waitFor(t, time.Minute, nil, p.Name+" starting to consume (or exiting)", func() bool {
			select {
			case <-p.Done():
				return true
			default:
				return strings.Contains(p.Stderr(), "consumer starting") || strings.Contains(p.Stdout(), "consumer starting")
			}
		})
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	for _, p := range procs {
		code, err := p.Wait(exitWithin)
		if err != nil || code != 0 {
			t.Errorf("%s after SIGTERM: exit %d, %v", p.Name, code, err)
		}
	}
}

// checkEffects checks the invariant of a consumer group on stream s: every event's effect
// exactly once, every poison record dead-lettered, nothing else dead-lettered (dead letters
// at the addresses in ignore, written by the test itself, aside). It fails the test on each
// problem and returns the figures.
func (w *world) checkEffects(s *stream, group string, ignore map[string]bool) string {
	w.t.Helper()
	st := w.store()
	pf, probs, err := invariant.Projection(context.Background(), st, w.schema, group, s.man)
	if err != nil {
		w.t.Fatal(err)
	}
	markers, mprobs, err := invariant.Markers(context.Background(), st, group, s.man)
	if err != nil {
		w.t.Fatal(err)
	}
	probs = append(probs, mprobs...)
	var dls []*kgo.Record
	for _, d := range testenv.ReadTopic(w.t, w.brokers, s.dlq) {
		if !ignore[invariant.Addr(d.Topic, d.Partition, d.Offset)] {
			dls = append(dls, d)
		}
	}
	df, dprobs := invariant.DeadLetters(dls, group, invariant.PoisonAt(s.recs, s.man))
	for _, p := range append(probs, dprobs...) {
		w.t.Error(p)
	}
	return fmt.Sprintf("%s, markers %d (want %d); %s", pf, markers, s.man.UniqueEventIDs(), df)
}

// describe says what a stream holds.
func (s *stream) describe() string {
	c := s.man.Counts()
	return fmt.Sprintf("%d records = %d events + %d duplicates + %d stale + %d poison", c.Records, c.Events, c.Duplicates, c.Stale, c.Poison)
}

// warnings counts the WARN and ERROR lines of a consumer's JSON log.
func warnings(p *testenv.Proc) int {
	return len(p.Lines(`"level":"WARN"`)) + len(p.Lines(`"level":"ERROR"`))
}

// waitFor is testenv.WaitUntil.
var waitFor = testenv.WaitUntil

func join(parts ...string) string { return strings.Join(parts, "\n  ") }
