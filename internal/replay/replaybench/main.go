// Command replaybench measures `fieldwork replay` against kcat on the real broker (not part of
// CI; STYLE: a benchmark is a command that prints figures).
//
// It writes N fieldwork dead letters (default 500,000) to a fresh dead-letter topic whose
// headers name a fresh, empty source topic, then in the same run, round after round:
//
//   - replays them DLQ → source as `fieldwork replay --from DLQ --execute --yes --reason …`
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
// Kafka client sets for the replay on this machine.
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/replay/replaybench -n 500000 -rounds 5
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
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
		modesFlag  = flag.String("modes", "headers", "comma-separated replay modes measured each round: headers (DLQ → the topics the headers name, one pass), to (--to a fresh topic, one pass), scan (headers, the range scanned first), client (no replay: the Kafka client alone, reading the range and producing every record unchanged to a fresh topic with the replay's settings)")
	)
	flag.Parse()
	if *brokers == "" || *dsn == "" {
		fail("set -brokers and -dsn (or eval \"$(scripts/services.sh env)\")")
	}
	// As the replay command does.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
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
		maxBuf: *maxBuf, flushRecs: *flushRecs, settle: *settle}
	b.setup(ctx)
	defer b.cleanup(ctx)

	modes := strings.Split(*modesFlag, ",")
	for _, m := range modes {
		if m != "headers" && m != "to" && m != "scan" && m != "client" {
			fail("-modes: unknown mode %q", m)
		}
	}
	rates := map[string][]float64{}
	var kcatRates []float64
	for r := range *rounds {
		// Every other round kcat goes first, so that neither side always follows the other.
		kcatFirst := r%2 == 1 && !*noKcat
		if kcatFirst {
			kcatRates = append(kcatRates, b.kcatCopy(ctx, r))
		}
		for _, m := range modes {
			if *cpuProfile != "" {
				f, err := os.Create(*cpuProfile + "." + m)
				if err != nil {
					fail("%v", err)
				}
				_ = pprof.StartCPUProfile(f)
			}
			if *traceFile != "" {
				f, err := os.Create(*traceFile + "." + m)
				if err != nil {
					fail("%v", err)
				}
				_ = trace.Start(f)
			}
			if m == "client" {
				rates[m] = append(rates[m], b.clientCopy(ctx, r))
			} else {
				rates[m] = append(rates[m], b.replay(ctx, r, m))
			}
			if *cpuProfile != "" {
				pprof.StopCPUProfile()
			}
			if *traceFile != "" {
				trace.Stop()
			}
		}
		if !*noKcat && !kcatFirst {
			kcatRates = append(kcatRates, b.kcatCopy(ctx, r))
		}
	}
	fmt.Printf("\n%d records, %d partitions, %d round(s)\n", b.n, b.partitions, *rounds)
	label := map[string]string{
		"headers": "fieldwork replay DLQ → source (--execute --yes)",
		"to":      "fieldwork replay --to a topic (--execute --yes)",
		"scan":    "fieldwork replay, scanned first (terminal)",
		"client":  "Kafka client alone (read, produce unchanged)",
	}
	for _, m := range modes {
		fmt.Printf("%-48s %10.0f records/s (median; best %.0f), CPU %.2fs (median)\n", label[m]+":", median(rates[m]), best(rates[m]), median(b.cpu[m]))
	}
	if len(kcatRates) > 0 {
		fmt.Printf("%-48s %10.0f records/s (median; best %.0f), CPU %.2fs (median)\n", "kcat -C -e | kcat -P:", median(kcatRates), best(kcatRates), median(b.cpu["kcat"]))
		for _, m := range modes {
			fmt.Printf("ratio %-42s %10.2f (medians; target >= 1.0)\n", m+"/kcat:", median(rates[m])/median(kcatRates))
		}
	}
}

