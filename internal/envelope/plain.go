package envelope

import "strings"

// decodePlainObject reads a plain JSON event: event_id (required), type (or, when that is
// absent, event_type, the name beside event_id in many schemas), occurred_at, aggregate_type,
// aggregate_id, aggregate_version (or, when that is absent, version) and data. When
// aggregate_version is present, version is not read at all: it may be a schema version; so
// event_type when type is.
func decodePlainObject(obj object) (Event, *MalformedError) {
	ev := Event{Format: FormatPlainJSON}
	fail := func(field, reason string) (Event, *MalformedError) {
		return Event{}, &MalformedError{Format: ev.Format, Field: field, Reason: reason, EventID: strings.Clone(ev.ID)} // ev.ID is a view until ownText
	}
	var reason string
	if ev.ID, reason = jsonID(obj, "event_id"); reason != "" {
		ev.ID = ""
		return fail("event_id", reason)
	}
	typeField := "type"
	if !obj.has(typeField) {
		typeField = "event_type"
	}
	if ev.Type, reason = jsonString(obj.get(typeField)); reason != "" {
		return fail(typeField, reason)
	}
	if ev.AggregateType, reason = jsonString(obj.get("aggregate_type")); reason != "" {
		return fail("aggregate_type", reason)
	}
	if ev.AggregateID, reason = jsonString(obj.get("aggregate_id")); reason != "" {
		return fail("aggregate_id", reason)
	}
	if ev.Time, reason = jsonTime(obj.get("occurred_at")); reason != "" {
		return fail("occurred_at", reason)
	}
	versionField := "aggregate_version"
	if !obj.has(versionField) {
		versionField = "version"
	}
	if ev.Version, ev.HasVersion, reason = jsonVersion(obj.get(versionField)); reason != "" {
		return fail(versionField, reason)
	}
	ev.Data = jsonData(obj.get("data"))
	return ev, nil
}
