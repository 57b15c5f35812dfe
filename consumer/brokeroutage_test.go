package consumer_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// counting passes log records on and counts those whose message contains one of its keys.
type counting struct {
	slog.Handler
	counts map[string]*atomic.Int64
}

func (c counting) Handle(ctx context.Context, r slog.Record) error {
	for k, n := range c.counts {
		if strings.Contains(r.Message, k) {
			n.Add(1)
		}
	}
	return c.Handler.Handle(ctx, r)
}

func (c counting) WithAttrs(as []slog.Attr) slog.Handler {
	return counting{c.Handler.WithAttrs(as), c.counts}
}

func (c counting) WithGroup(name string) slog.Handler {
	return counting{c.Handler.WithGroup(name), c.counts}
}

// TestBrokerOutageStopWhenIdle stops the consumer's broker (a private one: the shared broker
// serves other tests) for 10 seconds in the middle of a run with --stop-when-idle. The
// session timeout is shorter than the outage, so the member loses its partitions while the
// broker is away and holds none for a while: it must not take that for "every partition at
// its end". It must rejoin, finish, and stop only once the group's committed offsets are at
// the end of every partition, every event applied exactly once.
func TestBrokerOutageStopWhenIdle(t *testing.T) {
	t.Parallel()
	testenv.Brokers(t) // an integration test: it runs (or skips) with the others
	k := testenv.StartPrivateKafka(t, nil)
	kcl := k.Client(t, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	st, schema := pgStore(t)
	topic := testenv.Name(t, "fwc")
	dlqTopic := topic + ".dlq"
	createTopicWith(t, kcl, topic, 3, nil)
	createTopicWith(t, kcl, dlqTopic, 1, nil)
	recs, man := produceSample(t, kcl, topic, sample.Options{Seed: 53, Aggregates: 600, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 30, Poison: 6})

	group := "projection-broker-outage"
	h := slow{handler(t, st, schema, handlers.NameProjection, group, handlers.Config{}), time.Millisecond}
	o := engineOpts(t, st, h, topic, group)
	o.Kafka = []kgo.Opt{kgo.SeedBrokers(k.Brokers())}
	o.BatchMax = 50
	o.SessionTimeout = 6 * time.Second // the broker's minimum, under the outage
	o.StopWhenIdle = 3 * time.Second
	counts := map[string]*atomic.Int64{"partitions lost": {}, "partitions assigned": {}, "stopping": {}}
	o.Logger = slog.New(counting{testLogger(t).Handler(), counts})
	e, _, runErr := startEngine(t, o, 4*time.Minute)

	waitUntil(t, runErr, "the consumer to be under way", func() bool { return e.Stats().Processed >= 1000 })
	atStop := e.Stats()
	k.Stop()
	const outage = 10 * time.Second // the scenario: how long the broker is away
	select {
	case err := <-runErr:
		t.Fatalf("the consumer stopped while the broker was down (err %v) after %d of %d records", err, e.Stats().Records, len(recs))
	case <-time.After(outage):
	}
	k.Start()
	stats := stopped(t, e, runErr)

	behind, _ := groupLag(t, k.Client(t), group, topic)
	applied, stale := checkProjection(t, st, schema, group, man)
	markers := markerCount(t, st, group)
	poison := map[string]bool{}
	for _, d := range testenv.ReadTopic(t, k.Brokers(), dlqTopic) {
		p, _ := header(d, dlq.HeaderPartition)
		o, _ := header(d, dlq.HeaderOffset)
		poison[p+"/"+o] = true
	}
	t.Logf("broker outage: stopped after %d events, down %s; partitions lost %d times, assigned %d times; "+
		"%d records, %d infrastructure retries; applied_events %d (want %d), stale_events %d (want %d), markers %d (want %d), "+
		"poison dead-lettered %d (want %d); behind at the end %v",
		atStop.Processed, outage, counts["partitions lost"].Load(), counts["partitions assigned"].Load(),
		stats.Records, stats.InfraRetries, applied, man.Events, stale, len(man.Stale), markers, man.UniqueEventIDs(),
		len(poison), len(man.Poison), behind)
	if len(behind) > 0 {
		t.Errorf("stopped with partitions behind their end: %v", behind)
	}
	if markers != int64(man.UniqueEventIDs()) {
		t.Errorf("markers %d, want %d", markers, man.UniqueEventIDs())
	}
	if len(poison) != len(man.Poison) {
		t.Errorf("%d distinct poison records dead-lettered, want %d", len(poison), len(man.Poison))
	}
	if counts["partitions lost"].Load() == 0 {
		t.Error("the member never lost its partitions: the outage did not test what it should")
	}
}
