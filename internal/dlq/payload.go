package dlq

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// DecodePayloads detects the registry framing of the dead letter's key and value and decodes
// them through dec (docs/design.md §3.6; a nil dec detects only). With envelopes (false for a
// parse that reads none, ParseOptions.NoEnvelope), a dead letter whose event id was not
// readable from its bytes gets the one its decoded value's envelope holds. r is the record d
// was parsed from, for its headers when the parse kept none.
func (d *DeadLetter) DecodePayloads(ctx context.Context, dec *schema.Decoder, r *kgo.Record, envelopes bool) {
	headers := d.Headers
	if headers == nil && schema.ReadsAnyHeader(r.Headers) {
		headers = envelope.RecordHeaders(r.Headers) // a dead letter parsed without headers: convert them only when detection reads one
	}
	rec := dec.Record(ctx, headers, d.Key, d.Value)
	d.KeySchema, d.ValueSchema = rec.Key, rec.Value
	if envelopes && d.EventID == "" && rec.Value != nil && len(rec.Value.Decoded) > 0 {
		if headers == nil && len(r.Headers) > 0 {
			headers = envelope.RecordHeaders(r.Headers)
		}
		if d.EventID = decodedEventID(headers, rec.Value.Decoded); d.EventID != "" {
			d.EventIDSource = EventIDFromEnvelope
		}
	}
}

// envelopeValue is the value the dead letter's envelope is read from: the decoded value when
// it is registry-framed and decoded, else the bytes.
func (d DeadLetter) envelopeValue() []byte {
	if d.ValueSchema != nil && len(d.ValueSchema.Decoded) > 0 {
		return d.ValueSchema.Decoded
	}
	return d.Value
}

// SchemaLabel is the value's schema as dlq list and dlq stats show it ("avro:42",
// "confluent:42" when no registry decoded it), else the key's, else "".
func (d DeadLetter) SchemaLabel() string {
	if d.ValueSchema != nil {
		return d.ValueSchema.Label()
	}
	return d.KeySchema.Label()
}
