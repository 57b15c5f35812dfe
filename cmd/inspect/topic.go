package inspect

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// InspectTopicOptions are the inputs of `inspect topic`.
type InspectTopicOptions struct {
	Topic      string
	SampleSize int
	Watch      cmdutil.WatchFlags
}

// NewCmdInspectTopic builds `inspect topic T`. runF, when set, replaces the run (for tests of
// flag parsing).
func NewCmdInspectTopic(f *cmdutil.Factory, runF func(context.Context, *InspectTopicOptions) error) *cobra.Command {
	opts := &InspectTopicOptions{}
	cmd := &cobra.Command{
		Use:   "topic TOPIC",
		Short: "Partitions, offsets, configs, envelope formats and consumer-group lag of a topic",
		Long: `Show a topic: each partition's leader, replicas, log start, last stable offset, high
watermark and record count; its retention and cleanup configs; the envelope formats found
among the newest --sample records of each partition (malformed ones listed with their
offsets); which partitioners (murmur2: Kafka's Java client and franz-go; crc32: librdkafka;
fnv1a: sarama) the sampled keyed records agree with, the --partitioner a replay into the
topic needs; and, for every consumer group with committed offsets on the topic, each committed
offset and the lag behind the high watermark.

--watch reads the topic again every --interval (the partitions' offsets, the groups' commits
and lag; the sample is taken once, at the first read) and prints each report, until
interrupted: in JSON Lines one report per line, for a script to follow.`,
		Example: `  fieldwork inspect topic tasks
  fieldwork inspect topic tasks -o json | jq '.groups[] | {group, total_lag}'
  fieldwork inspect topic tasks --watch --interval 10s -o jsonl | jq -c '[.totals.records, (.groups[] | .total_lag)]'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.SampleSize < 0 {
				return fwerr.Usagef("--sample %d: must be 0 (no sampling) or more", opts.SampleSize)
			}
			if err := opts.Watch.Check(); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, inspectTopicRun)
		},
	}
	cmdutil.TopicArg(cmd, &opts.Topic, "topic to inspect")
	cmd.Flags().IntVar(&opts.SampleSize, "sample", inspect.DefaultSampleSize, "decode the newest N records of each partition to detect envelope formats (0: none)")
	opts.Watch.Register(cmd.Flags(), 5*time.Second, "with --watch, how long between two reads")
	return cmd
}

func inspectTopicRun(ctx context.Context, opts *InspectTopicOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	progress := output.NewProgress(cl.Streams, output.ProgressOptions{Label: "sampling " + opts.Topic})
	sample := opts.SampleSize
	if sample == 0 {
		sample = -1
	}
	rep, err := inspect.Topic(ctx, c, opts.Topic, inspect.TopicOptions{SampleSize: sample, Progress: progress.Update, Schemas: cl.Schemas})
	progress.Stop()
	if err != nil {
		return err
	}
	for _, w := range rep.Warnings() {
		cmdutil.Warn(cl.Streams, w)
	}
	if !opts.Watch.Watch {
		return p.Object(rep, topicSections(p, rep))
	}
	first := rep
	return cmdutil.Watch(ctx, p, opts.Watch.Interval, cl.Now, func(ctx context.Context) (*inspect.TopicReport, error) {
		if first != nil {
			r := first
			first = nil
			return r, nil
		}
		r, err := inspect.Topic(ctx, c, opts.Topic, inspect.TopicOptions{SampleSize: -1})
		if r != nil {
			r.Sample = rep.Sample // taken once
		}
		return r, err
	}, func(r *inspect.TopicReport) []output.Section { return topicSections(p, r) })
}
