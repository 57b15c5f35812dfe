package replay

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// TestSelectStatus: the command line's status selection lands in the Spec as dlq's statuses,
// and Validate refuses those a replay cannot select by.
func TestSelectStatus(t *testing.T) {
	for _, tc := range []struct {
		statuses []dlq.Status
		consumer string
		err      string
	}{
		{nil, "", ""},
		{[]dlq.Status{dlq.StatusPending}, "billing", ""},
		{[]dlq.Status{dlq.StatusPending}, "", ""}, // each dead letter's own group, as dlq list
		{[]dlq.Status{dlq.StatusPending, dlq.StatusReplayed}, "billing", ""},
		{[]dlq.Status{dlq.StatusResolved}, "billing", "a replay selects pending or replayed"},
		{[]dlq.Status{dlq.StatusUnknown}, "billing", "a replay selects pending or replayed"},
	} {
		s := Spec{From: "orders.dlq"}
		err := s.SelectStatus(tc.statuses, tc.consumer)
		if err == nil {
			err = s.Validate()
		}
		if tc.err != "" {
			if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %q: %v, want a usage error with %q", tc.statuses, tc.consumer, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v %q: %v", tc.statuses, tc.consumer, err)
		}
		if got, c := s.statusSelection(); !slices.Equal(got, tc.statuses) || c != tc.consumer {
			t.Errorf("%v %q: read back as %v %q", tc.statuses, tc.consumer, got, c)
		}
	}
}

// TestSpecKeyRoundTripsThroughTheJournal: the key filter is journaled, an empty key (which
// selects empty and absent keys) as well as one that is not text.
func TestSpecKeyRoundTripsThroughTheJournal(t *testing.T) {
	for _, key := range [][]byte{nil, {}, []byte("task-7"), {0xff, 0}} {
		s := Spec{From: "orders.dlq", FilterSpec: dlq.FilterSpec{Key: key}}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		back, _, _, err := unmarshalSpec(s.marshal())
		if err != nil {
			t.Fatal(err)
		}
		if (back.Key == nil) != (key == nil) || string(back.Key) != string(key) || (back.filter().Key == nil) != (key == nil) {
			t.Errorf("key %q came back as %q (%s)", key, back.Key, s.marshal())
		}
	}
}

// TestFilters: a plan describes every filter it applies, by the flag that sets it; a key that
// is not text is described in base64, and none is {}.
func TestFilters(t *testing.T) {
	empty := ""
	for _, tc := range []struct {
		spec  Spec
		want  Filters
		flags [][2]string
	}{
		{Spec{From: "t"}, Filters{}, nil},
		{
			Spec{From: "t",
				PendingFor: "billing", SkipProcessedFor: "billing",
				FilterSpec: dlq.FilterSpec{Reasons: []string{"rejected", "exhausted"}, Error: "db", OriginalTopic: "tasks", Group: "g", Key: []byte{}, EventID: "e"},
			},
			Filters{DLQReason: []string{"rejected", "exhausted"}, Error: "db", OriginalTopic: "tasks", Group: "g", Key: &empty, EventID: "e",
				Status: []string{"pending"}, Consumer: "billing", SkipProcessed: true},
			[][2]string{{"--dlq-reason", "rejected,exhausted"}, {"--error", "db"}, {"--original-topic", "tasks"}, {"--group", "g"}, {"--key", ""},
				{"--event-id", "e"}, {"--status", "pending"}, {"--consumer", "billing"}, {"--skip-processed", ""}},
		},
		{Spec{From: "t", SkipProcessedFor: "audit", FilterSpec: dlq.FilterSpec{Key: []byte{0xff, 'k'}}}, Filters{KeyBase64: "/2s=", Consumer: "audit", SkipProcessed: true},
			[][2]string{{"--key-base64", "/2s="}, {"--consumer", "audit"}, {"--skip-processed", ""}}},
	} {
		got := tc.spec.Filters()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(tc.want)
		if string(g) != string(w) || !slices.Equal(got.Flags(), tc.flags) {
			t.Errorf("%+v: filters %s, flags %q; want %s, %q", tc.spec, g, got.Flags(), w, tc.flags)
		}
	}
	if b, _ := json.Marshal((&Spec{From: "t"}).Filters()); string(b) != "{}" {
		t.Errorf("no filters: %s", b)
	}
	start := int64(5)
	if b, _ := json.Marshal((&Spec{From: "t", Selection: kafka.Selection{Partitions: []int32{1}, StartOffset: &start}}).SelectionReport()); string(b) != `{"topic":"t","partitions":[1],"start_offset":5}` {
		t.Errorf("selection: %s", b)
	}
}

