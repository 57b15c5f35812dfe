// Command bench measures `fieldwork dlq stats` on a large dead-letter topic of the real
// broker, beside kcat reading the same topic into /dev/null in the same run. It is a
// benchmark, not a test: it prints figures and asserts nothing (CI never runs it).
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/dlq/bench                      # 1,000,000 dead letters, 3 rounds
//	go run ./internal/dlq/bench -records 200000 -keep
//
// It fills a fresh topic with fieldwork-convention dead letters (dlq.NewDeadLetter, values of
// about 300 bytes, produced with franz-go in large lingering batches), builds the fieldwork
// binary, then alternates, round after round, `kcat -C -e -J -q` into /dev/null and
// `fieldwork dlq stats -o json` (whose JSON says how many records it read), each a child
// process: wall time, records per second, and peak memory as the kernel measured it (the
// child's maximum resident set size, getrusage). The topic is deleted at the end unless
// -keep; -topic reuses a filled topic.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

func main() {
	var (
		brokers    = flag.String("brokers", os.Getenv("FIELDWORK_TEST_BROKERS"), "the real broker (default $FIELDWORK_TEST_BROKERS)")
		records    = flag.Int("records", 1_000_000, "dead letters to write")
		partitions = flag.Int("partitions", 3, "partitions of the topic")
		valueSize  = flag.Int("value-size", 300, "approximate size of each dead letter's value, bytes")
		topic      = flag.String("topic", "", "read this already filled topic instead of creating one")
		keep       = flag.Bool("keep", false, "keep the topic created (its name is printed)")
		rounds     = flag.Int("rounds", 3, "rounds of kcat then fieldwork")
		binary     = flag.String("fieldwork", "", "fieldwork binary to measure (default: go build the module into a temporary directory)")
		extra      = flag.String("args", "", "extra arguments for fieldwork dlq stats, space-separated")
	)
	flag.Parse()
	if *brokers == "" {
		fail(errors.New("no broker: pass -brokers or run eval \"$(scripts/services.sh env)\""))
	}
	ctx := context.Background()
	if _, err := exec.LookPath("kcat"); err != nil {
		fail(errors.New("kcat is not installed"))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	name := *topic
	if name == "" {
		// Not a name the default pattern matches (.dlq, -dlt, .DLT): tests that scan every
		// dead-letter topic of the broker must not read a million records kept by -keep.
		name = fmt.Sprintf("fieldwork-bench-%d-deadletters", time.Now().Unix())
		forever := "-1"
		resp, err := adm.CreateTopic(ctx, int32(*partitions), 1, map[string]*string{"retention.ms": &forever}, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fail(fmt.Errorf("create topic %s: %w", name, err))
		}
		if !*keep {
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, _ = adm.DeleteTopics(ctx, name)
			}()
		}
		start := time.Now()
		bytes, err := fill(ctx, *brokers, name, *records, *valueSize)
		if err != nil {
			fail(err)
		}
		el := time.Since(start)
		fmt.Printf("filled %s: %d dead letters, %.0f MiB of keys, values and headers, in %s (%.0f records/s)\n",
			name, *records, float64(bytes)/(1<<20), el.Round(time.Millisecond), float64(*records)/el.Seconds())
	}

	bin := *binary
	if bin == "" {
		dir, err := os.MkdirTemp("", "fieldwork-bench")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "fieldwork")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = moduleRoot()
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fail(fmt.Errorf("go build: %w", err))
		}
	}

	fmt.Printf("machine: %d CPUs (GOMAXPROCS %d), %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), kcatVersion())
	statsArgs := []string{"dlq", "stats", "--topic", name, "--brokers", *brokers, "-o", "json"}
	if *extra != "" {
		statsArgs = append(statsArgs, strings.Fields(*extra)...)
	}
	var (
		kcatRuns, fwRuns []run
		ratios           []float64
	)
	for i := range *rounds {
		k, err := measure("kcat", []string{"-C", "-e", "-J", "-q", "-t", name, "-b", *brokers}, nil)
		if err != nil {
			fail(err)
		}
		k.records = int64(*records)
		if *topic != "" {
			k.records = -1
		}
		var out strings.Builder
		f, err := measure(bin, statsArgs, &out)
		if err != nil {
			fail(err)
		}
		var rep struct {
			RecordsRead int64 `json:"records_read"`
		}
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			fail(fmt.Errorf("fieldwork output: %w", err))
		}
		f.records = rep.RecordsRead
		if k.records < 0 {
			k.records = rep.RecordsRead // a topic filled earlier: fieldwork's count is the topic's
		}
		fmt.Printf("round %d: kcat %s\n         fieldwork dlq stats %s; ratio %.2fx\n", i+1, k, f, f.rate()/k.rate())
		kcatRuns, fwRuns = append(kcatRuns, k), append(fwRuns, f)
		ratios = append(ratios, f.rate()/k.rate())
	}
	if len(fwRuns) == 0 {
		return
	}
	k, f := median(kcatRuns), median(fwRuns)
	peak := slices.MaxFunc(fwRuns, func(a, b run) int { return int(a.peakKiB - b.peakKiB) })
	slices.Sort(ratios)
	fmt.Printf("\nmedian of %d rounds over %d records (each run a child process; peak RSS by getrusage):\n", *rounds, f.records)
	fmt.Printf("  kcat -C -e -J > /dev/null  %9.0f records/s  %6.2fs  %9.0f records per CPU-second  peak RSS %6.1f MiB\n", k.rate(), k.wall.Seconds(), k.cpuRate(), k.peakMiB())
	fmt.Printf("  fieldwork dlq stats        %9.0f records/s  %6.2fs  %9.0f records per CPU-second  peak RSS %6.1f MiB (highest of all rounds %.1f)\n", f.rate(), f.wall.Seconds(), f.cpuRate(), f.peakMiB(), peak.peakMiB())
	fmt.Printf("  ratio fieldwork/kcat: %.2fx of the medians, %.2fx the median of the rounds' ratios (target >= 1); peak under 100 MiB: %v\n",
		f.rate()/k.rate(), ratios[len(ratios)/2], peak.peakMiB() < 100)
	if *keep && *topic == "" {
		fmt.Printf("kept topic %s\n", name)
	}
}

