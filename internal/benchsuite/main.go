// Command benchsuite is `make bench`: one run of every benchmark of fieldwork against the real
// services, written up in docs/benchmarks.md. It starts the services (scripts/services.sh
// start, idempotent), fetches Kafka's own producer benchmark (scripts/services.sh
// perf-classpath), builds the fieldwork binary and the three benchmark commands, and runs them
// one after the other, each building its own data sets in uniquely named topics and schemas
// and deleting them at the end:
//
//   - internal/consume/bench: consume (projection, audit) in the engine's default mode, with
//     one transaction per event, both again against a PostgreSQL with fsync and
//     synchronous_commit on (scripts/services.sh durable-postgres), two members of one group,
//     each handler's batches applied alone (no Kafka: the handler's own ceiling), the
//     PostgreSQL marker ceiling and a COPY-based claim of the same batches, a bare franz-go
//     consumer;
//   - internal/dlq/bench: dlq stats, dlq list -o jsonl, processed check, inspect validate,
//     kcat -C -e -J, a bare franz-go read, and dlq list's own read writing its lines with no
//     parsing, over 1,000,000 dead letters, and peak memory at
//     100,000; processed check of 200,000 events and claims of 200,000 markers against a
//     table of just those markers and one of 10,000,000 analyzed before the consumer wrote;
//   - internal/replay/replaybench: replay of 500,000 dead letters, kcat -C -e | kcat -P, the
//     client-only copy, the client writing the replay's records (and journaling them),
//     kafka-producer-perf-test with its defaults and with the replay's producer settings.
//
// Each alternates its contenders over BENCH_ROUNDS rounds (default 3) and writes every run as
// JSON; this command reads them, computes medians, spreads and the ratios of every target, and
// writes the table with the machine, the versions and the command. Every target not met gets
// what the machine's CPU says of it (floor: PostgreSQL's and the broker's parts named, and the
// part of fieldwork's own that the Kafka client alone takes), what its own work reached without the client where
// the target names it (limit: the handler's batches alone; the listing's own read writing its
// lines; the client writing and journaling the replay's records; against the same bound), and the
// CPU profiles that show where fieldwork's time went, taken in the same run. BENCH_SCALE (default 1)
// scales every data set: BENCH_SCALE=0.05 make bench checks the whole path in a few minutes.
// It is not part of the tests (docs/design.md §5).
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/benchkit"
)

func main() {
	scale := flag.Float64("scale", envFloat("BENCH_SCALE", 1), "scale of every data set (default $BENCH_SCALE or 1)")
	rounds := flag.Int("rounds", int(envFloat("BENCH_ROUNDS", 3)), "rounds of every benchmark (default $BENCH_ROUNDS or 3)")
	out := flag.String("out", "docs/benchmarks.md", "where to write the results (relative to the module's root)")
	flag.Parse()
	if *scale <= 0 || *scale > 1 || *rounds < 1 {
		fail(fmt.Errorf("-scale must be in (0, 1] and -rounds at least 1"))
	}
	if err := run(*scale, *rounds, *out); err != nil {
		fail(err)
	}
}

func run(scale float64, rounds int, out string) error {
	began := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctx := context.Background()
	env, err := output(root, "scripts/services.sh", "start")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(env, "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok && strings.HasPrefix(line, "export ") {
			os.Setenv(k, strings.Trim(v, "'"))
		}
	}
	brokers, dsn := os.Getenv("FIELDWORK_TEST_BROKERS"), os.Getenv("FIELDWORK_TEST_DSN")
	cp, err := output(root, "scripts/services.sh", "perf-classpath")
	if err != nil {
		return err
	}
	cp = lastLine(cp)
	// The durability rows' PostgreSQL: fsync and synchronous_commit on.
	durable, err := output(root, "scripts/services.sh", "durable-postgres", "start")
	if err != nil {
		return err
	}
	if k, v, ok := strings.Cut(strings.TrimPrefix(lastLine(durable), "export "), "="); ok {
		os.Setenv(k, strings.Trim(v, "'")) // FIELDWORK_BENCH_DURABLE_DSN, which the consume bench reads
	}

	dir, err := os.MkdirTemp("", "fieldwork-benchsuite")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins := map[string]string{"fieldwork": ".", "consume-bench": "./internal/consume/bench",
		"dlq-bench": "./internal/dlq/bench", "replaybench": "./internal/replay/replaybench"}
	for name, pkg := range bins {
		if _, err := output(root, "go", "build", "-o", filepath.Join(dir, name), pkg); err != nil {
			return err
		}
	}
	// The profiles' fieldwork: the same code, writing $FIELDWORK_CPUPROFILE (profile.go).
	if _, err := output(root, "go", "build", "-tags", "pprof", "-o", filepath.Join(dir, "fieldwork-pprof"), "."); err != nil {
		return err
	}
	bins["fieldwork-pprof"] = "."
	profiles := filepath.Join(dir, "profiles")
	if err := os.Mkdir(profiles, 0o755); err != nil {
		return err
	}
	bin := func(name string) string { return filepath.Join(dir, name) }
	n := func(full int, multiple int) string {
		v := int(math.Round(float64(full)*scale/float64(multiple))) * multiple
		return strconv.Itoa(max(v, multiple))
	}
	r := strconv.Itoa(rounds)
	mr := strconv.Itoa(markerRounds(rounds))
	steps := []struct {
		name string
		args []string
	}{
		{"consume", []string{bin("consume-bench"), "-events", n(200_000, 25), "-per-event-events", n(20_000, 25),
			"-durable-per-event-events", n(5_000, 25), "-members", "2", "-rounds", r,
			"-profile", "consume/projection,consume/audit", "-cpuprofile", filepath.Join(profiles, "consume.pprof")}},
		{"dlq", []string{bin("dlq-bench"), "-records", n(1_000_000, 1), "-small-records", n(100_000, 1),
			"-marker-events", n(200_000, 1), "-marker-table", n(10_000_000, 1), "-rounds", r, "-marker-rounds", mr, "-fieldwork", bin("fieldwork"),
			"-profile", profiles, "-profile-fieldwork", bin("fieldwork-pprof")}},
		{"replay", []string{bin("replaybench"), "-n", n(500_000, 1), "-rounds", r, "-modes", "headers,client,rewrite,journal,perftest,perftest-replay,workers1,workers2", "-perf-classpath", cp}},
		// The replay's profiles, in a pass of their own: a profiler in the measured rounds
		// would slow the in-process contenders and not kcat.
		{"replay-profile", []string{bin("replaybench"), "-n", n(500_000, 1), "-rounds", "1", "-modes", "headers,journal,client", "-no-kcat",
			"-cpuprofile", filepath.Join(profiles, "replay.pprof")}},
	}
	reports := map[string]benchkit.Report{}
	var commands []string
	for _, s := range steps {
		file := filepath.Join(dir, s.name+".json")
		args := append(s.args, "-json", file)
		fmt.Fprintf(os.Stderr, "benchsuite: %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s benchmark: %w", s.name, err)
		}
		if reports[s.name], err = benchkit.ReadJSON(file); err != nil {
			return err
		}
		pkg := bins[filepath.Base(s.args[0])]
		commands = append(commands, "go run "+pkg+" "+strings.ReplaceAll(strings.Join(s.args[1:], " "), dir+"/", "$BUILD/"))
	}
	doc := write(reports, readProfiles(profiles), scale, rounds, began, commands, versions(ctx, root, dsn), brokers)
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.WriteFile(out, []byte(doc+keptNotes(out)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchsuite: wrote %s in %s\n", out, time.Since(began).Round(time.Second))
	return nil
}

// notesMark starts the part of docs/benchmarks.md that a run keeps as it is: measurements
// made by hand (a comparison of two commits), which no run of the suite repeats.
const notesMark = "<!-- kept by make bench: notes measured by hand -->"

// keptNotes is the part of the file at path from notesMark on, "" when it has none.
func keptNotes(path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(old), notesMark); i >= 0 {
		return "\n" + string(old[i:])
	}
	return ""
}

