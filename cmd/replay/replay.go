// Package replay is the replay command: plan and execute replays, and the journal's runs.
package replay

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// replayDeps are what the replay commands need from the factory, built lazily so that parsing,
// --help and usage errors never dial a broker or open a database.
type replayDeps struct {
	cmdutil.StoreDeps
	cmdutil.ActionFlags
	// Edit opens a value in the operator's editor (replay --edit).
	Edit func(value []byte) ([]byte, error)
	// StoreConfigured reports whether a dedup store is configured: a plan then reads its
	// markers for the guards.
	StoreConfigured func() (bool, error)
}

func newReplayDeps(f *cmdutil.Factory) replayDeps {
	return replayDeps{StoreDeps: cmdutil.NewStoreDeps(f), ActionFlags: cmdutil.NewActionFlags(f),
		Edit:            func(v []byte) ([]byte, error) { return cmdutil.EditText(f, "value.json", v, "--value-file") },
		StoreConfigured: f.StoreConfigured,
	}
}

// ReplayOptions are the inputs of `replay` (plan, and with --execute, send).
type ReplayOptions struct {
	replayDeps
	Spec   replay.Spec
	Rate   cmdutil.RateFlag
	Sample int

	sel cmdutil.SelectionFlags
	// filters and status are the dead-letter filters and --status/--consumer, the same flag
	// sets as dlq list's.
	filters       cmdutil.DLQFilterFlags
	status        cmdutil.DLQStatusFlags
	skipProcessed bool
	// The edit of one record (--edit, --value-file, --set-header) and the file of records
	// (--from-file).
	edit       bool
	valueFile  string
	setHeaders []string
	fromFile   string
	// oldFrom is --from, the old name of --topic (parse folds it in).
	oldFrom   string
	rateGiven bool
	// workers records the executed plan as a run shared by workers (--workers).
	workers bool
	// force is --force: start while another run reads the same topic.
	force bool
	Now   func() time.Time
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ReplayOptions) NamedConsumer() string { return o.status.Consumer }

