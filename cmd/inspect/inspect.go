// Package inspect is the inspect command group: read-only views of topics, records and
// aggregates, and the event-stream lint.
package inspect

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// NewCmdInspect is the inspect group: read-only views of a topic, a record, an aggregate, and
// the event-stream lint.
func NewCmdInspect(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect <command>",
		Short: "Inspect topics, records and aggregates; lint an event stream",
		Long: `Read-only views of a topic's records as events.

  inspect topic T              partitions, offsets, configs, envelope formats, consumer lag
  inspect record T/P/O         one record: headers, key, decoded envelope, pretty value
  inspect aggregate T ID       one aggregate's events in offset order, version continuity
  inspect validate T           lint the stream; exit 3 when it finds problems

Scans read the offsets fixed when they start and never wait for new records.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		NewCmdInspectTopic(f, nil),
		NewCmdInspectRecord(f, nil),
		NewCmdInspectAggregate(f, nil),
		NewCmdInspectValidate(f, nil),
	)
	return cmd
}

// inspectDeps are what every inspect command needs from the factory, built lazily so that
// parsing, --help and usage errors never dial a broker.
type inspectDeps struct {
	Streams *output.Streams
	Kafka   func(context.Context) (*kafka.Cluster, error)
	Printer func() (*output.Printer, error)
}

func newInspectDeps(f *cmdutil.Factory) inspectDeps {
	return inspectDeps{Streams: f.Streams, Kafka: f.Kafka, Printer: f.Printer}
}
