package envelope

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeBinary reads CloudEvents binary mode: the attributes are ce_* headers (the key's case
// is ignored; the last header of a key wins) and the record value is the data. ce_id is
// required. Header values are text, so ce_aggregateversion is a decimal integer in text.
func decodeBinary(headers []Header, value []byte) (Event, *MalformedError) {
	attrs := make(map[string][]byte, len(headers))
	for _, h := range headers {
		if name, ok := cloudEventsAttribute(h.Key); ok {
			attrs[name] = h.Value
		}
	}
	ev := Event{Format: FormatCloudEventsBinary}
	fail := func(field, reason string) (Event, *MalformedError) {
		return Event{}, &MalformedError{Format: ev.Format, Field: field, Reason: reason, EventID: ev.ID}
	}
	id, ok := attrs["id"]
	if !ok {
		return fail("id", "missing: no ce_id header")
	}
	if reason := checkID(string(id)); reason != "" {
		return fail("id", reason)
	}
	ev.ID = string(id)
	for _, f := range ev.textAttributes() {
		s := string(attrs[f.name])
		if reason := checkText(s); reason != "" {
			return fail(f.name, reason)
		}
		*f.dst = s
	}
	var reason string
	if t := string(attrs["time"]); !utf8.ValidString(t) {
		return fail("time", "not valid UTF-8: "+quote(t))
	} else if ev.Time, reason = parseTime(t); reason != "" {
		return fail("time", reason)
	}
	if v := string(attrs["aggregateversion"]); !utf8.ValidString(v) {
		return fail("aggregateversion", "not valid UTF-8: "+quote(v))
	} else if ev.Version, ev.HasVersion, reason = parseVersion(v); reason != "" {
		return fail("aggregateversion", reason)
	}
	ev.Data = binaryData(value)
	return ev, nil
}

// binaryData makes a binary-mode value into Data: empty, white space and JSON null are no
// data, UTF-8 JSON is kept as it is (copied), anything else becomes a JSON string of its text.
func binaryData(value []byte) json.RawMessage {
	if isNull(value) {
		return nil
	}
	if utf8.Valid(value) && json.Valid(value) {
		return bytes.Clone(value)
	}
	s, _ := json.Marshal(string(value)) // marshalling a string cannot fail
	return s
}

// textAttribute is a CloudEvents attribute read as text into dst, in either mode.
type textAttribute struct {
	name string
	dst  *string
}

// textAttributes are the text attributes an Event takes from a CloudEvent, binary or
// structured, with where each goes.
func (ev *Event) textAttributes() []textAttribute {
	return []textAttribute{
		{"type", &ev.Type},
		{"source", &ev.Source},
		{"subject", &ev.Subject},
		{"aggregatetype", &ev.AggregateType},
		{"aggregateid", &ev.AggregateID},
	}
}
