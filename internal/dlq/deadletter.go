package dlq

import (
	"encoding/json"
	"time"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/printable"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Convention names who wrote a dead letter. Its values are stable: they appear in JSON output.
type Convention string

// The conventions Parse recognises. Each one's declaration (convention_*.go) says which headers
// belong to it and how they are read; conventions (conventions.go) the order Parse prefers them
// in when a record carries the headers of more than one.
const (
	ConventionFieldwork    Convention = "fieldwork"
	ConventionSpring       Convention = "spring"
	ConventionConnect      Convention = "connect"
	ConventionWatermill    Convention = "watermill"
	ConventionSmallRye     Convention = "smallrye"
	ConventionKarafka      Convention = "karafka"
	ConventionWolverine    Convention = "wolverine"
	ConventionDataContract Convention = "data-contract"
	ConventionUberKafka    Convention = "uber-kafka-client"
	ConventionKafkaStreams Convention = "kafka-streams"
	ConventionShareGroup   Convention = "share-group"
	ConventionUnknown      Convention = "unknown"
)

// DeadLetter is one dead-letter record of any convention, normalised. Fields a convention does
// not carry are zero (nil for the pointers): "not known", never a guess.
//
// Key, Value and the header values share memory with the record Parse read.
type DeadLetter struct {
	// Topic, Partition, Offset and Timestamp say where the dead letter itself is and when it was
	// written (the broker timestamp, UTC).
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
	// Convention is who wrote it; ConventionUnknown when no dead-letter header is present.
	Convention Convention `json:"convention"`

	// Where the original record was, as the dead-letter headers say.
	OriginalTopic     string     `json:"original_topic"`
	OriginalPartition *int32     `json:"original_partition"`
	OriginalOffset    *int64     `json:"original_offset"`
	OriginalTimestamp *time.Time `json:"original_timestamp"`

	// Group is the consumer group that gave up on the record. Handler is the handler (fieldwork,
	// Watermill), the connector name (Kafka Connect) or the subscriber (Watermill, when no
	// handler is named).
	Group   string `json:"group"`
	Handler string `json:"handler"`

	// Reason is fieldwork's reason (one of Reasons), or one derived from another convention's
	// headers (a deserialization or converter failure is ReasonMalformed); "" when unknown.
	Reason string `json:"reason"`
	// ErrorClass is the exception class (Spring: the cause's class when there is one, since the
	// exception itself is usually Spring's ListenerExecutionFailedException wrapper).
	ErrorClass   string `json:"error_class"`
	ErrorMessage string `json:"error_message"`
	StackTrace   string `json:"stack_trace"`
	// RootCause is the innermost cause the stack trace names ("class: message", a Java
	// "Caused by:" line or a .NET " ---> " inner exception), when it is not the error itself:
	// what the message alone often leaves out (Kafka Connect's "Converting byte[] to Kafka
	// Connect data failed due to serialization error: "). "" when the trace names none.
	RootCause string `json:"root_cause,omitempty"`
	// ExpectedSchema is the registry schema the consumer read the value with when that failed
	// (a schema mismatch, a schema the registry does not know), when the convention records
	// it: fieldwork's fw.dlq.schema ("id 42"), a data-contract rule's subject ("subject
	// orders-value"). "" otherwise.
	ExpectedSchema string `json:"expected_schema,omitempty"`
	// RetryTopics are the topics a record passed through before this one, oldest first, when
	// its convention keeps the chain (Spring's retry topics: one original-topic header per
	// hop). nil otherwise.
	RetryTopics []string `json:"retry_topics,omitempty"`

	// Attempts is how many times the handler was tried (fieldwork; Spring retry topics), 0 when
	// unknown. FirstFailedAt and FailedAt bound the failures (fieldwork only).
	Attempts      int        `json:"attempts"`
	FirstFailedAt *time.Time `json:"first_failed_at"`
	FailedAt      *time.Time `json:"failed_at"`

	// EventID is fw.dlq.event_id, else the id envelope.Decode reads from the record (also from
	// a record it finds malformed, when the id was readable), else "".
	EventID string `json:"event_id"`
	// EventIDSource says where EventID came from: the header it was read from
	// (fw.dlq.event_id, _watermill_message_uuid, kafka_messageId, id) or "envelope"; "" when
	// there is no event id.
	EventIDSource string `json:"event_id_source,omitempty"`

	// OriginalKey is the original record's key when the convention moved it out of the dead
	// letter's own key (HasOriginalKey): uber-go/kafka-client keeps it in the DLQMetadata its
	// key holds, Karafka in original_key (its key is the original partition). A replay sends
	// this key. nil with HasOriginalKey is a record that had no key.
	OriginalKey    []byte `json:"-"`
	HasOriginalKey bool   `json:"-"`

	// Key, Value and Headers are the record's, every header kept in order. JSON: see MarshalJSON.
	Key     []byte            `json:"key"`
	Value   []byte            `json:"value"`
	Headers []envelope.Header `json:"headers"`

	// ValueOmitted is set on a bounded copy (fw.dlq.value_omitted): the consumer could not
	// write the whole dead letter, so Value is the original value's first bytes, possibly
	// none. It says why (the limit, or the producer's error). A bounded copy must never be
	// replayed as if whole: it would send the cut value back. "" for a whole dead letter.
	ValueOmitted string `json:"value_omitted,omitempty"`
	// ValueBytes is the original value's length (fw.dlq.value_bytes), 0 when not said.
	ValueBytes int64 `json:"value_bytes,omitempty"`

	// HeaderProblems lists every header Parse could not read as its convention specifies, and
	// how it read it anyway when it could (e.g. Spring's partition written as text).
	HeaderProblems []HeaderProblem `json:"header_problems"`

	// ReplayCount is fw.replay.count: how many times fieldwork has replayed the record.
	ReplayCount int `json:"replay_count"`

	// KeySchema and ValueSchema are the key's and value's schema-registry framing and, when a
	// registry decoded them, their content (docs/design.md §3.6); nil when not framed.
	// DecodePayloads sets them.
	KeySchema   *schema.Payload `json:"key_schema,omitempty"`
	ValueSchema *schema.Payload `json:"value_schema,omitempty"`

	// ahead is the JSON appendJSON writes for the dead letter, written beside the scan by a
	// worker reading ahead for a listing written as JSON (aheadReader), which Entry.AppendJSON
	// copies; nil otherwise. Nothing changes a dead letter between the scan and the writing
	// of its line; whatever did would have to clear it.
	ahead []byte
}

// HeaderProblem names a header that could not be read as its convention specifies. Header is
// the header's key as UTF-8 text (U+FFFD in place of bytes that are not); the exact key is in
// DeadLetter.Headers.
type HeaderProblem struct {
	Header  string `json:"header"`
	Problem string `json:"problem"`
}

// Address is where the dead letter itself is: its topic/partition/offset.
func (d DeadLetter) Address() kafka.RecordAddress {
	return kafka.RecordAddress{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset}
}

// Source returns where a replay should send the dead letter back: its original topic, and
// partition when known. ok is false when the dead letter does not name a valid topic (no
// known convention, the header missing, or not a legal Kafka topic name).
func (d DeadLetter) Source() (topic string, partition *int32, ok bool) {
	topic, p, ok := d.Route()
	if !ok {
		return "", nil, false
	}
	if p < 0 {
		return topic, nil, true
	}
	return topic, &p, true
}

// Route is Source with the partition as a number, -1 when the headers name none: it allocates
// nothing, for a replay that routes every record it reads.
func (d *DeadLetter) Route() (topic string, partition int32, ok bool) {
	if !kafka.ValidTopic(d.OriginalTopic) {
		return "", -1, false
	}
	if d.OriginalPartition == nil {
		return d.OriginalTopic, -1, true
	}
	return d.OriginalTopic, *d.OriginalPartition, true
}

// plainDeadLetter has DeadLetter's fields without its methods.
type plainDeadLetter DeadLetter

// deadLetterJSON is DeadLetter's JSON shape: its own key, value, headers and header_problems
// fields shadow the embedded ones.
type deadLetterJSON struct {
	plainDeadLetter
	Key            *string            `json:"key"`
	KeyBase64      []byte             `json:"key_base64,omitempty"`
	HasOrigKey     bool               `json:"has_original_key,omitempty"`
	OrigKey        *string            `json:"original_key,omitempty"`
	OrigKeyBase64  []byte             `json:"original_key_base64,omitempty"`
	Value          *string            `json:"value"`
	ValueBase64    []byte             `json:"value_base64,omitempty"`
	Headers        []printable.Header `json:"headers"`
	HeaderProblems []HeaderProblem    `json:"header_problems"`
}

// MarshalJSON writes every field under its snake_case name, pointers as null when unknown.
// key, value and each header's key and value are given by printable.Text, the one rule for
// record bytes in JSON (docs/design.md §4.1): text when printable (null when nil), else
// key_base64 / value_base64 hold the exact bytes and the text is a reading aid. headers and
// header_problems are [] when empty.
func (d DeadLetter) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil) }

