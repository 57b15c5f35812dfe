// Command bench measures the reference consumer end to end against the real Kafka and
// PostgreSQL that scripts/services.sh starts. It produces a stream of task events once, then
// in every round, the contenders alternating their order round after round:
//
//   - the engine as configured by default (Options with no mode set), once per handler
//     (-handlers: projection and audit), each into a fresh schema and group;
//   - the same engine with one transaction per event (Options.TxPerEvent), per handler, over
//     the first -per-event-events events (it is an order of magnitude slower);
//   - with -savepoints, the engine with one transaction per batch but each event under a
//     savepoint with its own statements (Options.PerEvent, `consume --per-event`), per
//     handler: the batch handlers' comparison;
//   - each handler's batches alone: the same records, read beforehand, applied through the
//     runner's batch path (decoded, claimed and handled in one transaction each, batches of
//     -batch-max) by one goroutine a partition, no Kafka: what the database allows the
//     handler, against which the consumer's rate is the client's and the engine's cost;
//   - the PostgreSQL marker ceiling: the same event ids (decoded beforehand, as the engine
//     decodes them) claimed in batches of -batch-max, one transaction each, into a fresh
//     schema, no Kafka (BenchmarkClaim in internal/dedup/pgdriver measures the same path);
//   - a bare franz-go group consumer reading the whole topic and doing no database work (the
//     client floor).
//
// It prints events per second of each, and with -json writes every run for the suite
// (internal/benchsuite, `make bench`). -cpuprofile and -memprofile write pprof profiles of
// the first run of the -profile contender. It is a benchmark, not a test: it asserts nothing.
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/consume/bench -events 200000 -rounds 3
package main

import (
	"context"
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
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/benchkit"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/sample"
)

