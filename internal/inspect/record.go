package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/printable"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// ErrNoRecord is returned (wrapped) when an offset inside a partition's bounds holds no
// readable record: it was compacted away, belongs to an aborted transaction or is a
// transaction marker.
var ErrNoRecord = kafka.ErrNoRecord

// RecordReport is one record, decoded as far as it goes.
type RecordReport struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
	// TimestampType is "create" (set by the producer) or "log-append" (set by the broker).
	TimestampType string `json:"timestamp_type"`
	// Key, Headers and Value are the record's bytes (nil: a null key, value or header value);
	// MarshalJSON gives them as dlq show does, by printable.Text.
	Key     []byte            `json:"-"`
	Headers []envelope.Header `json:"-"`
	// Format is the envelope the record looks like (Detect), "" when none is recognised.
	Format string `json:"format"`
	// Event is the decoded envelope; nil when the record is malformed.
	Event *envelope.Event `json:"event"`
	// Malformed says why the record does not decode; nil when it does.
	Malformed *MalformedRecord `json:"malformed"`
	Value     []byte           `json:"-"`
	// ValueJSON is the value itself when it is valid JSON, for tools to read without decoding
	// the value again.
	ValueJSON json.RawMessage `json:"value_json,omitempty"`
	// KeySchema and ValueSchema are the key's and value's registry framing and, decoded, their
	// content (docs/design.md §3.6); nil when the bytes are not framed.
	KeySchema   *schema.Payload `json:"key_schema,omitempty"`
	ValueSchema *schema.Payload `json:"value_schema,omitempty"`
}

// recordReportJSON is RecordReport's JSON shape, its fields in the report's order.
type recordReportJSON struct {
	Topic         string             `json:"topic"`
	Partition     int32              `json:"partition"`
	Offset        int64              `json:"offset"`
	Timestamp     time.Time          `json:"timestamp"`
	TimestampType string             `json:"timestamp_type"`
	Key           *string            `json:"key"`
	KeyBase64     []byte             `json:"key_base64,omitempty"`
	Headers       []printable.Header `json:"headers"`
	Format        string             `json:"format"`
	Event         *envelope.Event    `json:"event"`
	Malformed     *MalformedRecord   `json:"malformed"`
	Value         *string            `json:"value"`
	ValueBase64   []byte             `json:"value_base64,omitempty"`
	ValueJSON     json.RawMessage    `json:"value_json,omitempty"`
	KeySchema     *schema.Payload    `json:"key_schema,omitempty"`
	ValueSchema   *schema.Payload    `json:"value_schema,omitempty"`
}

// MarshalJSON writes the report's fields, key, headers and value by the one rule for record
// bytes in JSON (docs/design.md §4.1): text when printable (null when nil), else key_base64 /
// value_base64 (a header's too) hold the exact bytes and the text is a reading aid. headers
// is [] when there is none.
func (r RecordReport) MarshalJSON() ([]byte, error) {
	out := recordReportJSON{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
		TimestampType: r.TimestampType, Headers: make([]printable.Header, len(r.Headers)), Format: r.Format,
		Event: r.Event, Malformed: r.Malformed, ValueJSON: r.ValueJSON, KeySchema: r.KeySchema, ValueSchema: r.ValueSchema}
	out.Key, out.KeyBase64 = printable.Text(r.Key)
	out.Value, out.ValueBase64 = printable.Text(r.Value)
	for i, h := range r.Headers {
		out.Headers[i] = printable.HeaderOf(h.Key, h.Value)
	}
	return json.Marshal(out)
}

// Record reads the record at topic/partition@offset. An offset outside the partition is a
// usage error that gives the valid range; an offset inside it with
// no readable record wraps ErrNoRecord; an offset beyond the last stable offset (an open
// transaction) says so.
//
// Framed payloads are decoded through d (docs/design.md §3.6) and the envelope read from the
// decoded value; a payload that does not decode is reported in the report, not as an error.
func Record(ctx context.Context, c *kafka.Cluster, d *schema.Decoder, topic string, partition int32, offset int64) (*RecordReport, error) {
	rec, err := c.Fetch(ctx, topic, partition, offset)
	if err != nil {
		return nil, err
	}
	return RecordOf(ctx, d, rec), nil
}

// RecordOf is rec as a report: its bytes, and its envelope (of the payload decoded through
// d) or why it does not decode.
func RecordOf(ctx context.Context, d *schema.Decoder, rec *kgo.Record) *RecordReport {
	rep := &RecordReport{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Timestamp: recordTime(rec), TimestampType: "create",
		Key: rec.Key, Headers: make([]envelope.Header, len(rec.Headers)), Value: rec.Value,
	}
	if rec.Attrs.TimestampType() == 1 {
		rep.TimestampType = "log-append"
	}
	for i, h := range rec.Headers {
		rep.Headers[i] = envelope.Header{Key: h.Key, Value: h.Value}
	}
	rep.Format = string(envelope.Detect(rep.Headers, rec.Value))
	ev, payloads, err := d.Event(ctx, rec)
	rep.KeySchema, rep.ValueSchema = payloads.Key, payloads.Value
	if payloads.Value != nil && len(payloads.Value.Decoded) > 0 {
		rep.Format = string(envelope.Detect(rep.Headers, payloads.Value.Decoded))
	}
	if err != nil {
		m := schema.MalformedRecordOf(rec, err)
		rep.Malformed = &m
	} else {
		rep.Event = &ev
	}
	if len(rec.Value) > 0 && json.Valid(rec.Value) {
		rep.ValueJSON = json.RawMessage(bytes.Clone(rec.Value))
	}
	return rep
}