// target is one line of the targets: a ratio of two contenders' rates (or, with
// peak, of their peak RSS), at least or at most a bound.
type target struct {
	what     string
	bench    string
	a, b     string // series keys; b "" for an absolute bound on a's peak RSS in MiB
	peak     bool   // compare peak RSS, not rates
	growth   bool   // peak RSS of a's large topic over its small one's
	atMost   bool
	bound    float64
	minRound bool // met only when every round's ratio is
	// profiles name the CPU profiles of the run (files of the profiles directory) that show
	// where a's time goes; notes the section of docs/benchmarks.md's notes measured by hand
	// that says more.
	profiles []string
	notes    string
	// limit is the series of the part of a's work that no cut of fieldwork's removes (the
	// handler's batches alone, no Kafka; the listing's read writing its lines, no parsing), and
	// limitWords what it is: when limit's ratio to b is below the bound, that part alone
	// does not reach it on this machine, whatever fieldwork does around it.
	limit      string
	limitWords *limitWords
	// client is the series of the Kafka client alone doing a's reading (and writing): its
	// process's CPU a record is the part of a's own that the client takes, which no work of
	// fieldwork's can remove (floor.clientUS).
	client string
}

const (
	consumeNotes = `"Consume: where the time goes" below`
	readNotes    = `"Reading topics: where the time goes" below`
	replayNotes  = `"Replay: where the time goes" below`
	markerNotes  = `docs/design.md, "Cost grows with the work, not the store"`
)

// limitWords say what a target's limit series measured: row heads the row's reason (row
// "0.62x, below the bound"), subject the section's sentence on it, whose names a's reach against
// it, below and above say what a limit below and above the bound mean.
type limitWords struct {
	row, subject, whose, below, above string
}

// batchesAlone is consume's limit: the handler's batches applied alone, no Kafka.
var batchesAlone = &limitWords{
	row:     "its batches alone, no Kafka, reach",
	subject: "Its batches applied alone",
	whose:   "The consumer",
	below: "The handler's own statements, with no Kafka client at all, stayed below the bound (%s) in this run: " +
		"the database's work for the handler's writes (more rows a batch than the claims alone) is the floor here, whatever the client does. " +
		"The CPU below is the consumer's own run.",
	above: "That is within the bound: the rest of the gap is the consumer's own (the client, the engine), as the profile shows.",
}

// linesAlone is dlq list's limit: the listing's own read writing, for each record, the line the
// listing writes for a dead letter whose headers were not parsed (its encoder and buffer).
var linesAlone = &limitWords{
	row:     "its own read writing its lines, no parsing, reaches",
	subject: "The listing's own read writing its lines, with no header parsed",
	whose:   "The listing",
	below: "Writing the lines alone, with the listing's own encoder and no parsing at all, stayed below the bound (%s) in this run: " +
		"writing that much JSON on this machine is the floor here, whatever the parsing costs. " +
		"The CPU below is the listing's own run.",
	above: "That is within the bound: the rest of the gap is the listing's own (parsing the headers, the pipeline), as the profile shows.",
}

