package dlq

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// DLQShowOptions are the inputs of `dlq show`.
type DLQShowOptions struct {
	dlqDeps
	// Topic, Partition and Offset address the dead letter; --event-id (Filter.EventID) finds
	// it instead.
	Topic     string
	Partition int32
	Offset    int64

	// dlqSelection's filters are --event-id and, for its scan, --since and --until.
	dlqSelection
}

// NewCmdDLQShow builds `dlq show T/P/O` and `dlq show --event-id ID`.
func NewCmdDLQShow(f *cmdutil.Factory, runF func(context.Context, *DLQShowOptions) error) *cobra.Command {
	opts := &DLQShowOptions{dlqDeps: newDLQDeps(f)}
	cmd := &cobra.Command{
		Use:   "show TOPIC/PARTITION/OFFSET | --event-id ID",
		Short: "Everything about one dead letter, and the command that replays it",
		Long: `Show one dead letter: its normalised metadata (where it failed, why, which consumer),
every header as written (text, or base64 when it is not text), the headers that could not be
read and why, the key, the event envelope decoded (or why it does not decode), the value
(indented when it is JSON), the stack trace, its status when a dedup store is configured,
and the fieldwork replay command lines that send it back to its original topic.

--event-id finds the dead letter by event id instead, scanning the dead-letter topics
(--topic, --pattern, default every topic ending in .dlq, -dlt or .DLT) up to their end
offsets at start; --since and --until narrow the scan. When several dead letters carry the
id, the newest is shown and the others are named on stderr.`,
		Example: `  fieldwork dlq show tasks.dlq/0/7
  fieldwork dlq show --event-id evt-7 --topic tasks.dlq
  fieldwork dlq show tasks.dlq/0/7 -o json | jq -r .replay.command`,
		Args: cmdutil.MaxArgs(1, "one dead-letter address, TOPIC/PARTITION/OFFSET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, dlqShowRun)
		},
	}
	opts.dlqSelection.register(cmd, cmdutil.DLQWindow|cmdutil.DLQEventID, cmdutil.DLQNoStatus)
	return cmd
}

func (opts *DLQShowOptions) parse(cmd *cobra.Command, args []string) error {
	byID := cmd.Flags().Changed("event-id")
	switch {
	case len(args) == 1 && byID:
		return fwerr.Usagef("give either a dead-letter address or --event-id, not both")
	case len(args) == 0 && !byID:
		return fwerr.Usagef("%s needs a dead-letter address, TOPIC/PARTITION/OFFSET, or --event-id ID", cmd.CommandPath())
	case len(args) == 1:
		for _, fl := range []string{"topic", "pattern", "since", "until"} {
			if cmd.Flags().Changed(fl) {
				return fwerr.Usagef("--%s selects what --event-id scans; a dead-letter address needs no scan", fl)
			}
		}
		a, err := kafka.ParseRecordAddress(args[0])
		if err != nil {
			return err
		}
		opts.Topic, opts.Partition, opts.Offset = a.Topic, a.Partition, a.Offset
	default:
		// An empty --event-id is refused as the flags are read (cmdutil.RefuseEmptyValues).
		if err := opts.dlqSelection.parse(cmd, opts.Now()); err != nil {
			return err
		}
	}
	return opts.StatusFlags.Validate(cmd, opts.lookup(), false)
}

func dlqShowRun(ctx context.Context, opts *DLQShowOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka

	var d dlq.DeadLetter
	if opts.Filter.EventID == "" {
		rec, err := dlq.Fetch(ctx, c, opts.Topic, opts.Partition, opts.Offset)
		if err != nil {
			return err
		}
		d = dlq.Parse(rec)
		d.DecodePayloads(ctx, cl.Schemas, rec, true)
	} else {
		topics, _, err := opts.TopicFlags.Resolve(ctx, c, opts.Pattern, opts.DLQPattern, opts.Streams)
		if err != nil {
			return err
		}
		progress, clearProgress := dlqScanProgress(opts.Streams, "looking for "+opts.Filter.EventID+" in", topics)
		scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{Selection: opts.Filter.Selection(), InOrder: true, Progress: progress, Schemas: cl.Schemas})
		if err != nil {
			return err
		}
		found, _, err := dlq.FindEventID(ctx, scan, opts.Filter)
		clearProgress()
		if err != nil {
			return err
		}
		newest, ok := dlq.Newest(found)
		if !ok {
			return fwerr.NotFoundf("no dead letter of event %q in %s", opts.Filter.EventID, dlqTopicList(topics))
		}
		if len(found) > 1 {
			var others []string
			for _, o := range found {
				if o.Topic != newest.Topic || o.Partition != newest.Partition || o.Offset != newest.Offset {
					others = append(others, kafka.RecordAddress{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset}.String())
				}
			}
			fmt.Fprintf(opts.Streams.ErrText(), "%d dead letters carry event id %s: showing the newest; the others are %s\n", len(found), opts.Filter.EventID, strings.Join(others, ", "))
		}
		d = newest
	}

	lookup, closeStore, err := opts.StatusFlags.Open(ctx, opts.lookup())
	if err != nil {
		return err
	}
	defer closeStore()
	entry := dlq.Entry{DeadLetter: d}
	if lookup.Enabled() {
		infos, err := lookup.Resolve(ctx, []dlq.DeadLetter{d})
		if err != nil {
			return err
		}
		entry.Status = infos[0]
	}
	det := dlq.NewDetail(entry)
	if err := det.ReadOriginal(ctx, c); err != nil {
		return err
	}
	return p.Object(det, dlqShowSections(p, det, opts.Now))
}
