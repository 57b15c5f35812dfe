package dlq

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestParseBoundedCopy: Parse exposes a bounded copy's fw.dlq.value_omitted and
// fw.dlq.value_bytes, in any convention, and a whole dead letter has neither (nor in JSON).
func TestParseBoundedCopy(t *testing.T) {
	fw := []kgo.RecordHeader{{Key: HeaderTopic, Value: []byte("orders")}, {Key: HeaderReason, Value: []byte(ReasonExhausted)}}
	spring := []kgo.RecordHeader{{Key: SpringOriginalTopic, Value: []byte("orders")}}
	with := func(base []kgo.RecordHeader, extra ...string) []kgo.RecordHeader {
		out := append([]kgo.RecordHeader(nil), base...)
		for i := 0; i < len(extra); i += 2 {
			out = append(out, kgo.RecordHeader{Key: extra[i], Value: []byte(extra[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		headers  []kgo.RecordHeader
		omitted  string
		bytes    int64
		problems int
	}{
		{"whole", fw, "", 0, 0},
		{"bounded", with(fw, HeaderValueOmitted, "larger than max.message.bytes 1000012", HeaderValueBytes, "2097152"), "larger than max.message.bytes 1000012", 2097152, 0},
		{"no reason said", with(fw, HeaderValueOmitted, " ", HeaderValueBytes, "10"), omittedUnsaid, 10, 0},
		{"length unreadable", with(fw, HeaderValueOmitted, "refused", HeaderValueBytes, "many"), "refused", 0, 1},
		{"length negative", with(fw, HeaderValueOmitted, "refused", HeaderValueBytes, "-1"), "refused", 0, 1},
		{"key case", with(fw, "FW.DLQ.Value_Omitted", "refused"), "refused", 0, 0},
		{"spring convention", with(spring, HeaderValueOmitted, "refused", HeaderValueBytes, "7"), "refused", 7, 1}, // the fieldwork headers win over Spring's: listed
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &kgo.Record{Topic: "orders.dlq", Value: []byte("abc"), Headers: tc.headers}
			for _, d := range []DeadLetter{Parse(r), NewParser(ParseOptions{NoHeaders: true, NoTimes: true}).Parse(r)} {
				if d.ValueOmitted != tc.omitted || d.ValueBytes != tc.bytes || len(d.HeaderProblems) != tc.problems {
					t.Errorf("omitted %q bytes %d problems %v, want %q %d and %d problems", d.ValueOmitted, d.ValueBytes, d.HeaderProblems, tc.omitted, tc.bytes, tc.problems)
				}
			}
			d := Parse(r)
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), `"value_omitted"`); got != (tc.omitted != "") {
				t.Errorf("JSON has value_omitted: %v: %s", got, b)
			}
			if got := strings.Contains(string(b), `"value_bytes"`); got != (tc.bytes != 0) {
				t.Errorf("JSON has value_bytes: %v: %s", got, b)
			}
			var back DeadLetter
			if err := json.Unmarshal(b, &back); err != nil || back.ValueOmitted != d.ValueOmitted || back.ValueBytes != d.ValueBytes {
				t.Errorf("JSON round trip: %q %d (%v), want %q %d", back.ValueOmitted, back.ValueBytes, err, d.ValueOmitted, d.ValueBytes)
			}
			hint := d.Replay()
			noted := false
			for _, n := range hint.Notes {
				noted = noted || strings.Contains(n, "bounded copy")
			}
			if noted != (tc.omitted != "") {
				t.Errorf("replay hint notes %q: bounded copy noted %v", hint.Notes, noted)
			}
		})
	}
}