func main() {
	events := flag.Int("events", 200_000, "events to produce (a multiple of -per-task)")
	perEvent := flag.Int("per-event-events", 20_000, "events the one-transaction-per-event contender consumes (the first of the topic)")
	perTask := flag.Int("per-task", 25, "events per task")
	partitions := flag.Int("partitions", 4, "partitions of the topic")
	batchMax := flag.Int("batch-max", consumer.DefaultBatchMax, "records per batch of the consumers")
	ceilingBatch := flag.Int("ceiling-batch", 500, "markers per claim of the ceilings (the issue's ceiling: batches of 500)")
	rounds := flag.Int("rounds", 1, "rounds; the contenders alternate their order")
	handlerList := flag.String("handlers", "projection,audit", "handlers to measure, comma-separated")
	brokers := flag.String("brokers", os.Getenv("FIELDWORK_TEST_BROKERS"), "Kafka brokers (default $FIELDWORK_TEST_BROKERS)")
	dsn := flag.String("dsn", os.Getenv("FIELDWORK_TEST_DSN"), "PostgreSQL DSN (default $FIELDWORK_TEST_DSN)")
	durableDSN := flag.String("durable-dsn", os.Getenv("FIELDWORK_BENCH_DURABLE_DSN"), "DSN of a PostgreSQL with fsync and synchronous_commit on (scripts/services.sh durable-postgres start); when set, each handler is also measured against it, batched and per event (default $FIELDWORK_BENCH_DURABLE_DSN)")
	durablePerEvent := flag.Int("durable-per-event-events", 5_000, "events the one-transaction-per-event contender consumes against -durable-dsn")
	members := flag.Int("members", 2, "members of one group in the scale-out contender (projection handler); 0 or 1 leaves it out")
	keep := flag.Bool("keep", false, "keep the topics and schemas")
	jsonOut := flag.String("json", "", "write every run to this file (benchkit.Report)")
	savepoints := flag.Bool("savepoints", false, "also measure each handler with a savepoint and its own statements per event (consume --per-event)")
	profile := flag.String("profile", "consume/projection", "the contenders, comma-separated, whose first run -cpuprofile and -memprofile profile")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the first run of -profile to this file (of several contenders: to FILE.KEY, the key's slashes as dashes)")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the first run of -profile to this file (of several: FILE.KEY)")
	flag.Parse()
	if *brokers == "" || *dsn == "" {
		fmt.Fprintln(os.Stderr, "bench: set FIELDWORK_TEST_BROKERS and FIELDWORK_TEST_DSN (eval \"$(scripts/services.sh env)\") or pass -brokers and -dsn")
		os.Exit(2)
	}
	b := &bench{brokers: *brokers, dsn: *dsn, batchMax: *batchMax, ceilingBatch: *ceilingBatch, keep: *keep, perEvent: int64(min(*perEvent, *events)),
		durableDSN: *durableDSN, durablePerEvent: int64(min(*durablePerEvent, *events)), members: *members,
		savepoints: *savepoints, profile: *profile, cpuProfile: *cpuProfile, memProfile: *memProfile}
	if err := b.run(*events, *perTask, int32(*partitions), *rounds, strings.Split(*handlerList, ","), *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	brokers, dsn string
	// batchMax is the consumers' batch; ceilingBatch the ceilings' claim.
	batchMax, ceilingBatch int
	keep                   bool
	perEvent               int64
	// durableDSN is a PostgreSQL with fsync and synchronous_commit on ("" leaves those
	// contenders out); durablePerEvent the events its per-event contender consumes.
	durableDSN      string
	durablePerEvent int64
	// members is the size of the scale-out contender's group (< 2: none).
	members    int
	savepoints bool
	// profile names the contender whose first run is profiled into cpuProfile and memProfile.
	profile, cpuProfile, memProfile string
	id                              string
	topic                           string
	events                          int64
	markers                         [][]dedup.Marker // the stream's markers in claim batches, for the ceiling
	partitions                      [][]*kgo.Record  // the stream's records by partition, in offset order, for alone
	rep                             benchkit.Report
}

// contender is one way to process the stream, measured once per round.
type contender struct {
	key, label string
	run        func(ctx context.Context, round int) (benchkit.Run, error)
}

func (b *bench) run(events, perTask int, partitions int32, rounds int, names []string, jsonOut string) error {
	ctx := context.Background()
	b.id = benchkit.Suffix()
	b.topic = "fieldwork-bench-consume-" + b.id
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.brokers), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []struct {
		name string
		n    int32
	}{{b.topic, partitions}, {b.topic + ".dlq", 1}} {
		// The sample stream's timestamps are of 2025: without this the broker's retention
		// (7 days by record time) deletes the segments while the benchmark reads them.
		forever := "-1"
		if err := benchkit.CreateTopic(ctx, adm, t.name, t.n, map[string]*string{"retention.ms": &forever}); err != nil {
			return err
		}
		if !b.keep {
			defer adm.DeleteTopics(context.Background(), t.name) //nolint:errcheck
		}
	}
	man, err := b.produce(ctx, cl, events, perTask, partitions)
	if err != nil {
		return err
	}
	cs := b.contenders(names)
	b.rep = benchkit.Report{Bench: "consume", Notes: []string{
		fmt.Sprintf("%d events (%d tasks × %d) on %d partitions; the consumers' batches of up to %d, the ceilings' claims of %d; one transaction per event over the first %d events",
			man.Events, len(man.Aggregates), perTask, partitions, b.batchMax, b.ceilingBatch, b.perEvent),
		"end to end: from the consumer's start (group join included) to the last event applied, marked and its offset committed",
		"the test PostgreSQL runs with fsync=off, which flatters the per-event commits; the `durable` contenders run against a second PostgreSQL with fsync=on and synchronous_commit=on (scripts/services.sh durable-postgres), as a production database commits, one transaction per event over its first " + fmt.Sprint(b.durablePerEvent) + " events",
		"the ceiling claims with the store's statement (arrays unnested in one INSERT … ON CONFLICT DO NOTHING); `ceiling-copy` claims the same batches by COPY into a temporary table, then one INSERT … SELECT … ON CONFLICT DO NOTHING",
		fmt.Sprintf("`members` runs %d projection consumers of one group at once, in one process (the machine's cores are shared either way), until they have applied every event between them", b.members),
	}}
	if b.durableDSN == "" {
		b.rep.Notes = append(b.rep.Notes, "no durable PostgreSQL was given (-durable-dsn): its contenders were not run")
	}
	for r := range rounds {
		for _, c := range benchkit.Rotate(cs, r) {
			cpu, mem := b.profileFiles(c.key)
			stop, err := startProfiles(r == 0 && (cpu != "" || mem != ""), cpu, mem)
			if err != nil {
				return err
			}
			run, err := c.run(ctx, r)
			if perr := stop(); err == nil {
				err = perr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			run.Round = r + 1
			b.rep.Add(c.key, c.label, run)
			fmt.Printf("round %d: %-70s %s\n", r+1, c.label+":", run)
		}
	}
	fmt.Println()
	for _, s := range b.rep.Series {
		lo, hi := benchkit.Spread(s.Rates())
		fmt.Printf("%-80s %9.0f events/s (median of %d; %.0f–%.0f)\n", s.Label+":", benchkit.Median(s.Rates()), len(s.Runs), lo, hi)
	}
	return b.rep.WriteJSON(jsonOut)
}

// produce writes the sample stream of events (tasks of perTask events each) to the topic once
// and prepares the markers the engine claims for it.
func (b *bench) produce(ctx context.Context, cl *kgo.Client, events, perTask int, partitions int32) (sample.Manifest, error) {
	recs, man, err := sample.Generate(sample.Options{Seed: 1, Aggregates: events / perTask, EventsPerAggregate: perTask})
	if err != nil {
		return man, err
	}
	start := time.Now()
	produced := sample.KgoRecords(b.topic, recs) // ProduceSync sets their partitions and offsets
	if err := cl.ProduceSync(ctx, produced...).FirstErr(); err != nil {
		return man, fmt.Errorf("produce: %w", err)
	}
	el := time.Since(start)
	b.events = int64(man.Events)
	fmt.Printf("produced %d events (%d tasks × %d) to %s (%d partitions) in %s: %.0f events/s\n",
		man.Events, len(man.Aggregates), perTask, b.topic, partitions, el.Round(time.Millisecond), float64(man.Events)/el.Seconds())
	return man, b.prepareMarkers(produced)
}

// contenders are the ways to process the stream measured each round: the engine's modes for
// each handler named, the marker ceiling and the bare client.
func (b *bench) contenders(names []string) []contender {
	var cs []contender
	for _, name := range names {
		cs = append(cs,
			contender{"consume/" + name, fmt.Sprintf("fieldwork consume, %s handler (the engine's default mode)", name),
				func(ctx context.Context, round int) (benchkit.Run, error) {
					return b.consume(ctx, round, name, modeDefault)
				}},
			contender{"consume/" + name + "/per-event", fmt.Sprintf("fieldwork consume, %s handler, one transaction per event", name),
				func(ctx context.Context, round int) (benchkit.Run, error) {
					return b.consume(ctx, round, name, modeTxPerEvent)
				}},
			contender{"consume/" + name + "/alone", fmt.Sprintf("the %s handler's batches alone: the same records, batches of %d, a goroutine a partition, no Kafka", name, b.batchMax),
				func(ctx context.Context, round int) (benchkit.Run, error) {
					return b.alone(ctx, round, name)
				}})
		if b.durableDSN != "" {
			cs = append(cs,
				contender{"consume/" + name + "/durable", fmt.Sprintf("fieldwork consume, %s handler, fsync and synchronous_commit on", name),
					func(ctx context.Context, round int) (benchkit.Run, error) {
						return b.consumeOn(ctx, round, name, modeDefault, b.durableDSN, b.events, 1)
					}},
				contender{"consume/" + name + "/per-event/durable", fmt.Sprintf("fieldwork consume, %s handler, one transaction per event, fsync and synchronous_commit on", name),
					func(ctx context.Context, round int) (benchkit.Run, error) {
						return b.consumeOn(ctx, round, name, modeTxPerEvent, b.durableDSN, b.durablePerEvent, 1)
					}})
		}
		if b.savepoints {
			cs = append(cs, contender{"consume/" + name + "/savepoints", fmt.Sprintf("fieldwork consume --per-event, %s handler, a savepoint per event", name),
				func(ctx context.Context, round int) (benchkit.Run, error) {
					return b.consume(ctx, round, name, modeSavepoints)
				}})
		}
	}
	if b.members > 1 {
		cs = append(cs, contender{"consume/projection/members", fmt.Sprintf("%d fieldwork consume members of one group, projection handler", b.members),
			func(ctx context.Context, round int) (benchkit.Run, error) {
				return b.consumeOn(ctx, round, "projection", modeDefault, b.dsn, b.events, b.members)
			}})
	}
	return append(cs,
		contender{"consume/ceiling", fmt.Sprintf("PostgreSQL marker ceiling: the same ids claimed in batches of %d, no Kafka", b.ceilingBatch), b.ceiling},
		contender{"consume/ceiling-copy", fmt.Sprintf("the same claims by COPY into a temporary table and one INSERT … SELECT, batches of %d, no Kafka", b.ceilingBatch), b.ceilingCopy},
		contender{"consume/franz-go", "bare franz-go group consumer, no database work", b.bare})
}

// prepareMarkers decodes the produced records as the engine does and keeps their markers in
// per-partition batches of ceilingBatch, the claims of the ceilings.
func (b *bench) prepareMarkers(recs []*kgo.Record) error {
	byPartition := map[int32][]dedup.Marker{}
	recsOf := map[int32][]*kgo.Record{}
	for _, r := range recs {
		recsOf[r.Partition] = append(recsOf[r.Partition], r)
		ev, err := envelope.DecodeRecord(r)
		if err != nil {
			return fmt.Errorf("decode %s: %w", kafka.AddressOf(r), err)
		}
		byPartition[r.Partition] = append(byPartition[r.Partition], dedup.Marker{
			EventID: ev.ID, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			AggregateID: ev.AggregateID, AggregateVersion: ev.Version,
		})
	}
	for _, rs := range recsOf {
		b.partitions = append(b.partitions, rs)
	}
	for _, ms := range byPartition {
		for len(ms) > 0 {
			n := min(b.ceilingBatch, len(ms))
			b.markers = append(b.markers, ms[:n])
			ms = ms[n:]
		}
	}
	return nil
}

// The engine's modes the contenders run.
type mode int

const (
	modeDefault    mode = iota // the handler's batch statements
	modeTxPerEvent             // Options.TxPerEvent
	modeSavepoints             // Options.PerEvent
)

// consume runs the named handler's consumer on the topic against the test PostgreSQL until it
// has processed its events (all, or the first perEvent with one transaction per event).
func (b *bench) consume(ctx context.Context, round int, name string, m mode) (benchkit.Run, error) {
	want := b.events
	if m == modeTxPerEvent {
		want = b.perEvent
	}
	return b.consumeOn(ctx, round, name, m, b.dsn, want, 1)
}

// consumeOn runs members consumers of the named handler, one group, against the PostgreSQL
// of dsn until they have processed want events between them, and measures them.
func (b *bench) consumeOn(ctx context.Context, round int, name string, m mode, dsn string, want int64, members int) (benchkit.Run, error) {
	schema := fmt.Sprintf("fwbench_%s_%s_%d_%d_%d", b.id, name, round, m, members)
	if dsn != b.dsn {
		schema += "_durable"
	}
	runners, done, err := b.runners(ctx, name, m, dsn, schema, members)
	if err != nil {
		return benchkit.Run{}, err
	}
	defer done()
	stats := func() (processed, deadLettered int64) {
		for _, r := range runners {
			st := r.Stats()
			processed, deadLettered = processed+st.Processed, deadLettered+st.DeadLettered
		}
		return processed, deadLettered
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, members)
	meter := benchkit.StartMeter()
	for _, r := range runners {
		go func() { stopped <- r.Run(runCtx) }()
	}
	wait := func() error {
		var errs []error
		for range runners {
			errs = append(errs, <-stopped)
		}
		return errors.Join(errs...)
	}
	for {
		processed, dead := stats()
		if processed >= want {
			break
		}
		if dead > 0 {
			cancel()
			_ = wait()
			return benchkit.Run{}, fmt.Errorf("%d events dead-lettered: see the log", dead)
		}
		select {
		case err := <-stopped:
			cancel()
			return benchkit.Run{}, fmt.Errorf("a consumer stopped early: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	run := meter.Run(0)
	cancel()
	if err := wait(); err != nil {
		return benchkit.Run{}, err
	}
	run.Records, _ = stats()
	return run, nil
}

// runners makes members runners of the named handler in mode m, one group, over a fresh
// schema of the PostgreSQL of dsn; done drops the schema.
func (b *bench) runners(ctx context.Context, name string, m mode, dsn, schema string, members int) (runners []*consumer.Runner, done func(), err error) {
	st, done, err := b.freshStoreOn(ctx, dsn, schema)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			done()
		}
	}()
	group := "bench-" + schema
	h, err := handlers.New(name, handlers.Config{Consumer: group, Driver: st.Driver(), Schema: schema})
	if err != nil {
		return nil, nil, err
	}
	if _, err := consumerlink.Prepare(ctx, st, h, true); err != nil {
		return nil, nil, err
	}
	runners = make([]*consumer.Runner, members)
	for i := range runners {
		if runners[i], err = consumer.New(inboxlink.NewStore(st).(*inbox.Store), h,
			consumer.Topics(b.topic), consumer.Group(group), consumer.Kafka(kgo.SeedBrokers(b.brokers)),
			consumer.BatchMax(b.batchMax),
			consumerlink.TxPerEvent(m == modeTxPerEvent).(consumer.Opt), consumerlink.PerEvent(m == modeSavepoints).(consumer.Opt),
			consumer.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))); err != nil {
			return nil, nil, err
		}
	}
	return runners, done, nil
}

// alone applies the stream through the named handler's batch path without Kafka
// (consumerlink.ApplyBatch): each partition's records, read beforehand, in batches of
// batchMax, one goroutine a partition as the runner has one worker a partition. What the
// database allows the handler: its ceiling, against which the consumer's rate is the client's
// and the engine's cost.
func (b *bench) alone(ctx context.Context, round int, name string) (benchkit.Run, error) {
	runners, done, err := b.runners(ctx, name, modeDefault, b.dsn, fmt.Sprintf("fwbench_%s_%s_%d_alone", b.id, name, round), 1)
	if err != nil {
		return benchkit.Run{}, err
	}
	defer done()
	var (
		applied atomic.Int64
		wg      sync.WaitGroup
	)
	errs := make([]error, len(b.partitions))
	meter := benchkit.StartMeter()
	for i, recs := range b.partitions {
		wg.Go(func() {
			for len(recs) > 0 && errs[i] == nil {
				n := min(b.batchMax, len(recs))
				var k int
				k, errs[i] = consumerlink.ApplyBatch(ctx, runners[0], recs[:n])
				applied.Add(int64(k))
				recs = recs[n:]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return benchkit.Run{}, err
	}
	run := meter.Run(applied.Load())
	if run.Records != b.events {
		return benchkit.Run{}, fmt.Errorf("applied %d events of %d", run.Records, b.events)
	}
	return run, nil
}

// ceiling claims every marker of the stream in its batches, one transaction each, into a
// fresh schema: what the database alone allows the consumer.
func (b *bench) ceiling(ctx context.Context, round int) (benchkit.Run, error) {
	st, done, err := b.freshStore(ctx, fmt.Sprintf("fwbench_%s_ceiling_%d", b.id, round))
	if err != nil {
		return benchkit.Run{}, err
	}
	defer done()
	if _, err := st.Migrate(ctx, false); err != nil {
		return benchkit.Run{}, err
	}
	return b.claimAll(func(ms []dedup.Marker) (fresh int, err error) {
		err = st.InTx(ctx, func(tx *dedup.Tx) error {
			ids, err := st.Claim(ctx, tx, "bench", ms)
			fresh = len(ids)
			return err
		})
		return fresh, err
	})
}

// claimAll claims the stream's batches of markers with claim, which returns how many were
// fresh, and measures it: every marker must be.
func (b *bench) claimAll(claim func(ms []dedup.Marker) (int, error)) (benchkit.Run, error) {
	var fresh int64
	meter := benchkit.StartMeter()
	for _, ms := range b.markers {
		n, err := claim(ms)
		if err != nil {
			return benchkit.Run{}, err
		}
		fresh += int64(n)
	}
	run := meter.Run(fresh)
	if fresh != b.events {
		return benchkit.Run{}, fmt.Errorf("claimed %d fresh markers of %d", fresh, b.events)
	}
	return run, nil
}

// ceilingCopy claims the same batches as ceiling, the other way a batch of markers can be
// written: COPY into a temporary table (emptied at every commit), then one INSERT … SELECT …
// ON CONFLICT DO NOTHING RETURNING, one transaction each. The faster of the two is the
// store's claim (docs/benchmarks.md).
func (b *bench) ceilingCopy(ctx context.Context, round int) (benchkit.Run, error) {
	st, done, err := b.freshStore(ctx, fmt.Sprintf("fwbench_%s_ceilingcopy_%d", b.id, round))
	if err != nil {
		return benchkit.Run{}, err
	}
	defer done()
	if _, err := st.Migrate(ctx, false); err != nil {
		return benchkit.Run{}, err
	}
	conn, err := pgx.Connect(ctx, b.dsn)
	if err != nil {
		return benchkit.Run{}, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE claim_in (event_id text, topic text, partition int4, off int8,
		aggregate_id text, aggregate_version int8) ON COMMIT DELETE ROWS`); err != nil {
		return benchkit.Run{}, err
	}
	insert := fmt.Sprintf(`INSERT INTO %s (consumer, event_id, processed_at, topic, partition, "offset", aggregate_id, aggregate_version)
SELECT $1, event_id, now(), topic, partition, off, aggregate_id, aggregate_version FROM claim_in
ON CONFLICT (consumer, event_id) DO NOTHING RETURNING event_id`, st.Table())
	cols := []string{"event_id", "topic", "partition", "off", "aggregate_id", "aggregate_version"}
	return b.claimAll(func(ms []dedup.Marker) (fresh int, err error) {
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			src := pgx.CopyFromSlice(len(ms), func(i int) ([]any, error) {
				m := &ms[i]
				return []any{m.EventID, m.Topic, m.Partition, m.Offset, m.AggregateID, m.AggregateVersion}, nil
			})
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"claim_in"}, cols, src); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, insert, "bench")
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			fresh = len(ids)
			return err
		})
		return fresh, err
	})
}

// bare reads the whole topic with a franz-go group consumer of a fresh group, doing nothing
// with the records, committing as franz-go does by default.
func (b *bench) bare(ctx context.Context, round int) (benchkit.Run, error) {
	meter := benchkit.StartMeter()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.brokers), kgo.ConsumeTopics(b.topic),
		kgo.ConsumerGroup(fmt.Sprintf("bench-%s-bare-%d", b.id, round)))
	if err != nil {
		return benchkit.Run{}, err
	}
	defer cl.Close()
	var n int64
	for n < b.events {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return benchkit.Run{}, err
		}
		n += int64(fs.NumRecords())
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return benchkit.Run{}, err
	}
	return meter.Run(n), nil
}

// profileFiles are where the first run of contender key writes its profiles ("": none): the
// files -cpuprofile and -memprofile name when -profile names key alone, those with ".KEY"
// appended when it names several.
func (b *bench) profileFiles(key string) (cpu, mem string) {
	keys := strings.Split(b.profile, ",")
	if !slices.Contains(keys, key) {
		return "", ""
	}
	if len(keys) == 1 {
		return b.cpuProfile, b.memProfile
	}
	sfx := "." + strings.ReplaceAll(key, "/", "-")
	if b.cpuProfile != "" {
		cpu = b.cpuProfile + sfx
	}
	if b.memProfile != "" {
		mem = b.memProfile + sfx
	}
	return cpu, mem
}

// startProfiles starts a CPU profile when on and returns the function that stops it and
// writes the allocation profile.
func startProfiles(on bool, cpu, mem string) (func() error, error) {
	if !on || (cpu == "" && mem == "") {
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
	return func() error {
		var errs []error
		if f != nil {
			pprof.StopCPUProfile()
			errs = append(errs, f.Close())
		}
		if mem != "" {
			runtime.GC()
			m, err := os.Create(mem)
			if err != nil {
				return err
			}
			errs = append(errs, pprof.Lookup("allocs").WriteTo(m, 0), m.Close())
		}
		return errors.Join(errs...)
	}, nil
}

// freshStore opens a store in schema of the test PostgreSQL (freshStoreOn).
func (b *bench) freshStore(ctx context.Context, schema string) (st *dedup.Store, done func(), err error) {
	return b.freshStoreOn(ctx, b.dsn, schema)
}

// freshStoreOn opens a store in schema of the PostgreSQL of dsn; done closes it and drops the
// schema (unless -keep).
func (b *bench) freshStoreOn(ctx context.Context, dsn, schema string) (st *dedup.Store, done func(), err error) {
	st, err = dedup.Open(ctx, dsn, dedup.Options{Schema: schema})
	if err != nil {
		return nil, nil, err
	}
	return st, func() {
		_ = st.Close()
		if !b.keep {
			benchkit.DropSchema(dsn, schema)
		}
	}, nil
}
