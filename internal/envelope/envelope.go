package envelope

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Format names an event envelope. Its values are stable: they appear in JSON output and in
// error messages.
type Format string

// The envelopes Decode recognises.
const (
	// FormatCloudEventsBinary is CloudEvents 1.0 binary mode: the attributes are ce_* headers
	// and the record value is the data.
	FormatCloudEventsBinary Format = "cloudevents-binary"
	// FormatCloudEventsStructured is CloudEvents 1.0 structured mode: the record value is one
	// JSON object holding the attributes and the data.
	FormatCloudEventsStructured Format = "cloudevents-structured"
	// FormatPlainJSON is a JSON object with event_id, aggregate_type, aggregate_id,
	// aggregate_version (or version), type, occurred_at and data.
	FormatPlainJSON Format = "plain-json"
)

// String returns the format's name, or "unknown" for the empty Format (none recognised).
func (f Format) String() string {
	if f == "" {
		return "unknown"
	}
	return string(f)
}

// Header is one Kafka record header, franz-go's own type (a record's headers are read as
// they are, not copied). Kafka allows a key to repeat; where an attribute is read from
// headers, the last header with that key wins, as with Kafka's Headers.lastHeader.
type Header = kgo.RecordHeader

// Event is the decoded envelope of one record. The JSON field names are snake_case and stable.
type Event struct {
	// ID is the globally unique event id: ce_id / id / event_id. Never empty.
	ID string `json:"event_id"`
	// Type is the event type: ce_type / type / type.
	Type string `json:"type,omitempty"`
	// Source is the CloudEvents source; always empty for plain JSON.
	Source string `json:"source,omitempty"`
	// Subject is the CloudEvents subject; always empty for plain JSON.
	Subject string `json:"subject,omitempty"`
	// Time is when the event occurred: ce_time / time / occurred_at. Zero when absent.
	Time time.Time `json:"time,omitzero"`
	// AggregateType is aggregatetype / aggregate_type.
	AggregateType string `json:"aggregate_type,omitempty"`
	// AggregateID is aggregateid / aggregate_id.
	AggregateID string `json:"aggregate_id,omitempty"`
	// Version is the aggregate's version: aggregateversion / aggregate_version (or version).
	// Meaningful only when HasVersion is true (JSON null otherwise, MarshalJSON). Negative
	// values are kept as they are.
	Version int64 `json:"aggregate_version"`
	// HasVersion reports whether the envelope carries an aggregate version.
	HasVersion bool `json:"has_version"`
	// Data is the event's data as one JSON value written as the record wrote it, or empty when
	// there is none; JSON null is none. In binary mode a value that is not UTF-8 JSON is held as
	// a JSON string of its text (bytes that are not UTF-8 become U+FFFD), and in structured mode
	// data_base64 is held as its JSON string; the record value stays the authoritative copy.
	Data json.RawMessage `json:"data,omitempty"`
	// Format is the envelope the event was decoded from.
	Format Format `json:"format"`
}

// MarshalJSON writes the event as its field tags say, with aggregate_version null when the
// envelope carries no version (docs/design.md §4: an absent value is null, never a zero
// number). The fields keep their order: the struct is written as it is and its version, the
// first "aggregate_version":0 followed by "has_version":false (no string holds that sequence
// unescaped, and data comes after), written as null.
func (e Event) MarshalJSON() ([]byte, error) {
	type event Event // without this method
	b, err := json.Marshal(event(e))
	if err != nil || e.HasVersion {
		return b, err
	}
	return bytes.Replace(b, []byte(`"aggregate_version":0,"has_version":false`), []byte(`"aggregate_version":null,"has_version":false`), 1), nil
}

// Detect returns the format Decode would try for this record, or "" when none is recognised.
// A record it names may still fail to decode; "" means Decode fails with Format "".
//
// The order: a content-type header naming a CloudEvents media type (application/cloudevents…)
// means structured mode, as the CloudEvents Kafka binding specifies; otherwise any ce_* header
// means binary mode; otherwise a JSON object value with a "specversion" member means structured
// mode, and one with an "event_id" member (and no "specversion") means plain JSON.
func Detect(headers []Header, value []byte) Format {
	if ct, ok := lastHeader(headers, "content-type"); ok && isCloudEventsMediaType(ct) {
		return FormatCloudEventsStructured
	}
	if hasCloudEventsHeader(headers) {
		return FormatCloudEventsBinary
	}
	var members [objectMembers]member
	obj, _ := parseObject(value, members[:0])
	return sniffObject(obj)
}

// Decode decodes one record's headers and value into an Event. It recognises, in the order
// Detect describes, CloudEvents binary mode, CloudEvents structured mode and plain JSON.
//
// A missing aggregate version is not an error (HasVersion is false); an id that is missing or
// empty, a version that is not an integer, a time that is not RFC 3339, a value that is not a
// JSON object where one is needed: each is a *MalformedError naming the format and field. On
// error the returned Event is the zero value; MalformedError.EventID carries the id when it
// was readable.
func Decode(headers []Header, value []byte) (Event, error) {
	ev, merr := decode(headers, value)
	if merr != nil {
		return Event{}, merr
	}
	ev.own()
	return ev, nil
}

