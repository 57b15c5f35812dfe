package dlq

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
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
	StatusNames []string
	Limit       int

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
  fieldwork dlq list --topic tasks.dlq --reason malformed --since 2h
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
	opts.FilterFlags.Register(fs, true)
	opts.StatusFlags.Register(fs)
	fs.StringSliceVar(&opts.StatusNames, "status", nil, "only dead letters with this status: pending, replayed, resolved, unknown (repeatable; needs a store)")
	fs.IntVar(&opts.Limit, "limit", DefaultDLQListLimit, "show at most this many dead letters (0: no limit)")
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
	if opts.Statuses, err = dlq.ParseStatuses(opts.StatusNames); err != nil {
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

	progress, clearProgress := dlqScanProgress(opts.Streams, "scanning", topics)
	scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{
		Since: opts.Filter.Since, Until: opts.Filter.Until, InOrder: true, Progress: progress,
	})
	if err != nil {
		return err
	}
	w := newDLQListWriter(p, lookup.Enabled(), opts.Now())
	res, err := dlq.List(ctx, scan, dlq.ListOptions{
		Filter: opts.Filter, Lookup: lookup, Statuses: opts.Statuses, Limit: opts.Limit,
	}, func(e dlq.Entry) error {
		clearProgress()
		return w.write(e)
	})
	clearProgress()
	if err != nil {
		if lookup.Enabled() && fwerr.KindOf(err) == fwerr.KindError {
			err = cmdutil.StoreError(err, opts.Names())
		}
		return err
	}
	if err := w.close(); err != nil {
		return err
	}
	switch {
	case res.More:
		fmt.Fprintf(opts.Streams.ErrOut, "showing the first %d dead letters: more remain (raise --limit, 0 for no limit, or narrow the filters)\n", res.Listed)
	case res.Listed == 0 && p.Format == output.FormatTable && len(topics) > 0:
		fmt.Fprintln(opts.Streams.ErrOut, dlqNothingFound(topics, res.ScanResult))
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

// dlqListWriter writes entries in the printer's format: JSON Lines, CSV and the JSON array
// as they come, the table at the end (it needs every row to size its columns; the rows are
// strings, so the records themselves are not kept).
type dlqListWriter struct {
	p          *output.Printer
	withStatus bool
	now        time.Time
	n          int
	csv        *csv.Writer
	rows       [][]string
	problems   bool
}

func newDLQListWriter(p *output.Printer, withStatus bool, now time.Time) *dlqListWriter {
	return &dlqListWriter{p: p, withStatus: withStatus, now: now}
}

// dlqCSVHeader are the CSV columns of `dlq list`: one field per column, bytes as text (or
// base64 in key_base64 when the key is not text).
var dlqCSVHeader = []string{
	"topic", "partition", "offset", "timestamp", "convention",
	"original_topic", "original_partition", "original_offset", "original_timestamp",
	"group", "handler", "reason", "error_class", "error_message", "attempts", "event_id",
	"key", "key_base64", "status", "header_problems",
}

func (w *dlqListWriter) write(e dlq.Entry) error {
	out := w.p.Streams.Out
	w.n++
	switch w.p.Format {
	case output.FormatJSONL:
		return dlqWriteJSON(out, e, "", "")
	case output.FormatJSON:
		sep := ",\n  "
		if w.n == 1 {
			sep = "[\n  "
		}
		if _, err := io.WriteString(out, sep); err != nil {
			return err
		}
		return dlqWriteJSON(out, e, "  ", "  ")
	case output.FormatCSV:
		if w.csv == nil {
			w.csv = csv.NewWriter(out)
			if err := w.csv.Write(dlqCSVHeader); err != nil {
				return err
			}
		}
		if err := w.csv.Write(dlqCSVRow(e)); err != nil {
			return err
		}
		w.csv.Flush()
		return w.csv.Error()
	}
	w.rows = append(w.rows, w.tableRow(e))
	w.problems = w.problems || len(e.HeaderProblems) > 0
	return nil
}

func (w *dlqListWriter) close() error {
	out := w.p.Streams.Out
	switch w.p.Format {
	case output.FormatJSONL:
		return nil
	case output.FormatJSON:
		end := "\n]\n"
		if w.n == 0 {
			end = "[]\n"
		}
		_, err := io.WriteString(out, end)
		return err
	case output.FormatCSV:
		if w.csv == nil {
			w.csv = csv.NewWriter(out)
			_ = w.csv.Write(dlqCSVHeader)
		}
		w.csv.Flush()
		return w.csv.Error()
	}
	if len(w.rows) == 0 {
		return nil
	}
	header := []string{"dead letter", "original", "reason", "error class", "message", "event id", "age", "convention"}
	if w.withStatus {
		header = append(header, "status")
	}
	if w.problems {
		header = append(header, "problems")
	}
	rows := w.rows
	for i, r := range rows {
		rows[i] = r[:len(header)]
	}
	return w.p.Table(header, rows)
}

// tableRow renders one entry with every optional column; close drops those not shown.
func (w *dlqListWriter) tableRow(e dlq.Entry) []string {
	st := w.p.Styles
	tty := w.p.Streams.OutTTY
	msg := dlqOneLine(e.ErrorMessage)
	if tty {
		msg = cmdutil.Truncate(msg, dlqMessageWidth)
	}
	reason := cmdutil.OrDash(e.Reason)
	if e.Reason == dlq.ReasonMalformed {
		reason = st.Bad.Render(reason)
	}
	age := "-"
	if !e.Timestamp.IsZero() {
		age = dlq.FormatAge(w.now.Sub(e.Timestamp))
	}
	status := "-"
	switch e.Status.Status {
	case dlq.StatusPending:
		status = st.Warn.Render(string(e.Status.Status))
	case dlq.StatusResolved:
		status = st.OK.Render(string(e.Status.Status))
	case "":
	default:
		status = string(e.Status.Status)
	}
	var problems []string
	for _, hp := range e.HeaderProblems {
		problems = append(problems, hp.Header+": "+hp.Problem)
	}
	prob := strings.Join(problems, "; ")
	if tty {
		prob = cmdutil.Truncate(prob, dlqMessageWidth)
	}
	if prob != "" {
		prob = st.Warn.Render(prob)
	} else {
		prob = "-"
	}
	row := []string{
		e.Address().String(), dlqOriginal(e.DeadLetter), reason,
		cmdutil.OrDash(e.ErrorClass), cmdutil.OrDash(msg), cmdutil.OrDash(e.EventID), age, string(e.Convention),
	}
	if w.withStatus {
		row = append(row, status)
	}
	return append(row, prob)
}

func dlqCSVRow(e dlq.Entry) []string {
	opt := func(p any) string {
		switch v := p.(type) {
		case *int32:
			if v != nil {
				return strconv.FormatInt(int64(*v), 10)
			}
		case *int64:
			if v != nil {
				return strconv.FormatInt(*v, 10)
			}
		case *time.Time:
			if v != nil {
				return v.UTC().Format(time.RFC3339Nano)
			}
		}
		return ""
	}
	var key, key64 string
	if e.Key != nil {
		if t, ok := dlqText(e.Key); ok {
			key = t
		} else {
			key64 = t
		}
	}
	ts := ""
	if !e.Timestamp.IsZero() {
		ts = e.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	attempts := ""
	if e.Attempts > 0 {
		attempts = strconv.Itoa(e.Attempts)
	}
	var problems []string
	for _, hp := range e.HeaderProblems {
		problems = append(problems, hp.Header+": "+hp.Problem)
	}
	return []string{
		e.Topic, strconv.Itoa(int(e.Partition)), strconv.FormatInt(e.Offset, 10), ts, string(e.Convention),
		e.OriginalTopic, opt(e.OriginalPartition), opt(e.OriginalOffset), opt(e.OriginalTimestamp),
		e.Group, e.Handler, e.Reason, e.ErrorClass, e.ErrorMessage, attempts, e.EventID,
		key, key64, string(e.Status.Status), strings.Join(problems, "; "),
	}
}

// dlqWriteJSON writes v as JSON the way the output package does (no HTML escaping of its
// own), indented with prefix and indent when indent is not empty. JSON Lines (no indent) end
// with a newline; indented values do not, so that the caller can join them into an array.
func dlqWriteJSON(w io.Writer, v any, prefix, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(prefix, indent)
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	if indent != "" {
		b = bytes.TrimRight(b, "\n")
	}
	_, err := w.Write(b)
	return err
}
