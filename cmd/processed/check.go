package processed

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// Defaults of `processed check`.
const (
	// checkLookupBatch is how many records are held before their ids are looked up in one
	// query: memory stays bounded by it, whatever the size of the range.
	checkLookupBatch     = 1000
	defaultMaxMissing    = 100
	maxMalformedExamples = 20
)

// ProcessedCheckOptions are the inputs of `processed check`.
type ProcessedCheckOptions struct {
	cmdutil.StoreDeps
	kafkaDeps
	Topic      string
	Consumer   string
	Selection  kafka.Selection
	MaxMissing int

	sel cmdutil.SelectionFlags
	Now func() time.Time
}

// NewCmdProcessedCheck builds `processed check`.
func NewCmdProcessedCheck(f *cmdutil.Factory, runF func(context.Context, *ProcessedCheckOptions) error) *cobra.Command {
	opts := &ProcessedCheckOptions{StoreDeps: cmdutil.NewStoreDeps(f), kafkaDeps: kafkaDeps{Kafka: f.Kafka}, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "check --topic TOPIC --consumer CONSUMER",
		Short: "Find the events of a Kafka range that a consumer has no marker for; exit 3 when any",
		Long: `The gap finder to run after an incident: read the records of a topic (every partition, or
--partition; all of it, an inclusive offset range, or a time window, with the end offsets fixed
when the check starts) and look up, for --consumer, which events have a marker and which do
not.

Records are decoded as events (CloudEvents binary or structured, or plain JSON) and looked up
in batches of 1,000 while the range streams past, so memory stays bounded on ranges of
millions of records. Counts are of records: an event written twice (a producer retry) counts
twice. Records with no recognisable event id are counted as malformed: a consumer
dead-letters them and never marks them, so they are not "missing".

Output: the counts and up to --max-missing missing records (topic, partition, offset, event
id) as a table or JSON; with -o jsonl (the default when piped) or csv, every missing record is
streamed to stdout as it is found and the counts go to stderr.

Exit code 3 when any event is missing, 0 when every event has a marker.`,
		Example: `  fieldwork processed check --topic tasks --consumer billing
  fieldwork processed check --topic tasks --consumer billing --partition 3 --start-offset 1200 --end-offset 5000
  fieldwork processed check --topic tasks --consumer billing --since 2h -o jsonl > missing.jsonl`,
		Args: cobra.NoArgs,
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
			if opts.Selection, err = opts.sel.Selection(cmd, opts.Now()); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, processedCheckRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Topic, "topic", "", "topic whose records to check (required)")
	fl.StringVar(&opts.Consumer, "consumer", "", "consumer whose markers to look up (required)")
	opts.sel.Register(cmd)
	fl.IntVar(&opts.MaxMissing, "max-missing", defaultMaxMissing, "missing records listed in table and json output (all are counted; jsonl and csv stream them all)")
	return cmd
}

// checkRecord is one record whose event has no marker.
type checkRecord struct {
	Topic       string    `json:"topic"`
	Partition   int32     `json:"partition"`
	Offset      int64     `json:"offset"`
	Timestamp   time.Time `json:"timestamp"`
	EventID     string    `json:"event_id"`
	Type        string    `json:"type,omitempty"`
	AggregateID string    `json:"aggregate_id,omitempty"`
}

// checkMalformed is a record without a recognisable event.
type checkMalformed struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
}

// checkReport is what `processed check` prints.
type checkReport struct {
	Topic      string                 `json:"topic"`
	Consumer   string                 `json:"consumer"`
	Table      string                 `json:"table"`
	Ranges     []kafka.PartitionRange `json:"ranges"`
	Records    int64                  `json:"records"`
	Events     int64                  `json:"events"`
	WithMarker int64                  `json:"with_marker"`
	Missing    int64                  `json:"missing"`
	Malformed  int64                  `json:"malformed"`
	// MissingRecords are the first MaxMissing missing records (empty when streamed).
	MissingRecords    []checkRecord    `json:"missing_records"`
	MissingTruncated  bool             `json:"missing_truncated"`
	MalformedExamples []checkMalformed `json:"malformed_examples"`
}

