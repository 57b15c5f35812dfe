// Command replaybench measures `fieldwork replay` against kcat on the real broker (not part of
// CI; STYLE: a benchmark is a command that prints figures).
//
// It writes N fieldwork dead letters (default 500,000) to a fresh dead-letter topic whose
// headers name a fresh, empty source topic, then in the same run, round after round:
//
//   - replays them DLQ → source as `fieldwork replay --topic DLQ --execute --yes --reason …`
//     does: one pass, each record routed by its dead-letter headers, journaled in a fresh
//     PostgreSQL schema; timed end to end (plan, send, journal, summary);
//   - copies the same range with `kcat -C -e -t DLQ -b … | kcat -P -t TARGET -b …`, timed end
//     to end,
//
// and prints records per second for both and their ratio (target: replay/kcat >= 1.0), and the
// CPU time each used (this process for the replay, the shell and both kcats for the pipe;
// not the broker's nor the database's), which varies much less from run to run than the rate
// on a machine the broker shares. The kcat pipe copies values only (no keys, no headers, no
// journal, no checks), which is what an operator reaches for without fieldwork. -modes adds
// other ways to run the same replay: "to" (--to a fresh topic) and "scan" (the whole range
// scanned first, as when the command asks for confirmation on a terminal). Mode "client" is no replay: the same reader and an
// idempotent producer set up as the replay's copy every record unchanged (key, value, headers)
// to a fresh topic, with no parsing, routing, provenance or journal: the floor that the
// Kafka client sets for the replay on this machine. Mode "rewrite" is no replay either: the same
// reader and producer, each record sent as the replay sends it (to the topic and partition its
// dead-letter headers name, without the dead-letter headers, with the provenance headers) and
// nothing else (no parse beyond the route, no decision, no tracking, no journal): the floor of
// the replay's own output. Mode "journal" is the rewrite with the replay's journal: every
// acknowledged send, the checkpoints and the counts journaled in a fresh schema as the replay
// journals them (the store's SaveReplayProgress every replay.DefaultFlushRecords sends), the
// event id read from its header, and nothing decided or looked up: the floor of a replay that
// keeps both its provenance and its journal. Modes "perftest" and "perftest-replay" are
// no replay either: Apache Kafka's own producer benchmark (org.apache.kafka.tools.ProducerPerformance,
// kafka-producer-perf-test; -perf-classpath, which `scripts/services.sh perf-classpath` prints)
// producing the same number of records of the dead letters' mean size (key, value and headers)
// to a fresh topic, with acks=all and its default settings ("perftest") or with the replay's
// producer settings ("perftest-replay"); its rate is the one it reports (from its first send,
// the JVM's start not counted). Every round the contenders alternate their order; -json writes
// every run for the suite (internal/benchsuite, `make bench`).
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/replay/replaybench -n 500000 -rounds 5
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/benchkit"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/replay"
)

