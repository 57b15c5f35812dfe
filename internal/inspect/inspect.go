// Package inspect looks at a topic the way an operator on call needs to: its partitions, the
// envelopes its records carry and how far behind each consumer group is (Topic); one record,
// decoded (Record); the events of one aggregate with their version continuity (Aggregate); and
// a lint of the whole event stream (Validate).
//
// Everything here is read-only and bounded: scans read the offset ranges fixed by
// kafka.Cluster.Plan when they start, never records that arrive during the scan. Results are
// plain structs whose JSON field names are snake_case and stable; this package never renders.
package inspect

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// ProgressFunc is told, during a scan, how many records have been read out of how many
// offsets were planned (control records and compacted gaps make the total an upper bound).
type ProgressFunc func(done, total int64)

// Position locates a record in a topic's partition.
type Position struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// In is the position's full address in topic, as messages write it: topic/partition/offset.
func (p Position) In(topic string) kafka.RecordAddress {
	return kafka.RecordAddress{Topic: topic, Partition: p.Partition, Offset: p.Offset}
}

// MalformedRecord is a record that is not a recognisable event, and precisely why
// (schema.MalformedRecord: one shape for every reader).
type MalformedRecord = schema.MalformedRecord

// FormatMalformed is the name under which format counts list records that do not decode.
const FormatMalformed = "malformed"

// recordTime is a record's timestamp in UTC, to the millisecond as Kafka keeps it.
func recordTime(rec *kgo.Record) time.Time { return rec.Timestamp.UTC() }
