// Package inspect is the inspect command group: read-only views of topics, records and
// aggregates, and the event-stream lint.
package inspect

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// inspectLong is the group's help.
const inspectLong = `Read-only views of a topic's records as events.

  inspect topic T              partitions, offsets, configs, envelope formats, consumer lag
  inspect record T/P/O         one record: headers, key, decoded envelope, pretty value
  inspect records T            a run of records: the last of each partition, or a range
  inspect aggregate T ID       one aggregate's events in offset order, version continuity
  inspect validate T           lint the stream; exit 3 when it finds problems

Scans read the offsets fixed when they start and never wait for new records.`

// NewCmdInspect is the inspect group: read-only views of a topic, a record, an aggregate, and
// the event-stream lint.
func NewCmdInspect(f *cmdutil.Factory) *cobra.Command {
	return cmdutil.NewGroup("inspect <command>", "Inspect topics, records and aggregates; lint an event stream", inspectLong,
		NewCmdInspectTopic(f, nil),
		NewCmdInspectRecord(f, nil),
		NewCmdInspectRecords(f, nil),
		NewCmdInspectAggregate(f, nil),
		NewCmdInspectValidate(f, nil),
	)
}

// topicScan is what the inspect commands that scan a topic (aggregate, validate) read: the
// topic, and the partitions, offsets or times of --partition, --start-offset, --end-offset,
// --since and --until.
type topicScan struct {
	Topic     string
	Selection kafka.Selection

	sel cmdutil.SelectionFlags
}

// parseSelection checks the selection flags and resolves their times against now.
func (t *topicScan) parseSelection(cmd *cobra.Command, now time.Time) error {
	var err error
	t.Selection, err = t.sel.Selection(cmd, now)
	return err
}