// recordsAlone is the replay's limit: the Kafka client alone sending each dead letter as the
// replay sends it (routed by its headers, the provenance headers added), nothing else.
var recordsAlone = &limitWords{
	row:     "the client alone writing its records (route, provenance) reaches",
	subject: "The Kafka client alone writing the replay's records, with nothing parsed beyond the route and nothing decided, tracked or journaled",
	whose:   "The replay",
	below: "Sending the replay's records alone, with nothing parsed, decided or journaled, stayed below the bound (%s) in this run: " +
		"the records a replay must send (routed, with their provenance) are the floor here, whatever fieldwork does around them. " +
		"The CPU below is the replay's own run.",
	above: "That is within the bound: the rest of the gap is the replay's own (parsing the dead letters, deciding, tracking and journaling), as the profile shows.",
}

// journaledAlone is the replay's limit against the client-only copy: the Kafka client alone
// sending each dead letter as the replay sends it and journaling every acknowledged send as
// the replay does (the store's own journal write: the sends, the checkpoints, the counts, one
// transaction every replay.DefaultFlushRecords), nothing else.
var journaledAlone = &limitWords{
	row:     "the client alone writing and journaling its records reaches",
	subject: "The Kafka client alone writing the replay's records and journaling each send as the replay does, with nothing parsed beyond the route and the event id and nothing decided or looked up",
	whose:   "The replay",
	below: "Sending the replay's records and journaling them, with nothing parsed beyond the route and the event id and nothing decided, stayed below the bound (%s) in this run: " +
		"the records a replay must send and the journal docs/design.md §3.3 keeps of them (the checkpoints, and every acknowledged send, which `replay show`, `replay resume` and the status `replayed` read), as the store writes it, are the floor here, whatever the replay does around them. " +
		"The CPU below is the replay's own run.",
	above: "That is within the bound: the rest of the gap is the replay's own (parsing the dead letters, deciding, tracking), as the profile shows.",
}

