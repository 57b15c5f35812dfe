package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// fixtureDir holds the decoding cases shared by TestFixtures and the FuzzDecode seed corpus.
const fixtureDir = "../../testdata/envelope"

// fixture is one decoding case. Exactly one of Value, ValueJSON and ValueBase64 gives the record
// value (none: a nil value); exactly one of Want and Error gives the expected result.
type fixture struct {
	Name        string          `json:"name"`
	Headers     []fixtureHeader `json:"headers,omitempty"`
	Value       *string         `json:"value,omitempty"`
	ValueJSON   json.RawMessage `json:"value_json,omitempty"`
	ValueBase64 *string         `json:"value_base64,omitempty"`
	Want        *Event          `json:"want,omitempty"`
	Error       *fixtureError   `json:"error,omitempty"`
}

type fixtureHeader struct {
	Key         string  `json:"key"`
	Value       string  `json:"value,omitempty"`
	ValueBase64 *string `json:"value_base64,omitempty"`
}

type fixtureError struct {
	Format  Format `json:"format"`
	Field   string `json:"field"`
	Reason  string `json:"reason"`
	EventID string `json:"event_id,omitempty"`
}

func (fx fixture) record(t testing.TB) ([]Header, []byte) {
	t.Helper()
	var headers []Header
	for _, h := range fx.Headers {
		v := []byte(h.Value)
		if h.ValueBase64 != nil {
			v = mustBase64(t, *h.ValueBase64)
		}
		headers = append(headers, Header{Key: h.Key, Value: v})
	}
	switch {
	case fx.Value != nil:
		return headers, []byte(*fx.Value)
	case fx.ValueJSON != nil:
		return headers, bytes.Clone(fx.ValueJSON)
	case fx.ValueBase64 != nil:
		return headers, mustBase64(t, *fx.ValueBase64)
	}
	return headers, nil
}

func mustBase64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("fixture base64 %q: %v", s, err)
	}
	return b
}

// loadFixtures reads every fixture file, keyed by file name.
func loadFixtures(t testing.TB) map[string][]fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in %s (err %v)", fixtureDir, err)
	}
	out := make(map[string][]fixture, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var cases []fixture
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cases); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = cases
	}
	return out
}

// TestFixtures decodes every case in testdata/envelope and compares the Event (as its JSON
// rendering) or the MalformedError field by field. With -update it rewrites the expectations.
func TestFixtures(t *testing.T) {
	for path, cases := range loadFixtures(t) {
		seen := map[string]bool{}
		for i, fx := range cases {
			if seen[fx.Name] {
				t.Errorf("%s: duplicate case name %q", path, fx.Name)
			}
			seen[fx.Name] = true
			t.Run(filepath.Base(path)+"/"+fx.Name, func(t *testing.T) {
				headers, value := fx.record(t)
				got, err := Decode(headers, value)
				checkInvariants(t, headers, value, got, err)
				if golden.Update() {
					cases[i].Want, cases[i].Error = nil, nil
					if err != nil {
						me := err.(*MalformedError)
						cases[i].Error = &fixtureError{Format: me.Format, Field: me.Field, Reason: me.Reason, EventID: me.EventID}
					} else {
						cases[i].Want = &got
					}
					return
				}
				switch {
				case fx.Want != nil && fx.Error != nil, fx.Want == nil && fx.Error == nil:
					t.Fatal("fixture needs exactly one of want and error")
				case fx.Error != nil:
					me, ok := err.(*MalformedError)
					if !ok {
						t.Fatalf("Decode = %+v, nil; want error %+v", got, *fx.Error)
					}
					gotErr := fixtureError{Format: me.Format, Field: me.Field, Reason: me.Reason, EventID: me.EventID}
					if gotErr != *fx.Error {
						t.Errorf("error\n got %+v\nwant %+v", gotErr, *fx.Error)
					}
				default:
					if err != nil {
						t.Fatalf("Decode: %v", err)
					}
					// Data is compared as a JSON value, the rest as its JSON rendering.
					if !sameJSON(t, got.Data, fx.Want.Data) {
						t.Errorf("data\n got %s\nwant %s", got.Data, fx.Want.Data)
					}
					gotNoData, wantNoData := got, *fx.Want
					gotNoData.Data, wantNoData.Data = nil, nil
					gotJSON, _ := json.Marshal(gotNoData)
					wantJSON, _ := json.Marshal(wantNoData)
					if !bytes.Equal(gotJSON, wantJSON) {
						t.Errorf("event\n got %s\nwant %s", gotJSON, wantJSON)
					}
					if !got.Time.Equal(fx.Want.Time) {
						t.Errorf("time %v, want %v", got.Time, fx.Want.Time)
					}
				}
			})
		}
		if golden.Update() {
			data, err := json.MarshalIndent(cases, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Write(t, path, append(data, '\n'))
		}
	}
}

// sameJSON reports whether a and b are both empty or both the same JSON value.
func sameJSON(t testing.TB, a, b json.RawMessage) bool {
	t.Helper()
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	for _, x := range []struct {
		raw json.RawMessage
		dst *any
	}{{a, &va}, {b, &vb}} {
		dec := json.NewDecoder(bytes.NewReader(x.raw))
		dec.UseNumber()
		if err := dec.Decode(x.dst); err != nil {
			t.Fatalf("data %q: %v", x.raw, err)
		}
	}
	return reflect.DeepEqual(va, vb)
}

// checkInvariants asserts what Decode guarantees for any input; TestFixtures and FuzzDecode
// share it.
func checkInvariants(t testing.TB, headers []Header, value []byte, ev Event, err error) {
	t.Helper()
	detected := Detect(headers, value)
	if err != nil {
		me, ok := err.(*MalformedError)
		if !ok {
			t.Fatalf("error is %T, want *MalformedError: %v", err, err)
		}
		if me.Reason == "" {
			t.Errorf("MalformedError without a reason: %+v", me)
		}
		if me.HasPosition {
			t.Errorf("Decode set a position: %+v", me)
		}
		if !utf8.ValidString(me.Error()) {
			t.Errorf("error text is not valid UTF-8: %q", me.Error())
		}
		if me.Format != detected {
			t.Errorf("error format %q, Detect %q", me.Format, detected)
		}
		if ev.ID != "" || ev.Format != "" || ev.Data != nil {
			t.Errorf("event not zero on error: %+v", ev)
		}
		return
	}
	if ev.ID == "" {
		t.Fatalf("nil error but empty ID: %+v", ev)
	}
	if ev.Format != detected || ev.Format == "" {
		t.Errorf("event format %q, Detect %q", ev.Format, detected)
	}
	if len(ev.Data) > 0 && (!json.Valid(ev.Data) || !utf8.Valid(ev.Data)) {
		t.Errorf("Data is not valid UTF-8 JSON: %q", ev.Data)
	}
	for _, s := range []string{ev.ID, ev.Type, ev.Source, ev.Subject, ev.AggregateType, ev.AggregateID} {
		if !utf8.ValidString(s) || bytes.IndexByte([]byte(s), 0) >= 0 {
			t.Errorf("string field %q is not NUL-free UTF-8", s)
		}
	}
	if !ev.HasVersion && ev.Version != 0 {
		t.Errorf("Version %d without HasVersion", ev.Version)
	}
	if _, err := json.Marshal(ev); err != nil {
		t.Errorf("event does not marshal: %v", err)
	}
}