// NewCmdReplay builds `replay` with its subcommands runs, show and resume. runF, when set,
// replaces the run (for tests of flag parsing).
func NewCmdReplay(f *cmdutil.Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	// The store-naming flags are this command's: bound here, read by the store its commands open.
	naming := new(dedup.Options)
	f = f.WithStoreNaming(naming)
	opts := &ReplayOptions{replayDeps: newReplayDeps(f), Now: f.Now}
	cmd := &cobra.Command{
		Use:   "replay [TOPIC/PARTITION/OFFSET] [--topic TOPIC] [flags]",
		Short: "Plan and execute replays of records back into their source topics",
		Long: `Replay dead letters (or any records) back into a topic: planned first, bounded, guarded
against loops, and journaled so that an interrupted run resumes.

Selection. --topic TOPIC (-t) reads a topic (a dead-letter topic, or any topic with --to); narrow
it with --partition, an inclusive --start-offset/--end-offset range, or a --since/--until
time window; or name one record as TOPIC/PARTITION/OFFSET. The dead-letter filters are dlq
list's, the same flags: --dlq-reason, --error, --original-topic, --group, --key (or
--key-base64) and --event-id (the records of one event: a bounded scan); --status pending
--consumer C keeps the dead letters dlq list --status pending --consumer C lists (--schema,
--table and the --column-* flags name the marker table, as in dlq and processed). --reason
is not a filter: it says why an executed replay is sent. With no range the whole topic is
read. The end offsets are taken when the plan is made: records that arrive later (the
replay's own output included) are never read.

Target. Each record goes back to the original topic its dead-letter headers name (fieldwork,
Spring, Kafka Connect, Watermill and SmallRye conventions); --to TOPIC sends everything there
instead, and a record that is not a dead letter needs --to. Writing into the topic being read
is refused. A record goes where its key's other records are (--to-partition auto, the
default): to the original partition its dead-letter headers name when the target has as many
partitions as the topic it came from; otherwise where the producer's partitioner puts its key,
--partitioner murmur2 (Kafka's Java client, franz-go), crc32 (librdkafka: confluent-kafka-go,
-python, -dotnet, kcat) or fnv1a (sarama). Without --partitioner it is inferred from the target
topic's own keyed records (the newest 200 of each partition): the one partitioner that places
all of them where they are; murmur2 when they tell nothing (no keyed records, one partition);
a plan whose target's records agree with no one partitioner is refused (exit 2): name it with
--partitioner. The run journals the partitioners it chose: replay resume places by them. A
record without a key is spread.
--to-partition original always keeps the original partition, --to-partition key always places
by the key. The plan says which rule each target partition got.

What is sent. Key, value and headers byte for byte, minus the dead-letter headers of every
convention, plus provenance headers: fw.replay.id (the run), fw.replay.source
(topic/partition/offset read), fw.replay.count (previous + 1), fw.replay.at, fw.replay.reason.
Loop guard: a record whose fw.replay.count has reached --max-replays (default 3) is not sent
but quarantined and reported; the command then exits 3.

For one consumer group. Each record carries fw.replay.for, the one group it is for: --for-group
G, else the group its dead letter names (fieldwork's fw.dlq.group, Spring's
kafka_dlt-original-consumer-group), so a replay of dead letters that all name one group is for
that group (the plan says so). fieldwork consume skips a record aimed at another group without
writing a marker: the other groups reading the topic do not process the event a second time.
--all-groups stamps no fw.replay.for.

Edit, then replay. With one record TOPIC/PARTITION/OFFSET, --edit opens its value (JSON
indented) in $EDITOR, --value-file F takes the new value from a file, --set-header K=V sets a
header (repeatable). Only the edited copy is sent, marked fw.replay.edited (the dead letter's
address); the plan shows the value's diff, and the journal links the copy to its dead letter.
The copy is the same event fixed: it must keep the dead letter's event id, so that the
consumer's marker for it resolves the dead letter.

From a file. --from-file F replays the records it names, one a line: addresses
(topic/partition/offset), event ids (with --topic), or the JSON Lines of dlq list -o jsonl, so a
triaged selection can be reviewed and replayed exactly.

Guards. Before sending, the plan warns about dead letters older than their target's replay
horizon (its retention.ms, the horizon processed prune keeps markers for: the markers that
made them idempotent may be gone) and about aggregates whose consumer already processed a
newer version (checked for the first 1,000 records to send); --strict refuses to execute then
(exit 3). --stop-on-redeadletter N stops the run once N of its own records (by fw.replay.id)
are dead-lettered again into the topic read: the run is marked interrupted, with the reason,
and resumes with replay resume once the cause is fixed (exit 3).

Plan, then execute. Without --execute nothing is sent: it prints the plan (the selection and
every filter it applies, the ranges, records per target topic and partition, quarantined
records, a sample) and exits 0, or 2 when records cannot be routed; a target that does not
exist fails it (exit 9). With --execute it needs --reason (why, recorded in the journal and
in fw.replay.reason) and a dedup store (--dsn) for the journal. On a terminal it checks the
plan the same way, shows it and asks for confirmation; without a terminal it refuses unless
--yes. With --yes the range is read once, each record sent as it is
read: a --to topic is checked before the first read, a target named by the headers when a
record first names it, and the first record that cannot be routed (exit 2) or whose target
does not exist (exit 9) stops the run before it is sent. When records were sent before it,
they are journaled and the run is marked failed: create the topic and resume it. A dry run
first shows every such record. Records go out through an idempotent producer (acks=all), at
most --rate records per second, with progress on a terminal and a summary at the end.
--skip-processed --consumer C counts but does not send the records whose event C already has
a marker for.

Replays remember. With a store, the plan counts the selected dead letters an earlier run
already sent, by run (id, when, their status now). Those whose status is settled (resolved,
or stale: the consumer handled the event) are left out, and the plan says how many and from
which runs; --include-replayed sends them too (journaled with the selection). Replayed ones
whose consumer has no marker yet are sent again, like pending ones.

Journal. Every executed run is recorded in the store with its operator ($USER, or
--operator), reason, selection, target, counts, status and per-partition checkpoint of
acknowledged source offsets, and how it executes (--rate and the batching; the partitioner,
partition rule, edit, stop rule and group are the selection's): replay resume executes it
the same way unless told otherwise. SIGINT/SIGTERM stop it cleanly (status interrupted, exit
130); a failure marks it failed.

  replay runs                    the journal's runs, newest first
  replay show RUN                one run: selection, counts, checkpoints, targets
  replay resume RUN              continue an interrupted or failed run from its checkpoints

Workers. --execute --workers checks the plan and records the run without sending anything;
fieldwork replay resume RUN --worker --execute, started in any number of processes on any
number of machines, then shares its partitions (without --execute it previews): each worker
joins the consumer group fieldwork-replay-RUN on the source topic, sends the partitions Kafka
assigns it from their checkpoints, and hands them over on a rebalance. --rate is the whole
run's, split among the workers by the partitions each holds.`,
		Example: `  fieldwork replay tasks.dlq/0/7
  fieldwork replay tasks.dlq/0/7 --execute --reason "bug 1234 fixed"
  fieldwork replay --topic tasks.dlq --dlq-reason exhausted --since 6h
  fieldwork replay --topic tasks.dlq --partition 0 --start-offset 2 --end-offset 8 --execute --yes --reason "db back" --rate 500
  fieldwork replay --topic tasks.dlq --event-id 7f6c… --execute --reason "retry one"
  fieldwork replay --topic tasks.dlq --status pending --consumer task-projection --dlq-reason rejected
  fieldwork replay --topic tasks.dlq --status pending --consumer task-projection --to tasks --execute --yes --reason "retry pending"
  fieldwork replay --topic tasks.dlq --execute --yes --workers --reason "backlog after outage"`,
		Args: cmdutil.MaxArgs(1, "at most one record address TOPIC/PARTITION/OFFSET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, opts.needs(), opts, runF, replayRun)
		},
	}
	fl := cmd.Flags()
	cmdutil.TopicVar(fl, &opts.Spec.From, "topic", "topic to read (a dead-letter topic, or any topic with --to)")
	// --from is the flag's old name: still read, with a hint, and left out of the help.
	cmdutil.TopicVar(fl, &opts.oldFrom, "from", "old name of --topic")
	_ = fl.MarkHidden("from")
	opts.sel.Register(cmd)
	opts.filters.Register(cmd, cmdutil.DLQFields|cmdutil.DLQEventID)
	opts.status.Register(fl, cmdutil.DLQStatusFilter)
	// The same flags as dlq list's; what replay accepts of them, for now, is narrower.
	fl.Lookup("status").Usage = "pending or replayed: the dead letters dlq list --status lists for --consumer (default each one's group; needs a store)"
	fl.Lookup("consumer").Usage = "consumer whose markers --status pending and --skip-processed look up"
	fl.BoolVar(&opts.skipProcessed, "skip-processed", false, "count but do not send records whose event --consumer already processed (needs a store)")
	fl.BoolVar(&opts.Spec.IncludeReplayed, "include-replayed", false, "also send the dead letters an earlier run sent whose status is settled (resolved or stale), which a replay leaves out")
	cmdutil.TopicVar(fl, &opts.Spec.To, "to", "send every record to this topic (default: each dead letter's original topic)")
	fl.StringVar(&opts.Spec.ToPartition, "to-partition", replay.PartitionAuto, "auto (the original partition while the partition counts match, else by the key), original (always the original partition) or key (always by the key)")
	fl.StringVar((*string)(&opts.Spec.Partitioner), "partitioner", "", "the producer's partitioner, that keyed records are placed by: murmur2 (Java, franz-go), crc32 (librdkafka) or fnv1a (sarama); default: inferred from the target's keyed records, else murmur2")
	fl.IntVar(&opts.Spec.MaxReplays, "max-replays", replay.DefaultMaxReplays, "quarantine records whose fw.replay.count has reached this")
	opts.Register(fl, "send the records", "why you replay: required with --execute, journaled and sent as fw.replay.reason", "who replays")
	opts.Rate.Register(fl)
	fl.IntVar(&opts.Sample, "sample", replay.DefaultSample, "how many selected records the plan shows (0: none)")
	fl.StringVar(&opts.Spec.ForGroup, "for-group", "", "the one consumer group the records are for (fw.replay.for; default: the group each dead letter names)")
	fl.BoolVar(&opts.Spec.AllGroups, "all-groups", false, "the records are for every consumer group reading their target (no fw.replay.for)")
	fl.BoolVar(&opts.edit, "edit", false, "edit the value of the one record named in $EDITOR before it is sent")
	fl.StringVar(&opts.valueFile, "value-file", "", "send the one record named with the value in this file")
	fl.StringArrayVar(&opts.setHeaders, "set-header", nil, "send the one record named with this header set: KEY=VALUE (repeatable)")
	fl.StringVar(&opts.fromFile, "from-file", "", "replay the records this file names: addresses, event ids, or dlq list -o jsonl lines")
	fl.BoolVar(&opts.Spec.Strict, "strict", false, "refuse to execute when a guard warns (past the replay horizon, newer versions processed)")
	fl.IntVar(&opts.Spec.StopOnRedeadletter, "stop-on-redeadletter", 0, "stop the run once this many of its records are dead-lettered again (0: never)")
	fl.BoolVar(&opts.force, "force", false, "with --execute: start even while another run is replaying from the same topic (each would send the dead letters both select)")
	fl.BoolVar(&opts.workers, "workers", false, "with --execute: record the run for workers and send nothing; start them with replay resume RUN --worker --execute")
	_ = cmd.RegisterFlagCompletionFunc("to-partition", cobra.FixedCompletions(replay.ToPartitionModes, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("partitioner", cobra.FixedCompletions(kafka.PartitionerNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{string(dlq.StatusPending), string(dlq.StatusReplayed)}, cobra.ShellCompDirectiveNoFileComp))
	cmdutil.RegisterStoreFlags(cmd, cmd.PersistentFlags(), naming)
	cmd.AddCommand(
		NewCmdReplayRuns(f, nil),
		NewCmdReplayShow(f, nil),
		NewCmdReplayResume(f, nil),
	)
	return cmd
}

// parse turns the flags into opts.Spec and checks everything that needs no network.
func (opts *ReplayOptions) parse(cmd *cobra.Command, args []string) error {
	s := &opts.Spec
	if err := opts.foldOldFrom(cmd); err != nil {
		return err
	}
	var err error
	if s.Selection, err = opts.sel.Selection(cmd, opts.Now()); err != nil {
		return err
	}
	if s.FilterSpec, err = opts.filters.Spec(cmd); err != nil {
		return err
	}
	if len(args) == 1 {
		a, err := kafka.ParseRecordAddress(args[0])
		if err != nil {
			// Not an address: maybe a mistyped subcommand (replay runz).
			if hint := cmdutil.SubcommandHint(cmd, args[0]); hint != "" {
				return fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("%w%s", err, hint))
			}
			return err
		}
		if s.From != "" && s.From != a.Topic {
			return fwerr.Usagef("the record %s is in %s but --topic says %s: name the record or the topic, not both", args[0], a.Topic, s.From)
		}
		if s.Narrowed() {
			return fwerr.Usagef("a record address selects one record: drop --partition, --start-offset, --end-offset, --since and --until")
		}
		s.From, s.Record, s.Selection = a.Topic, a.String(), a.Selection()
	}
	if err := opts.parseAims(cmd, args); err != nil {
		return err
	}
	statuses, err := opts.status.Statuses()
	if err != nil {
		return err
	}
	consumer := opts.status.Consumer
	if err := s.SelectStatus(statuses, consumer); err != nil {
		return err
	}
	if opts.skipProcessed {
		if consumer == "" {
			return fwerr.Usagef("--skip-processed needs --consumer C: the consumer whose markers say an event was processed")
		}
		s.SkipProcessedFor = consumer
	}
	if consumer != "" {
		if len(statuses) == 0 && !opts.skipProcessed {
			return fwerr.Usagef("--consumer is for --status or --skip-processed")
		}
		if err := cmdutil.CheckConsumer(consumer); err != nil {
			return err
		}
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if err := opts.Rate.Check(); err != nil {
		return err
	}
	opts.rateGiven = cmd.Flags().Changed("rate")
	if opts.workers && !opts.Execute {
		return fwerr.Usagef("--workers records a run to execute: add --execute")
	}
	if opts.Sample < 0 {
		return fwerr.Usagef("--sample %d: must be 0 or more", opts.Sample)
	}
	if r := strings.TrimSpace(opts.Reason); slices.Contains(dlq.Reasons, r) && !cmd.Flags().Changed("dlq-reason") {
		cmdutil.Note(opts.Streams, fmt.Sprintf("--reason %s says why the replay is sent (journaled, and sent as fw.replay.reason); it selects nothing: the filter of dead letters by their reason is --dlq-reason %s", r, r))
	}
	return opts.RequireReason("it is journaled with the run and sent as fw.replay.reason")
}

// foldOldFrom reads --from, the old name of --topic, into the spec with a one-line hint on
// stderr that it is now --topic (-t); both given with different topics is refused.
func (opts *ReplayOptions) foldOldFrom(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("from") {
		return nil
	}
	if cmd.Flags().Changed("topic") && opts.Spec.From != opts.oldFrom {
		return fwerr.Usagef("--from is the old name of --topic: give the topic once (--topic %s or --topic %s)", opts.Spec.From, opts.oldFrom)
	}
	opts.Spec.From = opts.oldFrom
	cmdutil.Note(opts.Streams, "--from is now --topic (-t): --from still works")
	return nil
}

// parseAims reads the file of records (--from-file) and the edit of one record (--edit,
// --value-file, --set-header) into the spec.
func (opts *ReplayOptions) parseAims(cmd *cobra.Command, args []string) error {
	s := &opts.Spec
	if opts.fromFile != "" {
		if len(args) > 0 {
			return fwerr.Usagef("choose either a record address or --from-file, not both")
		}
		r, err := os.Open(opts.fromFile)
		if err != nil {
			return fwerr.Usagef("--from-file: %v", err)
		}
		fs, err := replay.ReadFileSelection(r, opts.fromFile)
		_ = r.Close()
		if err != nil {
			return err
		}
		switch {
		case fs.Topic != "" && s.From != "" && s.From != fs.Topic:
			return fwerr.Usagef("%s names records of %s but --topic says %s", opts.fromFile, fs.Topic, s.From)
		case fs.Topic != "":
			s.From = fs.Topic
		case s.From == "":
			return fwerr.Usagef("%s names event ids only: say which topic holds them with --topic TOPIC", opts.fromFile)
		}
		if fs.Truncated {
			cmdutil.Warn(opts.Streams, opts.fromFile+" is a listing cut at its limit (_truncated): it names fewer dead letters than matched when it was written")
		}
		s.Addresses, s.EventIDs = fs.Addresses, fs.EventIDs
	}
	if !opts.edit && opts.valueFile == "" && len(opts.setHeaders) == 0 {
		return nil
	}
	e := &replay.Edit{Interactive: opts.edit}
	if opts.valueFile != "" {
		v, err := os.ReadFile(opts.valueFile)
		if err != nil {
			return fwerr.Usagef("--value-file: %v", err)
		}
		e.Value = v
		if e.Value == nil {
			e.Value = []byte{}
		}
	}
	for _, h := range opts.setHeaders {
		he, err := replay.ParseHeaderEdit(h)
		if err != nil {
			return err
		}
		e.Headers = append(e.Headers, he)
	}
	s.Edit = e
	return nil
}

// needs are the clients a replay opens: the cluster, and the store when it executes (the
// journal, migrated), when the selection looks statuses up, or, for the guards' look at the
// markers, whenever one is configured.
func (opts *ReplayOptions) needs() cmdutil.Need {
	switch {
	case opts.Execute:
		return cmdutil.NeedJournal | cmdutil.NeedKafka
	case opts.Spec.NeedsStore():
		return cmdutil.NeedStore | cmdutil.NeedKafka
	}
	if opts.StoreConfigured != nil {
		if ok, err := opts.StoreConfigured(); ok && err == nil {
			return cmdutil.NeedStore | cmdutil.NeedKafka
		}
	}
	return cmdutil.NeedKafka
}

func replayRun(ctx context.Context, opts *ReplayOptions, cl *cmdutil.Clients) error {
	gcpace.Floor(opts.Getenv, gcpace.ReplayFloor)
	plan, err := replay.NewPlan(ctx, cl.Kafka, opts.Spec)
	if err != nil {
		return err
	}
	sample := opts.Sample
	if sample == 0 {
		sample = -1 // --sample 0: none
	}
	return opts.runFlow(ctx, cl, plan, opts.ActionFlags, replay.FlowOptions{
		Rate:      float64(opts.Rate),
		RateGiven: opts.rateGiven,
		Sample:    sample,
		Schemas:   cl.Schemas,
		Editor:    opts.Edit,
		Workers:   opts.workers,
		Force:     opts.force,
	})
}