// targets are the rows of the performance issue's table (#32), each with its bound, and the
// figures shown beside them (no bound).
var targets = []target{
	{what: "consume projection vs one transaction per event", bench: "consume", a: "consume/projection", b: "consume/projection/per-event", bound: 12, client: "consume/franz-go",
		profiles: []string{"consume.pprof.consume-projection"}, notes: consumeNotes, limit: "consume/projection/alone", limitWords: batchesAlone},
	{what: "consume projection vs the marker ceiling", bench: "consume", a: "consume/projection", b: "consume/ceiling", bound: 0.75, client: "consume/franz-go",
		profiles: []string{"consume.pprof.consume-projection"}, notes: consumeNotes, limit: "consume/projection/alone", limitWords: batchesAlone},
	{what: "consume audit vs one transaction per event", bench: "consume", a: "consume/audit", b: "consume/audit/per-event"},
	{what: "consume audit vs the marker ceiling", bench: "consume", a: "consume/audit", b: "consume/ceiling", bound: 0.8, client: "consume/franz-go",
		profiles: []string{"consume.pprof.consume-audit"}, notes: consumeNotes, limit: "consume/audit/alone", limitWords: batchesAlone},
	{what: "consume projection's batches alone (no Kafka) vs the marker ceiling", bench: "consume", a: "consume/projection/alone", b: "consume/ceiling"},
	{what: "consume audit's batches alone (no Kafka) vs the marker ceiling", bench: "consume", a: "consume/audit/alone", b: "consume/ceiling"},
	{what: "consume projection vs its batches alone (no Kafka)", bench: "consume", a: "consume/projection", b: "consume/projection/alone"},
	{what: "consume audit vs its batches alone (no Kafka)", bench: "consume", a: "consume/audit", b: "consume/audit/alone"},
	{what: "the marker ceiling (the store's claim) vs a COPY-based claim", bench: "consume", a: "consume/ceiling", b: "consume/ceiling-copy", bound: 1},
	{what: "fsync on: consume projection vs one transaction per event", bench: "consume", a: "consume/projection/durable", b: "consume/projection/per-event/durable"},
	{what: "fsync on: consume audit vs one transaction per event", bench: "consume", a: "consume/audit/durable", b: "consume/audit/per-event/durable"},
	{what: "two consume members of one group vs one", bench: "consume", a: "consume/projection/members", b: "consume/projection"},
	{what: "consume projection vs a bare franz-go consumer", bench: "consume", a: "consume/projection", b: "consume/franz-go"},
	{what: "dlq list -o jsonl vs a bare franz-go read", bench: "dlq", a: "dlq/list", b: "dlq/franz-go", bound: 0.6, client: "dlq/franz-go",
		profiles: []string{"dlq-list.pprof"}, notes: readNotes, limit: "dlq/lines", limitWords: linesAlone},
	{what: "dlq list's read writing its lines, no parsing, vs a bare franz-go read", bench: "dlq", a: "dlq/lines", b: "dlq/franz-go"},
	{what: "dlq list -o jsonl vs its read writing its lines, no parsing", bench: "dlq", a: "dlq/list", b: "dlq/lines"},
	{what: "dlq list -o jsonl into a pipe the benchmark reads vs a bare franz-go read", bench: "dlq", a: "dlq/list-pipe", b: "dlq/franz-go"},
	{what: "processed check vs a bare franz-go read", bench: "dlq", a: "processed/check", b: "dlq/franz-go", bound: 0.5, client: "dlq/franz-go",
		profiles: []string{"processed-check.pprof"}, notes: readNotes},
	{what: "inspect validate vs a bare franz-go read", bench: "dlq", a: "inspect/validate", b: "dlq/franz-go", bound: 0.5, client: "dlq/franz-go",
		profiles: []string{"inspect-validate.pprof"}, notes: readNotes},
	{what: "replay vs the client-only copy", bench: "replay", a: "replay/headers", b: "replay/client", bound: 0.85, client: "replay/client",
		profiles: []string{"replay.pprof.headers", "replay.pprof.journal", "replay.pprof.client"}, notes: replayNotes, limit: "replay/journal", limitWords: journaledAlone},
	{what: "the client alone writing the replay's records vs the client-only copy", bench: "replay", a: "replay/rewrite", b: "replay/client"},
	{what: "the client alone writing and journaling the replay's records vs the client-only copy", bench: "replay", a: "replay/journal", b: "replay/client"},
	{what: "replay vs the client alone writing its records", bench: "replay", a: "replay/headers", b: "replay/rewrite"},
	{what: "replay vs the client alone writing and journaling its records", bench: "replay", a: "replay/headers", b: "replay/journal"},
	{what: "replay vs kcat -C -e | kcat -P, every round", bench: "replay", a: "replay/headers", b: "replay/kcat", bound: 1.5, minRound: true, client: "replay/client",
		profiles: []string{"replay.pprof.headers"}, notes: replayNotes, limit: "replay/rewrite", limitWords: recordsAlone},
	{what: "the client alone writing the replay's records vs kcat -C -e | kcat -P", bench: "replay", a: "replay/rewrite", b: "replay/kcat"},
	{what: "dlq stats vs a bare franz-go read", bench: "dlq", a: "dlq/stats", b: "dlq/franz-go", bound: 0.8, client: "dlq/franz-go",
		profiles: []string{"dlq-stats.pprof"}, notes: readNotes},
	{what: "dlq stats vs kcat -C -e -J", bench: "dlq", a: "dlq/stats", b: "dlq/kcat", bound: 1.5},
	{what: "dlq list -o jsonl vs kcat -C -e -J", bench: "dlq", a: "dlq/list", b: "dlq/kcat", bound: 1.5,
		profiles: []string{"dlq-list.pprof"}, notes: readNotes},
	{what: "dlq stats peak RSS (MiB)", bench: "dlq", a: "dlq/stats", peak: true, atMost: true, bound: 100},
	{what: "dlq list peak RSS (MiB)", bench: "dlq", a: "dlq/list", peak: true, atMost: true, bound: 100},
	{what: "replay vs kafka-producer-perf-test (acks=all, defaults)", bench: "replay", a: "replay/headers", b: "replay/perftest", bound: 1.0},
	{what: "replay vs kafka-producer-perf-test (the replay's settings)", bench: "replay", a: "replay/headers", b: "replay/perftest-replay"},
	{what: "dlq stats peak RSS, large / small", bench: "dlq", a: "dlq/stats", peak: true, growth: true, atMost: true, bound: 2},
	{what: "inspect validate peak RSS, large / small", bench: "dlq", a: "inspect/validate", peak: true, growth: true, atMost: true, bound: 2},
	{what: "processed check peak RSS, large / small", bench: "dlq", a: "processed/check", peak: true, growth: true, atMost: true, bound: 2},
	// The store at scale: the same work against 10 million markers, analyzed before the
	// consumer wrote, as against its own 200,000 (docs/design.md §3.4).
	{what: "processed check, 10M-marker table (stale statistics) vs 200,000", bench: "dlq", a: "markers/large/check", b: "markers/check", bound: 0.8,
		profiles: []string{"markers-large-check.pprof"}, notes: markerNotes},
	{what: "claim, 10M-marker table (stale statistics) vs 200,000", bench: "dlq", a: "markers/large/claim", b: "markers/claim", bound: 0.8, notes: markerNotes},
}

// absolute says the bound is on a's peak RSS itself, in MiB.
func (t target) absolute() bool { return t.peak && !t.growth && t.b == "" }

// limitRatios are the per-round ratios of t's limit to b; false without a limit or its runs.
func (t target) limitRatios(rep benchkit.Report) ([]float64, bool) {
	if t.limit == "" || t.bound == 0 || t.atMost {
		return nil, false
	}
	l := t
	l.a, l.minRound = t.limit, false
	return l.ratios(rep)
}

// limited is what t's limit says of t in rep: the median of its rounds' ratios to b (their
// lowest for a bound every round must meet), and whether that is below the bound; ok is false
// without a limit or its runs.
func (t target) limited(rep benchkit.Report) (ratio float64, below, ok bool) {
	xs, ok := t.limitRatios(rep)
	if !ok {
		return 0, false, false
	}
	ratio = benchkit.Median(xs)
	if t.minRound {
		ratio, _ = benchkit.Spread(xs)
	}
	return ratio, ratio < t.bound, true
}

// ratios are the per-round ratios of a target (or its peak RSS values for an absolute bound).
func (t target) ratios(rep benchkit.Report) ([]float64, bool) {
	a, ok := rep.Get(t.a)
	if !ok {
		return nil, false
	}
	b := t.b
	if t.growth { // against the small topic's series
		b = t.a + "@" + smallSize(rep, t.a)
	}
	if b == "" {
		return a.Peaks(), true
	}
	bs, ok := rep.Get(b)
	if !ok {
		return nil, false
	}
	var out []float64
	for _, ra := range a.Runs {
		for _, rb := range bs.Runs {
			if rb.Round != ra.Round {
				continue
			}
			if t.peak {
				out = append(out, ra.PeakMiB()/rb.PeakMiB())
			} else {
				out = append(out, ra.Rate()/rb.Rate())
			}
		}
	}
	return out, len(out) > 0
}

