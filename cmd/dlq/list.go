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
	"github.com/fieldwork/fieldwork/internal/output"
)

// DefaultDLQListLimit is how many dead letters `dlq list` shows unless told otherwise.
const DefaultDLQListLimit = 100

// dlqMessageWidth is how much of a message a table shows on a terminal.
const dlqMessageWidth = 60

// DLQListOptions are the inputs of `dlq list`.
type DLQListOptions struct {
	dlqDeps
	TopicFlags  cmdutil.DLQTopicFlags
	FilterFlags cmdutil.DLQFilterFlags
	StatusFlags cmdutil.DLQStatusFlags
	Limit       int
	// MarkTruncated is --mark-truncated: on when stdout is not a terminal, unless given.
	MarkTruncated cmdutil.TruncationFlag

	// Set by parsing.
	Pattern  *regexp.Regexp
	Filter   dlq.Filter
	Statuses []dlq.Status
}

// NewCmdDLQList builds `dlq list`. runF, when set, replaces the run (for tests of flag
// parsing).
func NewCmdDLQList(f *cmdutil.Factory, runF func(context.Context, *DLQListOptions) error) *cobra.Command {
	opts := &DLQListOptions{dlqDeps: newDLQDeps(f)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Dead letters of one or more dead-letter topics, filtered, with their status",
		Long: `List dead letters: where each one is, where its record failed (original topic, partition,
offset), the reason, error class and message, the event id, its age and convention, and its
status when a dedup store is configured.

Topics are read one partition at a time, in topic and partition order, each in offset order,
up to the end offsets taken when the command starts. --limit stops the scan once one dead
letter more than the limit is found; stderr then says that more remain. JSON Lines and CSV
are written while the scan runs.

A record whose dead-letter headers cannot be read is listed anyway: the table's PROBLEMS
column and JSON's header_problems say which header and why.`,
		Example: `  fieldwork dlq list
  fieldwork dlq list --topic tasks.dlq --dlq-reason malformed --since 2h
  fieldwork dlq list --original-topic orders --error 'timeout|refused' -o jsonl
  fieldwork dlq list --dsn postgres://… --consumer billing --status pending`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, dlqListRun)
		},
	}
	fs := cmd.Flags()
	opts.TopicFlags.Register(fs)
	opts.FilterFlags.Register(cmd, cmdutil.DLQWindow|cmdutil.DLQFields|cmdutil.DLQEventID)
	opts.StatusFlags.Register(fs, cmdutil.DLQStatusFilter|cmdutil.DLQNoStatus)
	fs.IntVar(&opts.Limit, "limit", DefaultDLQListLimit, "show at most this many dead letters (0: no limit)")
	opts.MarkTruncated.Register(fs, opts.Streams)
	return cmd
}

func (opts *DLQListOptions) parse(cmd *cobra.Command) error {
	var err error
	if opts.Pattern, err = opts.TopicFlags.Compile(); err != nil {
		return err
	}
	if opts.Filter, err = opts.FilterFlags.Filter(cmd, opts.Now()); err != nil {
		return err
	}
	if opts.Statuses, err = opts.StatusFlags.Statuses(); err != nil {
		return err
	}
	if err := opts.StatusFlags.Validate(cmd, opts.lookup(), len(opts.Statuses) > 0); err != nil {
		return err
	}
	if opts.Limit < 0 {
		return fwerr.Usagef("--limit %d: must be 0 (no limit) or more", opts.Limit)
	}
	return nil
}

func dlqListRun(ctx context.Context, opts *DLQListOptions) error {
	p, c, err := cmdutil.PrinterAndCluster(ctx, opts.Printer, opts.Kafka)
	if err != nil {
		return err
	}
	defer c.Close()
	topics, err := opts.TopicFlags.Resolve(ctx, c, opts.Pattern, opts.Streams)
	if err != nil {
		return err
	}
	lookup, closeStore, err := opts.StatusFlags.Open(ctx, opts.lookup())
	if err != nil {
		return err
	}
	defer closeStore()

	progress := dlqProgress(opts.Streams, "scanning", topics)
	defer progress.Stop()
	scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{
		Since: opts.Filter.Since, Until: opts.Filter.Until, InOrder: true, Progress: progress.Update,
		SkipDeleted: opts.TopicFlags.Discovered(),
	})
	if err != nil {
		return err
	}
	stream := output.NewStream(p, dlqListColumns(p, lookup.Enabled(), opts.Now()), output.StreamOptions[dlq.Entry]{
		CSV: dlqCSVColumns, Noun: "dead letters", MoreHint: "raise --limit, 0 for no limit, or narrow the filters",
		MarkTruncated: opts.MarkTruncated.On(), Progress: progress,
	})
	res, err := dlq.List(ctx, scan, dlq.ListOptions{
		Filter: opts.Filter, Lookup: lookup, Statuses: opts.Statuses, Limit: opts.Limit,
	}, stream.Write)
	progress.Stop()
	cmdutil.WarnDeleted(opts.Streams, scan)
	if err != nil {
		if lookup.Enabled() && fwerr.KindOf(err) == fwerr.KindError {
			err = cmdutil.StoreError(err, opts.Names())
		}
		return err
	}
	if res.More {
		stream.Truncated(opts.Limit)
	}
	if err := stream.Close(); err != nil {
		return err
	}
	if res.Listed == 0 && p.Format == output.FormatTable && len(topics) > 0 {
		fmt.Fprintln(opts.Streams.ErrText(), dlqNothingFound(topics, res.ScanResult))
	}
	return nil
}

