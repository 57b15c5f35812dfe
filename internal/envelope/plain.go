package envelope

import "encoding/json"

// decodePlainObject reads a plain JSON event: event_id (required), type, occurred_at,
// aggregate_type, aggregate_id, aggregate_version (or, when that is absent, version) and data.
// When aggregate_version is present, version is not read at all: it may be a schema version.
func decodePlainObject(obj map[string]json.RawMessage) (Event, *MalformedError) {
	ev := Event{Format: FormatPlainJSON}
	fail := func(field, reason string) (Event, *MalformedError) {
		return Event{}, &MalformedError{Format: ev.Format, Field: field, Reason: reason, EventID: ev.ID}
	}
	var reason string
	if ev.ID, reason = jsonID(obj, "event_id"); reason != "" {
		ev.ID = ""
		return fail("event_id", reason)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"type", &ev.Type},
		{"aggregate_type", &ev.AggregateType},
		{"aggregate_id", &ev.AggregateID},
	} {
		if *f.dst, reason = jsonString(obj[f.name]); reason != "" {
			return fail(f.name, reason)
		}
	}
	if ev.Time, reason = jsonTime(obj["occurred_at"]); reason != "" {
		return fail("occurred_at", reason)
	}
	versionField := "aggregate_version"
	if _, ok := obj[versionField]; !ok {
		versionField = "version"
	}
	if ev.Version, ev.HasVersion, reason = jsonVersion(obj[versionField]); reason != "" {
		return fail(versionField, reason)
	}
	ev.Data = jsonData(obj["data"])
	return ev, nil
}