// smallSize is the size suffix of key's small-topic series ("dlq/stats@100000").
func smallSize(rep benchkit.Report, key string) string {
	for _, s := range rep.Series {
		if size, ok := strings.CutPrefix(s.Key, key+"@"); ok {
			return size
		}
	}
	return ""
}

// markerRounds is the rounds of the dlq benchmark's marker-table contenders: three times the
// others', since a round of them takes seconds and their two tables' checks swing from round to
// round more than their bound leaves.
func markerRounds(rounds int) int { return 3 * rounds }

// write is docs/benchmarks.md of the reports.
func write(reps map[string]benchkit.Report, profiles map[string]string, scale float64, rounds int, began time.Time, commands []string, vers [][2]string, brokers string) string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	command := "make bench"
	if scale != 1 {
		command = fmt.Sprintf("BENCH_SCALE=%g make bench", scale)
	}
	if rounds != 3 {
		command = fmt.Sprintf("BENCH_ROUNDS=%d %s", rounds, command)
	}
	p("# Benchmarks\n\n")
	p("Written by `%s` (internal/benchsuite) on %s UTC; the whole run took %s. Every figure is from\n",
		command, began.UTC().Format("2006-01-02 15:04"), time.Since(began).Round(time.Second))
	p("that one run, against the real Kafka and PostgreSQL of `scripts/services.sh` on this machine;\n")
	p("every benchmark alternates its contenders over %d rounds (the order rotates every round; the\n", rounds)
	p("marker-table contenders, seconds a round, over %d rounds of their own) and\n", markerRounds(rounds))
	p("reports the median and the spread (lowest–highest). A ratio is the median of the rounds' ratios\n")
	p("(each round's two runs side by side), with its spread. Not part of the tests.\n\n")
	if scale != 1 {
		p("**Scaled run (BENCH_SCALE=%g):** the data sets are %g of the full sizes below; the figures\n", scale, scale)
		p("check the path, not the targets (start-up costs weigh more on small sets).\n\n")
	}
	p("## Targets\n\n| Target | Ratio (median) | Spread of rounds | Bound | Met | Why not: the machine's CPU a record |\n|---|---:|---|---|---|---|\n")
	for _, t := range targets {
		p("%s", targetRow(t, reps[t.bench]))
	}
	p("\n")
	writeWhyNot(p, reps, profiles)
	for _, name := range []string{"consume", "dlq", "replay"} {
		if rep, ok := reps[name]; ok {
			writeBench(p, name, rep)
		}
	}
	p("Peak RSS is the child process's maximum resident set size as wait4 reports it, read through\n")
	p("GNU time (%s); contenders run in-process (consume, replay, the client-only copy) have none.\n", benchkit.TimeBinary)
	p("kafka-producer-perf-test's rate is the one it reports, from its first send (the JVM's start not\n")
	p("counted); the replay's is end to end (plan, send, journal, summary). Cores busy is the machine's\n")
	p("busy CPU time over the run (/proc/stat: every process, the broker's and PostgreSQL's too) over its\n")
	p("wall time and cores.\n\n")
	p("## Machine\n\n")
	for _, kv := range machine() {
		p("- %s: %s\n", kv[0], kv[1])
	}
	p("- broker: %s (single KRaft node, loopback)\n\n## Versions\n\n", brokers)
	for _, kv := range vers {
		p("- %s: %s\n", kv[0], kv[1])
	}
	p("\n## Command\n\n```\n%s\n```\n\nwhich ran, in order (`$BUILD` is a temporary directory of the binaries it built):\n\n```\n%s\n```\n",
		command, strings.Join(commands, "\n"))
	return w.String()
}

// targetRow is the Targets table's row of t, measured in rep.
func targetRow(t target, rep benchkit.Report) string {
	xs, ok := t.ratios(rep)
	if !ok {
		return fmt.Sprintf("| %s | — | — | %s | not measured | |\n", cell(t.what), bound(t))
	}
	med := benchkit.Median(xs)
	lo, hi := benchkit.Spread(xs)
	met := "—"
	if t.bound > 0 {
		met = map[bool]string{true: "met", false: "not met"}[t.met(rep)]
	}
	unit := "x"
	if t.absolute() {
		unit = " MiB"
		med = hi // the highest peak of all rounds
	}
	why := ""
	if met == "not met" {
		if f, ok := t.floor(rep, runtime.NumCPU()); ok {
			why = f.short()
		}
		if r, below, _ := t.limited(rep); below {
			lowest := ""
			if t.minRound {
				lowest = " in its lowest round"
			}
			why = fmt.Sprintf("%s %sx%s, below the bound; %s", t.limitWords.row, t.figure(r), lowest, why)
		}
	}
	return fmt.Sprintf("| %s | %s%s | %.2f–%.2f | %s | %s | %s |\n", cell(t.what), t.figure(med), unit, lo, hi, bound(t), met, why)
}

// figure writes v with two decimals, or three when two would round it onto t's bound (0.797
// against a bound of 0.8 is not met, and reads "0.80" with two).
func (t target) figure(v float64) string {
	if s := fmt.Sprintf("%.2f", v); t.bound == 0 || v == t.bound || s != fmt.Sprintf("%.2f", t.bound) {
		return s
	}
	return fmt.Sprintf("%.3f", v)
}

// met says whether t's bound holds in rep (false for a target without a bound or not measured).
func (t target) met(rep benchkit.Report) bool {
	xs, ok := t.ratios(rep)
	if !ok || t.bound == 0 {
		return false
	}
	if t.absolute() {
		_, hi := benchkit.Spread(xs)
		return hi <= t.bound
	}
	val := benchkit.Median(xs)
	if t.minRound {
		val, _ = benchkit.Spread(xs)
	}
	return (!t.atMost && val >= t.bound) || (t.atMost && val <= t.bound)
}

