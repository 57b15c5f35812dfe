package dlq

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// encodeHeaders and decodeHeaders carry headers through the fuzzer as one byte string: per
// header, a length byte and the key, then a length byte and the value (255: a nil value).
// Longer keys and values are cut to 254 bytes; a truncated tail is read as far as it goes.
func encodeHeaders(headers []kgo.RecordHeader) []byte {
	var b []byte
	for _, h := range headers {
		k := h.Key[:min(len(h.Key), 254)]
		b = append(b, byte(len(k)))
		b = append(b, k...)
		if h.Value == nil {
			b = append(b, 255)
			continue
		}
		v := h.Value[:min(len(h.Value), 254)]
		b = append(b, byte(len(v)))
		b = append(b, v...)
	}
	return b
}

func decodeHeaders(b []byte) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	take := func() ([]byte, bool) {
		if len(b) == 0 {
			return nil, false
		}
		n := int(b[0])
		b = b[1:]
		if n == 255 {
			return nil, true
		}
		n = min(n, len(b))
		v := b[:n:n]
		b = b[n:]
		return v, true
	}
	for len(b) > 0 {
		k, _ := take()
		v, ok := take()
		if !ok {
			v = []byte{}
		}
		out = append(out, kgo.RecordHeader{Key: string(k), Value: v})
	}
	return out
}

// checkLean asserts that ParseWith's options only leave out what they say: the other fields
// are Parse's.
func checkLean(t *testing.T, r *kgo.Record, full DeadLetter) {
	t.Helper()
	lean := ParseWith(r, ParseOptions{NoEnvelope: true, NoHeaders: true, NoTimes: true})
	want := full
	want.Headers, want.OriginalTimestamp, want.FirstFailedAt, want.FailedAt = nil, nil, nil, nil
	if lean.EventID == "" {
		want.EventID, want.EventIDSource = "", ""
	}
	var problems []HeaderProblem
	for _, p := range full.HeaderProblems {
		switch strings.ToLower(p.Header) {
		case HeaderTimestamp, HeaderFirstFailedAt, HeaderFailedAt, SpringOriginalTimestamp, SpringRetryOriginalTimestamp, WolverineFailedAt:
		default:
			problems = append(problems, p)
		}
	}
	want.HeaderProblems = problems
	if !reflect.DeepEqual(normalJSON(lean), normalJSON(want)) {
		t.Fatalf("lean parse differs beyond its options:\n got %+v\nwant %+v", lean, want)
	}
	if withHeaders := ParseWith(r, ParseOptions{NoEnvelope: true}); len(withHeaders.Headers) != len(r.Headers) {
		t.Fatalf("NoEnvelope dropped headers")
	}
}

// fuzzParser is one Parser for a whole fuzzing run: every input meets the memory of the inputs
// before it.
var fuzzParser = NewParser(ParseOptions{NoEnvelope: true, NoHeaders: true, NoTimes: true})

// checkParser asserts that a Parser, which remembers the records before, reads r as ParseWith
// does.
func checkParser(t *testing.T, r *kgo.Record) {
	t.Helper()
	opts := ParseOptions{NoEnvelope: true, NoHeaders: true, NoTimes: true}
	want := ParseWith(r, opts)
	for range 2 { // the second time every key and value is remembered
		if got := fuzzParser.Parse(r); !reflect.DeepEqual(got, want) {
			t.Fatalf("Parser differs from ParseWith:\n got %+v\nwant %+v", got, want)
		}
	}
}

// FuzzParse feeds Parse records whose headers (keys and values) and value are arbitrary,
// seeded from every fixture in testdata/dlq. It asserts that Parse never panics, keeps the
// record's bytes, gives results that survive a JSON round trip and obey the package's
// guarantees (checkInvariants), and is deterministic, written by the hand encoder as
// encoding/json writes it (checkAppendJSON); and that stripping the dead-letter
// headers leaves a record Parse sees as of no convention.
func FuzzParse(f *testing.F) {
	for _, file := range fixtureFiles(f) {
		for _, fx := range loadFixtures(f, file) {
			r := fx.Record.record(f)
			f.Add(encodeHeaders(r.Headers), r.Value)
		}
	}
	// One header of every kind, so that the fuzzer starts from each convention's keys.
	var every []kgo.RecordHeader
	for _, k := range allDeadLetterHeaders {
		every = append(every, kgo.RecordHeader{Key: k, Value: []byte{0, 0, 0, 1}})
	}
	f.Add(encodeHeaders(every), []byte(nil))

	f.Fuzz(func(t *testing.T, rawHeaders, value []byte) {
		r := &kgo.Record{
			Topic: "fuzz.dlq", Partition: 1, Offset: 2, Timestamp: time.UnixMilli(1773480420001),
			Key: []byte("k"), Value: value, Headers: decodeHeaders(rawHeaders),
		}
		d := Parse(r)
		checkInvariants(t, r, d)
		if again := Parse(r); !reflect.DeepEqual(again, d) {
			t.Fatalf("not deterministic:\n%+v\n%+v", d, again)
		}
		checkLean(t, r, d)
		checkParser(t, r)
		checkAppendJSON(t, d)
		stripped := *r
		stripped.Headers = StripDeadLetterHeaders(r.Headers)
		for _, h := range stripped.Headers {
			if IsDeadLetterHeader(h.Key) {
				t.Fatalf("stripped headers keep %q", h.Key)
			}
		}
		if s := Parse(&stripped); s.Convention != ConventionUnknown {
			t.Fatalf("after stripping, convention %s from %q", s.Convention, stripped.Headers)
		}
	})
}

// FuzzParseKey: a record whose key may be uber-go/kafka-client's DLQMetadata. Parse never
// panics; a key it takes for one names a valid topic, a partition and an offset that are not
// negative, and gives the original key back for the replay; a record with a dead-letter
// header is never read from its key.
func FuzzParseKey(f *testing.F) {
	for _, fx := range loadFixtures(f, "uberkafka") {
		r := fx.Record.record(f)
		f.Add(r.Key, false)
	}
	f.Add([]byte{0x12, 0x01, 'o'}, true)
	f.Fuzz(func(t *testing.T, key []byte, withHeader bool) {
		r := &kgo.Record{Topic: "fuzz.dlq", Partition: 1, Offset: 2, Timestamp: time.UnixMilli(1773480420001), Key: key, Value: []byte("v")}
		if withHeader {
			r.Headers = []kgo.RecordHeader{{Key: HeaderTopic, Value: []byte("tasks")}}
		}
		d := Parse(r)
		checkInvariants(t, r, d)
		checkAppendJSON(t, d)
		if d.Convention != ConventionUberKafka {
			if d.HasOriginalKey && d.Convention != ConventionKarafka {
				t.Fatalf("%s with an original key", d.Convention)
			}
			return
		}
		if withHeader {
			t.Fatalf("read from the key despite a dead-letter header")
		}
		if !d.HasOriginalKey || d.OriginalPartition == nil || d.OriginalOffset == nil || *d.OriginalPartition < 0 || *d.OriginalOffset < 0 {
			t.Fatalf("DLQMetadata read as %+v", d)
		}
	})
}