func best(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// median is the middle value of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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

	// cpu holds, per mode ("kcat" for the pipe), the CPU seconds of each measurement: this
	// process's for a replay or the client copy, the shell's and both kcats' for the pipe.
	cpu map[string][]float64

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

func suffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (b *bench) topic(ctx context.Context, prefix string) string {
	name := prefix + "-" + suffix()
	resp, err := b.adm.CreateTopic(ctx, b.partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		fail("create topic %s: %v", name, err)
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
	if conn, err := pgx.Connect(ctx, b.dsn); err == nil {
		for _, s := range b.schemas {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`)
		}
		_ = conn.Close(ctx)
	}
	b.c.Close()
	b.cl.Close()
}

// replay replays the whole dead-letter topic as the command does with --execute --yes (mode
// "headers": back to the source topic the headers name; "to": to a fresh topic with --to) or
// after a scan of the whole range (mode "scan", as when the command asks for confirmation),
// and returns records per second over the whole command (plan, send, journal, summary).
func (b *bench) replay(ctx context.Context, round int, mode string) float64 {
	schema := "fwbench_" + suffix()
	b.schemas = append(b.schemas, schema)
	st, err := dedup.Open(ctx, b.dsn, dedup.Options{Schema: schema})
	if err != nil {
		fail("%v", err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx, false); err != nil {
		fail("%v", err)
	}
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
	el, cpu, allocs := b.stop(m, mode)
	if sum.Counts.Sent != int64(b.n) {
		fail("replay sent %d of %d", sum.Counts.Sent, b.n)
	}
	rate := float64(b.n) / el.Seconds()
	fmt.Printf("round %d: fieldwork replay (%s) %d records in %.2fs (plan %.2fs, journaled send %.2fs: %.0f records/s): %.0f records/s, CPU %.2fs, %.1f allocations a record\n",
		round+1, mode, b.n, el.Seconds(), planned.Seconds(), sum.Seconds, sum.RecordsPerSecond, rate, cpu, allocs)
	return rate
}

// clientCopy copies the dead-letter topic to a fresh topic with the replay's reader
// (kafka.Cluster.Read) and a producer with the replay's settings, records unchanged, and
// returns records per second.
func (b *bench) clientCopy(ctx context.Context, round int) float64 {
	target := b.topic(ctx, "bench-client")
	time.Sleep(b.settle)
	m := startMeter()
	prod, err := kgo.NewClient(append(b.c.Options(), kgo.DefaultProduceTopic(target),
		kgo.MaxBufferedRecords(replay.DefaultMaxBuffered), kgo.MaxBufferedBytes(64<<20))...)
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
	err = b.c.Read(ctx, ranges, func(r *kgo.Record) error {
		prod.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
		return nil
	})
	if err == nil {
		err = prod.Flush(ctx)
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
	el, cpu, allocs := b.stop(m, "client")
	rate := float64(b.n) / el.Seconds()
	fmt.Printf("round %d: Kafka client alone %d records in %.2fs: %.0f records/s, CPU %.2fs, %.1f allocations a record\n", round+1, b.n, el.Seconds(), rate, cpu, allocs)
	return rate
}

// meter is where a measurement started: the time, this process's CPU time and allocations.
type meter struct {
	start   time.Time
	cpu     time.Duration
	mallocs uint64
}

func startMeter() meter { return meter{time.Now(), selfCPU(), mallocs()} }

// stop ends the measurement of mode that m started: the time it took, its CPU seconds (also
// recorded for mode) and its allocations per record.
func (b *bench) stop(m meter, mode string) (el time.Duration, cpu, allocs float64) {
	el = time.Since(m.start)
	cpu = b.addCPU(mode, selfCPU()-m.cpu)
	return el, cpu, float64(mallocs()-m.mallocs) / float64(b.n)
}

// selfCPU is the CPU time this process has used (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mallocs is how many heap objects this process has allocated so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// addCPU records the CPU time of one measurement of mode and returns it in seconds.
func (b *bench) addCPU(mode string, d time.Duration) float64 {
	if b.cpu == nil {
		b.cpu = map[string][]float64{}
	}
	b.cpu[mode] = append(b.cpu[mode], d.Seconds())
	return d.Seconds()
}

// kcatCopy copies the dead-letter topic to a fresh topic with kcat and returns records per
// second over the pipe's wall-clock time.
func (b *bench) kcatCopy(ctx context.Context, round int) float64 {
	target := b.topic(ctx, "bench-kcat")
	time.Sleep(b.settle)
	start := time.Now()
	pipe := fmt.Sprintf("%s -C -e -q -t %s -b %s | %s -P -t %s -b %s", b.kcat, b.dlq, b.brokers, b.kcat, target, b.brokers)
	cmd := exec.CommandContext(ctx, "sh", "-c", pipe)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fail("%s: %v", pipe, err)
	}
	el := time.Since(start)
	ends, err := b.adm.ListEndOffsets(ctx, target)
	if err != nil {
		fail("%v", err)
	}
	var copied int64
	ends.Each(func(o kadm.ListedOffset) { copied += o.Offset })
	if copied != int64(b.n) {
		fail("kcat copied %d of %d records", copied, b.n)
	}
	cpu := b.addCPU("kcat", cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	rate := float64(b.n) / el.Seconds()
	fmt.Printf("round %d: kcat -C -e | kcat -P %d records in %.2fs: %.0f records/s, CPU %.2fs\n", round+1, b.n, el.Seconds(), rate, cpu)
	return rate
}