// floor is what the machine's CPU says of an unmet rate target: how busy the cores were while
// a ran, the machine's CPU time a record a used (every process: fieldwork's, the broker's,
// PostgreSQL's) and fieldwork's own part of it, and the most the machine could spend a record
// if a ran at the bound's rate with the cores as busy as they were (a pipeline that kept them
// 87% busy is not taken to keep them busier at a faster rate). Busy cores and a record costing more
// than that budget mean the target cannot be met on this machine without less work a record;
// idle cores mean a waits (round trips, the disk), which the profile and the notes explain.
type floor struct {
	cores             int
	busy              float64 // median share of the cores busy while a ran
	machineUS, selfUS float64 // medians, µs a record
	// pgUS and brokerUS are the parts of machineUS that PostgreSQL and the Kafka broker spent
	// (medians, µs a record; 0 in a report written before they were measured).
	pgUS, brokerUS float64
	// clientUS is the CPU a record of the Kafka client alone doing the same reads (target.client;
	// 0: none named or measured).
	clientUS float64
	budgetUS float64 // the machine's CPU a record at the bound's rate, the cores as busy as they were
}

// cpuBound is the share of busy cores above which a run is taken to be bound by the CPU.
const cpuBound = 0.85

func (t target) floor(rep benchkit.Report, cores int) (floor, bool) {
	a, okA := rep.Get(t.a)
	b, okB := rep.Get(t.b)
	if !okA || !okB || t.peak || t.bound == 0 || t.atMost {
		return floor{}, false
	}
	f := floor{cores: cores}
	var busy, machine, self, pg, broker []float64
	for _, r := range a.Runs {
		if r.MachineS <= 0 || r.Records <= 0 {
			return floor{}, false
		}
		busy = append(busy, r.Busy(f.cores))
		machine, self = append(machine, perRecordUS(r, r.MachineS)), append(self, perRecordUS(r, r.CPUS))
		pg, broker = append(pg, perRecordUS(r, r.PostgresS)), append(broker, perRecordUS(r, r.BrokerS))
	}
	f.busy, f.machineUS, f.selfUS = benchkit.Median(busy), benchkit.Median(machine), benchkit.Median(self)
	f.pgUS, f.brokerUS = benchkit.Median(pg), benchkit.Median(broker)
	rateB := benchkit.Median(b.Rates())
	if t.minRound { // every round: the fastest of b's rounds
		_, rateB = benchkit.Spread(b.Rates())
	}
	if rateB <= 0 {
		return floor{}, false
	}
	f.budgetUS = float64(f.cores) * f.busy / (t.bound * rateB) * 1e6
	if c, ok := rep.Get(t.client); ok {
		var us []float64
		for _, r := range c.Runs {
			if r.Records > 0 && r.CPUS > 0 {
				us = append(us, perRecordUS(r, r.CPUS))
			}
		}
		f.clientUS = benchkit.Median(us)
	}
	return f, true
}

// perRecordUS is seconds of r's spread over its records, in µs a record.
func perRecordUS(r benchkit.Run, seconds float64) float64 { return seconds / float64(r.Records) * 1e6 }

// othersUS is the machine's CPU a record outside fieldwork's process: the broker's,
// PostgreSQL's, the reader of its output, the machine's other work.
func (f floor) othersUS() float64 { return max(0, f.machineUS-f.selfUS) }

// services says whether PostgreSQL's and the broker's parts of othersUS were measured (a
// report written before them has neither).
func (f floor) services() bool { return f.pgUS != 0 || f.brokerUS != 0 }

// restUS is othersUS without PostgreSQL's and the broker's parts: the reader of the output,
// the machine's other work.
func (f floor) restUS() float64 { return max(0, f.othersUS()-f.pgUS-f.brokerUS) }

// restText is othersUS and who spent it, for long.
func (f floor) restText() string {
	if !f.services() {
		return fmt.Sprintf("the rest (the broker, PostgreSQL, the reader of its output, the machine's other work) %.1f", f.othersUS())
	}
	return fmt.Sprintf("PostgreSQL's processes %.1f, the Kafka broker %.1f, the rest (the reader of its output, the machine's other work) %.1f",
		f.pgUS, f.brokerUS, f.restUS())
}

// usedText is the machine's CPU a record and who spent it, for short.
func (f floor) usedText() string {
	s := fmt.Sprintf("used %.1f µs (fieldwork %.1f", f.machineUS, f.selfUS)
	if f.services() {
		s += fmt.Sprintf(", PostgreSQL %.1f, the broker %.1f, the rest %.1f", f.pgUS, f.brokerUS, f.restUS())
	}
	return s + ")"
}

// within says the machine spent no more CPU a record than the bound's rate allows: the CPU is
// not what kept the ratio under the bound (the rounds' rates swung, or the run waited).
func (f floor) within() bool { return f.machineUS <= f.budgetUS }

func (f floor) short() string {
	if f.busy < cpuBound {
		return fmt.Sprintf("waits: cores %.0f%% busy; %s", f.busy*100, f.usedText())
	}
	if f.within() {
		return fmt.Sprintf("within the CPU budget: cores %.0f%% busy; budget %.1f µs, %s", f.busy*100, f.budgetUS, f.usedText())
	}
	if f.othersUS() >= f.budgetUS {
		return fmt.Sprintf("CPU-bound: cores %.0f%% busy; budget %.1f µs, the other processes alone used %.1f (fieldwork %.1f)", f.busy*100, f.budgetUS, f.othersUS(), f.selfUS)
	}
	return fmt.Sprintf("CPU-bound: cores %.0f%% busy; budget %.1f µs, %s: fieldwork needs ≤ %.1f", f.busy*100, f.budgetUS, f.usedText(), f.budgetUS-f.othersUS())
}

