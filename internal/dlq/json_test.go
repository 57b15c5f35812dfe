package dlq

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// TestDeadLetterJSON pins the JSON shape of a DeadLetter (testdata/dlq/json.golden.json;
// -update rewrites it): snake_case names in a stable order, unknown pointers as null, bytes as
// text with *_base64 beside them when they are not UTF-8. And it reads back to the same value.
func TestDeadLetterJSON(t *testing.T) {
	r := &kgo.Record{
		Topic: "orders.DLT", Partition: 1, Offset: 2, Timestamp: time.UnixMilli(1773480420001),
		Key:   []byte("order-\xff"),
		Value: []byte(`{"event_id":"evt-1"}`),
		Headers: []kgo.RecordHeader{
			{Key: SpringOriginalTopic, Value: []byte("orders")},
			{Key: SpringOriginalPartition, Value: []byte{0, 0, 3}},
			{Key: SpringOriginalOffset, Value: []byte{0, 0, 0, 0, 0, 0, 0, 42}},
			{Key: "x-\xfe", Value: []byte("text")},
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
		},
	}
	d := Parse(r)
	checkInvariants(t, r, d)
	got, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden.Check(t, filepath.Join(fixtureDir, "json.golden.json"), got)

	var back DeadLetter
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalJSON(back), normalJSON(d)) {
		t.Fatalf("round trip\n got %+v\nwant %+v", back, d)
	}
	if back.Headers[4].Value != nil || back.Headers[5].Value == nil {
		t.Fatalf("null and empty header values not told apart: %q, %q", back.Headers[4].Value, back.Headers[5].Value)
	}
}
