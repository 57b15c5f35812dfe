// Command bench measures the reference consumer end to end against the real Kafka and
// PostgreSQL that scripts/services.sh starts: it produces a stream of task events once, then
// consumes it with a bundled handler (projection, or audit) in each of the modes asked for,
// each run into a fresh schema and group, the modes alternating over several rounds, and
// prints events per second of every run, the median and spread of each mode, and the ratios
// of the medians. It is a benchmark, not a test: run it by hand.
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/consume/bench -events 200000
//	go run ./internal/consume/bench -events 200000 -handler audit -rounds 3 -modes batch,per-event,tx-per-event,claim
//
// The modes:
//
//	batch         the engine's default: one transaction per batch, the handler's batch statements
//	per-event     one transaction per batch, each event under a savepoint with its own statements
//	tx-per-event  one transaction per event (consume.Options.TxPerEvent)
//	claim         the marker ceiling: the same event ids claimed in batches of -batch-max, one
//	              transaction each, partitions concurrently, with no Kafka and no handler
//
// -cpuprofile and -memprofile write pprof profiles of the first run of -profile-mode.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// The modes -modes takes.
const (
	modeBatch      = "batch"
	modePerEvent   = "per-event"
	modeTxPerEvent = "tx-per-event"
	modeClaim      = "claim"
)

var allModes = []string{modeBatch, modePerEvent, modeTxPerEvent, modeClaim}

type config struct {
	events, perTask, batchMax, rounds int
	partitions                        int32
	brokers, dsn, handler             string
	modes                             []string
	keep                              bool
	profileMode, cpuProfile, memProf  string
	jsonOut                           string
}