// decode is Decode with the event's Data a view of value (or of the headers' bytes' JSON
// string), and its text attributes, read from a JSON value, views of value: the callers own
// them (own) or say that they are views (DecodeRecordView).
func decode(headers []Header, value []byte) (Event, *MalformedError) {
	if ct, ok := lastHeader(headers, "content-type"); ok && isCloudEventsMediaType(ct) {
		return decodeStructured(ct, value)
	}
	if hasCloudEventsHeader(headers) {
		return decodeBinary(headers, value)
	}
	var members [objectMembers]member
	obj, reason := parseObject(value, members[:0])
	if reason != "" {
		return Event{}, &MalformedError{Reason: reason}
	}
	switch sniffObject(obj) {
	case FormatCloudEventsStructured:
		return decodeStructuredObject(obj)
	case FormatPlainJSON:
		return decodePlainObject(obj)
	}
	return Event{}, &MalformedError{Field: "event_id", Reason: "missing: no CloudEvents id and no event_id"}
}

// RecordHeaders are franz-go record headers as the envelope reads them (nil for none): the
// same slice, not a copy.
func RecordHeaders(h []kgo.RecordHeader) []Header {
	if len(h) == 0 {
		return nil
	}
	return h
}

// DecodeRecord is Decode for a franz-go record. Its errors are *MalformedError with the
// record's topic, partition and offset set (HasPosition true). A nil record is malformed.
func DecodeRecord(r *kgo.Record) (Event, error) {
	ev, err := DecodeRecordView(r)
	if err == nil {
		ev.own()
	}
	return ev, err
}

// DecodeRecordView is DecodeRecord with the event's Data and text attributes (ID, Type, Source,
// Subject, AggregateType, AggregateID) views of the record's value rather than copies of it:
// for a reader that judges each record and keeps none of it past the record (a check reading
// millions of them spent a tenth of its decoding on the copies of the data, and a twentieth of
// its CPU on those of the text). What is kept must be copied (strings.Clone): a view holds the
// whole fetched batch the value was read from.
func DecodeRecordView(r *kgo.Record) (Event, error) {
	if r == nil {
		return Event{}, &MalformedError{Reason: "nil record"}
	}
	ev, merr := decode(RecordHeaders(r.Headers), r.Value)
	if merr != nil {
		merr.Topic, merr.Partition, merr.Offset, merr.HasPosition = r.Topic, r.Partition, r.Offset, true
		return Event{}, merr
	}
	return ev, nil
}

// own makes the event's text attributes and Data its own (ownText, ownData). A binary-mode
// event's text is already its own: read from the headers as new strings.
func (ev *Event) own() {
	if ev.Format != FormatCloudEventsBinary {
		ev.ownText()
	}
	ev.ownData()
}

// ownData makes the event's Data its own: a copy of the bytes decode left it a view of.
func (ev *Event) ownData() {
	if ev.Data != nil {
		ev.Data = bytes.Clone(ev.Data)
	}
}

// sniffObject names the format of a JSON object value: "specversion" beats "event_id".
func sniffObject(obj object) Format {
	if obj.has("specversion") {
		return FormatCloudEventsStructured
	}
	if obj.has("event_id") {
		return FormatPlainJSON
	}
	return ""
}

// lastHeader returns the value of the last header whose key equals key, ignoring ASCII case.
func lastHeader(headers []Header, key string) ([]byte, bool) {
	for i := len(headers) - 1; i >= 0; i-- {
		// The lengths first: a record carries many other headers (a dead letter a dozen).
		if len(headers[i].Key) == len(key) && strings.EqualFold(headers[i].Key, key) {
			return headers[i].Value, true
		}
	}
	return nil, false
}

// hasCloudEventsHeader reports whether any header key starts with "ce_", ignoring ASCII case.
func hasCloudEventsHeader(headers []Header) bool {
	for _, h := range headers {
		if _, ok := cloudEventsAttribute(h.Key); ok {
			return true
		}
	}
	return false
}

// cloudEventsAttribute maps a binary-mode header key to its lower-case attribute name.
func cloudEventsAttribute(key string) (string, bool) {
	if len(key) <= len("ce_") || !strings.EqualFold(key[:3], "ce_") {
		return "", false
	}
	return strings.ToLower(key[3:]), true
}

// mediaType returns the lower-cased media type of a content-type value, without parameters.
func mediaType(contentType []byte) string {
	return strings.ToLower(string(mediaTypeBytes(contentType)))
}

// mediaTypeBytes is the media type of a content-type value as written: without parameters
// and surrounding white space.
func mediaTypeBytes(contentType []byte) []byte {
	if i := bytes.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	return bytes.TrimSpace(contentType)
}

// isCloudEventsMediaType reports whether a content-type names a CloudEvents event format
// (application/cloudevents, application/cloudevents+json, …+avro, -batch+json, …). It is
// read for every record: an ASCII media type, the usual one, is compared in place, without a
// lower-cased copy.
func isCloudEventsMediaType(contentType []byte) bool {
	const prefix = "application/cloudevents"
	if mt := mediaTypeBytes(contentType); isASCII(mt) {
		return len(mt) >= len(prefix) && asciiEqualFold(mt[:len(prefix)], prefix)
	}
	return strings.HasPrefix(mediaType(contentType), prefix)
}

// jsonEventFormat reports whether a content-type's media type is application/cloudevents or
// application/cloudevents+json, ignoring case as mediaType does.
func jsonEventFormat(contentType []byte) bool {
	const plain, json = "application/cloudevents", "application/cloudevents+json"
	if mt := mediaTypeBytes(contentType); isASCII(mt) {
		return len(mt) == len(plain) && asciiEqualFold(mt, plain) || len(mt) == len(json) && asciiEqualFold(mt, json)
	}
	mt := mediaType(contentType)
	return mt == plain || mt == json
}

// isASCII reports whether b holds only ASCII bytes.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// asciiEqualFold reports whether the ASCII text b equals s (lower case) but for ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// LastHeader returns the value of the last header whose key equals key, ignoring ASCII case,
// as the envelope reads its headers.
func LastHeader(headers []Header, key string) ([]byte, bool) { return lastHeader(headers, key) }
