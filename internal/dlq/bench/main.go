// Command bench measures fieldwork's read side on large topics of the real broker, each
// contender a child process measured as the kernel sees it (wall time, CPU time, peak resident
// set size from wait4's rusage; benchkit.Measure). It fills a fresh topic with -records
// fieldwork-convention dead letters (dlq.NewDeadLetter, values of about 300 bytes, produced with
// franz-go in large lingering batches) and a second one with the first -small-records of them,
// claims a marker for every event in a fresh schema (consumer "bench"), builds the fieldwork
// binary, then alternates, round after round, in a rotating order:
//
//   - kcat -C -e -J -q into /dev/null (an independent client, every record as JSON);
//   - a bare franz-go read of the same range, counting records, no parsing (this program
//     again, as a child: the client floor);
//   - the listing's own read (its client settings and collector pacing) writing, for each
//     record, the line dlq list writes for a dead letter whose headers were not parsed (the
//     listing's encoder and buffer size), no parsing: the listing's floor;
//   - fieldwork dlq stats -o json, and fieldwork dlq list --limit 0 --no-status -o jsonl into
//     /dev/null, and the same listing into a pipe this program reads (counting its lines);
//   - fieldwork processed check -o json (every event has its marker) and fieldwork inspect
//     validate -o json over the same records (their values are the original events);
//   - dlq stats, inspect validate and processed check again over the small topic, for their
//     peak memory at the two sizes;
//   - with -marker-events, the store at scale (issue 32): processed check of a topic of that
//     many events, all marked, and claims of as many fresh markers (batches of 500, one
//     transaction each, in this process), against a marker table of just those markers and
//     against one of -marker-table markers whose statistics were gathered before the checked
//     consumer wrote (markerTables), over rounds of their own after the others' (-marker-rounds:
//     a round takes seconds, and the two tables' checks swing from round to round).
//
// A contender whose output is a line a record (kcat, the listing, the listing's floor) writes it to
// /dev/null in the measured rounds, as an operator's redirect would: into a pipe, the reader
// (this program, copying some 2 KB a record out of it) took 0.6 µs a record of the two cores
// the contender runs on. Its lines are counted in a run of its own before the rounds
// (checkCounts); the listing into a pipe (dlq/list-pipe) shows what the reader costs.
//
// It prints every run and the medians, and with -json writes every run for the suite
// (internal/benchsuite, `make bench`). It is a benchmark, not a test: it asserts nothing (CI
// never runs it). The topics and the schema are deleted at the end unless -keep.
//
//	eval "$(scripts/services.sh env)"
//	go run ./internal/dlq/bench                      # 1,000,000 dead letters, 3 rounds
//	go run ./internal/dlq/bench -records 200000 -keep
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/benchkit"
	fwconfig "github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// config is the command line.
type config struct {
	brokers, dsn, binary, jsonOut, readRange string
	lines                                    bool
	profileDir, profileBinary                string
	records, small, partitions, valueSize    int
	markerEvents, markerTable                int
	rounds, markerRounds                     int
	keep                                     bool
}

func parseFlags() config {
	var c config
	flag.StringVar(&c.brokers, "brokers", os.Getenv("FIELDWORK_TEST_BROKERS"), "the real broker (default $FIELDWORK_TEST_BROKERS)")
	flag.StringVar(&c.dsn, "dsn", os.Getenv("FIELDWORK_TEST_DSN"), "PostgreSQL for the markers processed check reads (default $FIELDWORK_TEST_DSN)")
	flag.IntVar(&c.records, "records", 1_000_000, "dead letters to write")
	flag.IntVar(&c.small, "small-records", 100_000, "dead letters of the small topic (peak memory at a tenth of the size; 0: none)")
	flag.IntVar(&c.markerEvents, "marker-events", 0, "events checked and markers claimed against a small and a large marker table (0: none)")
	flag.IntVar(&c.markerTable, "marker-table", 10_000_000, "markers of the large marker table, the checked consumer's included")
	flag.IntVar(&c.partitions, "partitions", 3, "partitions of the topics")
	flag.IntVar(&c.valueSize, "value-size", 300, "approximate size of each dead letter's value, bytes")
	flag.BoolVar(&c.keep, "keep", false, "keep the topics and the schema created (their names are printed)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds; the contenders alternate their order")
	flag.IntVar(&c.markerRounds, "marker-rounds", 9, "rounds of the -marker-events contenders, run after the others'")
	flag.StringVar(&c.binary, "fieldwork", "", "fieldwork binary to measure (default: go build the module into a temporary directory)")
	flag.StringVar(&c.jsonOut, "json", "", "write every run to this file (benchkit.Report)")
	flag.StringVar(&c.profileDir, "profile", "", "after the rounds, run each fieldwork contender of the large topic once more with a CPU profile into this directory (KEY.pprof, the key's slashes as dashes); needs -profile-fieldwork")
	flag.StringVar(&c.profileBinary, "profile-fieldwork", "", "fieldwork built with -tags pprof, which the -profile runs use (it writes $FIELDWORK_CPUPROFILE)")
	flag.StringVar(&c.readRange, "read-range", "", "internal: read this whole topic with a bare franz-go client, print the records read, and exit")
	flag.BoolVar(&c.lines, "lines", false, "internal: with -read-range, read as dlq list does and write each record as the listing's line of a dead letter not parsed instead (writeLines)")
	flag.Parse()
	return c
}

