package dlq

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// DefaultTopicSuffix is appended to a record's topic to name its dead-letter topic.
const DefaultTopicSuffix = ".dlq"

// Meta is what a consumer knows about a failure, written into fw.dlq.* headers.
type Meta struct {
	// Topic is the dead-letter topic; "" means the original topic + DefaultTopicSuffix.
	Topic string
	// Group is the consumer group and Handler the handler that gave up.
	Group, Handler string
	// EventID is the event's id; "" means the one envelope.Decode reads from the record, if any.
	EventID string
	// Reason is one of Reasons.
	Reason string
	// Error is the error message.
	Error string
	// ErrorClass is the failure's class (fw.dlq.error_class), "" when the handler gave none.
	ErrorClass string
	// Schema is the registry schema the value was to be read with when that failed
	// (fw.dlq.schema, e.g. "id 42"); "" when the failure was not the schema's.
	Schema string
	// Attempts is how many times the handler was tried; 0 is not written.
	Attempts int
	// FirstFailedAt is when the first attempt failed; zero means FailedAt.
	FirstFailedAt time.Time
	// FailedAt is when the last attempt failed; zero means now. It is also the dead letter's
	// record timestamp.
	FailedAt time.Time
}

// NewDeadLetter returns the dead letter of orig in fieldwork's convention (docs/design.md §3.2): a
// record for meta.Topic (default orig.Topic + ".dlq") with orig's key, value and headers byte
// for byte (copies: orig is not modified and shares no memory with the result; a nil key or
// value stays nil), followed by the fw.dlq.* headers. Headers orig already has under fw.dlq.*
// (it is itself a replayed dead letter) are dropped, so each fw.dlq.* header appears once and
// describes this failure; other conventions' dead-letter headers and fw.replay.* are kept.
//
// Every fw.dlq.* value is UTF-8: numbers decimal, times RFC 3339 in UTC with as many fraction
// digits as needed (fw.dlq.timestamp keeps the original record's millisecond or finer
// precision). fw.dlq.topic, partition, offset, reason and failed_at are always written; the
// others only when known (timestamp when orig has one, attempts when above 0, the strings when
// not empty). The partition is left to the producer's partitioner, which keys on the original
// key. A nil orig is treated as an empty record.
func NewDeadLetter(orig *kgo.Record, meta Meta) *kgo.Record {
	if orig == nil {
		orig = &kgo.Record{}
	}
	failedAt := meta.FailedAt
	if failedAt.IsZero() {
		failedAt = time.Now()
	}
	failedAt = failedAt.UTC()
	firstFailedAt := meta.FirstFailedAt
	if firstFailedAt.IsZero() {
		firstFailedAt = failedAt
	}
	topic := meta.Topic
	if topic == "" {
		topic = orig.Topic + DefaultTopicSuffix
	}
	eventID := meta.EventID
	if eventID == "" {
		eventID = decodedEventID(envelope.RecordHeaders(orig.Headers), orig.Value)
	}

	headers := make([]kgo.RecordHeader, 0, len(orig.Headers)+12)
	for _, h := range orig.Headers {
		if strings.HasPrefix(asciiLower(h.Key), HeaderPrefix) {
			continue
		}
		headers = append(headers, kgo.RecordHeader{Key: h.Key, Value: bytes.Clone(h.Value)})
	}
	add := func(key, value string) {
		headers = append(headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
	}
	addIf := func(key, value string) {
		if value != "" {
			add(key, value)
		}
	}
	add(HeaderTopic, orig.Topic)
	add(HeaderPartition, strconv.FormatInt(int64(orig.Partition), 10))
	add(HeaderOffset, strconv.FormatInt(orig.Offset, 10))
	if !orig.Timestamp.IsZero() {
		add(HeaderTimestamp, formatTime(orig.Timestamp))
	}
	addIf(HeaderGroup, meta.Group)
	addIf(HeaderHandler, meta.Handler)
	addIf(HeaderEventID, eventID)
	add(HeaderReason, meta.Reason)
	addIf(HeaderError, meta.Error)
	addIf(HeaderErrorClass, meta.ErrorClass)
	addIf(HeaderSchema, meta.Schema)
	if meta.Attempts > 0 {
		add(HeaderAttempts, strconv.Itoa(meta.Attempts))
	}
	add(HeaderFirstFailedAt, formatTime(firstFailedAt))
	add(HeaderFailedAt, formatTime(failedAt))

	return &kgo.Record{
		Topic:     topic,
		Key:       bytes.Clone(orig.Key),
		Value:     bytes.Clone(orig.Value),
		Headers:   headers,
		Timestamp: failedAt,
	}
}

// formatTime writes t in UTC as RFC 3339 with the fraction digits it needs.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