// fill writes n fieldwork-convention dead letters to topic, spread over its partitions by
// key, and returns the bytes of keys, values and headers written.
func fill(ctx context.Context, brokers, topic string, n, valueSize int) (int64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(20*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	reasons := []string{dlq.ReasonMalformed, dlq.ReasonUnsupported, dlq.ReasonRejected, dlq.ReasonExhausted}
	errs := []string{"task not found", "schema version 3 not supported", "projection rejected the event: stale aggregate", "database timeout after 5 retries"}
	topics := []string{"tasks", "orders", "payments", "customers"}
	base := time.Now().Add(-6 * 24 * time.Hour)
	pad := strings.Repeat("x", max(0, valueSize-200))
	var (
		bytes  int64
		failed atomic.Pointer[error]
		done   atomic.Int64
	)
	for i := range n {
		if e := failed.Load(); e != nil {
			return 0, *e
		}
		id := fmt.Sprintf("evt-%08d", i)
		agg := fmt.Sprintf("task-%d", i%5000)
		value := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"task.updated","source":"/tasks","aggregateid":%q,"aggregateversion":%d,"data":{"note":%q}}`, id, agg, i/5000+1, pad)
		orig := &kgo.Record{
			Topic: topics[i%len(topics)], Partition: int32(i % 12), Offset: int64(i), Key: []byte(agg), Value: []byte(value),
			Timestamp: base.Add(time.Duration(i) * 500 * time.Millisecond),
			Headers:   []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}},
		}
		failedAt := orig.Timestamp.Add(2 * time.Second)
		r := dlq.NewDeadLetter(orig, dlq.Meta{
			Topic: topic, Group: "projector", Handler: "projection", EventID: id,
			Reason: reasons[i%len(reasons)], Error: errs[(i/7)%len(errs)], Attempts: 1 + i%5,
			FirstFailedAt: failedAt.Add(-time.Second), FailedAt: failedAt,
		})
		bytes += int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			bytes += int64(len(h.Key) + len(h.Value))
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			done.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if e := failed.Load(); e != nil {
		return 0, *e
	}
	return bytes, nil
}

// run is one measured child process.
type run struct {
	wall    time.Duration
	cpu     time.Duration // user + system
	peakKiB int64
	records int64
}

func (r run) rate() float64    { return float64(r.records) / r.wall.Seconds() }
func (r run) cpuRate() float64 { return float64(r.records) / r.cpu.Seconds() }
func (r run) peakMiB() float64 { return float64(r.peakKiB) / 1024 }
func (r run) String() string {
	return fmt.Sprintf("%.2fs, %.0f records/s (%.0f per CPU-second), peak RSS %.1f MiB", r.wall.Seconds(), r.rate(), r.cpuRate(), r.peakMiB())
}

// measure runs name args with stdout to out (nil: /dev/null) and returns its wall time and
// peak resident set size (getrusage's ru_maxrss of the child, KiB on Linux).
func measure(name string, args []string, out *strings.Builder) (run, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	if out != nil {
		cmd.Stdout = out
	} else {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return run{}, err
		}
		defer null.Close()
		cmd.Stdout = null
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return run{}, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	r := run{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peakKiB = ru.Maxrss
	}
	return r, nil
}

func median(rs []run) run {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b run) int { return int(a.wall - b.wall) })
	return s[len(s)/2]
}

func kcatVersion() string {
	out, err := exec.Command("kcat", "-V").Output()
	if err != nil {
		return "kcat (version unknown)"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		fail(errors.New("run the benchmark from inside the module (go env GOMOD is empty)"))
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