func (f floor) long() string {
	if f.busy < cpuBound {
		return fmt.Sprintf("Not bound by the CPU: the %d cores were %.0f%% busy while it ran (the machine's CPU a record %.1f µs: fieldwork's own %.1f, %s). "+
			"The rest of its time it waited (round trips, the database's writes, the broker), as the profile and the notes show.",
			f.cores, f.busy*100, f.machineUS, f.selfUS, f.restText())
	}
	head := fmt.Sprintf("Bound by the CPU: the %d cores were %.0f%% busy while it ran. At the bound's rate, with the cores as busy, "+
		"the machine could spend %.1f µs of CPU a record; it spent %.1f: fieldwork's own process %.1f, %s. ",
		f.cores, f.busy*100, f.budgetUS, f.machineUS, f.selfUS, f.restText())
	if f.within() {
		return head + "That is within the budget: the machine's CPU is not what kept the ratio under the bound. " +
			"The ratio is the median of the rounds' ratios, and the rates swung from round to round (the spread); the run also waited part of the time."
	}
	if f.othersUS() >= f.budgetUS {
		return head + "The rest alone is over the budget: the bound cannot be met on this machine even by a process that took no CPU at all, " +
			"only with less work a record in the broker or PostgreSQL (fewer or cheaper statements, fewer bytes) or with more cores than the services share."
	}
	return head + fmt.Sprintf("Meeting the bound here takes fieldwork's own process down to %.1f µs a record (%.0f%% less), the rest staying as it is; the profile shows where its time goes.",
		f.budgetUS-f.othersUS(), 100*(1-(f.budgetUS-f.othersUS())/f.selfUS)) + f.clientText()
}

// clientText says, when the client alone was measured, how much of fieldwork's own process
// the Kafka client takes and what the bound leaves the work beyond it.
func (f floor) clientText() string {
	if f.clientUS <= 0 {
		return ""
	}
	left := f.budgetUS - f.othersUS() - f.clientUS
	s := fmt.Sprintf(" The Kafka client alone, doing the same work with Kafka (the bare read, consumer or copy), spent %.1f µs a record in its own process: fieldwork's work beyond the client is about %.1f µs a record", f.clientUS, max(0, f.selfUS-f.clientUS))
	if left <= 0 {
		return s + ", and the client with the rest already fills the budget: no work beyond the client fits, and the bound cannot be met on this machine with this client and these services."
	}
	return s + fmt.Sprintf(", and the bound leaves it %.1f (%.0f%% less).", left, 100*max(0, 1-left/(f.selfUS-f.clientUS)))
}

// limitText says what t's limit measured (ratio, its median ratio to b, below the bound when
// below): how far the handler's own statements got without the client, and how far the
// consumer got against them.
func (t target) limitText(rep benchkit.Report, ratio float64, below bool) string {
	label := t.limit
	if s, ok := rep.Get(t.limit); ok {
		label = s.Label
	}
	xs, _ := t.limitRatios(rep)
	lo, hi := benchkit.Spread(xs)
	w := t.limitWords
	of := "the median of the rounds"
	if t.minRound {
		of = fmt.Sprintf("in its lowest round (median %.2f)", benchkit.Median(xs))
	}
	head := fmt.Sprintf("%s (`%s`: %s) reached %sx, %s (%.2f–%.2f).", w.subject, t.limit, label, t.figure(ratio), of, lo, hi)
	if ys, ok := (target{a: t.a, b: t.limit}).ratios(rep); ok {
		lo, hi := benchkit.Spread(ys)
		head += fmt.Sprintf(" %s reached %.2fx of it (%.2f–%.2f).", w.whose, benchkit.Median(ys), lo, hi)
	}
	if !below {
		return head + " " + w.above
	}
	return head + " " + fmt.Sprintf(w.below, bound(t))
}

// writeWhyNot writes, for every target not met, what the machine's CPU says of it (floor), the
// top of its CPU profiles and the notes that say more.
func writeWhyNot(p func(format string, args ...any), reps map[string]benchkit.Report, profiles map[string]string) {
	var unmet []target
	for _, t := range targets {
		if t.bound > 0 && !t.absolute() && !t.met(reps[t.bench]) {
			if _, ok := t.ratios(reps[t.bench]); ok {
				unmet = append(unmet, t)
			}
		}
	}
	if len(unmet) == 0 {
		return
	}
	p("## Targets not met: why\n\n")
	p("The machine's CPU a record is its busy time over the run (/proc/stat, every core and process) over the\n")
	p("records, and PostgreSQL's and the Kafka broker's parts of it their processes' CPU time over the same run (/proc/PID/stat:\n")
	p("every postgres process with its reaped backends, and the JVM running kafka.Kafka); a target is taken to be bound by the CPU\n")
	p("when more than %.0f%% of the cores were busy. The\n", cpuBound*100)
	p("profiles are CPU profiles of the same run (`go tool pprof -top -cum`): consume's of the first round\n")
	p("of its contender, the reads' of one more run of the command (fieldwork built with `-tags pprof`), the\n")
	p("replay's of a pass of one round after the measured ones.\n\n")
	var shown []string // the profiles the targets name, each shown once after them
	for _, t := range unmet {
		rep := reps[t.bench]
		p("### %s\n\n", t.what)
		if r, below, ok := t.limited(rep); ok {
			p("%s\n\n", t.limitText(rep, r, below))
		}
		if f, ok := t.floor(rep, runtime.NumCPU()); ok {
			p("%s\n\n", f.long())
		}
		var names []string
		for _, name := range t.profiles {
			if _, ok := profiles[name]; ok {
				names = append(names, "`"+name+"`")
				if !slices.Contains(shown, name) {
					shown = append(shown, name)
				}
			}
		}
		if len(names) > 0 {
			p("Profile: %s (below). ", strings.Join(names, ", "))
		}
		if t.notes != "" {
			p("More in %s.", t.notes)
		}
		p("\n\n")
	}
	if len(shown) > 0 {
		p("### The profiles\n\n")
		for _, name := range shown {
			p("`%s`:\n\n```\n%s```\n\n", name, profiles[name])
		}
	}
}

