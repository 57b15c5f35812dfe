package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMalformedErrorString(t *testing.T) {
	tests := []struct {
		name string
		err  MalformedError
		want string
	}{
		{"everything", MalformedError{Topic: "tasks", Partition: 0, Offset: 42, HasPosition: true,
			Format: FormatCloudEventsStructured, Field: "id", Reason: "missing"},
			`tasks/0/42: cloudevents-structured: field "id": missing`},
		{"offset zero is still a position", MalformedError{Topic: "t", Partition: 3, HasPosition: true,
			Format: FormatPlainJSON, Reason: "empty value"},
			`t/3/0: plain-json: empty value`},
		{"no position", MalformedError{Format: FormatCloudEventsBinary, Field: "aggregateversion", Reason: `not an integer: "abc"`},
			`cloudevents-binary: field "aggregateversion": not an integer: "abc"`},
		{"no format", MalformedError{Field: "event_id", Reason: "missing: no CloudEvents id and no event_id"},
			`field "event_id": missing: no CloudEvents id and no event_id`},
		{"reason only", MalformedError{Reason: "empty value"}, `empty value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrorsIsMalformed(t *testing.T) {
	_, err := Decode(nil, []byte("{}"))
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("errors.Is(%v, ErrMalformed) = false", err)
	}
	wrapped := fmt.Errorf("batch: %w", err)
	if me, ok := errors.AsType[*MalformedError](wrapped); !ok || me.Field != "event_id" {
		t.Errorf("errors.As through a wrap = %v, %v", me, ok)
	}
	if errors.Is(errors.New("other"), ErrMalformed) {
		t.Error("an unrelated error is ErrMalformed")
	}
}

func TestFormatString(t *testing.T) {
	for f, want := range map[Format]string{
		FormatCloudEventsBinary:     "cloudevents-binary",
		FormatCloudEventsStructured: "cloudevents-structured",
		FormatPlainJSON:             "plain-json",
		"":                          "unknown",
	} {
		if got := f.String(); got != want {
			t.Errorf("Format(%q).String() = %q, want %q", string(f), got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	ce := func(kv ...string) []Header {
		var hs []Header
		for i := 0; i+1 < len(kv); i += 2 {
			hs = append(hs, Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return hs
	}
	tests := []struct {
		name    string
		headers []Header
		value   string
		want    Format
	}{
		{"ce_id header", ce("ce_id", "x"), "", FormatCloudEventsBinary},
		{"any ce_ header, even without ce_id", ce("ce_type", "t"), `{"event_id":"e"}`, FormatCloudEventsBinary},
		{"structured content-type", ce("content-type", "application/cloudevents+json"), "", FormatCloudEventsStructured},
		{"structured content-type beats ce_ headers", ce("ce_id", "x", "content-type", "application/cloudevents+json"), "", FormatCloudEventsStructured},
		{"last content-type wins", ce("content-type", "application/cloudevents+json", "content-type", "application/json"), `{"event_id":"e"}`, FormatPlainJSON},
		{"specversion member", nil, `{"specversion":"1.0"}`, FormatCloudEventsStructured},
		{"specversion beats event_id", nil, `{"event_id":"e","specversion":"1.0"}`, FormatCloudEventsStructured},
		{"event_id member", nil, `{"event_id":null}`, FormatPlainJSON},
		{"neither", nil, `{"id":"x"}`, ""},
		{"nested specversion does not count", nil, `{"data":{"specversion":"1.0"}}`, ""},
		{"not JSON", nil, `specversion`, ""},
		{"empty", nil, "", ""},
		{"array", nil, `[{"event_id":"e"}]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detect(tt.headers, []byte(tt.value)); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeRecord(t *testing.T) {
	t.Run("event", func(t *testing.T) {
		r := &kgo.Record{
			Topic: "tasks", Partition: 2, Offset: 7, Key: []byte("task-17"),
			Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte("e1")}, {Key: "ce_aggregateversion", Value: []byte("4")}},
			Value:   []byte(`{"title":"x"}`),
		}
		ev, err := DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID != "e1" || ev.Version != 4 || !ev.HasVersion || ev.Format != FormatCloudEventsBinary || string(ev.Data) != `{"title":"x"}` {
			t.Errorf("DecodeRecord = %+v", ev)
		}
	})
	t.Run("malformed carries the position", func(t *testing.T) {
		r := &kgo.Record{Topic: "tasks", Partition: 0, Offset: 42, Value: []byte(`{"specversion":"1.0"}`)}
		_, err := DecodeRecord(r)
		me, ok := errors.AsType[*MalformedError](err)
		if !ok {
			t.Fatalf("error %T %v, want *MalformedError", err, err)
		}
		want := MalformedError{Topic: "tasks", Partition: 0, Offset: 42, HasPosition: true,
			Format: FormatCloudEventsStructured, Field: "id", Reason: "missing"}
		if *me != want {
			t.Errorf("error %+v, want %+v", *me, want)
		}
		if got := err.Error(); got != `tasks/0/42: cloudevents-structured: field "id": missing` {
			t.Errorf("Error() = %q", got)
		}
	})
	t.Run("tombstone", func(t *testing.T) {
		_, err := DecodeRecord(&kgo.Record{Topic: "tasks", Partition: 1, Offset: 9, Key: []byte("k")})
		if err == nil || err.Error() != "tasks/1/9: "+TombstoneReason {
			t.Errorf("error %v, want tasks/1/9: %s", err, TombstoneReason)
		}
	})
	t.Run("empty value", func(t *testing.T) {
		_, err := DecodeRecord(&kgo.Record{Topic: "tasks", Partition: 1, Offset: 10, Key: []byte("k"), Value: []byte{}})
		if err == nil || err.Error() != "tasks/1/10: empty value" {
			t.Errorf("error %v, want tasks/1/10: empty value", err)
		}
	})
	t.Run("nil record", func(t *testing.T) {
		_, err := DecodeRecord(nil)
		if me, ok := errors.AsType[*MalformedError](err); !ok || me.HasPosition || me.Reason != "nil record" {
			t.Errorf("error %#v", err)
		}
	})
	t.Run("nil error is untyped nil", func(t *testing.T) {
		_, err := DecodeRecord(&kgo.Record{Value: []byte(`{"event_id":"e"}`)})
		if err != nil {
			t.Errorf("err = %#v, want nil", err)
		}
	})
}

// TestDataAsWritten checks that JSON data keeps the record's own bytes (white space, number
// spelling, member order) and that an Event never aliases the record's buffers.
func TestDataAsWritten(t *testing.T) {
	const data = `{ "b": 1.50, "a": [ 1e2 ] }`
	t.Run("structured", func(t *testing.T) {
		value := []byte(`{"specversion":"1.0","id":"e","data":` + data + `}`)
		ev, err := Decode(nil, value)
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) != data {
			t.Errorf("Data = %s, want %s", ev.Data, data)
		}
		clear(value)
		if string(ev.Data) != data || ev.ID != "e" {
			t.Errorf("event changed with the value: %+v", ev)
		}
	})
	t.Run("binary", func(t *testing.T) {
		value := []byte(data)
		id := []byte("e")
		ev, err := Decode([]Header{{Key: "ce_id", Value: id}}, value)
		if err != nil {
			t.Fatal(err)
		}
		clear(value)
		id[0] = 'x'
		if string(ev.Data) != data || ev.ID != "e" {
			t.Errorf("event changed with the record: %+v", ev)
		}
	})
	t.Run("plain", func(t *testing.T) {
		ev, err := Decode(nil, []byte(`{"event_id":"e","data":`+data+`}`))
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) != data {
			t.Errorf("Data = %s, want %s", ev.Data, data)
		}
	})
}

