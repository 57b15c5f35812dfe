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
)

// DLQShowOptions are the inputs of `dlq show`.
type DLQShowOptions struct {
	dlqDeps
	// Topic, Partition and Offset address the dead letter; --event-id (Filter.EventID) finds
	// it instead.
	Topic     string
	Partition int32
	Offset    int64

	TopicFlags cmdutil.DLQTopicFlags
	// FilterFlags are --event-id and, for its scan, --since and --until.
	FilterFlags cmdutil.DLQFilterFlags
	StatusFlags cmdutil.DLQStatusFlags

	Pattern *regexp.Regexp
	Filter  dlq.Filter
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
		Example: `  fieldwork dlq show tasks.dlq/0/42
  fieldwork dlq show --event-id evt-7 --topic tasks.dlq
  fieldwork dlq show tasks.dlq/0/42 -o json | jq -r .replay.command`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fwerr.Usagef("%s takes one dead-letter address, TOPIC/PARTITION/OFFSET (got %d arguments)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, dlqShowRun)
		},
	}
	fs := cmd.Flags()
	opts.TopicFlags.Register(fs)
	opts.FilterFlags.Register(cmd, cmdutil.DLQWindow|cmdutil.DLQEventID)
	opts.StatusFlags.Register(fs, cmdutil.DLQNoStatus)
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
		if strings.TrimSpace(opts.FilterFlags.EventID) == "" {
			return fwerr.Usagef("--event-id cannot be empty")
		}
		var err error
		if opts.Pattern, err = opts.TopicFlags.Compile(); err != nil {
			return err
		}
		if opts.Filter, err = opts.FilterFlags.Filter(cmd, opts.Now()); err != nil {
			return err
		}
	}
	return opts.StatusFlags.Validate(cmd, opts.lookup(), false)
}

func dlqShowRun(ctx context.Context, opts *DLQShowOptions) error {
	p, c, err := cmdutil.PrinterAndCluster(ctx, opts.Printer, opts.Kafka)
	if err != nil {
		return err
	}
	defer c.Close()

	var d dlq.DeadLetter
	if opts.Filter.EventID == "" {
		rec, err := dlq.Fetch(ctx, c, opts.Topic, opts.Partition, opts.Offset)
		if err != nil {
			return err
		}
		d = dlq.Parse(rec)
	} else {
		topics, err := opts.TopicFlags.Resolve(ctx, c, opts.Pattern, opts.Streams)
		if err != nil {
			return err
		}
		progress, clearProgress := dlqScanProgress(opts.Streams, "looking for "+opts.Filter.EventID+" in", topics)
		scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{Since: opts.Filter.Since, Until: opts.Filter.Until, InOrder: true, Progress: progress})
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
			return fmt.Errorf("no dead letter of event %q in %s", opts.Filter.EventID, dlqTopicList(topics))
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
			return cmdutil.StoreError(err, opts.Names())
		}
		entry.Status = infos[0]
	}
	det := dlq.NewDetail(entry)
	return p.Object(det, dlqShowSections(p, det, opts.Now))
}

func dlqTopicList(topics []string) string {
	if len(topics) == 0 {
		return "no topic"
	}
	return strings.Join(topics, ", ")
}

