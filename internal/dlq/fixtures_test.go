package dlq

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// fixtureDir holds the dead-letter records of each convention (<convention>.json), what Parse
// makes of them (<convention>.golden.json) and the JSON rendering golden (json.golden.json).
// The records are also FuzzParse's seed corpus.
const fixtureDir = "../../testdata/dlq"

// fixture is one dead-letter record as a test writes it: text where the bytes are text, hex
// where they are not. A key or value with neither is nil.
type fixture struct {
	Name   string        `json:"name"`
	Record fixtureRecord `json:"record"`
}

type fixtureRecord struct {
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Timestamp time.Time       `json:"timestamp"`
	Key       *string         `json:"key,omitempty"`
	KeyHex    *string         `json:"key_hex,omitempty"`
	Value     *string         `json:"value,omitempty"`
	ValueHex  *string         `json:"value_hex,omitempty"`
	Headers   []fixtureHeader `json:"headers,omitempty"`
}

type fixtureHeader struct {
	Key      string  `json:"key"`
	KeyHex   *string `json:"key_hex,omitempty"`
	Value    *string `json:"value,omitempty"`
	ValueHex *string `json:"value_hex,omitempty"`
}

func fixtureBytes(t testing.TB, text, hexText *string) []byte {
	t.Helper()
	switch {
	case hexText != nil:
		b, err := hex.DecodeString(*hexText)
		if err != nil {
			t.Fatalf("bad hex %q: %v", *hexText, err)
		}
		return b
	case text != nil:
		return []byte(*text)
	}
	return nil
}

func (fr fixtureRecord) record(t testing.TB) *kgo.Record {
	t.Helper()
	r := &kgo.Record{
		Topic: fr.Topic, Partition: fr.Partition, Offset: fr.Offset, Timestamp: fr.Timestamp,
		Key:   fixtureBytes(t, fr.Key, fr.KeyHex),
		Value: fixtureBytes(t, fr.Value, fr.ValueHex),
	}
	for _, h := range fr.Headers {
		key := h.Key
		if h.KeyHex != nil {
			key = string(fixtureBytes(t, nil, h.KeyHex))
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: fixtureBytes(t, h.Value, h.ValueHex)})
	}
	return r
}

// fixtureFiles lists the record files, without their extension, sorted.
func fixtureFiles(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		if strings.HasSuffix(base, ".golden") {
			continue
		}
		names = append(names, base)
	}
	slices.Sort(names)
	if len(names) == 0 {
		t.Fatalf("no fixtures in %s", fixtureDir)
	}
	return names
}

func loadFixtures(t testing.TB, name string) []fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx []fixture
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
	return fx
}

// goldenCase is one entry of a <convention>.golden.json file.
type goldenCase struct {
	Name string          `json:"name"`
	Want json.RawMessage `json:"want"`
}