// TestEventJSON pins the JSON rendering: other packages print Events as they are.
func TestEventJSON(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"minimal", Event{ID: "e", Format: FormatPlainJSON},
			`{"event_id":"e","aggregate_version":null,"has_version":false,"format":"plain-json"}`},
		{"full", Event{ID: "e", Type: "t", Source: "/s", Subject: "sub",
			Time:          time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
			AggregateType: "task", AggregateID: "task-17", Version: 3, HasVersion: true,
			Data: json.RawMessage(`{"x":1}`), Format: FormatCloudEventsStructured},
			`{"event_id":"e","type":"t","source":"/s","subject":"sub","time":"2024-05-01T10:00:00Z",` +
				`"aggregate_type":"task","aggregate_id":"task-17","aggregate_version":3,"has_version":true,` +
				`"data":{"x":1},"format":"cloudevents-structured"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("json\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestFixturesThroughDecodeRecord runs every fixture through DecodeRecord too: same
// event or same error, plus the position.
func TestFixturesThroughDecodeRecord(t *testing.T) {
	for path, cases := range loadFixtures(t) {
		for i, fx := range cases {
			headers, value := fx.record(t)
			r := &kgo.Record{Topic: "fixtures", Partition: 1, Offset: int64(i), Value: value}
			for _, h := range headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			want, wantErr := Decode(headers, value)
			got, gotErr := DecodeRecord(r)
			if wantErr == nil {
				if gotErr != nil || !sameEvent(got, want) {
					t.Errorf("%s %q: DecodeRecord = %+v, %v; Decode = %+v", path, fx.Name, got, gotErr, want)
				}
				continue
			}
			me, ok := errors.AsType[*MalformedError](gotErr)
			if !ok {
				t.Errorf("%s %q: DecodeRecord error %v, want *MalformedError", path, fx.Name, gotErr)
				continue
			}
			wantMe := *wantErr.(*MalformedError)
			wantMe.Topic, wantMe.Partition, wantMe.Offset, wantMe.HasPosition = "fixtures", 1, int64(i), true
			if *me != wantMe {
				t.Errorf("%s %q: DecodeRecord error %+v, want %+v", path, fx.Name, *me, wantMe)
			}
		}
	}
}

func sameEvent(a, b Event) bool {
	if !a.Time.Equal(b.Time) || !bytes.Equal(a.Data, b.Data) {
		return false
	}
	a.Time, b.Time, a.Data, b.Data = time.Time{}, time.Time{}, nil, nil
	return reflect.DeepEqual(a, b)
}

// The media type is compared in place: the same answers as the lower-cased copy gives.
func TestMediaTypeInPlace(t *testing.T) {
	for _, ct := range []string{"", "application/cloudevents", "application/cloudevents+json", "Application/CloudEvents+JSON; charset=utf-8",
		" application/cloudevents+json ", "application/cloudevents-batch+json", "application/cloudevents+avro", "application/json",
		"application/cloudevent", "application/cloudevents\u212a", "appli\u212bation/cloudevents", "application/\u212aloudevents+json",
		"APPLICATION/CLOUDEVENTS+JSONX", "application/cloudevents+json;", ";application/cloudevents"} {
		mt := mediaType([]byte(ct))
		if got, want := isCloudEventsMediaType([]byte(ct)), strings.HasPrefix(mt, "application/cloudevents"); got != want {
			t.Errorf("isCloudEventsMediaType(%q) = %v, want %v", ct, got, want)
		}
		if got, want := jsonEventFormat([]byte(ct)), mt == "application/cloudevents" || mt == "application/cloudevents+json"; got != want {
			t.Errorf("jsonEventFormat(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestDecodeRecordView: the view decodes every fixture as DecodeRecord does, and DecodeRecord's
// Data, not the view's, outlives the value being overwritten.
func TestDecodeRecordView(t *testing.T) {
	for path, cases := range loadFixtures(t) {
		for _, fx := range cases {
			t.Run(filepath.Base(path)+"/"+fx.Name, func(t *testing.T) {
				headers, value := fx.record(t)
				r := &kgo.Record{Topic: "t", Partition: 1, Offset: 2, Headers: headers, Value: value}
				owned, err := DecodeRecord(r)
				view, verr := DecodeRecordView(r)
				if !reflect.DeepEqual(err, verr) || !reflect.DeepEqual(owned, view) {
					t.Fatalf("DecodeRecordView = %+v, %v\nDecodeRecord     = %+v, %v", view, verr, owned, err)
				}
				if err != nil {
					return
				}
				want := owned
				want.Data = bytes.Clone(owned.Data)
				for _, f := range []*string{&want.ID, &want.Type, &want.Source, &want.Subject, &want.AggregateType, &want.AggregateID} {
					*f = strings.Clone(*f)
				}
				for i := range value {
					value[i] = 'X'
				}
				if !reflect.DeepEqual(owned, want) {
					t.Errorf("DecodeRecord's event changed with the value:\n got %+v\nwant %+v", owned, want)
				}
			})
		}
	}
}

// TestEventOwnsItsText: an Event read from a JSON value keeps its text and data when the
// record's value is then overwritten (the decoders read the text as views of the value).
func TestEventOwnsItsText(t *testing.T) {
	values := map[string]string{
		"structured": `{"specversion":"1.0","id":"e-1","type":"t.created","source":"/s","subject":"x\u00e9",` +
			`"time":"2026-01-02T03:04:05z","aggregatetype":"task","aggregateid":"task-1","aggregateversion":"7","data":{"a":"b"}}`,
		"plain": `{"event_id":"e-2","type":"t","aggregate_type":"task","aggregate_id":"a\"b","aggregate_version":3,"occurred_at":"2026-01-02T03:04:05Z","data":[1]}`,
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			value := []byte(v)
			ev, err := Decode(nil, value)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Decode(nil, []byte(v))
			if err != nil {
				t.Fatal(err)
			}
			for i := range value {
				value[i] = 'X'
			}
			if !reflect.DeepEqual(ev, want) {
				t.Errorf("after the value was overwritten\n got %+v\nwant %+v", ev, want)
			}
		})
	}
}