func main() {
	cfg := parseFlags()
	if cfg.brokers == "" {
		fail(errors.New("no broker: pass -brokers or run eval \"$(scripts/services.sh env)\""))
	}
	ctx := context.Background()
	if cfg.readRange != "" {
		if cfg.lines {
			if err := writeLines(ctx, cfg.brokers, cfg.readRange); err != nil {
				fail(err)
			}
			return
		}
		n, err := bareRead(ctx, cfg.brokers, cfg.readRange)
		if err != nil {
			fail(err)
		}
		fmt.Println(n)
		return
	}
	if cfg.dsn == "" {
		fail(errors.New("no database: pass -dsn or run eval \"$(scripts/services.sh env)\""))
	}
	if _, err := exec.LookPath("kcat"); err != nil {
		fail(errors.New("kcat is not installed"))
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(cfg.brokers, ",")...))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	id := benchkit.Suffix()
	schema := "fwbench_dlq_" + id
	var topics []string
	schemas := []string{schema}
	defer func() {
		if cfg.keep {
			fmt.Printf("kept topics %s and schemas %s\n", strings.Join(topics, ", "), strings.Join(schemas, ", "))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, topics...)
		for _, s := range schemas {
			benchkit.DropSchema(cfg.dsn, s)
		}
	}()
	st, err := dedup.Open(ctx, cfg.dsn, dedup.Options{Schema: schema})
	if err != nil {
		fail(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx, false); err != nil {
		fail(err)
	}
	sizes := []int{cfg.records}
	if cfg.small > 0 && cfg.small < cfg.records {
		sizes = append(sizes, cfg.small)
	}
	names := map[int]string{}
	for _, n := range sizes {
		// The markers are claimed for the large topic only (the small topic's events are the
		// first of the large one's).
		var claim *dedup.Store
		if n == cfg.records {
			claim = st
		}
		name := createAndFill(ctx, cfg, adm, fmt.Sprintf("fieldwork-bench-%s-%d-deadletters", id, n), n, claim)
		topics = append(topics, name)
		names[n] = name
	}
	bin, cleanup := fieldworkBinary(cfg)
	defer cleanup()
	cs := contenders(cfg, bin, self, schema, sizes, names)
	rep := newReport(cfg)
	checkCounts(cs)
	runRounds(&rep, cfg.rounds, cs)
	if cfg.markerEvents > 0 {
		// A round of these takes seconds and their two tables' checks swing more from round
		// to round than the ratio's bound leaves: more rounds, after the others', for a median
		// that is the tables' and not the machine's moment.
		mt := markerTables(ctx, cfg, adm, id, &topics, &schemas)
		defer mt.close()
		mcs := mt.contenders(cfg, bin)
		runRounds(&rep, cfg.markerRounds, mcs)
		cs = append(cs, mcs...)
	}
	printMedians(rep)
	if err := rep.WriteJSON(cfg.jsonOut); err != nil {
		fail(err)
	}
	if cfg.profileDir != "" {
		profileRuns(cfg, bin, cs)
	}
}