// readProfiles is `go tool pprof -top -cum` of every profile in dir, by file name: its header
// and its first lines.
func readProfiles(dir string) map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		top, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=14", filepath.Join(dir, e.Name())).Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchsuite: pprof %s: %v\n", e.Name(), err)
			continue
		}
		var b strings.Builder
		for _, line := range strings.Split(string(top), "\n") {
			if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Type:") ||
				strings.HasPrefix(line, "Time:") || strings.HasPrefix(line, "Dropped") || strings.TrimSpace(line) == "" {
				continue
			}
			b.WriteString(line + "\n")
		}
		out[e.Name()] = b.String()
	}
	return out
}

// writeBench writes the section of the benchmark name: its notes and a row a contender.
func writeBench(p func(format string, args ...any), name string, rep benchkit.Report) {
	p("## %s\n\n", map[string]string{"consume": "Consume", "dlq": "Reading topics (dlq, processed check, inspect validate)", "replay": "Replay"}[name])
	for _, n := range rep.Notes {
		p("- %s\n", n)
	}
	p("\n| Contender | Records | Records/s (median) | Spread | CPU s (median) | Cores busy (median) | Peak RSS MiB (highest) |\n|---|---:|---:|---|---:|---:|---:|\n")
	for _, s := range rep.Series {
		lo, hi := benchkit.Spread(s.Rates())
		cpu := make([]float64, len(s.Runs))
		var busy []float64
		for i, r := range s.Runs {
			cpu[i] = r.CPUS
			if r.MachineS > 0 {
				busy = append(busy, r.Busy(runtime.NumCPU()))
			}
		}
		busyS := "—"
		if len(busy) > 0 {
			busyS = fmt.Sprintf("%.0f%%", 100*benchkit.Median(busy))
		}
		_, peak := benchkit.Spread(s.Peaks())
		peakS := "—"
		if peak > 0 {
			peakS = fmt.Sprintf("%.1f", peak)
		}
		p("| `%s` %s | %d | %.0f | %.0f–%.0f | %.2f | %s | %s |\n", s.Key, cell(s.Label), s.Runs[0].Records, benchkit.Median(s.Rates()), lo, hi, benchkit.Median(cpu), busyS, peakS)
	}
	p("\n")
}

// cell escapes the pipes of a table cell ("kcat -C -e | kcat -P").
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func bound(t target) string {
	switch {
	case t.bound == 0:
		return "—"
	case t.minRound:
		return fmt.Sprintf("≥ %gx every round", t.bound)
	case t.absolute():
		return fmt.Sprintf("< %g MiB", t.bound)
	case t.atMost:
		return fmt.Sprintf("≤ %gx", t.bound)
	}
	return fmt.Sprintf("≥ %gx", t.bound)
}

func machine() [][2]string {
	model := "unknown"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	mem := "unknown"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`MemTotal:\s+(\d+) kB`).FindSubmatch(b); m != nil {
			kb, _ := strconv.ParseFloat(string(m[1]), 64)
			mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	load, _ := os.ReadFile("/proc/loadavg")
	return [][2]string{
		{"cores", fmt.Sprintf("%d (%s)", runtime.NumCPU(), model)},
		{"memory", mem},
		{"kernel", "Linux " + strings.TrimSpace(string(kernel))},
		{"load average at the end (1, 5, 15 min)", strings.Join(strings.Fields(string(load))[:3], ", ")},
	}
}

func versions(ctx context.Context, root, dsn string) [][2]string {
	kafka := "unknown"
	if b, err := os.ReadFile(filepath.Join(root, "scripts/kafka/pom.xml")); err == nil {
		if m := regexp.MustCompile(`<kafka.version>(.*)</kafka.version>`).FindSubmatch(b); m != nil {
			kafka = "Apache Kafka " + string(m[1]) + " (org.apache.kafka:kafka_2.13, KRaft)"
		}
	}
	pg := "unknown"
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		_ = conn.QueryRow(ctx, "SELECT version()").Scan(&pg)
		_ = conn.Close(ctx)
	}
	java, _ := output(root, "sh", "-c", "java -version 2>&1")
	return [][2]string{
		{"Go", runtime.Version()},
		{"Kafka", kafka},
		{"PostgreSQL", pg},
		{"kcat", benchkit.KcatVersion()},
		{"Java (kafka-producer-perf-test)", firstLine(java)},
	}
}

// output runs name args in dir with stderr passed through and returns its stdout.
func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out.String(), nil
}

func firstLine(s string) string { l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); return l }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("run the benchmarks from inside the module (go env GOMOD is empty)")
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchsuite:", err)
	os.Exit(1)
}