func main() {
	var (
		brokers    = flag.String("brokers", os.Getenv("FIELDWORK_TEST_BROKERS"), "Kafka brokers (default $FIELDWORK_TEST_BROKERS)")
		dsn        = flag.String("dsn", os.Getenv("FIELDWORK_TEST_DSN"), "store for the journal (default $FIELDWORK_TEST_DSN)")
		n          = flag.Int("n", 500_000, "dead letters to replay")
		partitions = flag.Int("partitions", 3, "partitions of every topic")
		kcat       = flag.String("kcat", "kcat", "kcat binary")
		rounds     = flag.Int("rounds", 1, "measure each side this many times, alternating")
		keep       = flag.Bool("keep", false, "keep the topics and the schema")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the replay rounds to this file")
		memProfile = flag.String("memprofile", "", "write an allocation profile of the run to this file (go tool pprof -sample_index=alloc_objects)")
		traceFile  = flag.String("trace", "", "write an execution trace of the replay rounds to this file (go tool trace; -pprof=sync shows where the replay waited)")
		maxBuf     = flag.Int("max-buffered", 0, "ExecOptions.MaxBuffered (default replay.DefaultMaxBuffered)")
		flushRecs  = flag.Int("flush-records", 0, "ExecOptions.FlushRecords (default replay.DefaultFlushRecords)")
		noKcat     = flag.Bool("no-kcat", false, "measure fieldwork replay only")
		settle     = flag.Duration("settle", 3*time.Second, "pause before each measurement, after its topic is created, so that none runs while the one before is still being cleaned up after (the database's autovacuum, the broker's log flushes) or before the brokers know its new topic")
		jsonOut    = flag.String("json", "", "write every run to this file (benchkit.Report)")
		perfCP     = flag.String("perf-classpath", "", "Java classpath holding org.apache.kafka.tools.ProducerPerformance and its dependencies, for modes perftest and perftest-replay")
		modesFlag  = flag.String("modes", "headers", "comma-separated replay modes measured each round: headers (DLQ → the topics the headers name, one pass), to (--to a fresh topic, one pass), scan (headers, the range scanned first), workers1 and workers2 (a run recorded for workers, --to a fresh topic, sent by one or two workers of its consumer group in this process, from the recording to the last worker's exit), client (no replay: the Kafka client alone, reading the range and producing every record unchanged to a fresh topic with the replay's settings), rewrite (no replay: the same client sending each record as the replay does, to the topic and partition its headers name, dead-letter headers dropped, provenance headers added, and nothing else), journal (the rewrite, each acknowledged send journaled as the replay journals it, with the checkpoints and counts), perftest and perftest-replay (kafka-producer-perf-test producing as many records of the same size, acks=all with its defaults or with the replay's producer settings; needs -perf-classpath)")
	)
	flag.Parse()
	if *brokers == "" || *dsn == "" {
		fail("set -brokers and -dsn (or eval \"$(scripts/services.sh env)\")")
	}
	gcpace.Floor(os.Getenv, gcpace.ReplayFloor) // as the replay command does
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			f, err := os.Create(*memProfile)
			if err != nil {
				fail("%v", err)
			}
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			_ = f.Close()
		}()
	}
	ctx := context.Background()
	b := bench{brokers: *brokers, dsn: *dsn, n: *n, partitions: int32(*partitions), kcat: *kcat, keep: *keep,
		maxBuf: *maxBuf, flushRecs: *flushRecs, settle: *settle, perfCP: *perfCP}
	modes := b.modes(*modesFlag)
	b.setup(ctx)
	defer b.cleanup(ctx)

	contenders := modes
	if !*noKcat {
		contenders = append(slices.Clone(modes), "kcat")
	}
	rep := benchkit.Report{Bench: "replay", Notes: []string{
		fmt.Sprintf("%d dead letters of %.0f bytes on average (key, value and headers) on %d partitions; every target topic fresh", b.n, b.meanSize, b.partitions),
		fmt.Sprintf("kafka-producer-perf-test: as many records of %d bytes (the dead letters' mean size), --throughput -1; with acks=all and its defaults, and with the replay's producer settings: %s",
			int(b.meanSize+0.5), strings.Join(replayProducerProps, " ")),
		"the client-only copy: the replay's reader and a producer with the replay's settings copying every record unchanged, no parsing, routing, provenance or journal",
		"the client writing the replay's records: the same reader and producer sending each record where its dead-letter headers route it (the topic and partition they name), the dead-letter headers dropped and the provenance headers added, with no parse beyond the route, no decision, no tracking and no journal",
	}}
	for r := range *rounds {
		// The contenders alternate their order, so that none always follows the same other one.
		for _, m := range benchkit.Rotate(contenders, r) {
			stop := startProfiles(*cpuProfile, *traceFile, m)
			run := b.contend(ctx, r, m)
			stop()
			run.Round = r + 1
			rep.Add("replay/"+m, label[m], run)
		}
	}
	printSummary(rep, b, modes, *rounds)
	if err := rep.WriteJSON(*jsonOut); err != nil {
		fail("%v", err)
	}
}