// profileRuns runs every fieldwork contender of the large topic once more, not measured, with
// the -profile-fieldwork binary writing a CPU profile of the whole command into -profile.
func profileRuns(cfg config, bin string, cs []contender) {
	if cfg.profileBinary == "" {
		fail(errors.New("-profile needs -profile-fieldwork (fieldwork built with -tags pprof)"))
	}
	for _, c := range cs {
		if len(c.args) == 0 || c.args[0] != bin || strings.Contains(c.key, "@") {
			continue
		}
		file := filepath.Join(cfg.profileDir, strings.ReplaceAll(c.key, "/", "-")+".pprof")
		cmd := exec.Command(cfg.profileBinary, c.args[1:]...)
		cmd.Env = append(os.Environ(), "FIELDWORK_CPUPROFILE="+file)
		if _, err := measureInto(cmd, c.discard); err != nil {
			fail(fmt.Errorf("%s, profiled: %w", c.label, err))
		}
		fmt.Printf("profiled %s: %s\n", c.key, file)
	}
}

// createAndFill creates the topic name of n dead letters and fills it; with claim, a marker of
// consumer "bench" is claimed in it for every event.
func createAndFill(ctx context.Context, cfg config, adm *kadm.Client, name string, n int, claim *dedup.Store) string {
	// Not a name the default pattern matches (.dlq, -dlt, .DLT): tests that scan every
	// dead-letter topic of the broker must not read a million records kept by -keep.
	forever := "-1"
	resp, err := adm.CreateTopic(ctx, int32(cfg.partitions), 1, map[string]*string{"retention.ms": &forever}, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		fail(fmt.Errorf("create topic %s: %w", name, err))
	}
	start := time.Now()
	bytes, err := fill(ctx, cfg.brokers, name, n, cfg.valueSize, claim)
	if err != nil {
		fail(err)
	}
	el := time.Since(start)
	fmt.Printf("filled %s: %d dead letters, %.0f MiB of keys, values and headers, in %s (%.0f records/s)\n",
		name, n, float64(bytes)/(1<<20), el.Round(time.Millisecond), float64(n)/el.Seconds())
	return name
}

// fieldworkBinary is -fieldwork, else the module built into a temporary directory that cleanup
// removes.
func fieldworkBinary(cfg config) (bin string, cleanup func()) {
	if cfg.binary != "" {
		return cfg.binary, func() {}
	}
	dir, err := os.MkdirTemp("", "fieldwork-bench")
	if err != nil {
		fail(err)
	}
	bin = filepath.Join(dir, "fieldwork")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = moduleRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		fail(fmt.Errorf("go build: %w", err))
	}
	return bin, func() { os.RemoveAll(dir) }
}

// A contender is a child process and how to count what it read from its output, or a run in
// this process (inproc, given the round; it checks its own count).
type contender struct {
	key, label string
	records    int
	args       []string
	count      func(out *capture) (int64, error)
	inproc     func(round int) (benchkit.Run, error)
	// discard: the measured runs write the output to /dev/null; checkCounts counts it once.
	discard bool
}

// contenders lists what each round runs: per topic size, dlq stats, processed check and inspect
// validate; over the large topic, also dlq list, kcat, the bare franz-go read, and that read
// writing a listing's lines.
func contenders(cfg config, bin, self, schema string, sizes []int, names map[int]string) []contender {
	fw := func(args ...string) []string {
		return append([]string{bin}, append(args, "--brokers", cfg.brokers)...)
	}
	var cs []contender
	for _, n := range sizes {
		t := names[n]
		sfx := ""
		if n != cfg.records {
			sfx = fmt.Sprintf("@%d", n)
		}
		list := fw("dlq", "list", "--topic", t, "--limit", "0", "--no-status", "-o", "jsonl")
		check := fw("processed", "check", "--topic", t, "--consumer", "bench", "--dsn", cfg.dsn, "--schema", schema, "-o", "json")
		cs = append(cs,
			contender{"dlq/stats" + sfx, "fieldwork dlq stats -o json", n, fw("dlq", "stats", "--topic", t, "-o", "json"), jsonCount("records_read"), nil, false},
			contender{"processed/check" + sfx, "fieldwork processed check -o json (every event marked)", n, check, jsonCount("with_marker"), nil, false},
			contender{"inspect/validate" + sfx, "fieldwork inspect validate -o json", n, fw("inspect", "validate", t, "-o", "json"), jsonCount("records_read"), nil, false})
		if n == cfg.records {
			cs = append(cs,
				contender{"dlq/list", "fieldwork dlq list --limit 0 --no-status -o jsonl > /dev/null", n, list, lineCount, nil, true},
				contender{"dlq/list-pipe", "fieldwork dlq list --limit 0 --no-status -o jsonl into a pipe this program reads", n, list, lineCount, nil, false},
				contender{"dlq/kcat", "kcat -C -e -J -q > /dev/null", n, []string{"kcat", "-C", "-e", "-J", "-q", "-t", t, "-b", cfg.brokers}, lineCount, nil, true},
				contender{"dlq/franz-go", "bare franz-go read of the range, no parsing", n, []string{self, "-brokers", cfg.brokers, "-read-range", t}, jsonCount(""), nil, false},
				contender{"dlq/lines", "the listing's read writing its line of each record, no parsing, > /dev/null", n, []string{self, "-brokers", cfg.brokers, "-read-range", t, "-lines"}, lineCount, nil, true})
		}
	}
	return cs
}

