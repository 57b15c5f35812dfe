package envelope

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// ErrMalformed matches every *MalformedError under errors.Is, for callers that only need to
// know that a record is poison (to dead-letter it) and not why.
var ErrMalformed = errors.New("malformed event")

// TombstoneReason is the Reason of a record whose value is null (Value nil, not empty): a
// tombstone, not an event. It is poison like any other record that is not an event, and says
// what it is, so that the dead letters of a compacted or CDC topic tell it from a producer's
// empty value.
const TombstoneReason = "null value: a tombstone (Kafka's delete marker), not an event"

// MalformedError says precisely why a record is not a recognisable event: which format was
// being decoded, which field is at fault and why, and, from DecodeRecord, which record.
// A malformed record is poison: decoding it again gives the same error.
type MalformedError struct {
	// Topic, Partition and Offset locate the record; set only when HasPosition is true
	// (errors from DecodeRecord).
	Topic       string
	Partition   int32
	Offset      int64
	HasPosition bool
	// Format is the format that was being decoded when it failed, "" if none was recognised.
	Format Format
	// Field is the field at fault as the envelope names it ("id", "event_id",
	// "aggregateversion", "occurred_at", …), or "" for a problem with the whole value.
	Field string
	// Reason says what is wrong, e.g. "missing", `not an integer: "abc"`,
	// "invalid JSON: unexpected end of input at byte 12", "empty value", TombstoneReason,
	// "not a JSON object: got a JSON array".
	Reason string
	// EventID is the event id when it was readable before the failure, else "". It lets a
	// dead letter carry the id of an event whose other fields are bad.
	EventID string
}

// Error renders the error on one line: the record's address (topic/partition/offset) when
// known, the format when known, the field when known, then the reason, e.g.
// `tasks/0/42: cloudevents-structured: field "id": missing`.
func (e *MalformedError) Error() string {
	var b strings.Builder
	if e.HasPosition {
		b.WriteString(kafka.RecordAddress{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset}.String())
		b.WriteString(": ")
	}
	if e.Format != "" {
		b.WriteString(string(e.Format))
		b.WriteString(": ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Is reports whether target is ErrMalformed.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }
