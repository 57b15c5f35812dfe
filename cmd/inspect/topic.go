package inspect

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// InspectTopicOptions are the inputs of `inspect topic`.
type InspectTopicOptions struct {
	Topic      string
	SampleSize int
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
offsets); and, for every consumer group with committed offsets on the topic, each committed
offset and the lag behind the high watermark.`,
		Example: `  fieldwork inspect topic tasks
  fieldwork inspect topic tasks -o json | jq '.groups[] | {group, total_lag}'`,
		Args: cmdutil.ExactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			if opts.SampleSize < 0 {
				return fwerr.Usagef("--sample %d: must be 0 (no sampling) or more", opts.SampleSize)
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, inspectTopicRun)
		},
	}
	cmd.Flags().IntVar(&opts.SampleSize, "sample", inspect.DefaultSampleSize, "decode the newest N records of each partition to detect envelope formats (0: none)")
	return cmd
}

func inspectTopicRun(ctx context.Context, opts *InspectTopicOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	progress := output.NewProgress(cl.Streams, output.ProgressOptions{Label: "sampling " + opts.Topic})
	sample := opts.SampleSize
	if sample == 0 {
		sample = -1
	}
	rep, err := inspect.Topic(ctx, c, opts.Topic, inspect.TopicOptions{SampleSize: sample, Progress: progress.Update})
	progress.Stop()
	if err != nil {
		return err
	}
	return p.Object(rep, topicSections(p, rep))
}

func topicSections(p *output.Printer, rep *inspect.TopicReport) []output.Section {
	st := p.Styles
	overview := output.Section{Title: "Topic " + rep.Topic, Fields: [][2]string{
		{"partitions", strconv.Itoa(rep.Totals.Partitions)},
		{"records", strconv.FormatInt(rep.Totals.Records, 10)},
	}}
	for _, c := range rep.Configs {
		overview.Fields = append(overview.Fields, [2]string{c.Name, configDisplay(c) + st.Dim.Render(" ("+c.Source+")")})
	}
	overview.Fields = append(overview.Fields, [2]string{"retention", retentionDisplay(st, rep.Retention)})

	parts := output.Section{Title: "Partitions", Header: []string{"partition", "leader", "replicas", "isr", "log start", "last stable", "high watermark", "records"}}
	for _, pi := range rep.Partitions {
		leader := strconv.Itoa(int(pi.Leader))
		if pi.Leader < 0 {
			leader = st.Bad.Render("none")
		}
		isr := cmdutil.JoinInt32(pi.ISR)
		if len(pi.ISR) < len(pi.Replicas) {
			isr = st.Warn.Render(isr)
		}
		lso := strconv.FormatInt(pi.LastStable, 10)
		if pi.LastStable < pi.HighWatermark {
			lso = st.Warn.Render(lso + " (open transaction)")
		}
		parts.Rows = append(parts.Rows, []string{
			strconv.Itoa(int(pi.Partition)), leader, cmdutil.JoinInt32(pi.Replicas), isr,
			strconv.FormatInt(pi.LogStart, 10), lso, strconv.FormatInt(pi.HighWatermark, 10), strconv.FormatInt(pi.Records, 10),
		})
	}

	sections := []output.Section{overview, parts}
	if rep.Sample.PerPartition > 0 {
		formats := output.Section{
			Title:  fmt.Sprintf("Envelope formats (newest %d records per partition: %d sampled)", rep.Sample.PerPartition, rep.Sample.Records),
			Header: []string{"format", "records"},
		}
		for _, fc := range rep.Sample.Formats {
			name, n := fc.Format, strconv.FormatInt(fc.Count, 10)
			if fc.Format == inspect.FormatMalformed {
				name, n = st.Bad.Render(name), st.Bad.Render(n)
			}
			formats.Rows = append(formats.Rows, []string{name, n})
		}
		sections = append(sections, formats)
		if len(rep.Sample.Malformed) > 0 {
			sections = append(sections, malformedSection("Malformed records in the sample", p, rep.Sample.Malformed))
		}
	}

	groups := output.Section{Title: "Consumer groups", Header: []string{"group", "state", "partition", "committed", "lag"}}
	for _, g := range rep.Groups {
		for _, gp := range g.Partitions {
			lag := strconv.FormatInt(gp.Lag, 10)
			if gp.Lag > 0 {
				lag = st.Warn.Render(lag)
			}
			groups.Rows = append(groups.Rows, []string{g.Group, g.State, strconv.Itoa(int(gp.Partition)), strconv.FormatInt(gp.Committed, 10), lag})
		}
	}
	if rep.GroupsError != "" {
		groups.Header, groups.Text = nil, st.Warn.Render("cannot list consumer groups: "+rep.GroupsError)
	}
	return append(sections, groups)
}

func malformedSection(title string, p *output.Printer, ms []inspect.MalformedRecord) output.Section {
	s := output.Section{Title: title, Header: []string{"partition", "offset", "format", "field", "reason"}}
	for _, m := range ms {
		s.Rows = append(s.Rows, []string{strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.Offset, 10),
			cmdutil.OrDash(m.Format), cmdutil.OrDash(m.Field), p.Styles.Bad.Render(m.Reason)})
	}
	return s
}

// retentionDisplay says what the retention configs mean: how long a record stays at least,
// forever and why, or unknown and why (the configs could not be read or do not say).
func retentionDisplay(st output.Styles, r kafka.Retention) string {
	switch r.State {
	case kafka.RetentionKnown:
		return r.Describe()
	case kafka.RetentionForever:
		return "forever" + st.Dim.Render(" ("+r.Why+")")
	}
	return st.Warn.Render("unknown: " + r.Why)
}

// configDisplay adds a reading aid to retention values: -1 is forever/unlimited, milliseconds
// get a duration.
func configDisplay(c inspect.ConfigValue) string {
	n, err := strconv.ParseInt(c.Value, 10, 64)
	if err != nil {
		return c.Value
	}
	switch c.Name {
	case "retention.ms":
		if n < 0 {
			return c.Value + " (forever)"
		}
		return c.Value + " (" + timespec.Format(time.Duration(n)*time.Millisecond) + ")"
	case "retention.bytes":
		if n < 0 {
			return c.Value + " (unlimited)"
		}
	}
	return c.Value
}
