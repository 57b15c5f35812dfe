package dlq

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// dlqDefaultGroupBy is the grouping of `dlq stats` unless --group-by says otherwise.
const dlqDefaultGroupBy = "original_topic,reason,error_class"

// DLQStatsOptions are the inputs of `dlq stats`.
type DLQStatsOptions struct {
	dlqDeps
	dlqSelection
	GroupByFlag string
	Window      time.Duration

	// Set by parsing.
	GroupBy []dlq.StatsKey
}

// NewCmdDLQStats builds `dlq stats`.
func NewCmdDLQStats(f *cmdutil.Factory, runF func(context.Context, *DLQStatsOptions) error) *cobra.Command {
	opts := &DLQStatsOptions{dlqDeps: newDLQDeps(f)}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Per dead-letter topic and per (original topic, reason, error class): counts, age, rate, retention",
		Long: `Summarise dead-letter topics: for each topic, and for each group of --group-by (default
original_topic,reason,error_class; any of topic, original_topic, reason, error_class, group,
fingerprint), the number of dead letters, the oldest and newest, and the rate per hour over
--window.

Failures by cause: --group-by fingerprint (or --by fingerprint) groups dead letters by their
error class and error message with quoted values, UUIDs, hexadecimal ids and numbers
normalised away, so that failures that differ only in ids count as one; each group shows its
fingerprint, the normalised cause, the original topics and one dead letter's address. dlq
list --fingerprint F and replay --fingerprint F select that group.

For each topic it also reads cleanup.policy and retention.ms and says when the oldest dead
letter becomes old enough for retention to delete it: under a day, the OLDEST DELETABLE
column is flagged and stderr warns (replay or copy those dead letters first). Kafka deletes
whole segments, so a record may outlive that time, never undercut it (unless retention.bytes
deletes first). Compacted topics and retention.ms=-1 are said as such.

With a dedup store configured, each row breaks the count down by status (pending, replayed,
resolved, stale, unknown; see fieldwork dlq --help).

The scan reads every partition at once, up to the end offsets taken at start, and keeps one
aggregate per group: its memory does not grow with the topic. The table and JSON give both
views; CSV gives the groups.`,
		Example: `  fieldwork dlq stats
  fieldwork dlq stats --topic tasks.dlq --group-by reason --window 1h
  fieldwork dlq stats --by fingerprint
  fieldwork dlq stats -o json | jq '.topics[] | select(.retention_warning)'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, dlqStatsRun)
		},
	}
	opts.dlqSelection.register(cmd, cmdutil.DLQWindow|cmdutil.DLQFields, cmdutil.DLQNoStatus)
	fs := cmd.Flags()
	fs.StringVar(&opts.GroupByFlag, "group-by", dlqDefaultGroupBy, "comma-separated grouping: some of "+dlq.StatsKeyNames()+` ("" for one group; --by is the same flag)`)
	// --by fingerprint reads as what it asks for; it is --group-by under a shorter name.
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "by" {
			name = "group-by"
		}
		return pflag.NormalizedName(name)
	})
	fs.Var(timespec.NewDurationValue(&opts.Window, 24*time.Hour), "window", "window of the rate per hour, ending now: 90m, 1d, 2w")
	return cmd
}

func (opts *DLQStatsOptions) parse(cmd *cobra.Command) error {
	if err := opts.dlqSelection.parse(cmd, opts.Now()); err != nil {
		return err
	}
	var err error
	if opts.GroupBy, err = dlq.ParseStatsKeys(opts.GroupByFlag); err != nil {
		return fwerr.Usagef("--group-by: %v", err)
	}
	return opts.StatusFlags.Validate(cmd, opts.lookup(), false)
}

func dlqStatsRun(ctx context.Context, opts *DLQStatsOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	var retention map[string]dlq.Retention
	rd, err := opts.dlqSelection.open(ctx, c, opts.dlqDeps, "summarising", func(topics []string) (err error) {
		retention, err = dlq.DescribeRetention(ctx, c, topics)
		return err
	})
	if err != nil {
		return err
	}
	defer rd.close()
	topics, lookup, progress := rd.topics, rd.lookup, rd.progress
	scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{
		Selection: opts.Filter.Selection(), Progress: progress.Update,
		SkipDeleted: opts.TopicFlags.Discovered(),
		// Stats read a few fields: no header copies, no times but the record's; and without
		// statuses nothing needs the event id, so values are not decoded.
		Parse: dlq.ParseOptions{NoEnvelope: !lookup.Enabled(), NoHeaders: true, NoTimes: true},
		// Not read ahead (ScanOptions.Ahead): the stats' parse is light, the fetch is what
		// bounds it, and workers would compete with the client's goroutines for the cores.
		Schemas: cl.Schemas,
	})
	if err != nil {
		return err
	}
	cmdutil.WarnDeleted(opts.Streams, scan)
	rep, err := dlq.Summarise(ctx, scan, topics, dlq.SummaryOptions{
		Filter: opts.Filter, By: opts.GroupBy, Window: opts.Window, Now: opts.Now(), Lookup: lookup, Retention: retention,
	})
	progress.Stop()
	if err != nil {
		return err
	}
	w := opts.Streams.ErrText()
	for _, s := range rep.Warnings() {
		cmdutil.Warn(opts.Streams, s)
	}
	if rep.Matched == 0 && p.Format == output.FormatTable && len(topics) > 0 {
		fmt.Fprintln(w, dlqNothingFound(topics, dlq.ScanResult{Read: rep.RecordsRead}))
	}
	if p.Format == output.FormatCSV {
		return dlqStatsCSV(p, rep, lookup.Enabled())
	}
	return p.Object(rep, dlqStatsSections(p, rep, lookup.Enabled()))
}
