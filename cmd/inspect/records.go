package inspect

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// InspectRecordsOptions are the inputs of `inspect records`.
type InspectRecordsOptions struct {
	topicScan
	// Last is how many of the last offsets of each selected partition are read (0: all).
	Last int
}

// NewCmdInspectRecords builds `inspect records T`.
func NewCmdInspectRecords(f *cmdutil.Factory, runF func(context.Context, *InspectRecordsOptions) error) *cobra.Command {
	opts := &InspectRecordsOptions{}
	cmd := &cobra.Command{
		Use:   "records TOPIC",
		Short: "A run of records: the last of each partition, or a selected range",
		Long: `Read a run of a topic's records, as kcat -C -t T -o -10 -e does: the last --last offsets of
each partition (10 by default; 0 for the whole selection), of the partitions, offsets or times
selected, one partition after the other, each in offset order. It reads the offsets fixed when
it starts and never waits for new records.

A table shows each record on a line (its event type, or why it is no event); JSON and JSON
Lines give each record as inspect record does (docs/json.md).`,
		Example: `  fieldwork inspect records tasks
  fieldwork inspect records tasks --partition 0 --last 3
  fieldwork inspect records tasks --partition 1 --start-offset 20 --end-offset 30 --last 0
  fieldwork inspect records tasks --since 1h --last 0 -o jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Last < 0 {
				return fwerr.Usagef("--last %d: must be 0 (all) or more", opts.Last)
			}
			if err := opts.parseSelection(cmd, f.Now()); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, inspectRecordsRun)
		},
	}
	cmdutil.TopicArg(cmd, &opts.Topic, "topic to read")
	opts.sel.Register(cmd)
	cmd.Flags().IntVarP(&opts.Last, "last", cmdutil.Shorthand("last"), 10, "read only the last N offsets of each selected partition (0: all of them)")
	return cmd
}

func inspectRecordsRun(ctx context.Context, opts *InspectRecordsOptions, cl *cmdutil.Clients) error {
	s := output.NewStream(cl.Printer, recordColumns, output.StreamOptions[*inspect.RecordReport]{Noun: "records", Empty: "no records in " + opts.Topic})
	err := inspect.Records(ctx, cl.Kafka, cl.Schemas, opts.Topic, opts.Selection, int64(opts.Last), s.Write)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// recordColumns are the columns of `inspect records`: where each record is, when, its key,
// and what it is (its event, or why it is no event).
var recordColumns = []output.Column[*inspect.RecordReport]{
	{Name: "partition", Value: func(r *inspect.RecordReport) string { return strconv.Itoa(int(r.Partition)) }},
	{Name: "offset", Value: func(r *inspect.RecordReport) string { return strconv.FormatInt(r.Offset, 10) }},
	{Name: "timestamp", Value: func(r *inspect.RecordReport) string { return cmdutil.FormatTime(r.Timestamp) }},
	{Name: "key", Value: func(r *inspect.RecordReport) string {
		text, _ := cmdutil.BytesText(r.Key)
		return cmdutil.OrDash(text)
	}},
	{Name: "type", Value: func(r *inspect.RecordReport) string {
		if r.Event == nil {
			return "malformed"
		}
		return cmdutil.OrDash(r.Event.Type)
	}},
	{Name: "event id", Value: func(r *inspect.RecordReport) string {
		if r.Event == nil {
			return "-"
		}
		return r.Event.ID
	}},
	{Name: "problem", Optional: true, Value: func(r *inspect.RecordReport) string {
		if r.Malformed == nil {
			return ""
		}
		return r.Malformed.Message
	}},
}
