package demo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/devstack"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// The story's names.
const (
	TopicTasks = devstack.TopicTasks
	TopicDLQ   = devstack.TopicDLQ
	// Group is the consumer group of the projection, and its consumer name in the markers.
	Group = "task-projection"
	// RejectedType is the event type the buggy release rejects.
	RejectedType = sample.TypeReopened
	// BuggyRelease and FixedRelease name the projection releases of the story.
	BuggyRelease = "1.4"
	FixedRelease = "1.5"
	// StoreFile is the SQLite store's file name in Options.Dir.
	StoreFile = "fieldwork-demo.db"
	// ReplayReason is the replay's --reason.
	ReplayReason = "projection " + FixedRelease + " accepts " + RejectedType
)

// Defaults of Options.
const (
	DefaultSeed           = 1
	DefaultStopWhenIdle   = 2 * time.Second
	DefaultConsumeTimeout = 25 * time.Second
)

// Options configure a Demo.
type Options struct {
	// Dir is the directory the store file (StoreFile) is created in; it must exist and must
	// not hold a store of an earlier demo.
	Dir string
	// Port is the broker's loopback port; 0 takes a free one.
	Port int
	// Seed chooses the sample stream (DefaultSeed when 0).
	Seed uint64
	// Operator is who the replay journal says ran the replay ("demo" when empty).
	Operator string
	// Narrator tells the story (nothing is told when nil).
	Narrator Narrator
	// StopWhenIdle is the consumer's --stop-when-idle (DefaultStopWhenIdle when 0).
	StopWhenIdle time.Duration
	// ConsumeTimeout bounds one consumer run (DefaultConsumeTimeout when 0).
	ConsumeTimeout time.Duration
}

// Demo is the story and the stack it runs on. Run it once; Close stops the stack.
type Demo struct {
	o       Options
	n       Narrator
	stack   *devstack.Stack
	cluster *kafka.Cluster
	sum     *Summary
	step    int
	title   string
	// tryDeadLetter is a malformed dead letter left pending, for Try.
	tryDeadLetter string
}

// StoreExistsError is New's error when Dir holds the store of an earlier demo: the story
// needs a store without markers.
type StoreExistsError struct{ Path string }

func (e *StoreExistsError) Error() string {
	return fmt.Sprintf("%s exists (from an earlier demo?): remove it or choose another directory", e.Path)
}

