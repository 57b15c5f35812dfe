package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestPostgresOutage takes the database away from the consumer in the middle of a run, the
// way a PostgreSQL restart does, without touching the server other tests share: for a few
// seconds at a time, every connection the consumer has (found by its application_name) is
// killed with pg_terminate_backend as soon as it appears, so statements fail mid-batch and
// new connections die at once. The consumer must roll back, wait, retry and resume, apply
// every event exactly once, and dead-letter nothing because of it.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	app := fmt.Sprintf("fwc_outage_%d", time.Now().UnixNano()%1_000_000_000)
	dsn := testenv.DSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	st, schema := pgStoreDSN(t, dsn+sep+"application_name="+app)
	topic, dlqTopic := topics(t, 3)
	_, man := produceSample(t, producer(t), topic, sample.Options{Seed: 31, Aggregates: 600, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 30})

	group := "projection-outage"
	h := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
	o := engineOpts(t, st, h, topic, group)
	o.BatchMax = 50
	o.InfraBackoff = backoff{Initial: 50 * time.Millisecond, Max: time.Second}
	o.StopWhenIdle = 4 * time.Second
	e, ctx, runErr := startEngine(t, o, 3*time.Minute)

	// Three outages of 2s, a second apart, once the consumer is under way.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for e.Stats().Processed < 300 {
		select {
		case err := <-runErr:
			t.Fatalf("consumer stopped early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var terminated atomic.Int64
	atStart := e.Stats()
	for range 3 {
		until := time.Now().Add(2 * time.Second)
		for time.Now().Before(until) {
			var n int64
			if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
				t.Fatalf("terminate: %v", err)
			}
			terminated.Add(n)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second)
	}
	stats := stopped(t, e, runErr)

	applied, stale := checkProjection(t, st, schema, group, man)
	markers := markerCount(t, st, group)
	dls := readAll(t, dlqTopic)
	report := fmt.Sprintf("postgres outage: %d connections terminated in 3 outages of 2s (started after %d events); the consumer retried %d times and resumed: "+
		"%d records, applied_events %d (want %d), stale_events %d (want %d), markers %d (want %d), dead letters %d (want 0)",
		terminated.Load(), atStart.Processed, stats.InfraRetries, stats.Records, applied, man.Events, stale, len(man.Stale),
		markers, man.UniqueEventIDs(), len(dls))
	t.Log(report)
	if terminated.Load() == 0 || stats.InfraRetries == 0 {
		t.Errorf("the outage did not reach the consumer: %d terminated, %d retries", terminated.Load(), stats.InfraRetries)
	}
	if stats.DeadLettered != 0 || len(dls) != 0 {
		t.Errorf("%d dead letters during a database outage", len(dls))
	}
	if markers != int64(man.UniqueEventIDs()) {
		t.Errorf("markers %d, want %d", markers, man.UniqueEventIDs())
	}
}

// pgStoreDSN is pgStore with a DSN of the caller's.
func pgStoreDSN(t testing.TB, dsn string) (*dedup.Store, string) {
	t.Helper()
	base, schema := pgStore(t)
	st, err := dedup.Open(context.Background(), dsn, dedup.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_ = base
	return st, schema
}
