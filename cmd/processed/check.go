package processed

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/processed"
)

// ProcessedCheckOptions are the inputs of `processed check`.
type ProcessedCheckOptions struct {
	cmdutil.StoreDeps
	kafkaDeps
	Topic      string
	Consumer   string
	Selection  kafka.Selection
	MaxMissing int
	// MaxMalformedShare is --max-malformed-share, 0 to 1.
	MaxMalformedShare float64

	sel cmdutil.SelectionFlags
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ProcessedCheckOptions) NamedConsumer() string { return o.Consumer }

// NewCmdProcessedCheck builds `processed check`.
func NewCmdProcessedCheck(f *cmdutil.Factory, runF func(context.Context, *ProcessedCheckOptions) error) *cobra.Command {
	opts := &ProcessedCheckOptions{StoreDeps: cmdutil.NewStoreDeps(f), kafkaDeps: kafkaDeps{Kafka: f.Kafka}}
	cmd := &cobra.Command{
		Use:   "check --topic TOPIC --consumer CONSUMER",
		Short: "Find the events of a Kafka range that a consumer has no marker for; exit 3 when any",
		Long: `The gap finder to run after an incident: read the records of a topic (every partition, or
--partition; all of it, an inclusive offset range, or a time window, with the end offsets fixed
when the check starts) and look up, for --consumer, which events have a marker and which do
not.

Records are decoded as events (CloudEvents binary or structured, or plain JSON; a value framed
for a schema registry is decoded through --schema-registry first, as inspect validate does, and
a registry that fails stops the check, exit 4, rather than call its records malformed) and
looked up in batches of 1,000 while the range streams past, so memory stays bounded on ranges of
millions of records. Counts are of records: an event written twice (a producer retry) counts
twice. Records with no recognisable event id are counted as malformed: a consumer
dead-letters them and never marks them, so they are not "missing".

Output: the counts and up to --max-missing missing records (topic, partition, offset, event
id; the first by partition and offset, the same records every run) as a table or JSON, and
the first malformed ones chosen the same way; with -o jsonl (the default when piped) or csv,
every missing record is streamed to stdout as it is found and the counts go to stderr.

A check that could not read the range fails rather than pass on what it never saw: when the
range has records and none of them, or more than --max-malformed-share of them (default 0.5:
more than half), could be read as an event, it exits 3 naming the most common malformed reason
and how many records gave it (a schema it cannot read, a producer writing another format).
--max-malformed-share 0 accepts no malformed record, 1 any share so long as one event was read.

Exit code 3 when any event is missing or the range is unreadable, 0 when every event has a
marker.`,
		Example: `  fieldwork processed check --topic tasks --consumer billing
  fieldwork processed check --topic tasks --consumer billing --partition 2 --start-offset 10 --end-offset 60
  fieldwork processed check --topic tasks --consumer billing --since 2h -o jsonl > missing.jsonl`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Topic == "" {
				return fwerr.Usagef("--topic is required: the topic whose records to check")
			}
			if !cmd.Flags().Changed("consumer") {
				return fwerr.Usagef("--consumer is required: the consumer whose markers to look up")
			}
			if err := cmdutil.CheckConsumer(opts.Consumer); err != nil {
				return err
			}
			if opts.MaxMissing < 0 {
				return fwerr.Usagef("--max-missing %d: must be 0 or more", opts.MaxMissing)
			}
			var err error
			if opts.Selection, err = opts.sel.Selection(cmd, f.Now()); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore|cmdutil.NeedKafka, opts, runF, processedCheckRun)
		},
	}
	fl := cmd.Flags()
	cmdutil.TopicVar(fl, &opts.Topic, "topic", "topic whose records to check (required)")
	fl.StringVar(&opts.Consumer, "consumer", "", "consumer whose markers to look up (required)")
	opts.sel.Register(cmd)
	fl.IntVar(&opts.MaxMissing, "max-missing", processed.DefaultMaxMissing, "missing records listed in table and json output (all are counted; jsonl and csv stream them all)")
	cmdutil.ShareOrNoneVar(fl, &opts.MaxMalformedShare, "max-malformed-share", processed.DefaultMaxMalformedShare, "largest share of the records (0 to 1, or 0% to 100%) that may be malformed; more, or no event at all, fails the check (exit 3)")
	return cmd
}

func processedCheckRun(ctx context.Context, opts *ProcessedCheckOptions, cl *cmdutil.Clients) error {
	gcpace.Floor(os.Getenv, gcpace.CheckFloor)
	p, st, c := cl.Printer, cl.Store, cl.Kafka

	progress := output.NewProgress(opts.Streams, output.ProgressOptions{Label: fmt.Sprintf("checking %s for %s", opts.Topic, opts.Consumer)})
	defer progress.Stop()
	o := processed.CheckOptions{Topic: opts.Topic, Consumer: opts.Consumer, Selection: opts.Selection, MaxMissing: opts.MaxMissing,
		Progress: progress.Update, Schemas: cl.Schemas, MaxMalformedShare: opts.MaxMalformedShare}
	if o.MaxMalformedShare == 0 {
		o.MaxMalformedShare = processed.NoMalformed
	}
	// jsonl (the default when piped) and csv stream every missing record as it is found.
	var stream *output.Stream[processed.MissingRecord]
	if p.Format == output.FormatJSONL || p.Format == output.FormatCSV {
		stream = output.NewStream(p, missingColumns, output.StreamOptions[processed.MissingRecord]{Noun: "missing records", Progress: progress})
		o.OnMissing = stream.Write
	}
	rep, err := processed.Check(ctx, c, st, o)
	progress.Stop()
	if stream != nil {
		if cerr := stream.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	if stream != nil {
		fmt.Fprintln(opts.Streams.ErrText(), rep.Summary())
	} else if err := p.Object(rep, checkSections(p, rep)); err != nil {
		return err
	}
	return rep.Result()
}