// New checks o and returns a demo ready to Run. Nothing is started yet.
func New(o Options) (*Demo, error) {
	if o.Dir == "" {
		return nil, errors.New("demo: no directory for the store")
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Operator == "" {
		o.Operator = "demo"
	}
	if o.StopWhenIdle <= 0 {
		o.StopWhenIdle = DefaultStopWhenIdle
	}
	if o.ConsumeTimeout <= 0 {
		o.ConsumeTimeout = DefaultConsumeTimeout
	}
	n := o.Narrator
	if n == nil {
		n = silent{}
	}
	d := &Demo{o: o, n: n}
	if _, err := os.Stat(d.StorePath()); err == nil {
		return nil, &StoreExistsError{Path: d.StorePath()}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return d, nil
}

// StorePath is where the store file is (or will be).
func (d *Demo) StorePath() string { return filepath.Join(d.o.Dir, StoreFile) }

// Brokers is the broker's address once Run has started it ("" before).
func (d *Demo) Brokers() string {
	if d.stack == nil {
		return ""
	}
	return d.stack.Addr
}

// DSN is the store's DSN.
func (d *Demo) DSN() string { return "sqlite:" + d.StorePath() }

// Close stops the broker (its topics are gone) and closes the store; the store file stays in
// Dir. Safe to call more than once, and before Run.
func (d *Demo) Close() error {
	if d.cluster != nil {
		d.cluster.Close()
		d.cluster = nil
	}
	if d.stack != nil {
		return d.stack.Close()
	}
	return nil
}

// Run tells the whole story and returns its summary. The stack keeps running after Run
// returns (for --keep) until Close. On an error the summary holds the steps done so far.
func (d *Demo) Run(ctx context.Context) (*Summary, error) {
	if d.sum != nil {
		return nil, errors.New("demo: Run called twice")
	}
	started := time.Now()
	d.sum = newSummary(d.o.Seed)
	d.sum.Dir, d.sum.DSN = d.o.Dir, d.DSN()
	err := d.run(ctx)
	d.sum.ElapsedMS = time.Since(started).Milliseconds()
	if err == nil {
		err = d.sum.Check()
	}
	return d.sum, err
}

func (d *Demo) run(ctx context.Context) error {
	steps := []func(context.Context) error{
		d.produce,
		d.consumeBuggy,
		d.inspectDeadLetters,
		d.replay,
		d.consumeFixed,
		d.processedStats,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.title != "" {
				return fmt.Errorf("demo step %d (%s): %w", d.step, d.title, err)
			}
			return err
		}
	}
	return nil
}

// begin starts step n.
func (d *Demo) begin(title string) {
	d.step++
	d.title = title
	d.n.Step(d.step, title)
}

// command announces a command line and records it; result is its one-line outcome.
func (d *Demo) command(line string) *StepRecord {
	d.n.Command(line)
	d.sum.Steps = append(d.sum.Steps, StepRecord{Step: d.step, Title: d.title, Command: line})
	return &d.sum.Steps[len(d.sum.Steps)-1]
}

func (d *Demo) say(format string, args ...any) { d.n.Say(fmt.Sprintf(format, args...)) }

// Step 1: the stack and the events.
func (d *Demo) produce(ctx context.Context) error {
	d.begin("Produce task events, faults included")
	stack, err := devstack.Start(ctx, devstack.Options{
		Port: d.o.Port, DSN: d.DSN(), Seed: d.o.Seed, NoDeadLetters: true,
	})
	if err != nil {
		if errors.Is(err, devstack.ErrPortInUse) {
			return fmt.Errorf("%w; choose another port with --port (0 takes a free one)", err)
		}
		return err
	}
	d.stack = stack
	d.sum.Brokers = stack.Addr
	d.cluster, err = kafka.Connect(ctx, config.Connection{Brokers: []string{stack.Addr}}, 10*time.Second)
	if err != nil {
		return err
	}

	rec := d.command(fmt.Sprintf("fieldwork dev --port %d --seed %d --dsn %s", portOf(stack.Addr), d.o.Seed, shellQuote(d.DSN())))
	m := stack.Seeded.Manifest
	c := m.Counts()
	d.sum.EventsProduced, d.sum.Produced, d.sum.DistinctEvents = c.Records, c, m.UniqueEventIDs()
	rec.Result = fmt.Sprintf("%d records into %s: %d events, %d duplicates, %d stale versions, %d poison", c.Records, TopicTasks, c.Events, c.Duplicates, c.Stale, c.Poison)
	d.n.Result(&SeedResult{Seeded: stack.Seeded, Brokers: stack.Addr, DSN: d.DSN()})
	d.say("An in-process Kafka broker (kfake) listens on %s with the topics %s and %s (%d partitions each), and an SQLite dedup store is migrated at %s.",
		stack.Addr, TopicTasks, TopicDLQ, stack.Partitions, d.StorePath())
	d.say("The tasks service produced %d records into %s, keyed by task id so that one task's events stay in order in one partition: "+
		"%d events of %d tasks, and what at-least-once delivery really brings: %d producer-retry duplicates (the same bytes twice), "+
		"%d stale versions (an older version re-emitted later under a new event id) and %d poison records that no consumer can read. "+
		"%s is empty: dead letters are the consumer's to write (fieldwork dev would seed some; the demo does not).",
		c.Records, TopicTasks, c.Events, len(m.Aggregates), c.Duplicates, c.Stale, c.Poison, TopicDLQ)
	d.say("The same stream is in %s in Avro, in the Confluent wire format (a magic byte and a schema id before each value), "+
		"its schema in an in-memory schema registry at %s: fieldwork decodes such values through the registry wherever it reads a payload.",
		devstack.TopicAvro, stack.SchemaRegistry)
	return nil
}

// consumeCommand is the `fieldwork consume` line of the story.
func (d *Demo) consumeCommand(migrate bool) string {
	line := "fieldwork consume --topic " + TopicTasks + " --group " + Group + " --handler projection"
	if migrate {
		line += " --migrate"
	}
	return line + " --stop-when-idle " + d.o.StopWhenIdle.String() + d.conn(true, true)
}

// conn is the connection flags of a command line.
func (d *Demo) conn(brokers, dsn bool) string {
	s := ""
	if brokers {
		s += " --brokers " + d.stack.Addr
	}
	if dsn {
		s += " --dsn " + shellQuote(d.DSN())
	}
	return s
}

// Step 2: the buggy consumer.
func (d *Demo) consumeBuggy(ctx context.Context) error {
	d.begin("Consume with the reference consumer (projection " + BuggyRelease + ", which has a bug)")
	d.say("The projection keeps each task's current state in a table next to the markers, and applies an event only when its version is newer than the stored one. "+
		"Release %s has a bug: it rejects %s for good (\"a done task cannot be reopened\"). The demo runs the bundled projection wrapped with that bug.",
		BuggyRelease, RejectedType)
	run, err := d.consumeWith(ctx, true, BuggyRelease)
	if err != nil {
		return err
	}
	staleNote := ""
	if rejected := int64(len(d.stack.Seeded.Manifest.Stale)) - run.Stale; rejected > 0 {
		staleNote = fmt.Sprintf(" (%s re-emitted a %s and was rejected with the others)", wording.Count(rejected, "other stale version", "other stale versions"), RejectedType)
		if rejected > 1 {
			staleNote = strings.Replace(staleNote, "and was", "and were", 1)
		}
	}
	d.say("Every record was read and every partition reached its end. %s absorbed: a second copy of an event is known by its event id "+
		"(earlier in the batch, or by its marker in the store) and skipped, not applied twice. "+
		"%s: older than the version stored, and still marked as handled%s. "+
		"%s dead-lettered to %s, without a marker, and the events behind them in the partition went on: %s.",
		wording.Count(run.Duplicates, "duplicate was", "duplicates were"), wording.Count(run.Stale, "stale version was a no-op", "stale versions were no-ops"), staleNote,
		wording.Count(run.DeadLettered, "record was", "records were"), TopicDLQ, reasonsLine(run.DeadLetteredByReason))
	if n := run.DeadLetteredByReason[dlq.ReasonRejected]; n > 0 {
		d.say("The %s are the stream's %s events: the bug. The %s are its poison records: %s.",
			wording.Count(n, "rejected dead letter", "rejected dead letters"), RejectedType,
			wording.Count(run.DeadLetteredByReason[dlq.ReasonMalformed], "malformed one", "malformed ones"), poisonLine(d.stack.Seeded.Manifest.Poison))
	}
	return nil
}

// consumeWith runs the bundled projection of release (with the bug when buggy, and migrating
// the store then: it is the first run) as a step of the story: its command line, the run and
// its result.
func (d *Demo) consumeWith(ctx context.Context, buggy bool, release string) (ConsumeRun, error) {
	h, err := d.projection(buggy)
	if err != nil {
		return ConsumeRun{}, err
	}
	rec := d.command(d.consumeCommand(buggy))
	run, err := d.runConsumer(ctx, h, buggy, release)
	if err != nil {
		return ConsumeRun{}, err
	}
	rec.Result = consumeLine(run)
	d.n.Result(&ConsumeResult{ConsumeRun: run})
	return run, nil
}

func (d *Demo) runConsumer(ctx context.Context, handler consumer.Handler, migrate bool, release string) (ConsumeRun, error) {
	before, err := d.dlqEnds(ctx)
	if err != nil {
		return ConsumeRun{}, err
	}
	start := time.Now()
	st, err := d.consumeOnce(ctx, handler, migrate)
	if err != nil {
		return ConsumeRun{}, err
	}
	run := ConsumeRun{Release: release, Handler: handler.(consumer.Namer).Name(), ConsumeStats: statsOf(st), ElapsedMS: time.Since(start).Milliseconds()}
	if release == BuggyRelease {
		run.Rejects = RejectedType
	}
	run.DeadLetteredByReason, err = d.deadLettersSince(ctx, before)
	if err != nil {
		return run, err
	}
	d.sum.addRun(run)
	return run, nil
}

// Step 3: what the dead letters look like.
func (d *Demo) inspectDeadLetters(ctx context.Context) error {
	d.begin("Inspect the dead letters")
	rec := d.command("fieldwork dlq list --topic " + TopicDLQ + d.conn(true, true))
	entries, err := d.listDeadLetters(ctx, nil)
	if err != nil {
		return err
	}
	counts := countStatuses(entries)
	rec.Result = fmt.Sprintf("%d dead letters: %s", len(entries), statusLine(counts))
	d.n.Result(&DeadLettersResult{Entries: entries})

	rec = d.command("fieldwork dlq stats --topic " + TopicDLQ + " --group-by reason" + d.conn(true, true))
	rep, err := d.deadLetterStats(ctx)
	if err != nil {
		return err
	}
	rec.Result = statsLine(rep)
	d.n.Result(&DeadLetterStatsResult{Report: rep})
	d.say("Each dead letter keeps the original key, value and headers byte for byte and adds fw.dlq.* headers: where the record was, which group and handler gave up, why (reason and error), and when. " +
		"The status comes from the dedup store: pending means the consumer has no marker for the event, so it still needs work; " +
		"unknown means the dead letter carries no event id to look a marker up by (a value that is not JSON, an event without an id).")
	return nil
}

// Step 4: plan, fix, replay.
func (d *Demo) replay(ctx context.Context) error {
	d.begin("Plan a replay, deploy the fix, replay")
	d.say("A replay sends a dead letter's original bytes back to its topic. That cures the rejected events once the handler is fixed. " +
		"It cannot cure the malformed ones: the same broken bytes would only be dead-lettered again; their fix is in the producer. " +
		"So the replay selects --dlq-reason rejected.")
	base := "fieldwork replay --topic " + TopicDLQ + " --dlq-reason rejected"
	rec := d.command(base + d.conn(true, true))
	dry, err := d.replayFlow(ctx, false)
	if err != nil {
		return err
	}
	rep := dry.Report
	rec.Result = fmt.Sprintf("dry run: %d of %d dead letters selected, %d to send to %s; nothing sent", rep.Counts.Selected, rep.Counts.Read, rep.Counts.ToSend, TopicTasks)
	d.n.Result(&ReplayPlanResult{Report: rep})
	d.say("The plan fixed %s's end offsets when it was made: records that arrive later, the replay's own output included, are never read. "+
		"Each keyed record goes to the partition Kafka's default partitioner gives its key, the one its task's other events are in.", TopicDLQ)

	d.say("Release %s of the projection is deployed: it applies %s again.", FixedRelease, RejectedType)
	rec = d.command(base + " --execute --yes --reason " + shellQuote(ReplayReason) + d.conn(true, true))
	run, err := d.replayFlow(ctx, true)
	if err != nil {
		return err
	}
	sum := run.Summary
	rec.Result = fmt.Sprintf("run %s %s: %d sent", sum.RunID, sum.Status, sum.Counts.Sent)
	d.sum.Replayed, d.sum.ReplayRunID = sum.Counts.Sent, sum.RunID
	d.n.Result(&ReplayRunResult{Summary: sum})
	d.say("Every copy carries provenance headers (fw.replay.id %s, fw.replay.source, fw.replay.count 1, fw.replay.reason) and none of the dead-letter headers. "+
		"The run is journaled in the store with its operator, reason, selection, counts and per-partition checkpoints: fieldwork replay runs lists it, "+
		"and an interrupted run resumes without sending again what was acknowledged.", sum.RunID)
	return nil
}

// Step 5: the fixed consumer, and the dead letters' status.
func (d *Demo) consumeFixed(ctx context.Context) error {
	d.begin("Consume again with the fix")
	run, err := d.consumeWith(ctx, false, FixedRelease)
	if err != nil {
		return err
	}
	d.say("The group resumed at its committed offsets, so it read only the %d replayed records. A dead-lettered event has no marker, so each was new to the consumer: "+
		"%s (tasks whose latest event was the reopen, which %s had left as done), "+
		"%s because the task already had a newer version (its state includes the reopen)%s.",
		run.Records, wording.Count(run.Applied, "was applied", "were applied"), BuggyRelease,
		wording.Count(run.Stale, "was a no-op", "were no-ops"), dupClause(run.Duplicates))

	rec := d.command("fieldwork dlq list --topic " + TopicDLQ + " --status resolved,stale" + d.conn(true, true))
	resolved, err := d.listDeadLetters(ctx, []dlq.Status{dlq.StatusResolved, dlq.StatusStale})
	if err != nil {
		return err
	}
	rec.Result = fmt.Sprintf("%d settled: %s; %s", len(resolved), statusLine(countStatuses(resolved)), reasonsLine(countReasons(resolved)))
	d.n.Result(&DeadLettersResult{Entries: resolved, Statuses: []dlq.Status{dlq.StatusResolved, dlq.StatusStale}})

	rec = d.command("fieldwork dlq list --topic " + TopicDLQ + " --status pending,replayed,unknown" + d.conn(true, true))
	left, err := d.listDeadLetters(ctx, []dlq.Status{dlq.StatusPending, dlq.StatusReplayed, dlq.StatusUnknown})
	if err != nil {
		return err
	}
	byStatus := countStatuses(left)
	for _, e := range left {
		if e.EventID != "" && d.tryDeadLetter == "" {
			d.tryDeadLetter = e.Address().String()
		}
	}
	rec.Result = fmt.Sprintf("%d not resolved: %s", len(left), statusLine(byStatus))
	d.n.Result(&DeadLettersResult{Entries: left, Statuses: []dlq.Status{dlq.StatusPending, dlq.StatusReplayed, dlq.StatusUnknown}})
	d.sum.setStatuses(resolved, left)
	settled := countStatuses(resolved)
	d.say("Every replayed dead letter is settled: the consumer has a marker for its event. %s: the fix took effect; "+
		"%s: the consumer ignored the replayed event as older than the version it had, so the reopen itself changed nothing. "+
		"%s remain, all malformed: %s. No replay can fix them; an operator fixes the producer, then publishes corrected events "+
		"(or records the loss). Until then they stay in %s, visible to dlq list and dlq stats.",
		wording.Count(settled[string(dlq.StatusResolved)], "is resolved", "are resolved"), wording.Count(settled[string(dlq.StatusStale)], "is stale", "are stale"),
		wording.Count(int64(len(left)), "dead letter", "dead letters"), statusLine(byStatus), TopicDLQ)
	return nil
}

// Step 6: the markers.
func (d *Demo) processedStats(ctx context.Context) error {
	d.begin("Count the markers")
	rec := d.command("fieldwork processed stats --consumer " + Group + d.conn(false, true))
	st := d.stack.Store()
	s, err := st.Stats(ctx, dedup.StatsFilter{Consumer: Group})
	if err != nil {
		return err
	}
	for _, c := range s.Consumers {
		if c.Consumer == Group {
			d.sum.ProcessedMarkers = c.Count
		}
	}
	rec.Result = fmt.Sprintf("%d markers for %s", d.sum.ProcessedMarkers, Group)
	d.n.Result(&ProcessedStatsResult{Stats: s, Table: st.Table()})
	p := d.sum.Produced
	d.say("%d markers: one per distinct valid event (%d first sends + %d stale re-emits, each with its own id), "+
		"though the consumer was handed %d records (%d produced + %d replayed). Each event was handled exactly once: "+
		"duplicates and replays met their marker, and the malformed records never got one.",
		d.sum.ProcessedMarkers, p.Events, p.Stale, d.sum.RecordsDelivered, p.Records, d.sum.Replayed)
	return nil
}

// Export is the shell line that points fieldwork commands at the stack.
func (d *Demo) Export() string {
	line := "export FIELDWORK_BROKERS=" + d.Brokers() + " FIELDWORK_DSN=" + shellQuote(d.DSN())
	if d.stack != nil {
		line += " FIELDWORK_SCHEMA_REGISTRY=" + d.stack.SchemaRegistry
	}
	return line
}

// Try lists commands worth running against the stack after the story (--keep), each with
// what it shows. It is empty before Run.
func (d *Demo) Try() [][2]string {
	if d.stack == nil || d.sum == nil {
		return nil
	}
	try := [][2]string{
		{"fieldwork dlq list --topic " + TopicDLQ, "every dead letter and its status"},
	}
	if d.tryDeadLetter != "" {
		try = append(try, [2]string{"fieldwork dlq show " + d.tryDeadLetter, "a malformed one, its headers and value"})
	}
	if d.sum.ReplayRunID != "" {
		try = append(try, [2]string{"fieldwork replay show " + d.sum.ReplayRunID, "the journaled replay"})
	}
	for _, a := range d.stack.Seeded.Manifest.Aggregates {
		if a.LastType == RejectedType {
			try = append(try, [2]string{"fieldwork inspect aggregate " + TopicTasks + " " + a.ID, "a reopened task's events, the replayed copy included"})
			break
		}
	}
	return append(try,
		[2]string{"fieldwork inspect record " + devstack.TopicAvro + "/0/0", "an Avro event decoded through the schema registry"},
		[2]string{"fieldwork processed list --consumer " + Group, "the newest markers"},
		[2]string{"fieldwork consume --topic " + TopicTasks + " --group audit --handler audit --migrate --stop-when-idle 2s", "a second consumer, with markers of its own"},
	)
}

// poisonLine describes the poison records of a stream.
func poisonLine(ps []sample.Poison) string {
	what := map[sample.PoisonKind]string{
		sample.PoisonInvalidJSON: "a value cut off in the middle of its JSON",
		sample.PoisonMissingID:   "an event with no id",
		sample.PoisonBadVersion:  "a version that is not a number",
	}
	var parts []string
	for _, p := range ps {
		if w, ok := what[p.Kind]; ok {
			parts = append(parts, w)
		} else {
			parts = append(parts, string(p.Kind))
		}
	}
	return strings.Join(parts, ", ")
}

// portOf is the port of a host:port address.
func portOf(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	n := 0
	for _, c := range addr[i+1:] {
		n = n*10 + int(c-'0')
	}
	return n
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:=+,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
