package inspect

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// InspectRecordOptions are the inputs of `inspect record`.
type InspectRecordOptions struct {
	Address kafka.RecordAddress
}

// NewCmdInspectRecord builds `inspect record T/P/O`.
func NewCmdInspectRecord(f *cmdutil.Factory, runF func(context.Context, *InspectRecordOptions) error) *cobra.Command {
	opts := &InspectRecordOptions{}
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
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, inspectRecordRun)
		},
	}
	return cmd
}

func inspectRecordRun(ctx context.Context, opts *InspectRecordOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	rep, err := inspect.Record(ctx, c, cl.Schemas, opts.Address.Topic, opts.Address.Partition, opts.Address.Offset)
	if err != nil {
		return err
	}
	return p.Object(rep, cmdutil.RecordSections(p, rep))
}