// gapFinder counts the records of a range and finds the events without a marker, looking
// them up checkLookupBatch at a time. It holds at most one batch.
type gapFinder struct {
	lookup    func(ctx context.Context, ids []string) (map[string]dedup.MarkerRow, error)
	onMissing func(checkRecord) error
	batchSize int

	rep   *checkReport
	batch []checkRecord
}

func (g *gapFinder) add(ctx context.Context, rec *kgo.Record) error {
	g.rep.Records++
	ev, err := envelope.DecodeRecord(rec)
	if err != nil {
		g.rep.Malformed++
		if len(g.rep.MalformedExamples) < maxMalformedExamples {
			g.rep.MalformedExamples = append(g.rep.MalformedExamples, checkMalformed{Partition: rec.Partition, Offset: rec.Offset, Reason: err.Error()})
		}
		return nil
	}
	g.rep.Events++
	g.batch = append(g.batch, checkRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UTC(),
		EventID: ev.ID, Type: ev.Type, AggregateID: ev.AggregateID})
	if len(g.batch) >= g.batchSize {
		return g.flush(ctx)
	}
	return nil
}

func (g *gapFinder) flush(ctx context.Context) error {
	if len(g.batch) == 0 {
		return nil
	}
	ids := make([]string, len(g.batch))
	for i, r := range g.batch {
		ids[i] = r.EventID
	}
	found, err := g.lookup(ctx, ids)
	if err != nil {
		return err
	}
	for _, r := range g.batch {
		if _, ok := found[r.EventID]; ok {
			g.rep.WithMarker++
			continue
		}
		g.rep.Missing++
		if err := g.onMissing(r); err != nil {
			return err
		}
	}
	g.batch = g.batch[:0]
	return nil
}

func processedCheckRun(ctx context.Context, opts *ProcessedCheckOptions) error {
	p, st, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// One primary-key probe, so that a missing table fails now and not after the range has
	// been planned and partly read.
	if _, err := st.Get(ctx, "fieldwork-check-probe", opts.Consumer); err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	c, err := opts.Kafka(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ranges, err := c.Plan(ctx, opts.Topic, opts.Selection)
	if err != nil {
		return err
	}
	rep := &checkReport{Topic: opts.Topic, Consumer: opts.Consumer, Table: st.Table(), Ranges: ranges,
		MissingRecords: []checkRecord{}, MalformedExamples: []checkMalformed{}}

	stream := p.Format == output.FormatJSONL || p.Format == output.FormatCSV
	var (
		onMissing func(checkRecord) error
		flushOut  = func() error { return nil }
	)
	switch {
	case p.Format == output.FormatJSONL:
		enc := json.NewEncoder(opts.Streams.Out)
		enc.SetEscapeHTML(false)
		onMissing = func(r checkRecord) error { return enc.Encode(r) }
	case p.Format == output.FormatCSV:
		w := csv.NewWriter(opts.Streams.Out)
		if err := w.Write(checkColumns); err != nil {
			return err
		}
		onMissing = func(r checkRecord) error { return w.Write(checkRow(r)) }
		flushOut = func() error { w.Flush(); return w.Error() }
	default:
		onMissing = func(r checkRecord) error {
			if len(rep.MissingRecords) < opts.MaxMissing {
				rep.MissingRecords = append(rep.MissingRecords, r)
			} else {
				rep.MissingTruncated = true
			}
			return nil
		}
	}
	g := &gapFinder{
		lookup: func(ctx context.Context, ids []string) (map[string]dedup.MarkerRow, error) {
			m, err := st.Lookup(ctx, opts.Consumer, ids)
			return m, cmdutil.StoreError(err, opts.Names())
		},
		onMissing: onMissing,
		batchSize: checkLookupBatch,
		rep:       rep,
	}
	progress, done := cmdutil.ScanProgress(opts.Streams, fmt.Sprintf("checking %s for %s", opts.Topic, opts.Consumer))
	total := kafka.Total(ranges)
	err = c.Read(ctx, ranges, func(rec *kgo.Record) error {
		if err := g.add(ctx, rec); err != nil {
			return err
		}
		if g.rep.Records%checkLookupBatch == 0 {
			if err := flushOut(); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(rep.Records, total)
		}
		return nil
	})
	if err == nil {
		err = g.flush(ctx)
	}
	done()
	if ferr := flushOut(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}

	if stream {
		fmt.Fprintln(opts.Streams.ErrOut, checkSummary(rep))
	} else if err := p.Object(rep, checkSections(p, rep, opts.MaxMissing)); err != nil {
		return err
	}
	if rep.Missing > 0 {
		return fwerr.Checkf("%d of %s in %s have no marker for consumer %s", rep.Missing, cmdutil.Plural(rep.Events, "event"), rep.Topic, rep.Consumer)
	}
	return nil
}

var checkColumns = []string{"topic", "partition", "offset", "timestamp", "event_id", "type", "aggregate_id"}

func checkRow(r checkRecord) []string {
	return []string{r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.Offset, 10), cmdutil.FormatTime(r.Timestamp), r.EventID, r.Type, r.AggregateID}
}