// modes reads -modes: the replay modes measured each round; an unknown mode, or a perftest
// mode without -perf-classpath, fails.
func (b *bench) modes(flagValue string) []string {
	modes := strings.Split(flagValue, ",")
	for _, m := range modes {
		if label[m] == "" || m == "kcat" {
			fail("-modes: unknown mode %q", m)
		}
		if strings.HasPrefix(m, "perftest") && b.perfCP == "" {
			fail("-modes %s needs -perf-classpath (scripts/services.sh perf-classpath prints it)", m)
		}
	}
	return modes
}

// contend measures the contender m once, in round r.
func (b *bench) contend(ctx context.Context, r int, m string) benchkit.Run {
	switch m {
	case "client", "rewrite", "journal":
		return b.clientCopy(ctx, r, m)
	case "kcat":
		return b.kcatCopy(ctx, r)
	case "perftest", "perftest-replay":
		return b.perfTest(ctx, r, m == "perftest-replay")
	case "workers1":
		return b.workers(ctx, r, 1)
	case "workers2":
		return b.workers(ctx, r, 2)
	default:
		return b.replay(ctx, r, m)
	}
}

// startProfiles starts a CPU profile and an execution trace of contender m, each when its
// file is named (the contender's name is appended), and returns what stops them.
func startProfiles(cpuProfile, traceFile, m string) (stop func()) {
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile + "." + m)
		if err != nil {
			fail("%v", err)
		}
		_ = pprof.StartCPUProfile(f)
	}
	if traceFile != "" {
		f, err := os.Create(traceFile + "." + m)
		if err != nil {
			fail("%v", err)
		}
		_ = trace.Start(f)
	}
	return func() {
		if cpuProfile != "" {
			pprof.StopCPUProfile()
		}
		if traceFile != "" {
			trace.Stop()
		}
	}
}

// printSummary prints every contender's median rate and CPU time, and each mode's ratio to
// kcat's.
func printSummary(rep benchkit.Report, b bench, modes []string, rounds int) {
	fmt.Printf("\n%d records, %d partitions, %d round(s)\n", b.n, b.partitions, rounds)
	for _, s := range rep.Series {
		cpu := make([]float64, len(s.Runs))
		for i, r := range s.Runs {
			cpu[i] = r.CPUS
		}
		lo, hi := benchkit.Spread(s.Rates())
		fmt.Printf("%-58s %10.0f records/s (median; %.0f–%.0f), CPU %.2fs (median)\n", s.Label+":", benchkit.Median(s.Rates()), lo, hi, benchkit.Median(cpu))
	}
	if w1, ok := rep.Get("replay/workers1"); ok {
		if w2, ok := rep.Get("replay/workers2"); ok {
			fmt.Printf("ratio %-42s %10.2f (medians)\n", "workers2/workers1:", benchkit.Median(w2.Rates())/benchkit.Median(w1.Rates()))
		}
	}
	if k, ok := rep.Get("replay/kcat"); ok {
		for _, m := range modes {
			s, _ := rep.Get("replay/" + m)
			fmt.Printf("ratio %-42s %10.2f (medians)\n", m+"/kcat:", benchkit.Median(s.Rates())/benchkit.Median(k.Rates()))
		}
	}
}

// label says what each contender runs.
var label = map[string]string{
	"headers":         "fieldwork replay DLQ → source (--execute --yes)",
	"to":              "fieldwork replay --to a topic (--execute --yes)",
	"scan":            "fieldwork replay, scanned first (terminal)",
	"client":          "Kafka client alone (read, produce unchanged)",
	"rewrite":         "Kafka client writing the replay's records (route, provenance)",
	"journal":         "Kafka client writing and journaling the replay's records",
	"perftest":        "kafka-producer-perf-test, acks=all, default settings",
	"perftest-replay": "kafka-producer-perf-test, the replay's producer settings",
	"kcat":            "kcat -C -e | kcat -P",
	"workers1":        "fieldwork replay --workers, one worker",
	"workers2":        "fieldwork replay --workers, two workers",
}

// replayProducerProps are the replay's producer settings (replay.Execute's franz-go client:
// acks=all and idempotence, 10 ms linger, batches up to the topic's limit, snappy, 64 MiB
// buffered) in the Java producer's terms.
var replayProducerProps = []string{"acks=all", "enable.idempotence=true", "linger.ms=10", "batch.size=1000000",
	"compression.type=snappy", "buffer.memory=67108864"}

