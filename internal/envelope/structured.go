package envelope

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// decodeStructured decodes a record whose content-type names a CloudEvents media type. Only the
// JSON event format is decoded; other formats (…+avro, …+protobuf) and batch mode are malformed
// with a Reason that names the content-type.
func decodeStructured(contentType, value []byte) (Event, *MalformedError) {
	if !jsonEventFormat(contentType) {
		return Event{}, &MalformedError{
			Format: FormatCloudEventsStructured,
			Reason: "unsupported content-type " + quote(mediaType(contentType)) + ": only application/cloudevents+json is decoded",
		}
	}
	var members [objectMembers]member
	obj, reason := parseObject(value, members[:0])
	if reason != "" {
		return Event{}, &MalformedError{Format: FormatCloudEventsStructured, Reason: reason}
	}
	return decodeStructuredObject(obj)
}

// decodeStructuredObject reads the CloudEvents JSON format's attributes: id (required), type,
// source, subject, time, the extensions aggregatetype, aggregateid and aggregateversion, and
// data or data_base64. specversion is not checked: it only marks the format.
func decodeStructuredObject(obj object) (Event, *MalformedError) {
	ev := Event{Format: FormatCloudEventsStructured}
	fail := func(field, reason string) (Event, *MalformedError) {
		return Event{}, &MalformedError{Format: ev.Format, Field: field, Reason: reason, EventID: strings.Clone(ev.ID)} // ev.ID is a view until ownText
	}
	var reason string
	if ev.ID, reason = jsonID(obj, "id"); reason != "" {
		ev.ID = ""
		return fail("id", reason)
	}
	for _, name := range textAttributes {
		var text string
		if text, reason = jsonString(obj.get(name)); reason != "" {
			return fail(name, reason)
		}
		ev.setText(name, text)
	}
	if ev.Time, reason = jsonTime(obj.get("time")); reason != "" {
		return fail("time", reason)
	}
	if ev.Version, ev.HasVersion, reason = jsonVersion(obj.get("aggregateversion")); reason != "" {
		return fail("aggregateversion", reason)
	}
	ev.Data = jsonData(obj.get("data"))
	if b64 := obj.get("data_base64"); !isNull(b64) {
		if ev.Data != nil {
			return fail("data_base64", "present together with data; CloudEvents allows one of them")
		}
		if reason = checkBase64(b64); reason != "" {
			return fail("data_base64", reason)
		}
		ev.Data = b64
	}
	return ev, nil
}

// checkBase64 accepts a JSON string holding base64 (RFC 4648, padded or not).
func checkBase64(raw json.RawMessage) string {
	s, ok := jsonTextView(raw) // only read here
	if !ok {
		return "not a string: " + describe(raw)
	}
	if _, err := base64.StdEncoding.DecodeString(s); err == nil {
		return ""
	}
	if _, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return ""
	}
	return "not base64: " + quote(s)
}