// TestJournaledSpecReadsTheOldEndOffset: a run journaled before the inclusive end of its range
// was named last_offset (end_offset then) resumes with the same range; a new one is journaled
// with last_offset.
func TestJournaledSpecReadsTheOldEndOffset(t *testing.T) {
	s, ex, _, err := unmarshalSpec(`{"from":"tasks.dlq","partitions":[0],"start_offset":2,"end_offset":7,"to_partition":"auto","max_replays":3}`)
	if err != nil || ex != nil || s.StartOffset == nil || *s.StartOffset != 2 || s.EndOffset == nil || *s.EndOffset != 7 {
		t.Fatalf("old spec: %+v %v", s, err)
	}
	text := s.marshal()
	if !strings.Contains(text, `"last_offset":7`) || strings.Contains(text, "end_offset") || !strings.Contains(text, `"topic":"tasks.dlq"`) || strings.Contains(text, `"from"`) {
		t.Fatalf("journaled as %s", text)
	}
	if back, _, _, err := unmarshalSpec(text); err != nil || back.EndOffset == nil || *back.EndOffset != 7 {
		t.Fatalf("read back: %+v %v", back, err)
	}
}

// TestJournaledSelectionKeepsItsShape: selections journaled by earlier versions (the spec with
// its kafka.Selection flattened in, and its execution object) are read back into the one
// selection type, and journaled again in the very same shape, so that their runs resume.
func TestJournaledSelectionKeepsItsShape(t *testing.T) {
	since := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	two, seven := int64(2), int64(7)
	for _, tc := range []struct {
		name, text string
		want       kafka.Selection
		record     string
		rate       float64
		same       bool // journaled again as it is
	}{
		{"window", `{"topic":"tasks.dlq","partitions":[0,2],"since":"2026-11-30T08:00:00Z","until":"2026-11-30T14:00:00Z","reasons":["exhausted"],"key":"dGFzay03","statuses":["pending"],"status_consumer":"task-projection","to":"tasks-retry","to_partition":"key","partitioner":"crc32","max_replays":5,"for_group":"task-projection","strict":true,"stop_on_redeadletter":10,"execution":{"rate":500,"max_buffered":30000,"flush_records":2000,"flush_interval_ms":1000}}`,
			kafka.Selection{Partitions: []int32{0, 2}, Since: since, Until: since.Add(6 * time.Hour)}, "", 500, true},
		{"record", `{"topic":"tasks.dlq","partitions":[1],"start_offset":2,"last_offset":2,"record":"tasks.dlq/1/42","to_partition":"auto","max_replays":3,"execution":{"rate":null,"max_buffered":30000,"flush_records":2000,"flush_interval_ms":1000}}`,
			kafka.Selection{Partitions: []int32{1}, StartOffset: &two, EndOffset: &two}, "tasks.dlq/1/42", 0, true},
		{"legacy from", `{"from":"tasks.dlq","partitions":[1],"start_offset":2,"last_offset":2,"record":"tasks.dlq/1/42","to_partition":"auto","max_replays":3,"execution":{"rate":null,"max_buffered":30000,"flush_records":2000,"flush_interval_ms":1000}}`,
			kafka.Selection{Partitions: []int32{1}, StartOffset: &two, EndOffset: &two}, "tasks.dlq/1/42", 0, false},
		{"legacy end_offset", `{"from":"tasks.dlq","partitions":[0],"start_offset":2,"end_offset":7,"to_partition":"auto","max_replays":3,"execution":{"rate":null,"max_buffered":30000,"flush_records":2000,"flush_interval_ms":1000}}`,
			kafka.Selection{Partitions: []int32{0}, StartOffset: &two, EndOffset: &seven}, "", 0, false},
	} {
		s, ex, _, err := unmarshalSpec(tc.text)
		if err != nil || ex == nil {
			t.Fatalf("%s: %v (execution %v)", tc.name, err, ex)
		}
		g, _ := json.Marshal(s.Selection)
		w, _ := json.Marshal(tc.want)
		if string(g) != string(w) || s.Record != tc.record || ex.Rate != tc.rate || s.From != "tasks.dlq" {
			t.Errorf("%s: read as selection %s, record %q, rate %g; want %s, %q, %g", tc.name, g, s.Record, ex.Rate, w, tc.record, tc.rate)
		}
		if again := marshalRun(&s, *ex, nil); tc.same && again != tc.text {
			t.Errorf("%s: journaled again as\n%s\nwant\n%s", tc.name, again, tc.text)
		}
		// replay show reads the journaled selection as a Spec, and prints its selection.
		var shown Spec
		if err := json.Unmarshal([]byte(tc.text), &shown); err != nil {
			t.Fatal(err)
		}
		if g, _ := json.Marshal(shown.SelectionReport().Selection); string(g) != string(w) {
			t.Errorf("%s: shown as %s, want %s", tc.name, g, w)
		}
	}
}