var perfRate = regexp.MustCompile(`(\d+) records sent, ([0-9.]+) records/sec`)

// perfTest runs kafka-producer-perf-test producing n records of the dead letters' mean size
// to a fresh topic and returns its run: its own reported rate, its CPU time and peak RSS.
func (b *bench) perfTest(ctx context.Context, round int, replaySettings bool) benchkit.Run {
	target := b.topic(ctx, "bench-perftest")
	time.Sleep(b.settle)
	props := []string{"bootstrap.servers=" + b.brokers, "acks=all"}
	if replaySettings {
		props = append([]string{"bootstrap.servers=" + b.brokers}, replayProducerProps...)
	}
	args := append([]string{"java", "-Xmx512m", "-cp", b.perfCP, "org.apache.kafka.tools.ProducerPerformance",
		"--topic", target, "--num-records", strconv.Itoa(b.n), "--record-size", strconv.Itoa(int(b.meanSize + 0.5)),
		"--throughput", "-1", "--producer-props"}, props...)
	var out bytes.Buffer
	run, err := benchkit.Measure(exec.CommandContext(ctx, args[0], args[1:]...), &out)
	if err != nil {
		fail("kafka-producer-perf-test: %v", err)
	}
	ms := perfRate.FindAllStringSubmatch(out.String(), -1)
	if len(ms) == 0 {
		fail("kafka-producer-perf-test printed no summary: %s", out.String())
	}
	last := ms[len(ms)-1]
	sent, _ := strconv.ParseInt(last[1], 10, 64)
	rate, _ := strconv.ParseFloat(last[2], 64)
	if sent != int64(b.n) || rate <= 0 {
		fail("kafka-producer-perf-test sent %d of %d records", sent, b.n)
	}
	jvm := run.WallS
	run.Records, run.WallS = sent, float64(sent)/rate
	fmt.Printf("round %d: %s %s (JVM included %.2fs)\n", round+1, label[map[bool]string{false: "perftest", true: "perftest-replay"}[replaySettings]], run, jvm)
	return run
}

type bench struct {
	brokers    string
	dsn        string
	n          int
	partitions int32
	kcat       string
	keep       bool
	maxBuf     int
	flushRecs  int
	settle     time.Duration
	perfCP     string
	meanSize   float64 // of the dead letters: key, value and headers

	cl      *kgo.Client
	adm     *kadm.Client
	c       *kafka.Cluster
	dlq     string
	topics  []string
	schemas []string
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "replaybench: "+format+"\n", args...)
	os.Exit(1)
}

func (b *bench) topic(ctx context.Context, prefix string) string {
	name := prefix + "-" + benchkit.Suffix()
	if err := benchkit.CreateTopic(ctx, b.adm, name, b.partitions, nil); err != nil {
		fail("%v", err)
	}
	b.topics = append(b.topics, name)
	return name
}