// checkSummary is the one-line result, for stderr when the records are streamed.
func checkSummary(rep *checkReport) string {
	return fmt.Sprintf("checked %s of %s (%s) for consumer %s: %d with a marker, %d missing, %d malformed",
		cmdutil.Plural(rep.Records, "record"), rep.Topic, rangesText(rep.Ranges), rep.Consumer, rep.WithMarker, rep.Missing, rep.Malformed)
}

// rangesText writes the partitions' offsets read as "0: 0..41  1: empty".
func rangesText(ranges []kafka.PartitionRange) string {
	var parts []string
	for _, r := range ranges {
		if r.Len() == 0 {
			parts = append(parts, fmt.Sprintf("%d: empty", r.Partition))
		} else {
			parts = append(parts, fmt.Sprintf("%d: %d..%d", r.Partition, r.Start, r.End-1))
		}
	}
	if len(parts) == 0 {
		return "no partitions"
	}
	return strings.Join(parts, "  ")
}

func checkSections(p *output.Printer, rep *checkReport, maxMissing int) []output.Section {
	st := p.Styles
	result := st.OK.Render("complete: every event has a marker")
	switch {
	case rep.Missing > 0:
		result = st.Bad.Render(fmt.Sprintf("%d missing", rep.Missing))
	case rep.Records == 0:
		result = st.Dim.Render("no records in the range")
	}
	missing := strconv.FormatInt(rep.Missing, 10)
	if rep.Missing > 0 {
		missing = st.Bad.Render(missing)
	}
	overview := output.Section{Title: fmt.Sprintf("Check %s for consumer %s", rep.Topic, rep.Consumer), Fields: [][2]string{
		{"result", result},
		{"offsets read", rangesText(rep.Ranges)},
		{"markers in", rep.Table},
		{"records", strconv.FormatInt(rep.Records, 10)},
		{"events", strconv.FormatInt(rep.Events, 10)},
		{"with marker", strconv.FormatInt(rep.WithMarker, 10)},
		{"missing", missing},
		{"malformed", strconv.FormatInt(rep.Malformed, 10) + st.Dim.Render(" (not recognisable as events: a consumer dead-letters them, never marks them)")},
	}}
	sections := []output.Section{overview}
	if len(rep.MissingRecords) > 0 {
		title := "Missing"
		if rep.MissingTruncated {
			title = fmt.Sprintf("Missing (first %d of %d; -o jsonl streams them all)", maxMissing, rep.Missing)
		}
		s := output.Section{Title: title, Header: checkColumns}
		for _, r := range rep.MissingRecords {
			row := checkRow(r)
			for i := range row {
				row[i] = cmdutil.OrDash(row[i])
			}
			s.Rows = append(s.Rows, row)
		}
		sections = append(sections, s)
	}
	if len(rep.MalformedExamples) > 0 {
		s := output.Section{Title: "Malformed records", Header: []string{"partition", "offset", "reason"}}
		for _, m := range rep.MalformedExamples {
			s.Rows = append(s.Rows, []string{strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.Offset, 10), m.Reason})
		}
		sections = append(sections, s)
	}
	return sections
}
