package schema

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Event reads a record's envelope through its payloads (docs/design.md §3.6): a framed value
// is decoded first and the envelope read from the decoded JSON, so an Avro or Protobuf event
// with event_id, aggregate_id and aggregate_version fields, or CloudEvents binary mode with an
// Avro or Protobuf data, is read like a JSON one. The record itself is not changed.
//
// Its error is a *Error when the framed value did not decode (the registry's failure or the
// payload's), else what envelope.DecodeRecord returns. A nil Decoder detects only: a framed
// value is then a *Error of ProblemNoRegistry.
func (d *Decoder) Event(ctx context.Context, r *kgo.Record) (envelope.Event, Record, error) {
	return d.event(ctx, r, envelope.DecodeRecord)
}

// event is Event with the envelope read by decode (envelope.DecodeRecord, or
// envelope.DecodeRecordView for a reader that keeps none of the event past the record).
func (d *Decoder) event(ctx context.Context, r *kgo.Record, decode func(*kgo.Record) (envelope.Event, error)) (envelope.Event, Record, error) {
	if r == nil {
		ev, err := decode(r)
		return ev, Record{}, err
	}
	var headers []envelope.Header // detection reads headers only when one of them is one it reads
	if ReadsAnyHeader(r.Headers) {
		headers = envelope.RecordHeaders(r.Headers)
	}
	rec := d.Record(ctx, headers, r.Key, r.Value)
	if rec.Value == nil {
		ev, err := decode(r)
		return ev, rec, err
	}
	if e := rec.Value.Err(); e != nil {
		return envelope.Event{}, rec, e
	}
	decoded := *r
	decoded.Value = rec.Value.Decoded
	ev, err := decode(&decoded)
	return ev, rec, err
}