func dlqShowSections(p *output.Printer, det dlq.Detail, now func() time.Time) []output.Section {
	st := p.Styles
	d := det.DeadLetter
	optNum := func(v any) string {
		switch n := v.(type) {
		case *int32:
			if n != nil {
				return strconv.FormatInt(int64(*n), 10)
			}
		case *int64:
			if n != nil {
				return strconv.FormatInt(*n, 10)
			}
		}
		return st.Warn.Render("unknown")
	}
	age := ""
	if !d.Timestamp.IsZero() {
		age = st.Dim.Render(" (" + dlq.FormatAge(now().Sub(d.Timestamp)) + " ago)")
	}
	head := output.Section{Title: "Dead letter " + d.Address().String(), Fields: [][2]string{
		{"convention", string(d.Convention)},
		{"written", cmdutil.FormatTime(d.Timestamp) + age},
		{"key", cmdutil.BytesDisplay(st, d.Key)},
		{"event_id", cmdutil.OrDash(d.EventID)},
	}}
	if d.ReplayCount > 0 {
		head.Fields = append(head.Fields, [2]string{"replay_count", strconv.Itoa(d.ReplayCount)})
	}
	if det.Status.Status != "" {
		status := string(det.Status.Status)
		switch det.Status.Status {
		case dlq.StatusPending:
			status = st.Warn.Render(status)
		case dlq.StatusResolved:
			status = st.OK.Render(status)
		}
		head.Fields = append(head.Fields, [2]string{"status", status + dlqStatusNote(det.Status)})
	}
	orig := output.Section{Title: "Original record", Fields: [][2]string{
		{"topic", cmdutil.OrDash(d.OriginalTopic)},
		{"partition", optNum(d.OriginalPartition)},
		{"offset", optNum(d.OriginalOffset)},
		{"timestamp", cmdutil.OptTime(d.OriginalTimestamp)},
		{"group", cmdutil.OrDash(d.Group)},
		{"handler", cmdutil.OrDash(d.Handler)},
	}}
	if d.Convention == dlq.ConventionUnknown {
		orig.Fields, orig.Text = nil, st.Dim.Render("(no dead-letter headers of a known convention: see the headers)")
	}
	failure := output.Section{Title: "Failure", Fields: [][2]string{
		{"reason", cmdutil.OrDash(d.Reason)},
		{"error_class", cmdutil.OrDash(d.ErrorClass)},
		{"message", cmdutil.OrDash(d.ErrorMessage)},
	}}
	if d.Attempts > 0 {
		failure.Fields = append(failure.Fields, [2]string{"attempts", strconv.Itoa(d.Attempts)})
	}
	if d.FirstFailedAt != nil || d.FailedAt != nil {
		failure.Fields = append(failure.Fields, [2]string{"first_failed_at", cmdutil.OptTime(d.FirstFailedAt)}, [2]string{"failed_at", cmdutil.OptTime(d.FailedAt)})
	}
	sections := []output.Section{head, orig, failure}
	if len(d.HeaderProblems) > 0 {
		probs := output.Section{Title: fmt.Sprintf("Header problems (%d)", len(d.HeaderProblems)), Header: []string{"header", "problem"}}
		for _, hp := range d.HeaderProblems {
			probs.Rows = append(probs.Rows, []string{hp.Header, st.Warn.Render(hp.Problem)})
		}
		sections = append(sections, probs)
	}
	headers := output.Section{Title: fmt.Sprintf("Headers (%d)", len(d.Headers))}
	for _, h := range d.Headers {
		headers.Fields = append(headers.Fields, [2]string{cmdutil.KeyDisplay(h.Key), cmdutil.BytesDisplay(st, h.Value)})
	}
	if len(d.Headers) == 0 {
		headers.Text = st.Dim.Render("(none)")
	}
	sections = append(sections, headers)
	if ev := det.Event; ev != nil {
		sections = append(sections, cmdutil.EventSection(st, ev))
	}
	if m := det.Malformed; m != nil {
		sections = append(sections, cmdutil.MalformedRecordSection(st, m.Format, m.Field, m.Reason))
	}
	sections = append(sections, cmdutil.ValueSection(st, d.Value, det.ValueJSON))
	if d.StackTrace != "" {
		sections = append(sections, output.Section{Title: "Stack trace", Text: d.StackTrace})
	}
	replay := output.Section{Title: "Replay", Fields: [][2]string{
		{"target", cmdutil.OrDash(det.Replay.Target)},
		{"dry run", det.Replay.DryRun},
		{"execute", det.Replay.Command},
	}}
	for _, n := range det.Replay.Notes {
		replay.Fields = append(replay.Fields, [2]string{"note", st.Warn.Render(n)})
	}
	return append(sections, replay)
}

// dlqStatusNote adds what the status was told from.
func dlqStatusNote(s dlq.StatusInfo) string {
	switch {
	case s.Status == dlq.StatusUnknown && s.Why != "":
		return " (" + s.Why + ")"
	case s.Replay != nil:
		return fmt.Sprintf(" (replay run %s sent it to %s at %s; consumer %s has no marker yet)", s.Replay.RunID,
			kafka.RecordAddress{Topic: s.Replay.TargetTopic, Partition: s.Replay.TargetPartition, Offset: s.Replay.TargetOffset}.String(), cmdutil.FormatTime(s.Replay.At), s.Consumer)
	case s.Marker != nil:
		return fmt.Sprintf(" (consumer %s processed it at %s)", s.Consumer, cmdutil.FormatTime(s.Marker.ProcessedAt))
	case s.Consumer != "":
		return " (consumer " + s.Consumer + ")"
	}
	return ""
}
