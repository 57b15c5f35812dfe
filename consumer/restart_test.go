package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestPostgresRestart restarts the consumer's PostgreSQL server in the middle of a run: a
// server of the test's own (the shared one serves other tests), stopped in fast mode, down
// for three seconds, started again. The consumer must wait, retry, resume, apply every event
// exactly once, and dead-letter nothing because of it.
func TestPostgresRestart(t *testing.T) {
	testenv.Brokers(t)
	pg := testenv.StartPrivatePostgres(t)
	ctx := context.Background()
	const schema = "fieldwork"
	st, err := dedup.Open(ctx, pg.DSN(), dedup.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	topic, dlqTopic := topics(t, 3)
	_, man := produceSample(t, producer(t), topic, sample.Options{Seed: 47, Aggregates: 500, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 25})

	group := "projection-restart"
	h := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
	o := engineOpts(t, st, h, topic, group)
	o.BatchMax = 50
	o.InfraBackoff = backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	o.StopWhenIdle = 5 * time.Second
	e, _, runErr := startEngine(t, o, 3*time.Minute)

	for e.Stats().Processed < 300 {
		select {
		case err := <-runErr:
			t.Fatalf("consumer stopped before the restart: %v (%+v)", err, e.Stats())
		case <-time.After(10 * time.Millisecond):
		}
	}
	atStop := e.Stats()
	pg.Stop()
	time.Sleep(3 * time.Second)
	pg.Start()
	stats := stopped(t, e, runErr)

	applied, stale := checkProjection(t, st, schema, group, man)
	markers := markerCount(t, st, group)
	dls := readAll(t, dlqTopic)
	t.Logf("postgres restart: stopped after %d events, down 3s, %d infrastructure retries; "+
		"%d records, applied_events %d (want %d), stale_events %d (want %d), markers %d (want %d), dead letters %d (want 0)",
		atStop.Processed, stats.InfraRetries, stats.Records, applied, man.Events, stale, len(man.Stale),
		markers, man.UniqueEventIDs(), len(dls))
	if stats.InfraRetries == 0 {
		t.Error("the restart did not reach the consumer: no infrastructure retry")
	}
	if stats.DeadLettered != 0 || len(dls) != 0 {
		t.Errorf("%d dead letters because of a database restart", len(dls))
	}
	if markers != int64(man.UniqueEventIDs()) {
		t.Errorf("markers %d, want %d", markers, man.UniqueEventIDs())
	}
}