func main() {
	var c config
	var partitions int
	var modes string
	flag.IntVar(&c.events, "events", 200_000, "events to produce (a multiple of -per-task)")
	flag.IntVar(&c.perTask, "per-task", 25, "events per task")
	flag.IntVar(&partitions, "partitions", 4, "partitions of the topic")
	flag.IntVar(&c.batchMax, "batch-max", consume.DefaultBatchMax, "records per batch")
	flag.StringVar(&c.brokers, "brokers", os.Getenv("FIELDWORK_TEST_BROKERS"), "Kafka brokers (default $FIELDWORK_TEST_BROKERS)")
	flag.StringVar(&c.dsn, "dsn", os.Getenv("FIELDWORK_TEST_DSN"), "PostgreSQL DSN (default $FIELDWORK_TEST_DSN)")
	flag.BoolVar(&c.keep, "keep", false, "keep the topics and schemas")
	flag.StringVar(&c.handler, "handler", handlers.NameProjection, "handler: projection or audit")
	flag.StringVar(&modes, "modes", modeBatch+","+modeTxPerEvent, "comma-separated modes to compare: "+strings.Join(allModes, ", "))
	flag.IntVar(&c.rounds, "rounds", 1, "rounds; each runs every mode once, in an order rotated by one each round")
	flag.StringVar(&c.profileMode, "profile-mode", modeBatch, "the mode whose first run -cpuprofile and -memprofile profile")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the first run of -profile-mode to this file")
	flag.StringVar(&c.memProf, "memprofile", "", "write an allocation profile of the first run of -profile-mode to this file")
	flag.StringVar(&c.jsonOut, "json", "", "also write every run and the summary as JSON to this file")
	flag.Parse()
	c.partitions = int32(partitions)
	for _, m := range strings.Split(modes, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !slices.Contains(allModes, m) {
			fmt.Fprintf(os.Stderr, "bench: unknown mode %q: want %s\n", m, strings.Join(allModes, ", "))
			os.Exit(2)
		}
		c.modes = append(c.modes, m)
	}
	if c.handler != handlers.NameProjection && c.handler != handlers.NameAudit {
		fmt.Fprintf(os.Stderr, "bench: -handler %q: want projection or audit\n", c.handler)
		os.Exit(2)
	}
	if c.brokers == "" || c.dsn == "" {
		fmt.Fprintln(os.Stderr, "bench: set FIELDWORK_TEST_BROKERS and FIELDWORK_TEST_DSN (eval \"$(scripts/services.sh env)\") or pass -brokers and -dsn")
		os.Exit(2)
	}
	if len(c.modes) == 0 || c.rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: no mode or no round to run")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runResult is one run of one mode.
type runResult struct {
	Round        int           `json:"round"`
	Mode         string        `json:"mode"`
	Events       int64         `json:"events"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	EventsPerSec float64       `json:"events_per_sec"`
	Batches      int64         `json:"batches"`
	InfraRetries int64         `json:"infra_retries"`
	Fallbacks    int64         `json:"batch_fallbacks"`
	// First is when the first event was applied, from the start (the group join included).
	First time.Duration `json:"first_applied_ns"`
}

// summary is one mode over all rounds.
type summary struct {
	Mode   string    `json:"mode"`
	Median float64   `json:"median_events_per_sec"`
	Min    float64   `json:"min_events_per_sec"`
	Max    float64   `json:"max_events_per_sec"`
	Runs   []float64 `json:"runs_events_per_sec"`
}

func run(c config) error {
	ctx := context.Background()
	id := time.Now().Unix()
	topic := fmt.Sprintf("fieldwork-bench-consume-%d", id)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []struct {
		name string
		n    int32
	}{{topic, c.partitions}, {topic + ".dlq", 1}} {
		// The sample stream's timestamps are of 2025: without this the broker's retention
		// (7 days by record time) deletes the segments while the benchmark reads them.
		forever := "-1"
		if resp, err := adm.CreateTopic(ctx, t.n, 1, map[string]*string{"retention.ms": &forever}, t.name); err != nil || resp.Err != nil {
			return fmt.Errorf("create topic %s: %v %v", t.name, err, resp.Err)
		}
		if !c.keep {
			defer adm.DeleteTopics(context.Background(), t.name) //nolint:errcheck
		}
	}

	recs, man, err := sample.Generate(sample.Options{Seed: 1, Aggregates: c.events / c.perTask, EventsPerAggregate: c.perTask})
	if err != nil {
		return err
	}
	krecs := sample.KgoRecords(topic, recs)
	start := time.Now()
	if err := cl.ProduceSync(ctx, krecs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	produced := time.Since(start)
	fmt.Printf("produced %d events (%d tasks × %d) to %s (%d partitions) in %s: %.0f events/s; handler %s, batches of up to %d, %d rounds\n",
		man.Events, len(man.Aggregates), c.perTask, topic, c.partitions, produced.Round(time.Millisecond), float64(man.Events)/produced.Seconds(),
		c.handler, c.batchMax, c.rounds)

	var results []runResult
	profiled := false
	for round := 1; round <= c.rounds; round++ {
		for k := range c.modes {
			mode := c.modes[(k+round-1)%len(c.modes)]
			schema := fmt.Sprintf("fwbench_%d_%d_%s", id, round, strings.ReplaceAll(mode, "-", "_"))
			prof := !profiled && mode == c.profileMode && (c.cpuProfile != "" || c.memProf != "")
			stop, err := startProfiles(prof, c.cpuProfile, c.memProf)
			if err != nil {
				return err
			}
			var r runResult
			if mode == modeClaim {
				r, err = claimAll(ctx, c, schema, krecs)
			} else {
				r, err = consumeAll(ctx, c, mode, schema, topic, int64(man.Events))
			}
			if perr := stop(); err == nil {
				err = perr
			}
			profiled = profiled || prof
			if !c.keep {
				dropSchema(c.dsn, schema)
			}
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, mode, err)
			}
			r.Round, r.Mode = round, mode
			r.EventsPerSec = float64(r.Events) / r.Elapsed.Seconds()
			results = append(results, r)
			fmt.Printf("round %d %-13s %7d events in %8s: %8.0f events/s (first applied after %s; %d batches, %d infrastructure retries, %d batch fallbacks)\n",
				round, mode+":", r.Events, r.Elapsed.Round(time.Millisecond), r.EventsPerSec, r.First.Round(time.Millisecond), r.Batches, r.InfraRetries, r.Fallbacks)
		}
	}

	sums := summarize(c.modes, results)
	fmt.Printf("\n%-13s %10s %10s %10s\n", "mode", "median/s", "min/s", "max/s")
	for _, s := range sums {
		fmt.Printf("%-13s %10.0f %10.0f %10.0f\n", s.Mode, s.Median, s.Min, s.Max)
	}
	for _, a := range sums {
		for _, b := range sums {
			if a.Mode == b.Mode || (a.Mode != modeBatch && b.Mode != modeClaim) {
				continue
			}
			fmt.Printf("ratio %s / %s: %.2fx\n", a.Mode, b.Mode, a.Median/b.Median)
		}
	}
	fmt.Println("end to end: from the consumer's start (group join included) to the last event applied, marked and its offset committed;")
	fmt.Printf("%s handler on PostgreSQL; the test server runs with fsync=off, which flatters the per-event commits.\n", c.handler)
	if c.jsonOut != "" {
		b, err := json.MarshalIndent(map[string]any{"handler": c.handler, "events": man.Events, "partitions": c.partitions,
			"batch_max": c.batchMax, "rounds": c.rounds, "runs": results, "modes": sums}, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(c.jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

func summarize(modes []string, results []runResult) []summary {
	var out []summary
	for _, m := range modes {
		s := summary{Mode: m}
		for _, r := range results {
			if r.Mode == m {
				s.Runs = append(s.Runs, r.EventsPerSec)
			}
		}
		sorted := slices.Sorted(slices.Values(s.Runs))
		s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
		if n := len(sorted); n%2 == 1 {
			s.Median = sorted[n/2]
		} else {
			s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
		}
		out = append(out, s)
	}
	return out
}

// startProfiles starts a CPU profile and returns the function that stops it and writes the
// allocation profile.
func startProfiles(on bool, cpu, mem string) (func() error, error) {
	if !on {
		return func() error { return nil }, nil
	}
	var f *os.File
	if cpu != "" {
		var err error
		if f, err = os.Create(cpu); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	return func() error {
		var errs []error
		if f != nil {
			pprof.StopCPUProfile()
			errs = append(errs, f.Close())
		}
		if mem != "" {
			m, err := os.Create(mem)
			if err != nil {
				return err
			}
			errs = append(errs, pprof.Lookup("allocs").WriteTo(m, 0), m.Close())
		}
		return errors.Join(errs...)
	}, nil
}

// consumeAll runs the consumer in mode on topic until it has processed want events and
// returns the time it took.
func consumeAll(ctx context.Context, c config, mode, schema, topic string, want int64) (runResult, error) {
	st, err := dedup.Open(ctx, c.dsn, dedup.Options{Schema: schema})
	if err != nil {
		return runResult{}, err
	}
	defer st.Close()
	group := "bench-" + schema
	h, err := handlers.New(c.handler, handlers.Config{Consumer: group, Driver: st.Driver(), Schema: schema})
	if err != nil {
		return runResult{}, err
	}
	if _, err := consume.Prepare(ctx, st, h, true); err != nil {
		return runResult{}, err
	}
	e, err := consume.New(consume.Options{
		Topics: []string{topic}, Group: group, Handler: h, Store: st, Kafka: []kgo.Opt{kgo.SeedBrokers(c.brokers)},
		BatchMax: c.batchMax, TxPerEvent: mode == modeTxPerEvent, PerEvent: mode == modePerEvent,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return runResult{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- e.Run(runCtx) }()
	result := func(elapsed time.Duration) runResult {
		s := e.Stats()
		return runResult{Events: s.Processed, Elapsed: elapsed, Batches: s.Batches, InfraRetries: s.InfraRetries, Fallbacks: s.BatchFallbacks}
	}
	var first time.Duration
	for e.Stats().Processed < want {
		if first == 0 && e.Stats().Processed > 0 {
			first = time.Since(start)
		}
		if st := e.Stats(); st.DeadLettered > 0 {
			cancel()
			<-done
			return runResult{}, fmt.Errorf("%d events dead-lettered: see the log", st.DeadLettered)
		}
		select {
		case err := <-done:
			return runResult{}, fmt.Errorf("consumer stopped early: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	r := result(time.Since(start))
	r.First = first
	cancel()
	if err := <-done; err != nil {
		return runResult{}, err
	}
	return r, nil
}

// claimAll is the marker ceiling: the stream's event ids claimed per partition in batches of
// batchMax, one transaction each, the partitions concurrently, as the engine would with a
// handler that does nothing; no Kafka. The ids are decoded from the records first, outside
// the timing.
func claimAll(ctx context.Context, c config, schema string, recs []*kgo.Record) (runResult, error) {
	st, err := dedup.Open(ctx, c.dsn, dedup.Options{Schema: schema})
	if err != nil {
		return runResult{}, err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx, false); err != nil {
		return runResult{}, err
	}
	// The partitions the producer chose are not on these records; the aggregate id's
	// position stands in for them, which keeps each task's events together as Kafka does.
	parts := make([][]dedup.Marker, c.partitions)
	aggPart := map[string]int{}
	for i, rec := range recs {
		ev, err := envelope.DecodeRecord(rec)
		if err != nil {
			return runResult{}, err
		}
		p, ok := aggPart[ev.AggregateID]
		if !ok {
			p = len(aggPart) % int(c.partitions)
			aggPart[ev.AggregateID] = p
		}
		parts[p] = append(parts[p], dedup.Marker{EventID: ev.ID, Topic: rec.Topic, Partition: int32(p), Offset: int64(i),
			AggregateID: ev.AggregateID, AggregateVersion: ev.Version})
	}
	consumer := "bench-" + schema
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed int64
		batches int64
		errs    []error
	)
	start := time.Now()
	for _, ms := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(ms) > 0 {
				n := min(len(ms), c.batchMax)
				var fresh []string
				err := st.InTx(ctx, func(tx *dedup.Tx) error {
					var err error
					fresh, err = st.Claim(ctx, tx, consumer, ms[:n])
					return err
				})
				mu.Lock()
				claimed += int64(len(fresh))
				batches++
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
				ms = ms[n:]
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return runResult{}, err
	}
	return runResult{Events: claimed, Elapsed: elapsed, Batches: batches}, nil
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
