package dlq

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

func TestEntryJSON(t *testing.T) {
	d := Parse(&kgo.Record{Topic: "t.dlq", Offset: 3, Key: []byte("k"), Headers: []kgo.RecordHeader{{Key: HeaderTopic, Value: []byte("t")}}})
	b, err := json.Marshal(Entry{DeadLetter: d})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `"header_problems":[],"status":null,"last_replay":null}`) || !strings.HasPrefix(string(b), `{"topic":"t.dlq",`) {
		t.Errorf("no status: %s", b)
	}
	b, err = json.Marshal(Entry{DeadLetter: d, Status: StatusInfo{Status: StatusPending, Consumer: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), `"status":"pending","last_replay":null}`) {
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
	if !strings.HasPrefix(string(det.ValueJSON), `{"specversion":"1.0",`) {
		t.Errorf("value_json: %s", det.ValueJSON)
	}

	// Not an event, no original topic, replayed too often.
	bad := Parse(&kgo.Record{Topic: "x.dlq", Value: []byte("\xff"), Headers: []kgo.RecordHeader{{Key: ReplayHeaderCount, Value: []byte("3")}}})
	det = NewDetail(Entry{DeadLetter: bad})
	if det.Event != nil || det.Malformed == nil || det.Malformed.Reason == "" || det.ValueJSON != nil {
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

// TestRetentionDeadline pins the deletion deadline and warning of a topic summary for each
// state of its retention: a known horizon gives a deadline, forever gives none, and an
// unknown retention gives none and a warning that says so, never a guessed one.
func TestRetentionDeadline(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	oldest := now.Add(-48 * time.Hour)
	ms := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name      string
		r         Retention
		count     int64
		deletable bool
		warn      bool
		warning   string
	}{
		{"60h: in 12h", Retention{State: kafka.RetentionKnown, CleanupPolicy: "delete", Ms: ms(216000000), Horizon: 60 * time.Hour},
			1, true, true, "becomes deletable by retention (2d12h) in 12h: replay or copy it before then"},
		{"40h: past", Retention{State: kafka.RetentionKnown, CleanupPolicy: "delete", Ms: ms(144000000), Horizon: 40 * time.Hour},
			1, true, true, "is past retention (1d16h) by 8h: Kafka may delete it at any time"},
		{"7d: not soon", Retention{State: kafka.RetentionKnown, CleanupPolicy: "delete", Ms: ms(604800000), Horizon: 7 * 24 * time.Hour},
			1, true, false, ""},
		{"forever", Retention{State: kafka.RetentionForever, CleanupPolicy: "delete", Ms: ms(-1)}, 1, false, false, ""},
		{"unknown", Retention{State: kafka.RetentionUnknown, Cause: kafka.CauseDenied, Why: "DescribeConfigs on topic t was denied"},
			1, false, false, "cannot tell when retention deletes the dead letters in t: DescribeConfigs on topic t was denied"},
		{"unknown, empty topic", Retention{State: kafka.RetentionUnknown, Cause: kafka.CauseNotReported, Why: "x"}, 0, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := TopicSummary{Topic: "t", Count: tc.count}
			if tc.count > 0 {
				ts.Oldest = &oldest
			}
			ts.setRetention(tc.r, now)
			if (ts.OldestDeletableAt != nil) != tc.deletable || ts.RetentionWarning != tc.warn {
				t.Fatalf("deletable at %v, warning %v", ts.OldestDeletableAt, ts.RetentionWarning)
			}
			w := (&StatsReport{Now: now, Topics: []TopicSummary{ts}}).Warnings()
			switch {
			case tc.warning == "" && len(w) != 0:
				t.Errorf("warnings %q, want none", w)
			case tc.warning != "" && (len(w) != 1 || !strings.Contains(w[0], tc.warning)):
				t.Errorf("warnings %q, want one saying %q", w, tc.warning)
			}
		})
	}
}

func TestStatsWithStatus(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	s, err := NewStats([]StatsKey{ByReason}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	s.AddStatus(&DeadLetter{Reason: ReasonRejected, Timestamp: now}, StatusPending)
	s.AddStatus(&DeadLetter{Reason: ReasonRejected, Timestamp: now}, StatusResolved)
	s.AddStatus(&DeadLetter{Reason: ReasonRejected, Timestamp: now}, StatusPending)
	s.AddStatus(&DeadLetter{Reason: ReasonMalformed, Timestamp: now}, "")
	got := s.Result()
	if len(got) != 2 || *got[0].Statuses != (StatusCounts{Pending: 2, Resolved: 1}) || *got[1].Statuses != (StatusCounts{Unknown: 1}) {
		t.Fatalf("%+v", got)
	}
	b, _ := json.Marshal(got[0])
	if want := `{"reason":"rejected","count":3,"oldest":"2026-03-14T12:00:00Z","newest":"2026-03-14T12:00:00Z","in_window":3,"rate_per_hour":3,"status":{"pending":2,"replayed":0,"resolved":1,"stale":0,"unknown":0}}`; string(b) != want {
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