// newReport is the run's report, with the notes that describe what was measured.
func newReport(cfg config) benchkit.Report {
	rep := benchkit.Report{Bench: "dlq", Notes: []string{
		fmt.Sprintf("%d dead letters (values of about %d bytes) on %d partitions, and a topic of the first %d; every contender a child process, peak RSS from wait4", cfg.records, cfg.valueSize, cfg.partitions, cfg.small),
		"kcat's, the listing's and its floor's output (a line a record) to /dev/null, counted in a run of each before the rounds; dlq/list-pipe: the listing into a pipe this program reads",
		benchkit.KcatVersion(),
	}}
	if cfg.markerEvents > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("markers/*: a topic of %d events, all marked, checked, and %d fresh markers claimed (batches of %d, one transaction each, in this process, deleted and the table vacuumed after each round), against a table of just the checked markers and one of %d markers analyzed before the checked consumer wrote (autovacuum off); %d rounds of their own, after the others'",
			cfg.markerEvents, cfg.markerEvents, claimBatch, cfg.markerTable, cfg.markerRounds))
	}
	return rep
}

// runRounds runs the contenders, round after round in a rotating order, checks what each read,
// prints every run and adds it to rep.
func runRounds(rep *benchkit.Report, rounds int, cs []contender) {
	for r := range rounds {
		for _, c := range benchkit.Rotate(cs, r) {
			var out capture
			var run benchkit.Run
			var err error
			switch {
			case c.inproc != nil:
				run, err = c.inproc(r + 1)
			case c.discard:
				run, err = measureInto(exec.Command(c.args[0], c.args[1:]...), true)
			default:
				run, err = benchkit.Measure(exec.Command(c.args[0], c.args[1:]...), &out)
			}
			if err != nil {
				fail(fmt.Errorf("%s: %w", c.label, err))
			}
			run.Round, run.Records = r+1, int64(c.records)
			if c.count != nil && !c.discard {
				checkCount(c, &out)
			}
			rep.Add(c.key, c.label, run)
			fmt.Printf("round %d: %-60s %s\n", r+1, c.key+" "+c.label+":", run)
		}
	}
}

// checkCounts runs, once and not measured, every contender whose measured runs discard their
// output, and checks what it read from that output.
func checkCounts(cs []contender) {
	for _, c := range cs {
		if !c.discard {
			continue
		}
		var out capture
		if _, err := benchkit.Measure(exec.Command(c.args[0], c.args[1:]...), &out); err != nil {
			fail(fmt.Errorf("%s, counted: %w", c.label, err))
		}
		checkCount(c, &out)
		fmt.Printf("counted %s: %d records\n", c.key, c.records)
	}
}

// checkCount fails the run unless c's output out says it read every record.
func checkCount(c contender, out *capture) {
	got, err := c.count(out)
	if err != nil {
		fail(fmt.Errorf("%s: %w", c.label, err))
	}
	if got != int64(c.records) {
		fail(fmt.Errorf("%s read %d records of %d", c.label, got, c.records))
	}
}

// measureInto is benchkit.Measure of cmd, its output to /dev/null when discard, else into a
// capture.
func measureInto(cmd *exec.Cmd, discard bool) (benchkit.Run, error) {
	if !discard {
		return benchkit.Measure(cmd, new(capture))
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return benchkit.Run{}, err
	}
	defer null.Close()
	return benchkit.Measure(cmd, null)
}

// printMedians prints each contender's median rate, its spread and its peak memory.
func printMedians(rep benchkit.Report) {
	fmt.Println()
	for _, s := range rep.Series {
		lo, hi := benchkit.Spread(s.Rates())
		plo, phi := benchkit.Spread(s.Peaks())
		fmt.Printf("%-20s %-55s %9.0f records/s (median of %d; %.0f–%.0f), peak RSS %.1f–%.1f MiB\n",
			s.Key, s.Label+":", benchkit.Median(s.Rates()), len(s.Runs), lo, hi, plo, phi)
	}
}

