package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
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
	TimestampType string   `json:"timestamp_type"`
	Key           *Blob    `json:"key"`
	Headers       []Header `json:"headers"`
	// Format is the envelope the record looks like (Detect), "" when none is recognised.
	Format string `json:"format"`
	// Event is the decoded envelope; nil when the record is malformed.
	Event *envelope.Event `json:"event"`
	// Malformed says why the record does not decode; nil when it does.
	Malformed *MalformedRecord `json:"malformed"`
	Value     *Blob            `json:"value"`
	// ValueJSON is the value itself when it is valid JSON, for tools to read without decoding
	// Value.Text again.
	ValueJSON json.RawMessage `json:"value_json,omitempty"`
}

// Header is one record header; Value is nil for a header with a null value. A key that is
// not UTF-8 (Kafka does not require it) keeps its exact bytes in KeyBase64, as dlq show does:
// Key then has U+FFFD in place of each bad sequence.
type Header struct {
	Key       string `json:"key"`
	KeyBase64 []byte `json:"key_base64,omitempty"`
	Value     *Blob  `json:"value"`
}

// PrettyValue returns the value indented when it is JSON, else its text (or base64).
func (r *RecordReport) PrettyValue() string {
	if len(r.ValueJSON) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, r.ValueJSON, "", "  ") == nil {
			return b.String()
		}
	}
	if r.Value == nil {
		return ""
	}
	return r.Value.Text
}

// Record reads the record at topic/partition@offset. An offset outside the partition is a
// usage error that gives the valid range; an offset inside it with
// no readable record wraps ErrNoRecord; an offset beyond the last stable offset (an open
// transaction) says so.
func Record(ctx context.Context, c *kafka.Cluster, topic string, partition int32, offset int64) (*RecordReport, error) {
	rec, err := c.Fetch(ctx, topic, partition, offset)
	if err != nil {
		return nil, err
	}
	return recordReport(rec), nil
}

func recordReport(rec *kgo.Record) *RecordReport {
	rep := &RecordReport{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Timestamp: recordTime(rec), TimestampType: "create",
		Key: blobOf(rec.Key), Headers: []Header{}, Value: blobOf(rec.Value),
	}
	if rec.Attrs.TimestampType() == 1 {
		rep.TimestampType = "log-append"
	}
	hs := make([]envelope.Header, len(rec.Headers))
	for i, h := range rec.Headers {
		hdr := Header{Key: h.Key, Value: blobOf(h.Value)}
		if !utf8.ValidString(h.Key) {
			hdr.Key, hdr.KeyBase64 = strings.ToValidUTF8(h.Key, "\uFFFD"), []byte(h.Key)
		}
		rep.Headers = append(rep.Headers, hdr)
		hs[i] = envelope.Header{Key: h.Key, Value: h.Value}
	}
	rep.Format = string(envelope.Detect(hs, rec.Value))
	if ev, err := envelope.DecodeRecord(rec); err != nil {
		m := malformedOf(rec, err)
		rep.Malformed = &m
	} else {
		rep.Event = &ev
	}
	if len(rec.Value) > 0 && json.Valid(rec.Value) {
		rep.ValueJSON = json.RawMessage(bytes.Clone(rec.Value))
	}
	return rep
}