// AppendJSON appends what MarshalJSON writes to dst. A writer of many dead letters (a stream
// of `dlq list`) calls it directly: encoding/json validates and compacts again whatever a
// MarshalJSON method returns, a second pass over every byte that costs more than the encoding.
func (d DeadLetter) AppendJSON(dst []byte) ([]byte, error) { return d.appendJSON(dst) }

// marshalReflect is what AppendJSON writes, through encoding/json: the reference the tests
// hold appendJSON to.
func (d DeadLetter) marshalReflect(dst []byte) ([]byte, error) {
	out := deadLetterJSON{plainDeadLetter: plainDeadLetter(d)}
	out.Key, out.KeyBase64 = printable.Text(d.Key)
	if d.HasOriginalKey {
		out.HasOrigKey = true
		out.OrigKey, out.OrigKeyBase64 = printable.Text(d.OriginalKey)
	}
	out.Value, out.ValueBase64 = printable.Text(d.Value)
	out.Headers = make([]printable.Header, len(d.Headers))
	for i, h := range d.Headers {
		out.Headers[i] = printable.HeaderOf(h.Key, h.Value)
	}
	out.HeaderProblems = d.HeaderProblems
	if out.HeaderProblems == nil {
		out.HeaderProblems = []HeaderProblem{}
	}
	b, err := json.Marshal(out)
	if err != nil || dst == nil {
		return b, err
	}
	return append(dst, b...), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *DeadLetter) UnmarshalJSON(b []byte) error {
	var in deadLetterJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*d = DeadLetter(in.plainDeadLetter)
	d.Key = printable.FromText(in.Key, in.KeyBase64)
	if in.HasOrigKey {
		d.HasOriginalKey = true
		d.OriginalKey = printable.FromText(in.OrigKey, in.OrigKeyBase64)
	}
	d.Value = printable.FromText(in.Value, in.ValueBase64)
	d.Headers = nil
	if len(in.Headers) > 0 {
		d.Headers = make([]envelope.Header, len(in.Headers))
		for i, h := range in.Headers {
			k, v := h.Bytes()
			d.Headers[i] = envelope.Header{Key: k, Value: v}
		}
	}
	d.HeaderProblems = nil
	if len(in.HeaderProblems) > 0 {
		d.HeaderProblems = in.HeaderProblems
	}
	return nil
}