// capture is a child's standard output: its lines counted, and its first 16 MiB kept (a
// listing of a million dead letters is more than a gigabyte).
type capture struct {
	lines int64
	head  bytes.Buffer
}

func (c *capture) Write(p []byte) (int, error) {
	c.lines += int64(bytes.Count(p, []byte("\n")))
	if room := 16<<20 - c.head.Len(); room > 0 {
		c.head.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// jsonCount reads the number at key of a JSON object output (key "": the output is the number).
func jsonCount(key string) func(*capture) (int64, error) {
	return func(out *capture) (int64, error) {
		var n int64
		if key == "" {
			err := json.Unmarshal(out.head.Bytes(), &n)
			return n, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out.head.Bytes(), &m); err != nil {
			return 0, err
		}
		err := json.Unmarshal(m[key], &n)
		return n, err
	}
}

// lineCount counts the lines of a jsonl output.
func lineCount(out *capture) (int64, error) { return out.lines, nil }

// bareRead reads every record of topic, from the start offsets to the end offsets fixed when
// it starts, with a franz-go client of default settings, and returns how many it read.
func bareRead(ctx context.Context, brokers, topic string) (int64, error) {
	adm, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return 0, err
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err != nil {
		return 0, err
	}
	starts := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			starts[o.Partition] = kgo.NewOffset().At(0)
			remaining[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return n, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if left, ok := remaining[r.Partition]; ok && r.Offset < left {
				n++
				if r.Offset == left-1 {
					delete(remaining, r.Partition)
				}
			}
		})
	}
	return n, nil
}

// writeLines is the floor of dlq list -o jsonl: the listing's own read (kafka.Cluster.Read,
// its fetch sizes, its collector's pacing) writing, for each record, the line the listing
// writes for a dead letter whose headers were not parsed (recordLine), through a buffer of the
// listing's size, to standard output. What the listing does beyond it is parsing the headers
// and handing the lines between goroutines.
func writeLines(ctx context.Context, brokers, topic string) error {
	cl, err := kafka.Connect(ctx, fwconfig.Connection{Brokers: strings.Split(brokers, ",")}, 30*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	ranges, err := cl.Plan(ctx, topic, kafka.Selection{})
	if err != nil {
		return err
	}
	gcpace.Floor(os.Getenv, gcpace.ReadFloor) // as dlq list does
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	var line []byte
	err = cl.Read(ctx, ranges, func(r *kgo.Record) error {
		var err error
		if line, err = recordLine(line[:0], r); err != nil {
			return err
		}
		_, err = w.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// recordLine appends the JSON line dlq list writes for r with none of its headers read: the
// listing's own encoder (dlq.Entry.AppendJSON) given the record's place, time, key, value and
// headers, every field the headers would fill empty, and no status looked up.
func recordLine(b []byte, r *kgo.Record) ([]byte, error) {
	e := dlq.Entry{DeadLetter: dlq.DeadLetter{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
		Key: r.Key, Value: r.Value, Headers: r.Headers, HeaderProblems: []dlq.HeaderProblem{},
	}}
	b, err := e.AppendJSON(b)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// fill writes n fieldwork-convention dead letters to topic, spread over its partitions by
// key, and returns the bytes of keys, values and headers written. With claim, it also claims a
// marker for every dead letter's event for consumer "bench", in batches of 1,000.
func fill(ctx context.Context, brokers, topic string, n, valueSize int, claim *dedup.Store) (int64, error) {
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
	var marks []dedup.Marker
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
		if claim != nil {
			marks = append(marks, dedup.Marker{EventID: id, Topic: orig.Topic, Partition: orig.Partition, Offset: orig.Offset,
				AggregateID: agg, AggregateVersion: int64(i/5000 + 1)})
			if len(marks) == 1000 || i == n-1 {
				if err := claimAll(ctx, claim, marks); err != nil {
					return 0, err
				}
				marks = marks[:0]
			}
		}
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

// claimAll claims markers for consumer "bench" in one transaction.
func claimAll(ctx context.Context, st *dedup.Store, ms []dedup.Marker) error {
	return st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, "bench", ms)
		return err
	})
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