// view is what a golden file holds of a DeadLetter: its JSON without the raw bytes (key,
// value, headers), which checkKeepsRecord compares with the record itself.
func view(t testing.TB, d DeadLetter) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key", "key_base64", "value", "value_base64", "headers"} {
		delete(m, k)
	}
	out, err := json.MarshalIndent(m, "    ", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParseGolden parses every fixture record and compares the result with its golden file;
// go test -run TestParseGolden -update rewrites the golden files.
func TestParseGolden(t *testing.T) {
	for _, file := range fixtureFiles(t) {
		t.Run(file, func(t *testing.T) {
			var got []goldenCase
			for _, fx := range loadFixtures(t, file) {
				r := fx.Record.record(t)
				d := Parse(r)
				checkInvariants(t, r, d)
				got = append(got, goldenCase{Name: fx.Name, Want: view(t, d)})
			}
			golden.CheckJSON(t, filepath.Join(fixtureDir, file+".golden.json"), got)
		})
	}
}

// checkInvariants asserts what Parse guarantees for any record.
func checkInvariants(t testing.TB, r *kgo.Record, d DeadLetter) {
	t.Helper()
	if d.Topic != r.Topic || d.Partition != r.Partition || d.Offset != r.Offset {
		t.Fatalf("position %s, want %s", d.Address(), kafka.AddressOf(r))
	}
	if !d.Timestamp.Equal(r.Timestamp) && !(r.Timestamp.IsZero() && d.Timestamp.IsZero()) {
		t.Fatalf("timestamp %v, want %v", d.Timestamp, r.Timestamp)
	}
	if !bytes.Equal(d.Key, r.Key) || (d.Key == nil) != (r.Key == nil) {
		t.Fatalf("key %q, want %q", d.Key, r.Key)
	}
	if !bytes.Equal(d.Value, r.Value) || (d.Value == nil) != (r.Value == nil) {
		t.Fatalf("value %q, want %q", d.Value, r.Value)
	}
	if len(d.Headers) != len(r.Headers) {
		t.Fatalf("%d headers, want %d", len(d.Headers), len(r.Headers))
	}
	for i, h := range r.Headers {
		g := d.Headers[i]
		if g.Key != h.Key || !bytes.Equal(g.Value, h.Value) || (g.Value == nil) != (h.Value == nil) {
			t.Fatalf("header %d = %q: %q, want %q: %q", i, g.Key, g.Value, h.Key, h.Value)
		}
	}
	switch {
	case d.Convention == ConventionUnknown:
		if d.OriginalTopic != "" || d.OriginalPartition != nil || d.OriginalOffset != nil {
			t.Fatalf("unknown convention with original coordinates: %+v", d)
		}
	case conventionAt(d.Convention) == nil:
		t.Fatalf("convention %q", d.Convention)
	}
	for _, p := range d.HeaderProblems {
		if p.Problem == "" {
			t.Fatalf("empty problem for header %q", p.Header)
		}
	}
	if d.OriginalPartition != nil && *d.OriginalPartition < 0 {
		t.Fatalf("negative original partition %d", *d.OriginalPartition)
	}
	if d.OriginalOffset != nil && *d.OriginalOffset < 0 {
		t.Fatalf("negative original offset %d", *d.OriginalOffset)
	}
	if d.Attempts < 0 || d.ReplayCount < 0 {
		t.Fatalf("negative count: attempts %d, replay count %d", d.Attempts, d.ReplayCount)
	}
	if topic, _, ok := d.Source(); ok != kafka.ValidTopic(d.OriginalTopic) || ok && topic != d.OriginalTopic {
		t.Fatalf("Source() = %q, %v for original topic %q", topic, ok, d.OriginalTopic)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back DeadLetter
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if !reflect.DeepEqual(normalJSON(back), normalJSON(d)) {
		t.Fatalf("JSON round trip\n got %+v\nwant %+v\njson %s", back, d, b)
	}
}

// normalJSON is d as a JSON round trip gives it back: times lose their monotonic clock and
// location and keep milliseconds (docs/json.md: one precision), empty slices are nil.
func normalJSON(d DeadLetter) DeadLetter {
	fix := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC().Truncate(time.Millisecond)
		return &u
	}
	d.Timestamp = d.Timestamp.UTC().Truncate(time.Millisecond)
	d.OriginalTimestamp, d.FirstFailedAt, d.FailedAt = fix(d.OriginalTimestamp), fix(d.FirstFailedAt), fix(d.FailedAt)
	if len(d.Headers) == 0 {
		d.Headers = nil
	}
	if len(d.HeaderProblems) == 0 {
		d.HeaderProblems = nil
	}
	if len(d.RetryTopics) == 0 {
		d.RetryTopics = nil
	}
	return d
}

// TestParseAfterAnyOther parses every fixture record right after every other one, one-off and
// with a Parser: the parse state is pooled and its header index cleared only where the record
// before set it, so no header of the record before may show in the next one's reading.
func TestParseAfterAnyOther(t *testing.T) {
	var recs []*kgo.Record
	for _, file := range fixtureFiles(t) {
		for _, fx := range loadFixtures(t, file) {
			recs = append(recs, fx.Record.record(t))
		}
	}
	alone := make([]DeadLetter, len(recs))
	for i, r := range recs {
		_ = Parse(&kgo.Record{Topic: "empty"}) // a state with nothing set
		alone[i] = Parse(r)
	}
	for i, before := range recs {
		for j, r := range recs {
			_ = Parse(before)
			if got := Parse(r); !reflect.DeepEqual(got, alone[j]) {
				t.Fatalf("record %d read after record %d:\n%+v\nalone:\n%+v", j, i, got, alone[j])
			}
			p := NewParser(ParseOptions{})
			_ = p.Parse(before)
			if got := p.Parse(r); !reflect.DeepEqual(normalJSON(got), normalJSON(alone[j])) {
				t.Fatalf("record %d read by a Parser after record %d:\n%+v\nalone:\n%+v", j, i, got, alone[j])
			}
			// Into a dead letter that holds the one before: overwritten whole.
			var into DeadLetter
			p.ParseInto(before, &into)
			if p.ParseInto(r, &into); !reflect.DeepEqual(normalJSON(into), normalJSON(alone[j])) {
				t.Fatalf("record %d read into record %d's dead letter:\n%+v\nalone:\n%+v", j, i, into, alone[j])
			}
		}
	}
}