// setup creates the dead-letter topic and fills it with n fieldwork dead letters of events
// of about 300 bytes (CloudEvents structured mode), keyed by aggregate.
func (b *bench) setup(ctx context.Context) {
	var err error
	if b.cl, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(b.brokers, ",")...), kgo.MaxBufferedRecords(100_000)); err != nil {
		fail("%v", err)
	}
	b.adm = kadm.NewClient(b.cl)
	if b.c, err = kafka.Connect(ctx, config.Connection{Brokers: strings.Split(b.brokers, ",")}, 10*time.Second); err != nil {
		fail("%v", err)
	}
	b.dlq = b.topic(ctx, "bench-dlq")
	src := b.topic(ctx, "bench-src")
	start := time.Now()
	errs := make(chan error, 1)
	for i := range b.n {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012d", i, i)
		agg := fmt.Sprintf("task-%05d", i%10_000)
		orig := &kgo.Record{
			Topic: src, Partition: int32(i % int(b.partitions)), Offset: int64(i / int(b.partitions)), Key: []byte(agg),
			Timestamp: start,
			Value: fmt.Appendf(nil, `{"specversion":"1.0","id":"%s","type":"task.updated","source":"bench","time":"2025-01-02T03:04:05Z","aggregatetype":"task","aggregateid":"%s","aggregateversion":%d,"data":{"title":"benchmark task","state":"open","n":%d}}`,
				id, agg, i/10_000+1, i),
			Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
		}
		dl := dlq.NewDeadLetter(orig, dlq.Meta{Topic: b.dlq, Group: "bench", Handler: "projection", EventID: id,
			Reason: dlq.ReasonExhausted, Error: "database unavailable", Attempts: 5, FailedAt: start})
		size := len(dl.Key) + len(dl.Value)
		for _, h := range dl.Headers {
			size += len(h.Key) + len(h.Value)
		}
		b.meanSize += float64(size) / float64(b.n)
		b.cl.Produce(ctx, dl, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := b.cl.Flush(ctx); err != nil {
		fail("seed: %v", err)
	}
	select {
	case err := <-errs:
		fail("seed: %v", err)
	default:
	}
	fmt.Printf("seeded %d dead letters into %s in %.1fs\n", b.n, b.dlq, time.Since(start).Seconds())
}

func (b *bench) cleanup(ctx context.Context) {
	if b.keep {
		return
	}
	_, _ = b.adm.DeleteTopics(ctx, b.topics...)
	for _, s := range b.schemas {
		benchkit.DropSchema(b.dsn, s)
	}
	b.c.Close()
	b.cl.Close()
}

// store opens a journal of its own for one measurement, in a fresh schema (dropped at the end),
// migrated.
func (b *bench) store(ctx context.Context) *dedup.Store {
	schema := "fwbench_" + benchkit.Suffix()
	b.schemas = append(b.schemas, schema)
	st, err := dedup.Open(ctx, b.dsn, dedup.Options{Schema: schema})
	if err != nil {
		fail("%v", err)
	}
	if _, err := st.Migrate(ctx, false); err != nil {
		fail("%v", err)
	}
	return st
}

// replay replays the whole dead-letter topic as the command does with --execute --yes (mode
// "headers": back to the source topic the headers name; "to": to a fresh topic with --to) or
// after a scan of the whole range (mode "scan", as when the command asks for confirmation),
// and returns records per second over the whole command (plan, send, journal, summary).
func (b *bench) replay(ctx context.Context, round int, mode string) benchkit.Run {
	st := b.store(ctx)
	defer st.Close()
	spec := replay.Spec{From: b.dlq}
	if mode == "to" {
		spec.To = b.topic(ctx, "bench-src")
	}
	time.Sleep(b.settle)
	m := startMeter()
	plan, err := replay.NewPlan(ctx, b.c, spec)
	if err != nil {
		fail("plan: %v", err)
	}
	single := mode != "scan"
	if single && plan.TargetKnown() {
		if err := replay.CheckTarget(ctx, b.c, plan); err != nil {
			fail("plan: %v", err)
		}
	}
	if !single {
		rep, err := replay.Scan(ctx, b.c, st, plan, replay.ScanOptions{Sample: -1})
		if err != nil {
			fail("scan: %v", err)
		}
		if err := rep.Err(); err != nil {
			fail("plan: %v", err)
		}
	}
	planned := time.Since(m.start)
	sum, err := replay.Execute(ctx, b.c, st, plan, replay.ExecOptions{Operator: "bench", Reason: "benchmark",
		MaxBuffered: b.maxBuf, FlushRecords: b.flushRecs, SinglePass: single})
	if err != nil {
		fail("execute: %v", err)
	}
	el, cpu, allocs := b.stop(m)
	run := benchkit.Run{Records: int64(b.n), WallS: el.Seconds(), CPUS: cpu}
	m.machine.Fill(&run)
	if sum.Counts.Sent != int64(b.n) {
		fail("replay sent %d of %d", sum.Counts.Sent, b.n)
	}
	rate := float64(b.n) / el.Seconds()
	fmt.Printf("round %d: fieldwork replay (%s) %d records in %.2fs (plan %.2fs, journaled send %.2fs: %.0f records/s): %.0f records/s, CPU %.2fs, %.1f allocations a record\n",
		round+1, mode, b.n, el.Seconds(), planned.Seconds(), float64(sum.ElapsedMS)/1000, sum.RecordsPerSecond, rate, cpu, allocs)
	return run
}

// workers records a replay of the whole dead-letter topic --to a fresh topic for workers
// (replay --execute --workers) and runs n workers of it in this process (replay resume RUN
// --worker, each its own group member, producer and journal flusher), and returns records per
// second from the first assignment to the last worker's exit: the group's join is left out
// (Kafka holds a new group's first rebalance for group.initial.rebalance.delay.ms, 3s by
// default, whatever the replay's size), and printed in the whole time.
func (b *bench) workers(ctx context.Context, round, n int) benchkit.Run {
	st := b.store(ctx)
	defer st.Close()
	spec := replay.Spec{From: b.dlq, To: b.topic(ctx, "bench-workers")}
	time.Sleep(b.settle)
	m := startMeter()
	plan, err := replay.NewPlan(ctx, b.c, spec)
	if err != nil {
		fail("plan: %v", err)
	}
	sum, err := replay.CreateWorkerRun(ctx, b.c, st, plan, replay.ExecOptions{Operator: "bench", Reason: "benchmark",
		MaxBuffered: b.maxBuf, FlushRecords: b.flushRecs})
	if err != nil {
		fail("record the run: %v", err)
	}
	errs := make(chan error, n)
	sent := make(chan int64, n)
	// The send starts with the first assignment: the group's join is measured apart.
	var once sync.Once
	var sending time.Time
	assigned := func(ps []int32) {
		if len(ps) > 0 {
			once.Do(func() { sending = time.Now() })
		}
	}
	for i := range n {
		go func() {
			ws, err := replay.RunWorker(ctx, b.c, st, sum.RunID, replay.WorkerOptions{Owner: fmt.Sprintf("bench-%d:%d", round, i), OnAssigned: assigned})
			if ws != nil {
				sent <- ws.SentNow
			}
			errs <- err
		}()
	}
	var perWorker []string
	for range n {
		if err := <-errs; err != nil {
			fail("worker: %v", err)
		}
		perWorker = append(perWorker, strconv.FormatInt(<-sent, 10))
	}
	el, cpu, allocs := b.stop(m)
	send := time.Since(sending)
	_, _ = b.adm.DeleteGroups(ctx, replay.GroupName(sum.RunID))
	run, _, err := st.ReplayRun(ctx, sum.RunID)
	if err != nil || run.Sent != int64(b.n) || run.Status != dedup.RunCompleted {
		fail("the workers' run: %s, %d sent of %d: %v", run.Status, run.Sent, b.n, err)
	}
	rate := float64(b.n) / send.Seconds()
	fmt.Printf("round %d: fieldwork replay, %d worker(s) %d records in %.2fs, %.2fs from the first assignment (sent %s): %.0f records/s, CPU %.2fs, %.1f allocations a record\n",
		round+1, n, b.n, el.Seconds(), send.Seconds(), strings.Join(perWorker, " + "), rate, cpu, allocs)
	return benchkit.Run{Records: int64(b.n), WallS: send.Seconds(), CPUS: cpu}
}

// clientCopy copies the dead-letter topic with the replay's reader (kafka.Cluster.Read) and a
// producer with the replay's settings, and returns records per second: mode "client" copies
// the records unchanged to a fresh topic, mode "rewrite" sends each as the replay would
// (rewriter).
func (b *bench) clientCopy(ctx context.Context, round int, mode string) benchkit.Run {
	opts := append(b.c.Options(), kgo.MaxBufferedRecords(replay.DefaultMaxBuffered), kgo.MaxBufferedBytes(64<<20))
	var w *rewriter
	var st *dedup.Store
	if mode == "rewrite" || mode == "journal" {
		// To the source topic, where the replay sends too.
		w = newRewriter()
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if mode == "journal" {
			w.ids = true
			st = b.store(ctx)
			defer st.Close()
		}
	} else {
		opts = append(opts, kgo.DefaultProduceTopic(b.topic(ctx, "bench-client")))
	}
	time.Sleep(b.settle)
	m := startMeter()
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		fail("%v", err)
	}
	defer prod.Close()
	ends, err := b.adm.ListEndOffsets(ctx, b.dlq)
	if err != nil {
		fail("%v", err)
	}
	var ranges []kafka.PartitionRange
	ends.Each(func(o kadm.ListedOffset) {
		ranges = append(ranges, kafka.PartitionRange{Topic: o.Topic, Partition: o.Partition, Start: 0, End: o.Offset})
	})
	errs := make(chan error, 1)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case errs <- err:
			default:
			}
		}
	}
	var j *journaler
	if st != nil {
		j = newJournaler(ctx, st, b.dlq, ranges)
		promise = j.acked
	}
	err = b.c.Read(ctx, ranges, func(r *kgo.Record) error {
		out := &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers}
		if w != nil {
			var ok bool
			if out, ok = w.rewrite(r); !ok {
				return fmt.Errorf("%s/%d/%d names no route", r.Topic, r.Partition, r.Offset)
			}
		}
		if j != nil {
			out.Context = j.source(ctx, r, w.eventID)
		}
		prod.Produce(ctx, out, promise)
		return nil
	})
	if err == nil {
		err = prod.Flush(ctx)
	}
	if err == nil && j != nil {
		err = j.finish(ctx)
	}
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		fail("client copy: %v", err)
	}
	el, cpu, allocs := b.stop(m)
	if j != nil {
		j.check(ctx, int64(b.n))
	}
	run := benchkit.Run{Records: int64(b.n), WallS: el.Seconds(), CPUS: cpu}
	m.machine.Fill(&run)
	rate := float64(b.n) / el.Seconds()
	fmt.Printf("round %d: %s %d records in %.2fs: %.0f records/s, CPU %.2fs, %.1f allocations a record\n", round+1, label[mode], b.n, el.Seconds(), rate, cpu, allocs)
	return run
}

