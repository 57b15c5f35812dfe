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
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
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

// MalformedRecord is a record that is not a recognisable event, and precisely why.
type MalformedRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Format    string `json:"format,omitempty"`
	Field     string `json:"field,omitempty"`
	Reason    string `json:"reason"`
	EventID   string `json:"event_id,omitempty"`
	// Message is the decoder's one-line error, position included.
	Message string `json:"message"`
}

// malformedOf describes a decode error of rec.
func malformedOf(rec *kgo.Record, err error) MalformedRecord {
	m := MalformedRecord{Partition: rec.Partition, Offset: rec.Offset, Reason: err.Error(), Message: err.Error()}
	if me, ok := errors.AsType[*envelope.MalformedError](err); ok {
		m.Format, m.Field, m.Reason, m.EventID = string(me.Format), me.Field, me.Reason, me.EventID
	}
	if se, ok := errors.AsType[*schema.Error](err); ok {
		m.Message = kafka.AddressOf(rec).String() + ": " + m.Message
		m.Format, m.Field = string(se.Ref.Framing), "value"
		if se.Key {
			m.Field = "key"
		}
	}
	return m
}

// readEvent is the one decode step of the inspect readers (docs/design.md §3.6): the
// envelope read through d, a registry-framed value decoded first. fatal is set when the
// registry itself failed (down, refusing the credentials) for a framed value: such a record is
// not malformed, only unread, and a reader that judges records stops with it (exit 4) rather
// than report it as malformed. A framed value with no registry configured is a problem of the
// record (err, naming its schema id), not fatal: bytes that only look framed (a garbage record
// starting with a NUL) must not keep the rest of a topic from being judged.
func readEvent(ctx context.Context, d *schema.Decoder, rec *kgo.Record) (ev envelope.Event, err, fatal error) {
	ev, _, err = d.Event(ctx, rec)
	if se, ok := errors.AsType[*schema.Error](err); ok && se.Registry() {
		return ev, err, se.Kinded()
	}
	return ev, err, nil
}

// FormatMalformed is the name under which format counts list records that do not decode.
const FormatMalformed = "malformed"

// recordTime is a record's timestamp in UTC, to the millisecond as Kafka keeps it.
func recordTime(rec *kgo.Record) time.Time { return rec.Timestamp.UTC() }