// dlqNothingFound says why a listing is empty.
func dlqNothingFound(topics []string, res dlq.ScanResult) string {
	switch {
	case res.Read == 0:
		return "no dead letters in " + strings.Join(topics, ", ")
	case res.Matched == 0:
		return fmt.Sprintf("no dead letters match the filters (%d read)", res.Read)
	}
	return fmt.Sprintf("no dead letters have the status asked for (%d matched the filters)", res.Matched)
}

// dlqListColumns are the table's columns: STATUS when statuses are looked up, PROBLEMS when a
// dead letter has header problems. On a terminal, messages are cut to dlqMessageWidth.
func dlqListColumns(p *output.Printer, withStatus bool, now time.Time) []output.Column[dlq.Entry] {
	st, tty := p.Styles, p.Streams.OutTTY
	// A message is cut as the terminal shows it: escaped first, so that an escape is counted
	// at its width.
	cut := func(s string) string {
		if tty {
			return cmdutil.Truncate(output.Printable(s, false), dlqMessageWidth)
		}
		return s
	}
	cols := []output.Column[dlq.Entry]{
		{Name: "dead letter", Value: func(e dlq.Entry) string { return e.Address().String() }},
		{Name: "original", Value: func(e dlq.Entry) string { return dlqOriginal(e.DeadLetter) }},
		{Name: "reason", Value: func(e dlq.Entry) string {
			if e.Reason == dlq.ReasonMalformed {
				return st.Bad.Render(e.Reason)
			}
			return cmdutil.OrDash(e.Reason)
		}},
		{Name: "error class", Value: func(e dlq.Entry) string { return cmdutil.OrDash(e.ErrorClass) }},
		{Name: "message", Value: func(e dlq.Entry) string { return cmdutil.OrDash(cut(dlqOneLine(e.ErrorMessage))) }},
		{Name: "event id", Value: func(e dlq.Entry) string { return cmdutil.OrDash(e.EventID) }},
		{Name: "age", Value: func(e dlq.Entry) string {
			if e.Timestamp.IsZero() {
				return "-"
			}
			return dlq.FormatAge(now.Sub(e.Timestamp))
		}},
		{Name: "convention", Value: func(e dlq.Entry) string { return string(e.Convention) }},
	}
	if withStatus {
		cols = append(cols, output.Column[dlq.Entry]{Name: "status", Value: func(e dlq.Entry) string {
			switch e.Status.Status {
			case dlq.StatusPending:
				return st.Warn.Render(string(e.Status.Status))
			case dlq.StatusResolved:
				return st.OK.Render(string(e.Status.Status))
			case "":
				return "-"
			}
			return string(e.Status.Status)
		}})
	}
	return append(cols, output.Column[dlq.Entry]{Name: "problems", Optional: true, Value: func(e dlq.Entry) string {
		if prob := cut(dlqProblems(e.DeadLetter)); prob != "" {
			return st.Warn.Render(prob)
		}
		return "-"
	}})
}

// dlqProblems joins a dead letter's header problems: "header: problem; …".
func dlqProblems(d dlq.DeadLetter) string {
	var problems []string
	for _, hp := range d.HeaderProblems {
		problems = append(problems, hp.Header+": "+hp.Problem)
	}
	return strings.Join(problems, "; ")
}

// dlqCSVColumns are the CSV columns of `dlq list`: one field per column, bytes as text (or
// base64 in key_base64 when the key is not text), times in RFC 3339 with every digit.
var dlqCSVColumns = []output.Column[dlq.Entry]{
	{Name: "topic", Value: func(e dlq.Entry) string { return e.Topic }},
	{Name: "partition", Value: func(e dlq.Entry) string { return strconv.Itoa(int(e.Partition)) }},
	{Name: "offset", Value: func(e dlq.Entry) string { return strconv.FormatInt(e.Offset, 10) }},
	{Name: "timestamp", Value: func(e dlq.Entry) string { return csvTime(&e.Timestamp) }},
	{Name: "convention", Value: func(e dlq.Entry) string { return string(e.Convention) }},
	{Name: "original_topic", Value: func(e dlq.Entry) string { return e.OriginalTopic }},
	{Name: "original_partition", Value: func(e dlq.Entry) string { return optInt(e.OriginalPartition) }},
	{Name: "original_offset", Value: func(e dlq.Entry) string { return optInt(e.OriginalOffset) }},
	{Name: "original_timestamp", Value: func(e dlq.Entry) string { return csvTime(e.OriginalTimestamp) }},
	{Name: "group", Value: func(e dlq.Entry) string { return e.Group }},
	{Name: "handler", Value: func(e dlq.Entry) string { return e.Handler }},
	{Name: "reason", Value: func(e dlq.Entry) string { return e.Reason }},
	{Name: "error_class", Value: func(e dlq.Entry) string { return e.ErrorClass }},
	{Name: "error_message", Value: func(e dlq.Entry) string { return e.ErrorMessage }},
	{Name: "attempts", Value: func(e dlq.Entry) string {
		if e.Attempts > 0 {
			return strconv.Itoa(e.Attempts)
		}
		return ""
	}},
	{Name: "event_id", Value: func(e dlq.Entry) string { return e.EventID }},
	{Name: "key", Value: func(e dlq.Entry) string {
		if t, ok := cmdutil.BytesText(e.Key); ok && e.Key != nil {
			return t
		}
		return ""
	}},
	{Name: "key_base64", Value: func(e dlq.Entry) string {
		if t, ok := cmdutil.BytesText(e.Key); !ok && e.Key != nil {
			return t
		}
		return ""
	}},
	{Name: "status", Value: func(e dlq.Entry) string { return string(e.Status.Status) }},
	{Name: "header_problems", Value: func(e dlq.Entry) string { return dlqProblems(e.DeadLetter) }},
}

func optInt[T int32 | int64](v *T) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(int64(*v), 10)
}

// csvTime writes a time for a program: RFC 3339 with every digit, "" when absent.
func csvTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
