package envelope

import (
	"encoding/json"
	"strings"
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
	for _, name := range textAttributes {
		s := string(attrs[name])
		if reason := checkText(s); reason != "" {
			return fail(name, reason)
		}
		ev.setText(name, s)
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
// data, UTF-8 JSON is kept as it is (a view of the value, which decode's callers copy,
// ownData), anything else becomes a JSON string of its text.
func binaryData(value []byte) json.RawMessage {
	if isNull(value) {
		return nil
	}
	if utf8.Valid(value) && json.Valid(value) {
		return value
	}
	s, _ := json.Marshal(string(value)) // marshalling a string cannot fail
	return s
}

// textAttributes are the text attributes an Event takes from a CloudEvent, binary or
// structured, in the order they are read (setText says where each goes).
var textAttributes = [...]string{"type", "source", "subject", "aggregatetype", "aggregateid"}

// setText sets the text attribute name (one of textAttributes) to s. A switch, not pointers
// into ev: the decoders' Event then stays on the stack.
func (ev *Event) setText(name, s string) {
	switch name {
	case "type":
		ev.Type = s
	case "source":
		ev.Source = s
	case "subject":
		ev.Subject = s
	case "aggregatetype":
		ev.AggregateType = s
	case "aggregateid":
		ev.AggregateID = s
	}
}

// ownText gives the event's text attributes, which the JSON decoders read as views of the
// record's value (jsonTextView), a copy of their own: one string holding them all, so one
// allocation per event rather than one per attribute.
func (ev *Event) ownText() {
	n := len(ev.ID) + len(ev.Type) + len(ev.Source) + len(ev.Subject) + len(ev.AggregateType) + len(ev.AggregateID)
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range [...]string{ev.ID, ev.Type, ev.Source, ev.Subject, ev.AggregateType, ev.AggregateID} {
		b.WriteString(s)
	}
	all := b.String()
	for _, f := range [...]*string{&ev.ID, &ev.Type, &ev.Source, &ev.Subject, &ev.AggregateType, &ev.AggregateID} {
		*f, all = all[:len(*f)], all[len(*f):]
	}
}