// meter is where a measurement started: the time, this process's CPU time and allocations.
type meter struct {
	start   time.Time
	cpu     time.Duration
	mallocs uint64
	machine benchkit.CPUTimes // the machine's and the services' busy CPU time
}

func startMeter() meter {
	machine := benchkit.ReadCPU()
	return meter{time.Now(), benchkit.SelfCPU(), mallocs(), machine}
}

// stop ends the measurement that m started: the time it took, its CPU seconds and its
// allocations per record.
func (b *bench) stop(m meter) (el time.Duration, cpu, allocs float64) {
	el = time.Since(m.start)
	return el, (benchkit.SelfCPU() - m.cpu).Seconds(), float64(mallocs()-m.mallocs) / float64(b.n)
}

// mallocs is how many heap objects this process has allocated so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// kcatCopy copies the dead-letter topic to a fresh topic with kcat and returns records per
// second over the pipe's wall-clock time.
func (b *bench) kcatCopy(ctx context.Context, round int) benchkit.Run {
	target := b.topic(ctx, "bench-kcat")
	time.Sleep(b.settle)
	machine := benchkit.ReadCPU()
	start := time.Now()
	pipe := fmt.Sprintf("%s -C -e -q -t %s -b %s | %s -P -t %s -b %s", b.kcat, b.dlq, b.brokers, b.kcat, target, b.brokers)
	cmd := exec.CommandContext(ctx, "sh", "-c", pipe)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fail("%s: %v", pipe, err)
	}
	el := time.Since(start)
	run := benchkit.Run{Records: int64(b.n), WallS: el.Seconds()}
	machine.Fill(&run)
	ends, err := b.adm.ListEndOffsets(ctx, target)
	if err != nil {
		fail("%v", err)
	}
	var copied int64
	ends.Each(func(o kadm.ListedOffset) { copied += o.Offset })
	if copied != int64(b.n) {
		fail("kcat copied %d of %d records", copied, b.n)
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	rate := float64(b.n) / el.Seconds()
	fmt.Printf("round %d: kcat -C -e | kcat -P %d records in %.2fs: %.0f records/s, CPU %.2fs\n", round+1, b.n, el.Seconds(), rate, cpu)
	run.CPUS = cpu
	return run
}
