package inspect

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// InspectRecordOptions are the inputs of `inspect record`.
type InspectRecordOptions struct {
	inspectDeps
	Address kafka.RecordAddress
}

// NewCmdInspectRecord builds `inspect record T/P/O`.
func NewCmdInspectRecord(f *cmdutil.Factory, runF func(context.Context, *InspectRecordOptions) error) *cobra.Command {
	opts := &InspectRecordOptions{inspectDeps: newInspectDeps(f)}
	cmd := &cobra.Command{
		Use:   "record TOPIC/PARTITION/OFFSET",
		Short: "One record: headers, key, decoded envelope and pretty value",
		Long: `Show one record: its timestamp, key and headers (as text, or base64 when they are not
printable text), the envelope it carries decoded (or precisely why it does not decode), and its value,
indented when it is JSON.`,
		Example: `  fieldwork inspect record tasks/0/42
  fieldwork inspect record tasks/0/42 -o json | jq .event`,
		Args: cmdutil.ExactArgs(1, "one record address, TOPIC/PARTITION/OFFSET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Address, err = kafka.ParseRecordAddress(args[0]); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, inspectRecordRun)
		},
	}
	return cmd
}

func inspectRecordRun(ctx context.Context, opts *InspectRecordOptions) error {
	p, c, err := cmdutil.PrinterAndCluster(ctx, opts.Printer, opts.Kafka)
	if err != nil {
		return err
	}
	defer c.Close()
	rep, err := inspect.Record(ctx, c, opts.Address.Topic, opts.Address.Partition, opts.Address.Offset)
	if err != nil {
		return err
	}
	return p.Object(rep, recordSections(p, rep))
}

func recordSections(p *output.Printer, rep *inspect.RecordReport) []output.Section {
	st := p.Styles
	rec := output.Section{Title: "Record " + kafka.RecordAddress{Topic: rep.Topic, Partition: rep.Partition, Offset: rep.Offset}.String(), Fields: [][2]string{
		{"topic", rep.Topic},
		{"partition", strconv.Itoa(int(rep.Partition))},
		{"offset", strconv.FormatInt(rep.Offset, 10)},
		{"timestamp", cmdutil.FormatTime(rep.Timestamp) + st.Dim.Render(" ("+rep.TimestampType+")")},
		{"key", cmdutil.BytesDisplay(st, rep.Key)},
		{"format", cmdutil.OrDash(rep.Format)},
	}}
	headers := output.Section{Title: fmt.Sprintf("Headers (%d)", len(rep.Headers))}
	for _, h := range rep.Headers {
		headers.Fields = append(headers.Fields, [2]string{cmdutil.KeyDisplay(h.Key), cmdutil.BytesDisplay(st, h.Value)})
	}
	if len(rep.Headers) == 0 {
		headers.Text = st.Dim.Render("(none)")
	}
	sections := []output.Section{rec, headers}
	if ev := rep.Event; ev != nil {
		sections = append(sections, cmdutil.EventSection(st, ev))
	}
	if m := rep.Malformed; m != nil {
		sections = append(sections, cmdutil.MalformedRecordSection(st, m.Format, m.Field, m.Reason))
	}
	return append(sections, cmdutil.ValueSection(st, rep.Value, rep.ValueJSON))
}
