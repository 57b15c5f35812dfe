// Command bench measures the reference consumer end to end against the real Kafka and
// PostgreSQL that scripts/services.sh starts: it produces a stream of task events, consumes
// it with the projection handler once with one transaction per batch (the engine's way) and
// once with one transaction per event (TxPerEvent), each into a fresh schema and group, and
// prints events per second of both and their ratio. It is a benchmark, not a test: run it
// by hand.
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/consume/bench -events 200000
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
)

func main() {
	events := flag.Int("events", 200_000, "events to produce (a multiple of -per-task)")
	perTask := flag.Int("per-task", 25, "events per task")
	partitions := flag.Int("partitions", 4, "partitions of the topic")
	batchMax := flag.Int("batch-max", consume.DefaultBatchMax, "records per batch")
	brokers := flag.String("brokers", os.Getenv("FIELDWORK_TEST_BROKERS"), "Kafka brokers (default $FIELDWORK_TEST_BROKERS)")
	dsn := flag.String("dsn", os.Getenv("FIELDWORK_TEST_DSN"), "PostgreSQL DSN (default $FIELDWORK_TEST_DSN)")
	keep := flag.Bool("keep", false, "keep the topics and schemas")
	flag.Parse()
	if *brokers == "" || *dsn == "" {
		fmt.Fprintln(os.Stderr, "bench: set FIELDWORK_TEST_BROKERS and FIELDWORK_TEST_DSN (eval \"$(scripts/services.sh env)\") or pass -brokers and -dsn")
		os.Exit(2)
	}
	if err := run(*events, *perTask, int32(*partitions), *batchMax, *brokers, *dsn, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(events, perTask int, partitions int32, batchMax int, brokers, dsn string, keep bool) error {
	ctx := context.Background()
	id := time.Now().Unix()
	topic := fmt.Sprintf("fieldwork-bench-consume-%d", id)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []struct {
		name string
		n    int32
	}{{topic, partitions}, {topic + ".dlq", 1}} {
		// The sample stream's timestamps are of 2025: without this the broker's retention
		// (7 days by record time) deletes the segments while the benchmark reads them.
		forever := "-1"
		if resp, err := adm.CreateTopic(ctx, t.n, 1, map[string]*string{"retention.ms": &forever}, t.name); err != nil || resp.Err != nil {
			return fmt.Errorf("create topic %s: %v %v", t.name, err, resp.Err)
		}
		if !keep {
			defer adm.DeleteTopics(context.Background(), t.name) //nolint:errcheck
		}
	}

	recs, man, err := sample.Generate(sample.Options{Seed: 1, Aggregates: events / perTask, EventsPerAggregate: perTask})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cl.ProduceSync(ctx, sample.KgoRecords(topic, recs)...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	produced := time.Since(start)
	fmt.Printf("produced %d events (%d tasks × %d) to %s (%d partitions) in %s: %.0f events/s\n",
		man.Events, len(man.Aggregates), perTask, topic, partitions, produced.Round(time.Millisecond), float64(man.Events)/produced.Seconds())

	type result struct {
		name    string
		elapsed time.Duration
		stats   consume.Stats
	}
	var results []result
	for _, mode := range []struct {
		name       string
		txPerEvent bool
	}{{"one transaction per batch", false}, {"one transaction per event", true}} {
		schema := fmt.Sprintf("fwbench_%d_%v", id, mode.txPerEvent)
		var first time.Duration
		elapsed, stats, err := consumeAll(ctx, brokers, dsn, schema, topic, batchMax, mode.txPerEvent, int64(man.Events), &first)
		if !keep {
			dropSchema(dsn, schema)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", mode.name, err)
		}
		results = append(results, result{mode.name, elapsed, stats})
		fmt.Printf("%-27s %7d events in %8s: %8.0f events/s (first event applied after %s; %d batches of up to %d; %d infrastructure retries)\n",
			mode.name+":", stats.Processed, elapsed.Round(time.Millisecond), float64(stats.Processed)/elapsed.Seconds(),
			first.Round(time.Millisecond), stats.Batches, batchMax, stats.InfraRetries)
	}
	batched := float64(results[0].stats.Processed) / results[0].elapsed.Seconds()
	single := float64(results[1].stats.Processed) / results[1].elapsed.Seconds()
	fmt.Printf("ratio: %.1fx (batched / per event)\n", batched/single)
	fmt.Println("end to end: from the consumer's start (group join included) to the last event applied, marked and its offset committed;")
	fmt.Println("projection handler on PostgreSQL; the test server runs with fsync=off, which flatters the per-event commits.")
	return nil
}

// consumeAll runs the projection consumer on topic until it has processed want events and
// returns the time it took; first is set to when the first event was applied.
func consumeAll(ctx context.Context, brokers, dsn, schema, topic string, batchMax int, txPerEvent bool, want int64, first *time.Duration) (time.Duration, consume.Stats, error) {
	st, err := dedup.Open(ctx, dsn, dedup.Options{Schema: schema})
	if err != nil {
		return 0, consume.Stats{}, err
	}
	defer st.Close()
	group := "bench-" + schema
	h, err := handlers.New(handlers.NameProjection, handlers.Config{Consumer: group, Driver: st.Driver(), Schema: schema})
	if err != nil {
		return 0, consume.Stats{}, err
	}
	if _, err := consume.Prepare(ctx, st, h, true); err != nil {
		return 0, consume.Stats{}, err
	}
	e, err := consume.New(consume.Options{
		Topics: []string{topic}, Group: group, Handler: h, Store: st, Kafka: []kgo.Opt{kgo.SeedBrokers(brokers)},
		BatchMax: batchMax, TxPerEvent: txPerEvent,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return 0, consume.Stats{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- e.Run(runCtx) }()
	for e.Stats().Processed < want {
		if *first == 0 && e.Stats().Processed > 0 {
			*first = time.Since(start)
		}
		if st := e.Stats(); st.DeadLettered > 0 {
			cancel()
			<-done
			return 0, st, fmt.Errorf("%d events dead-lettered: see the log", st.DeadLettered)
		}
		select {
		case err := <-done:
			return 0, e.Stats(), fmt.Errorf("consumer stopped early: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		return 0, e.Stats(), err
	}
	return elapsed, e.Stats(), nil
}

func dropSchema(dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
}
