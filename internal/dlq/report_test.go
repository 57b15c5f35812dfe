package dlq

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

func TestEntryJSON(t *testing.T) {
	d := Parse(&kgo.Record{Topic: "t.dlq", Offset: 3, Key: []byte("k"), Headers: []kgo.RecordHeader{{Key: HeaderTopic, Value: []byte("t")}}})
	b, err := json.Marshal(Entry{DeadLetter: d})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `"header_problems":[],"status":null}`) || !strings.HasPrefix(string(b), `{"topic":"t.dlq",`) {
		t.Errorf("no status: %s", b)
	}
	b, err = json.Marshal(Entry{DeadLetter: d, Status: StatusInfo{Status: StatusPending, Consumer: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `"status":"pending"}`) {
		t.Errorf("pending: %s", b)
	}
	// It reads back as the dead letter it holds.
	var back DeadLetter
	if err := json.Unmarshal(b, &back); err != nil || back.OriginalTopic != "t" || string(back.Key) != "k" {
		t.Errorf("read back: %+v %v", back, err)
	}
}

func TestDetail(t *testing.T) {
	orig := &kgo.Record{Topic: "tasks", Partition: 2, Offset: 9, Key: []byte("task-1"),
		Value:   []byte(`{"specversion":"1.0","id":"evt-1","type":"task.created","source":"/tasks","aggregateid":"task-1","aggregateversion":1}`),
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
	r := NewDeadLetter(orig, Meta{Group: "g", Reason: ReasonRejected, Error: "no"})
	r.Partition, r.Offset = 1, 17
	det := NewDetail(Entry{DeadLetter: Parse(r), Status: StatusInfo{Status: StatusResolved, Consumer: "g", Marker: &dedup.MarkerRow{Consumer: "g", EventID: "evt-1"}}})
	if det.Event == nil || det.Event.ID != "evt-1" || det.Malformed != nil || len(det.ValueJSON) == 0 {
		t.Fatalf("decoded: %+v %+v", det.Event, det.Malformed)
	}
	if det.Replay.Target != "tasks" || det.Replay.DryRun != "fieldwork replay tasks.dlq/1/17" ||
		det.Replay.Command != `fieldwork replay tasks.dlq/1/17 --execute --reason "…"` || len(det.Replay.Notes) != 0 {
		t.Errorf("replay: %+v", det.Replay)
	}
	b, err := json.Marshal(det)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"topic", "original_topic", "headers", "status", "status_detail", "event", "malformed", "value_json", "replay"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	if string(m["status"]) != `"resolved"` || string(m["malformed"]) != "null" || !strings.Contains(string(m["status_detail"]), `"marker":{"consumer":"g","event_id":"evt-1"`) {
		t.Errorf("json: %s", b)
	}
	if !strings.HasPrefix(string(det.PrettyValue()), "{\n  \"specversion\": \"1.0\",") {
		t.Errorf("pretty: %s", det.PrettyValue())
	}

	// Not an event, no original topic, replayed too often.
	bad := Parse(&kgo.Record{Topic: "x.dlq", Value: []byte("\xff"), Headers: []kgo.RecordHeader{{Key: ReplayHeaderCount, Value: []byte("3")}}})
	det = NewDetail(Entry{DeadLetter: bad})
	if det.Event != nil || det.Malformed == nil || det.Malformed.Reason == "" || det.ValueJSON != nil || det.PrettyValue() != nil {
		t.Errorf("malformed: %+v %+v", det.Event, det.Malformed)
	}
	if det.Replay.Target != "" || len(det.Replay.Notes) != 2 || !strings.Contains(det.Replay.Notes[0], "names no original topic") ||
		!strings.Contains(det.Replay.Notes[1], "replayed 3 times already") {
		t.Errorf("notes: %q", det.Replay.Notes)
	}
	b, _ = json.Marshal(det)
	if !strings.Contains(string(b), `"status":null,"status_detail":null,"event":null,"malformed":{`) {
		t.Errorf("json: %s", b)
	}
}

func TestNewest(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	if _, ok := Newest(nil); ok {
		t.Fatal("newest of none")
	}
	d, _ := Newest([]DeadLetter{{Offset: 1, Timestamp: at(5)}, {Offset: 2, Timestamp: at(9)}, {Offset: 3, Timestamp: at(9)}, {Offset: 4, Timestamp: at(1)}})
	if d.Offset != 3 {
		t.Fatalf("newest %d", d.Offset)
	}
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 500 * time.Millisecond: "0s", 17 * time.Second: "17s", 42*time.Minute + 10*time.Second: "42m10s",
		5*time.Hour + 12*time.Minute + 9*time.Second: "5h12m", 3 * time.Hour: "3h", 76 * time.Hour: "3d4h",
		260*24*time.Hour + 59*time.Minute: "260d", -90 * time.Second: "-1m30s",
	} {
		if got := FormatAge(d); got != want {
			t.Errorf("FormatAge(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		r       Retention
		deletes bool
		say     string
	}{
		{Retention{"delete", 604800000}, true, "7d"},
		{Retention{"delete", 216000000}, true, "2d12h"},
		{Retention{"delete", -1}, false, "forever"},
		{Retention{"compact", 604800000}, false, "compacted: not deleted by age"},
		{Retention{"compact,delete", 3600000}, true, "1h (and compacted)"},
	} {
		if tc.r.DeletesByAge() != tc.deletes || tc.r.Describe() != tc.say {
			t.Errorf("%+v: %v %q, want %v %q", tc.r, tc.r.DeletesByAge(), tc.r.Describe(), tc.deletes, tc.say)
		}
	}
}

func TestStatsWithStatus(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	s, err := NewStats([]StatsKey{ByReason}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	s.AddStatus(DeadLetter{Reason: ReasonRejected, Timestamp: now}, StatusPending)
	s.AddStatus(DeadLetter{Reason: ReasonRejected, Timestamp: now}, StatusResolved)
	s.AddStatus(DeadLetter{Reason: ReasonRejected, Timestamp: now}, StatusPending)
	s.AddStatus(DeadLetter{Reason: ReasonMalformed, Timestamp: now}, "")
	got := s.Result()
	if len(got) != 2 || *got[0].Statuses != (StatusCounts{Pending: 2, Resolved: 1}) || *got[1].Statuses != (StatusCounts{Unknown: 1}) {
		t.Fatalf("%+v", got)
	}
	b, _ := json.Marshal(got[0])
	if want := `{"reason":"rejected","count":3,"oldest":"2026-03-14T12:00:00Z","newest":"2026-03-14T12:00:00Z","in_window":3,"rate_per_hour":3,"status":{"pending":2,"replayed":0,"resolved":1,"unknown":0}}`; string(b) != want {
		t.Errorf("json\n got %s\nwant %s", b, want)
	}
}

func TestParseWithNoEnvelope(t *testing.T) {
	r := &kgo.Record{Value: []byte(`{"event_id":"e"}`), Headers: []kgo.RecordHeader{{Key: SpringOriginalTopic, Value: []byte("t")}}}
	if d := Parse(r); d.EventID != "e" {
		t.Fatalf("Parse: %q", d.EventID)
	}
	if d := ParseWith(r, ParseOptions{NoEnvelope: true}); d.EventID != "" || d.OriginalTopic != "t" {
		t.Fatalf("NoEnvelope decoded the value: %+v", d)
	}
	fw := NewDeadLetter(&kgo.Record{Topic: "t", Value: []byte(`{"event_id":"e"}`)}, Meta{Reason: ReasonRejected})
	if d := ParseWith(fw, ParseOptions{NoEnvelope: true}); d.EventID != "e" {
		t.Fatalf("NoEnvelope dropped fw.dlq.event_id: %q", d.EventID)
	}
}
