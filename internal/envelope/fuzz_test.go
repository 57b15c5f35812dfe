package envelope

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// encodeHeaders and decodeHeaders carry headers through the fuzzer as one byte string: one
// header a line, the key up to the first '='. Lossy for seeds whose values hold a newline; the
// fuzzer does not mind.
func encodeHeaders(headers []Header) []byte {
	var b bytes.Buffer
	for i, h := range headers {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(h.Key)
		b.WriteByte('=')
		b.Write(h.Value)
	}
	return b.Bytes()
}

func decodeHeaders(b []byte) []Header {
	if len(b) == 0 {
		return nil
	}
	var headers []Header
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		key, value, _ := bytes.Cut(line, []byte{'='})
		headers = append(headers, Header{Key: string(key), Value: value})
	}
	return headers
}

// FuzzDecode feeds Decode arbitrary headers and values, seeded from testdata/envelope. It
// asserts that Decode never panics, that its result obeys the package's guarantees
// (checkInvariants), that it is deterministic, and that a decoded Event written back as a
// structured CloudEvent decodes to the same Event.
func FuzzDecode(f *testing.F) {
	for _, cases := range loadFixtures(f) {
		for _, fx := range cases {
			headers, value := fx.record(f)
			f.Add(encodeHeaders(headers), value)
		}
	}
	f.Fuzz(func(t *testing.T, rawHeaders, value []byte) {
		headers := decodeHeaders(rawHeaders)
		ev, err := Decode(headers, value)
		checkInvariants(t, headers, value, ev, err)

		ev2, err2 := Decode(headers, value)
		if !reflect.DeepEqual(err, err2) || !sameEvent(ev, ev2) {
			t.Fatalf("not deterministic: %+v, %v then %+v, %v", ev, err, ev2, err2)
		}
		if err != nil {
			return
		}
		again, err := Decode(nil, structuredJSON(t, ev))
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v\nevent %+v", err, ev)
		}
		want := ev
		want.Format = FormatCloudEventsStructured
		if !sameJSON(t, again.Data, want.Data) {
			t.Fatalf("round trip data\n got %s\nwant %s", again.Data, want.Data)
		}
		again.Data, want.Data = nil, nil
		if !sameEvent(again, want) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, want)
		}
	})
}

// structuredJSON writes an Event as a CloudEvents structured-mode value.
func structuredJSON(t *testing.T, ev Event) []byte {
	t.Helper()
	m := map[string]any{"specversion": "1.0", "id": ev.ID}
	for name, v := range map[string]string{
		"type": ev.Type, "source": ev.Source, "subject": ev.Subject,
		"aggregatetype": ev.AggregateType, "aggregateid": ev.AggregateID,
	} {
		if v != "" {
			m[name] = v
		}
	}
	if !ev.Time.IsZero() {
		m["time"] = ev.Time.Format(time.RFC3339Nano)
	}
	if ev.HasVersion {
		m["aggregateversion"] = ev.Version
	}
	if len(ev.Data) > 0 {
		m["data"] = ev.Data
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %+v: %v", ev, err)
	}
	return b
}

// splitObjectCases are values splitObject must read as json.Unmarshal does, or leave to it.
var splitObjectCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : "x\"}" , "b":[1,{"c":"]"}],"d":{"e":[]}}`, `{"a":1,"a":2}`,
	`{"a":-1.5e3,"b":true,"c":false,"d":null}`, "{\t\"a\"\r\n:\n\"é\\u00e9\\\\\"}", `{"k\u00e9y":1}`, `{"a\"b":1}`,
	`[1]`, `"x"`, `{"a":1`, `{"a":1}x`, `{"a":01}`,
}

// TestSplitObjectMatchesUnmarshal: on the fixtures' values and hand-made edge cases,
// splitObject gives what json.Unmarshal into map[string]json.RawMessage gives.
func TestSplitObjectMatchesUnmarshal(t *testing.T) {
	values := append([]string(nil), splitObjectCases...)
	for _, cases := range loadFixtures(t) {
		for _, fx := range cases {
			_, value := fx.record(t)
			values = append(values, string(value))
		}
	}
	for _, v := range values {
		checkSplitObject(t, []byte(v))
	}
}

// FuzzSplitObject compares splitObject with json.Unmarshal, and quickSplitObject with both,
// on arbitrary values.
func FuzzSplitObject(f *testing.F) {
	for _, v := range splitObjectCases {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, value []byte) { checkSplitObject(t, value) })
}

func checkSplitObject(t *testing.T, value []byte) {
	t.Helper()
	quick, quickOK := quickSplitObject(value, nil)
	if !json.Valid(value) || !utf8.Valid(value) {
		if quickOK && utf8.Valid(value) {
			t.Errorf("%q: quickSplitObject accepts what json.Valid refuses", value)
		}
		return // parseObject does not call it
	}
	obj, ok := splitObject(value, nil)
	if quickOK && (!ok || !reflect.DeepEqual(quick, obj)) {
		t.Errorf("%q: quickSplitObject %q, splitObject %q %v", value, quick, obj, ok)
	}
	var got map[string]json.RawMessage
	if ok {
		got = map[string]json.RawMessage{}
		for _, m := range obj {
			got[string(m.name)] = m.raw // the last of a name wins, as in json.Unmarshal
		}
		for name, raw := range got {
			if !bytes.Equal(obj.get(name), raw) {
				t.Errorf("%q: get(%q) = %q, the last member of that name is %q", value, name, obj.get(name), raw)
			}
		}
	}
	var want map[string]json.RawMessage
	err := json.Unmarshal(value, &want)
	switch {
	case !ok && err == nil && bytes.HasPrefix(bytes.TrimLeft(value, " \t\r\n"), []byte("{")) && !bytes.Contains(value, []byte(`\`)):
		t.Errorf("%q: splitObject declined an object without escapes", value)
	case ok && (err != nil || !reflect.DeepEqual(got, want)):
		t.Errorf("%q: splitObject %q, json.Unmarshal %q (%v)", value, got, want, err)
	}
}

// FuzzJSONText compares jsonText with json.Unmarshal into a string on arbitrary values.
func FuzzJSONText(f *testing.F) {
	for _, v := range []string{`"x"`, `""`, ` "a\"b" `, `"é"`, `"\u00e9"`, `"a\\"`, `1`, `"\x01"`, `"abc`, `null`} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := jsonText(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		isString := len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '"'
		if ok != (err == nil && isString) || (ok && got != want) {
			t.Errorf("%q: jsonText %q %v, json.Unmarshal %q %v", raw, got, ok, want, err)
		}
	})
}

// FuzzValidJSON holds validJSON to json.Valid on arbitrary UTF-8 values, and its quick pass
// to never accepting what json.Valid refuses.
func FuzzValidJSON(f *testing.F) {
	for _, v := range append(slices.Clone(splitObjectCases), `1`, `-0.5e+3`, `01`, `1.`, `.5`, `-`, `1e`, `"\u12"`, `"\uD800"`, `"a\tb"`, `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `[`, `]`, `tru`, `nul`, `null x`, ` {"a":[1,{"b":null}]} `, `"\/"`, `"\x"`, strings.Repeat("[", 600)+strings.Repeat("]", 600)) {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		if !utf8.Valid(value) {
			return
		}
		want := json.Valid(value)
		if got := validJSON(value); got != want {
			t.Errorf("%q: validJSON %v, json.Valid %v", value, got, want)
		}
		if i, ok := quickValue(value, skipSpace(value, 0), 0); ok && skipSpace(value, i) == len(value) && !want {
			t.Errorf("%q: the quick pass accepts what json.Valid refuses", value)
		}
	})
}
