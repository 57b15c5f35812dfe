// Package replay is the replay command: plan and execute replays, and the journal's runs.
package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// replayDeps are what the replay commands need from the factory, built lazily so that parsing,
// --help and usage errors never dial a broker or open a database.
type replayDeps struct {
	cmdutil.StoreDeps
	Kafka   func(context.Context) (*kafka.Cluster, error)
	Confirm func(yes bool, question string) error
	Getenv  func(string) string
}

func newReplayDeps(f *cmdutil.Factory) replayDeps {
	return replayDeps{
		StoreDeps: cmdutil.NewStoreDeps(f), Kafka: f.Kafka, Getenv: f.Getenv,
		Confirm: func(yes bool, q string) error { return cmdutil.Confirm(f, yes, q) },
	}
}

// journal opens the store for the replay journal and checks that it is migrated (the journal
// is migration 002).
func (d replayDeps) journal(ctx context.Context) (*dedup.Store, error) {
	st, err := d.Store(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Verify(ctx); err != nil {
		st.Close()
		return nil, cmdutil.StoreError(err, d.Names())
	}
	return st, nil
}

// ReplayOptions are the inputs of `replay` (plan, and with --execute, send).
type ReplayOptions struct {
	replayDeps
	Spec     replay.Spec
	Execute  bool
	Yes      bool
	Reason   string
	Operator string
	Rate     float64
	Sample   int

	sel           cmdutil.SelectionFlags
	status        string
	consumer      string
	skipProcessed bool
	Now           func() time.Time
}

// NewCmdReplay builds `replay` with its subcommands runs, show and resume. runF, when set,
// replaces the run (for tests of flag parsing).
func NewCmdReplay(f *cmdutil.Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{replayDeps: newReplayDeps(f), Now: time.Now}
	cmd := &cobra.Command{
		Use:   "replay [TOPIC/PARTITION/OFFSET] [--from TOPIC] [flags]",
		Short: "Plan and execute replays of records back into their source topics",
		Long: `Replay dead letters (or any records) back into a topic: planned first, bounded, guarded
against loops, and journaled so that an interrupted run resumes.

Selection. --from TOPIC reads a topic (a dead-letter topic, or any topic with --to); narrow
it with --partition, an inclusive --start-offset/--end-offset range, or a --since/--until
time window; or name one record as TOPIC/PARTITION/OFFSET; --event-id finds the records of one
event (a bounded scan). The dead-letter filters --dlq-reason, --error, --original-topic and
--group work as in dlq list; --status pending --consumer C keeps only the dead letters whose
event C has no marker for. With no range the whole topic is read. The end offsets are taken
when the plan is made: records that arrive later (the replay's own output included) are never
read.

Target. Each record goes back to the original topic its dead-letter headers name (fieldwork,
Spring, Kafka Connect, Watermill and SmallRye conventions); --to TOPIC sends everything there
instead, and a record that is not a dead letter needs --to. Writing into the topic being read
is refused. Keyed records are partitioned as Kafka's default partitioner does (murmur2 of the
key), so an aggregate's events stay in order in one partition; --to-partition original keeps
the original partition instead.

What is sent. Key, value and headers byte for byte, minus the dead-letter headers of every
convention, plus provenance headers: fw.replay.id (the run), fw.replay.source
(topic/partition/offset read), fw.replay.count (previous + 1), fw.replay.at, fw.replay.reason.
Loop guard: a record whose fw.replay.count has reached --max-replays (default 3) is not sent
but quarantined and reported; the command then exits 3.

Plan, then execute. Without --execute nothing is sent: it prints the plan (records per target
topic and partition, quarantined records, a sample) and exits 0, or 2 when records cannot be
routed; a target that does not exist fails it (exit 1). With --execute it needs --reason
(why, recorded in the journal and in fw.replay.reason) and a dedup store (--dsn) for the
journal. On a terminal it checks the plan the same way and asks for confirmation; without a
terminal it refuses unless --yes. With --yes the range is read once, each record sent as it is
read: a --to topic is checked before the first read, a target named by the headers when a
record first names it, and the first record that cannot be routed (exit 2) or whose target
does not exist (exit 1) stops the run before it is sent. When records were sent before it,
they are journaled and the run is marked failed: create the topic and resume it. A dry run
first shows every such record. Records go out through an idempotent producer (acks=all), at
most --rate records per second, with progress on a terminal and a summary at the end.
--skip-processed --consumer C counts but does not send the records whose event C already has
a marker for.

Journal. Every executed run is recorded in the store with its operator ($USER, or
--operator), reason, selection, target, counts, status and per-partition checkpoint of
acknowledged source offsets. SIGINT/SIGTERM stop it cleanly (status interrupted, exit 130); a
failure marks it failed.

  replay runs                    the journal's runs, newest first
  replay show RUN                one run: selection, counts, checkpoints, targets
  replay resume RUN              continue an interrupted or failed run from its checkpoints`,
		Example: `  fieldwork replay tasks.dlq/0/42
  fieldwork replay tasks.dlq/0/42 --execute --reason "bug 1234 fixed"
  fieldwork replay --from tasks.dlq --dlq-reason exhausted --since 6h
  fieldwork replay --from tasks.dlq --partition 0 --start-offset 100 --end-offset 250 --execute --yes --reason "db back" --rate 500
  fieldwork replay --from tasks.dlq --event-id 7f6c… --execute --reason "retry one"
  fieldwork replay --from audit.dlq --status pending --consumer audit --to audit-retry --execute --yes --reason "retry pending"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fwerr.Usagef("%s takes at most one record address TOPIC/PARTITION/OFFSET (got %d arguments)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, replayRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Spec.From, "from", "", "topic to read (a dead-letter topic, or any topic with --to)")
	opts.sel.Register(cmd)
	fl.StringVar(&opts.Spec.EventID, "event-id", "", "select the records of this event id (a bounded scan of the selection)")
	fl.StringSliceVar(&opts.Spec.Reasons, "dlq-reason", nil, "dead letters with this fw.dlq.reason: malformed, unsupported, rejected, exhausted, unknown (repeatable)")
	fl.StringVar(&opts.Spec.Error, "error", "", "dead letters whose error message or class matches this regular expression")
	fl.StringVar(&opts.Spec.OriginalTopic, "original-topic", "", "dead letters whose original topic is this")
	fl.StringVar(&opts.Spec.Group, "group", "", "dead letters of this consumer group")
	fl.StringVar(&opts.status, "status", "", "pending: only dead letters whose event --consumer has no marker for (needs a store)")
	fl.StringVar(&opts.consumer, "consumer", "", "the consumer whose markers --status pending and --skip-processed look up")
	fl.BoolVar(&opts.skipProcessed, "skip-processed", false, "count but do not send records whose event --consumer already processed (needs a store)")
	fl.StringVar(&opts.Spec.To, "to", "", "send every record to this topic (default: each dead letter's original topic)")
	fl.StringVar(&opts.Spec.ToPartition, "to-partition", replay.PartitionDefault, "default (murmur2 of the key, as Kafka) or original (the record's original partition)")
	fl.IntVar(&opts.Spec.MaxReplays, "max-replays", replay.DefaultMaxReplays, "quarantine records whose fw.replay.count has reached this")
	fl.BoolVar(&opts.Execute, "execute", false, "send the records (default: print the plan and send nothing)")
	fl.BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation (required with --execute when not on a terminal)")
	fl.StringVar(&opts.Reason, "reason", "", "why you replay: required with --execute, journaled and sent as fw.replay.reason")
	fl.StringVar(&opts.Operator, "operator", "", "who replays, for the journal (default $USER, else $LOGNAME)")
	fl.Float64Var(&opts.Rate, "rate", 0, "send at most this many records per second (default: no cap)")
	fl.IntVar(&opts.Sample, "sample", replay.DefaultSample, "how many selected records the plan shows (0: none)")
	_ = cmd.RegisterFlagCompletionFunc("to-partition", cobra.FixedCompletions([]string{replay.PartitionDefault, replay.PartitionOriginal}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"pending"}, cobra.ShellCompDirectiveNoFileComp))
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.Dedup.Schema, "schema", dedup.DefaultSchema, `schema of the journal and the marker table (on SQLite a table-name prefix)`)
	pf.StringVar(&f.Dedup.Table, "table", dedup.DefaultTable, "marker table that --status pending and --skip-processed read")
	cmd.AddCommand(
		NewCmdReplayRuns(f, nil),
		NewCmdReplayShow(f, nil),
		NewCmdReplayResume(f, nil),
	)
	return cmd
}

// parse turns the flags into opts.Spec and checks everything that needs no network.
func (opts *ReplayOptions) parse(cmd *cobra.Command, args []string) error {
	sel, err := opts.sel.Selection(cmd, opts.Now())
	if err != nil {
		return err
	}
	s := &opts.Spec
	s.Partitions, s.StartOffset, s.EndOffset, s.Since, s.Until = sel.Partitions, sel.StartOffset, sel.EndOffset, sel.Since, sel.Until
	if len(args) == 1 {
		topic, part, off, err := cmdutil.ParseRecordAddress(args[0])
		if err != nil {
			return err
		}
		if s.From != "" && s.From != topic {
			return fwerr.Usagef("the record %s is in %s but --from says %s: name the record or the topic, not both", args[0], topic, s.From)
		}
		if len(s.Partitions) > 0 || s.StartOffset != nil || s.EndOffset != nil || !s.Since.IsZero() || !s.Until.IsZero() {
			return fwerr.Usagef("a record address selects one record: drop --partition, --start-offset, --end-offset, --since and --until")
		}
		s.From, s.Record = topic, cmdutil.Coordinate(topic, part, off)
		s.Partitions, s.StartOffset, s.EndOffset = []int32{part}, &off, &off
	}
	switch opts.status {
	case "":
	case "pending":
		if opts.consumer == "" {
			return fwerr.Usagef("--status pending needs --consumer C: pending means C has no marker for the event")
		}
		s.PendingFor = opts.consumer
	default:
		return fwerr.Usagef("--status %q: only pending is a replay selection (replayed and resolved dead letters need no replay)", opts.status)
	}
	if opts.skipProcessed {
		if opts.consumer == "" {
			return fwerr.Usagef("--skip-processed needs --consumer C: the consumer whose markers say an event was processed")
		}
		s.SkipProcessedFor = opts.consumer
	}
	if opts.consumer != "" {
		if opts.status == "" && !opts.skipProcessed {
			return fwerr.Usagef("--consumer is for --status pending or --skip-processed")
		}
		if err := cmdutil.CheckConsumer(opts.consumer); err != nil {
			return err
		}
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if opts.Rate < 0 {
		return fwerr.Usagef("--rate %g: must be positive (or 0 for no cap)", opts.Rate)
	}
	if opts.Sample < 0 {
		return fwerr.Usagef("--sample %d: must be 0 or more", opts.Sample)
	}
	if opts.Execute && strings.TrimSpace(opts.Reason) == "" {
		return fwerr.Usagef("--execute needs --reason: say why (it is journaled with the run and sent as fw.replay.reason)")
	}
	return nil
}

// replayGC makes the collector run less often for the rest of a replay: a replay allocates a
// record's worth of garbage per record read while its live memory stays small (bounded by the
// producer's buffer), so the default GOGC of 100 spends a fifth of its CPU collecting. A soft
// memory limit of 256 MiB keeps the heap that GOGC 400 lets grow from reaching five times
// the live memory (a 200,000-record replay peaked at 320 MB resident without it, 260 MB with
// it). An explicit GOGC or GOMEMLIMIT wins.
func replayGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}

func replayRun(ctx context.Context, opts *ReplayOptions) error {
	replayGC(opts.Getenv)
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	var st *dedup.Store
	if opts.Execute {
		if st, err = opts.journal(ctx); err != nil {
			return err
		}
		defer st.Close()
	} else if opts.Spec.NeedsStore() {
		if st, err = opts.Store(ctx); err != nil {
			return err
		}
		defer st.Close()
	}
	c, err := opts.Kafka(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	plan, err := replay.NewPlan(ctx, c, opts.Spec)
	if err != nil {
		return err
	}
	if opts.Execute && replaySinglePass(ctx, opts.Yes, c, plan) {
		progress, done := replayExecProgress(opts.Streams, -1)
		sum, err := replay.Execute(ctx, c, st, plan, replay.ExecOptions{
			RunID:      replay.NewRunID(opts.Now()),
			Operator:   replay.Operator(opts.Operator, opts.Getenv),
			Reason:     opts.Reason,
			Rate:       opts.Rate,
			Progress:   progress,
			SinglePass: true,
		})
		done()
		if err == nil && !sum.Recorded {
			fmt.Fprintf(opts.Streams.ErrOut, "nothing selected in %s (%s read): nothing to send, no run recorded\n", sum.Source, cmdutil.Plural(sum.Read, "record"))
			return nil
		}
		warnMalformedSent(opts.Streams, sum)
		return replayFinishRun(opts.replayDeps, p, sum, err)
	}
	rep, err := replayScanPlan(ctx, opts.replayDeps, c, st, plan, opts.Sample)
	if err != nil {
		return err
	}
	if !opts.Execute {
		if err := p.Object(rep, replayPlanSections(p, rep)); err != nil {
			return err
		}
		if err := rep.Err(); err != nil {
			return err
		}
		if rep.Counts.Quarantined > 0 {
			fmt.Fprintf(opts.Streams.ErrOut, "%s would be quarantined (fw.replay.count reached --max-replays %d): --execute would send the rest and exit 3\n",
				cmdutil.Plural(rep.Counts.Quarantined, "record"), rep.MaxReplays)
		}
		warnMalformed(opts.Streams, rep)
		fmt.Fprintln(opts.Streams.ErrOut, "dry run: nothing was sent; add --execute --reason \"…\" to send")
		return nil
	}
	if err := rep.Err(); err != nil {
		return err
	}
	if rep.Counts.Selected == 0 {
		fmt.Fprintf(opts.Streams.ErrOut, "nothing selected in %s (%s read): nothing to send, no run recorded\n", rep.Source, cmdutil.Plural(rep.Counts.Read, "record"))
		return nil
	}
	warnMalformed(opts.Streams, rep)
	if err := opts.Confirm(opts.Yes, replayConfirmQuestion("send", rep)); err != nil {
		return err
	}
	progress, done := replayExecProgress(opts.Streams, rep.Counts.ToSend)
	sum, err := replay.Execute(ctx, c, st, plan, replay.ExecOptions{
		RunID:    replay.NewRunID(opts.Now()),
		Operator: replay.Operator(opts.Operator, opts.Getenv),
		Reason:   opts.Reason,
		Rate:     opts.Rate,
		Progress: progress,
	})
	done()
	return replayFinishRun(opts.replayDeps, p, sum, err)
}

// replaySinglePass tells whether an executed plan is sent in one pass, without a scan first:
// when nothing is asked (--yes: the question would show the scan's counts). A plan whose one
// target is known up front (replay.Plan.TargetKnown) must have it (replay.CheckTarget): a
// missing --to topic takes the scan, which counts the records that would have gone there.
// Other plans check each record's target as it is read, and stop at the first that cannot
// be sent (replay.ExecOptions.SinglePass).
func replaySinglePass(ctx context.Context, yes bool, c *kafka.Cluster, plan *replay.Plan) bool {
	return yes && (!plan.TargetKnown() || replay.CheckTarget(ctx, c, plan) == nil)
}

// replayScanPlan reads the plan once, with progress on a terminal.
func replayScanPlan(ctx context.Context, d replayDeps, c *kafka.Cluster, st *dedup.Store, plan *replay.Plan, sample int) (*replay.Report, error) {
	progress, done := cmdutil.ScanProgress(d.Streams, "planning "+plan.Spec.From)
	if sample == 0 {
		sample = -1
	}
	rep, err := replay.Scan(ctx, c, st, plan, replay.ScanOptions{Sample: sample, Progress: replay.ProgressFunc(progress)})
	done()
	if err != nil {
		return nil, cmdutil.StoreError(err, d.Names())
	}
	return rep, nil
}

// replayConfirmQuestion says what will be sent where, completing "refusing to …".
func replayConfirmQuestion(verb string, rep *replay.Report) string {
	var dests []string
	seen := map[string]int64{}
	var order []string
	for _, t := range rep.Targets {
		if _, ok := seen[t.Topic]; !ok {
			order = append(order, t.Topic)
		}
		seen[t.Topic] += t.Records
	}
	for _, t := range order {
		dests = append(dests, fmt.Sprintf("%d to %s", seen[t], t))
	}
	q := fmt.Sprintf("%s %s from %s (%s)", verb, cmdutil.Plural(rep.Counts.ToSend, "record"), rep.Source, strings.Join(dests, ", "))
	if len(dests) == 0 {
		q = fmt.Sprintf("%s no records from %s", verb, rep.Source)
	}
	var notes []string
	if rep.Counts.Quarantined > 0 {
		notes = append(notes, fmt.Sprintf("%d quarantined", rep.Counts.Quarantined))
	}
	if rep.Counts.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d skipped as processed", rep.Counts.Skipped))
	}
	if len(notes) > 0 {
		q += "; " + strings.Join(notes, ", ")
	}
	return q
}

// replayFinishRun prints an executed run's summary and turns its outcome into the exit code: 0,
// 3 when records were quarantined, 130 when interrupted (with how to resume), 1 on failure.
func replayFinishRun(d replayDeps, p *output.Printer, sum *replay.Summary, err error) error {
	if sum == nil {
		return cmdutil.StoreError(err, d.Names())
	}
	if perr := p.Object(sum, replaySummarySections(p, sum)); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		if sum.Status == dedup.RunInterrupted || sum.Status == dedup.RunFailed {
			fmt.Fprintf(d.Streams.ErrOut, "run %s is %s; continue it with: fieldwork replay resume %s\n", sum.RunID, sum.Status, sum.RunID)
		}
		if errors.Is(err, context.Canceled) && fwerr.KindOf(err) == fwerr.KindError {
			err = fwerr.Wrap(fwerr.KindInterrupted, err)
		}
		return cmdutil.StoreError(err, d.Names())
	}
	return sum.Err()
}

// replayExecProgress keeps one line on stderr up to date while a run sends, and returns a function
// that erases it; off a terminal both do nothing. toSend < 0: not known (a single pass).
func replayExecProgress(s *output.Streams, toSend int64) (func(replay.Progress), func()) {
	if !s.ErrTTY {
		return nil, func() {}
	}
	var (
		mu    sync.Mutex
		last  time.Time
		shown bool
	)
	fn := func(pr replay.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 200*time.Millisecond {
			return
		}
		last, shown = time.Now(), true
		rate := 0.0
		if pr.Elapsed > 0 {
			rate = float64(pr.Sent) / pr.Elapsed.Seconds()
		}
		pct := int64(100)
		if pr.Total > 0 {
			pct = min(100, pr.Read*100/pr.Total)
		}
		of := fmt.Sprintf(" of %d", toSend)
		if toSend < 0 { // a single pass: not counted beforehand
			of = ""
		}
		fmt.Fprintf(s.ErrOut, "\r\x1b[Kreplaying: %d%s sent, %d quarantined, %d skipped (read %d%%), %.0f records/s",
			pr.Sent, of, pr.Counts.Quarantined, pr.Counts.Skipped, pct, rate)
	}
	done := func() {
		mu.Lock()
		defer mu.Unlock()
		if shown {
			fmt.Fprint(s.ErrOut, "\r\x1b[K")
		}
	}
	return fn, done
}

// warnMalformed says, before anything is sent, that replaying malformed dead letters cannot
// help: their bytes are what failed.
func warnMalformed(s *output.Streams, rep *replay.Report) {
	if n := rep.Counts.MalformedToSend; n > 0 {
		fmt.Fprintf(s.ErrOut, "warning: %s to send were dead-lettered as malformed: the same bytes will fail again; "+
			"fix the producer, or leave them out with --dlq-reason exhausted,rejected,unsupported\n", cmdutil.Plural(n, "record"))
	}
}

// warnMalformedSent is warnMalformed after a single pass, which had no scan to warn before.
func warnMalformedSent(s *output.Streams, sum *replay.Summary) {
	if sum != nil && sum.MalformedSent > 0 {
		fmt.Fprintf(s.ErrOut, "warning: %s sent were dead-lettered as malformed: the same bytes will fail again; "+
			"fix the producer, or leave them out with --dlq-reason exhausted,rejected,unsupported\n", cmdutil.Plural(sum.MalformedSent, "record"))
	}
}
