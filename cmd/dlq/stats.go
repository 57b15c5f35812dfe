package dlq

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// dlqDefaultGroupBy is the grouping of `dlq stats` unless --group-by says otherwise.
const dlqDefaultGroupBy = "original_topic,reason,error_class"

// DLQStatsOptions are the inputs of `dlq stats`.
type DLQStatsOptions struct {
	dlqDeps
	TopicFlags  cmdutil.DLQTopicFlags
	FilterFlags cmdutil.DLQFilterFlags
	StatusFlags cmdutil.DLQStatusFlags
	GroupByFlag string
	Window      time.Duration

	Pattern *regexp.Regexp
	Filter  dlq.Filter
	GroupBy []dlq.StatsKey
}

// NewCmdDLQStats builds `dlq stats`.
func NewCmdDLQStats(f *cmdutil.Factory, runF func(context.Context, *DLQStatsOptions) error) *cobra.Command {
	opts := &DLQStatsOptions{dlqDeps: newDLQDeps(f)}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Per dead-letter topic and per (original topic, reason, error class): counts, age, rate, retention",
		Long: `Summarise dead-letter topics: for each topic, and for each group of --group-by (default
original_topic,reason,error_class; any of topic, original_topic, reason, error_class, group),
the number of dead letters, the oldest and newest, and the rate per hour over --window.

For each topic it also reads cleanup.policy and retention.ms and says when the oldest dead
letter becomes old enough for retention to delete it: under a day, the OLDEST DELETABLE
column is flagged and stderr warns (replay or copy those dead letters first). Kafka deletes
whole segments, so a record may outlive that time, never undercut it (unless retention.bytes
deletes first). Compacted topics and retention.ms=-1 are said as such.

With a dedup store configured, each row breaks the count down by status (pending, replayed,
resolved, unknown; see fieldwork dlq --help).

The scan reads every partition at once, up to the end offsets taken at start, and keeps one
aggregate per group: its memory does not grow with the topic. The table and JSON give both
views; CSV gives the groups.`,
		Example: `  fieldwork dlq stats
  fieldwork dlq stats --topic tasks.dlq --group-by reason --window 1h
  fieldwork dlq stats -o json | jq '.topics[] | select(.retention_warning)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, dlqStatsRun)
		},
	}
	fs := cmd.Flags()
	opts.TopicFlags.Register(fs)
	opts.FilterFlags.Register(cmd, cmdutil.DLQWindow|cmdutil.DLQFields)
	opts.StatusFlags.Register(fs, cmdutil.DLQNoStatus)
	fs.StringVar(&opts.GroupByFlag, "group-by", dlqDefaultGroupBy, "comma-separated grouping: some of "+dlqStatsKeyNames()+` ("" for one group)`)
	fs.Var(timespec.NewDurationValue(&opts.Window, 24*time.Hour), "window", "window of the rate per hour, ending now: 90m, 1d, 2w")
	return cmd
}

func dlqStatsKeyNames() string {
	var s []string
	for _, k := range dlq.StatsKeys {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func (opts *DLQStatsOptions) parse(cmd *cobra.Command) error {
	var err error
	if opts.Pattern, err = opts.TopicFlags.Compile(); err != nil {
		return err
	}
	if opts.Filter, err = opts.FilterFlags.Filter(cmd, opts.Now()); err != nil {
		return err
	}
	if opts.GroupBy, err = dlq.ParseStatsKeys(opts.GroupByFlag); err != nil {
		return fwerr.Usagef("--group-by: %v", err)
	}
	return opts.StatusFlags.Validate(cmd, opts.lookup(), false)
}

func dlqStatsRun(ctx context.Context, opts *DLQStatsOptions) error {
	p, c, err := cmdutil.PrinterAndCluster(ctx, opts.Printer, opts.Kafka)
	if err != nil {
		return err
	}
	defer c.Close()
	topics, err := opts.TopicFlags.Resolve(ctx, c, opts.Pattern, opts.Streams)
	if err != nil {
		return err
	}
	retention, err := dlq.DescribeRetention(ctx, c, topics)
	if err != nil {
		return err
	}
	lookup, closeStore, err := opts.StatusFlags.Open(ctx, opts.lookup())
	if err != nil {
		return err
	}
	defer closeStore()

	progress := dlqProgress(opts.Streams, "summarising", topics)
	defer progress.Stop()
	scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{
		Since: opts.Filter.Since, Until: opts.Filter.Until, Progress: progress.Update,
		SkipDeleted: opts.TopicFlags.Discovered(),
		// Stats read a few fields: no header copies, no times but the record's; and without
		// statuses nothing needs the event id, so values are not decoded.
		Parse: dlq.ParseOptions{NoEnvelope: !lookup.Enabled(), NoHeaders: true, NoTimes: true},
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
		if lookup.Enabled() && fwerr.KindOf(err) == fwerr.KindError {
			err = cmdutil.StoreError(err, opts.Names())
		}
		return err
	}
	w := opts.Streams.ErrText()
	warn := opts.Streams.ErrStyles().Warn.Render("warning: ")
	for _, s := range rep.Warnings() {
		fmt.Fprintln(w, warn+s)
	}
	if rep.Matched == 0 && p.Format == output.FormatTable && len(topics) > 0 {
		fmt.Fprintln(w, dlqNothingFound(topics, dlq.ScanResult{Read: rep.RecordsRead}))
	}
	if p.Format == output.FormatCSV {
		return dlqStatsCSV(p, rep, lookup.Enabled())
	}
	return p.Object(rep, dlqStatsSections(p, rep, lookup.Enabled()))
}

func dlqStatsSections(p *output.Printer, rep *dlq.StatsReport, withStatus bool) []output.Section {
	st := p.Styles
	window := "last " + rep.Window
	topics := output.Section{
		Title:  "Dead-letter topics",
		Header: []string{"topic", "count", "oldest", "newest", window, "per hour", "retention", "oldest deletable"},
	}
	if withStatus {
		topics.Header = append(topics.Header, dlqStatusHeader...)
	}
	for _, t := range rep.Topics {
		ret, deletable := "-", "-"
		if t.Retention != nil {
			ret = t.Retention.Describe()
			switch in, ok := t.DeletableIn(rep.Now); {
			case t.Count == 0:
			case t.Retention.State == kafka.RetentionUnknown:
				deletable = st.Warn.Render("unknown")
			case !ok:
				deletable = "never"
			case in <= 0:
				deletable = st.Bad.Render("now (past by " + dlq.FormatAge(-in) + ")")
			case t.RetentionWarning:
				deletable = st.Bad.Render("in " + dlq.FormatAge(in) + " (under a day)")
			default:
				deletable = "in " + dlq.FormatAge(in)
			}
		}
		row := []string{t.Topic, strconv.FormatInt(t.Count, 10), cmdutil.OptTime(t.Oldest), cmdutil.OptTime(t.Newest),
			strconv.FormatInt(t.InWindow, 10), dlqRate(t.RatePerHour), ret, deletable}
		if withStatus {
			row = append(row, dlqStatusCells(t.Statuses)...)
		}
		topics.Rows = append(topics.Rows, row)
	}
	groups := output.Section{Title: "By " + dlqGroupTitle(rep.GroupBy)}
	for _, k := range rep.GroupBy {
		groups.Header = append(groups.Header, strings.ReplaceAll(string(k), "_", " "))
	}
	groups.Header = append(groups.Header, "count", "oldest", "newest", window, "per hour")
	if withStatus {
		groups.Header = append(groups.Header, dlqStatusHeader...)
	}
	if rep.Matched > 0 {
		for _, g := range rep.Groups {
			var row []string
			for _, k := range rep.GroupBy {
				row = append(row, cmdutil.OrDash(g.Value(k)))
			}
			row = append(row, strconv.FormatInt(g.Count, 10), cmdutil.FormatTime(g.Oldest), cmdutil.FormatTime(g.Newest),
				strconv.FormatInt(g.InWindow, 10), dlqRate(g.RatePerHour))
			if withStatus {
				row = append(row, dlqStatusCells(g.Statuses)...)
			}
			groups.Rows = append(groups.Rows, row)
		}
	}
	return []output.Section{topics, groups}
}

// dlqStatsCSV writes the groups, one row each, the grouped fields first.
func dlqStatsCSV(p *output.Printer, rep *dlq.StatsReport, withStatus bool) error {
	var cols []output.Column[dlq.GroupStats]
	for _, k := range rep.GroupBy {
		cols = append(cols, output.Column[dlq.GroupStats]{Name: string(k), Value: func(g dlq.GroupStats) string { return g.Value(k) }})
	}
	cols = append(cols,
		output.Column[dlq.GroupStats]{Name: "count", Value: func(g dlq.GroupStats) string { return strconv.FormatInt(g.Count, 10) }},
		output.Column[dlq.GroupStats]{Name: "oldest", Value: func(g dlq.GroupStats) string { return csvTime(&g.Oldest) }},
		output.Column[dlq.GroupStats]{Name: "newest", Value: func(g dlq.GroupStats) string { return csvTime(&g.Newest) }},
		output.Column[dlq.GroupStats]{Name: "in_window", Value: func(g dlq.GroupStats) string { return strconv.FormatInt(g.InWindow, 10) }},
		output.Column[dlq.GroupStats]{Name: "rate_per_hour", Value: func(g dlq.GroupStats) string { return strconv.FormatFloat(g.RatePerHour, 'f', -1, 64) }},
	)
	if withStatus {
		for i, name := range dlqStatusHeader {
			cols = append(cols, output.Column[dlq.GroupStats]{Name: name, Value: func(g dlq.GroupStats) string { return dlqStatusCells(g.Statuses)[i] }})
		}
	}
	var groups []dlq.GroupStats
	if rep.Matched > 0 {
		groups = rep.Groups
	}
	return output.List(p, groups, cols, "")
}

var dlqStatusHeader = []string{"pending", "replayed", "resolved", "unknown"}

func dlqStatusCells(c *dlq.StatusCounts) []string {
	if c == nil {
		c = &dlq.StatusCounts{}
	}
	return []string{
		strconv.FormatInt(c.Pending, 10), strconv.FormatInt(c.Replayed, 10),
		strconv.FormatInt(c.Resolved, 10), strconv.FormatInt(c.Unknown, 10),
	}
}

func dlqGroupTitle(by []dlq.StatsKey) string {
	if len(by) == 0 {
		return "all dead letters"
	}
	var s []string
	for _, k := range by {
		s = append(s, strings.ReplaceAll(string(k), "_", " "))
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func dlqRate(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) }
