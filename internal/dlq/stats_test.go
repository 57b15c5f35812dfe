package dlq

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestStats(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	s, err := NewStats([]StatsKey{ByOriginalTopic, ByReason}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	add := func(topic, reason string, ago time.Duration, n int) {
		for i := 0; i < n; i++ {
			s.Add(&DeadLetter{Topic: topic + ".dlq", OriginalTopic: topic, Reason: reason, ErrorClass: fmt.Sprint(i), Timestamp: now.Add(-ago)})
		}
	}
	add("orders", ReasonMalformed, 3*time.Hour, 2)
	add("orders", ReasonMalformed, 30*time.Minute, 4)
	add("orders", ReasonRejected, 2*time.Hour, 6)
	add("tasks", "", time.Minute, 6)
	add("tasks", "", -time.Minute, 1) // a clock ahead of ours
	s.Add(&DeadLetter{OriginalTopic: "tasks"})

	if s.Groups() != 3 {
		t.Fatalf("%d groups, want 3", s.Groups())
	}
	got := s.Result()
	// tasks/"" appears once: the record without a timestamp joins the same group.
	if len(got) != 3 {
		t.Fatalf("%d results, want 3: %+v", len(got), got)
	}
	check := func(g GroupStats, topic, reason string, count, inWindow int64, oldest, newest time.Time, rate float64) {
		t.Helper()
		if g.OriginalTopic != topic || g.Reason != reason || g.Count != count || g.InWindow != inWindow ||
			!g.Oldest.Equal(oldest) || !g.Newest.Equal(newest) || g.RatePerHour != rate || g.Topic != "" || g.ErrorClass != "" {
			t.Errorf("group %+v\nwant %s/%q count %d in window %d oldest %v newest %v rate %v", g, topic, reason, count, inWindow, oldest, newest, rate)
		}
	}
	check(got[0], "tasks", "", 8, 7, now.Add(-time.Minute), now.Add(time.Minute), 7)
	check(got[1], "orders", ReasonMalformed, 6, 4, now.Add(-3*time.Hour), now.Add(-30*time.Minute), 4)
	check(got[2], "orders", ReasonRejected, 6, 0, now.Add(-2*time.Hour), now.Add(-2*time.Hour), 0)

	b, err := json.Marshal(got[1])
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"original_topic":"orders","reason":"malformed","count":6,"oldest":"2026-03-14T09:00:00Z","newest":"2026-03-14T11:30:00Z","in_window":4,"rate_per_hour":4}`
	if string(b) != wantJSON {
		t.Errorf("json\n got %s\nwant %s", b, wantJSON)
	}
}

func TestStatsNoGroupingNoWindow(t *testing.T) {
	s, err := NewStats(nil, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Add(&DeadLetter{Topic: "a"})
	s.Add(&DeadLetter{Topic: "b", Timestamp: time.Unix(10, 0)})
	got := s.Result()
	if len(got) != 1 || got[0].Count != 2 || got[0].RatePerHour != 0 || got[0].InWindow != 0 || !got[0].Oldest.Equal(time.Unix(10, 0)) {
		t.Fatalf("%+v", got)
	}
	b, _ := json.Marshal(got[0])
	if want := `{"count":2,"oldest":"1970-01-01T00:00:10Z","newest":"1970-01-01T00:00:10Z","in_window":0,"rate_per_hour":0}`; string(b) != want {
		t.Errorf("json %s, want %s", b, want)
	}
	s, _ = NewStats([]StatsKey{ByGroup}, 0, time.Now())
	s.Add(&DeadLetter{})
	b, _ = json.Marshal(s.Result()[0])
	if want := `{"group":"","count":1,"oldest":null,"newest":null,"in_window":0,"rate_per_hour":0}`; string(b) != want {
		t.Errorf("json %s, want %s", b, want)
	}
}

func TestStatsKeys(t *testing.T) {
	keys, err := ParseStatsKeys(" topic, error_class,group ")
	if err != nil || fmt.Sprint(keys) != "[topic error_class group]" {
		t.Fatalf("ParseStatsKeys = %v, %v", keys, err)
	}
	if keys, err := ParseStatsKeys(""); err != nil || keys != nil {
		t.Fatalf("empty: %v, %v", keys, err)
	}
	for _, bad := range []string{"topic,topics", "reason,reason", "topic,"} {
		if _, err := ParseStatsKeys(bad); fwerr.KindOf(err) != fwerr.KindUsage {
			t.Errorf("ParseStatsKeys(%q) = %v, want a usage error", bad, err)
		}
	}
	if _, err := NewStats([]StatsKey{"partition"}, 0, time.Now()); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Errorf("NewStats(partition) = %v", err)
	}
	if _, err := NewStats([]StatsKey{ByTopic, ByTopic}, 0, time.Now()); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Errorf("NewStats(topic, topic) = %v", err)
	}
	if _, err := NewStats(nil, -time.Second, time.Now()); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Errorf("negative window: %v", err)
	}
	s, _ := NewStats(StatsKeys, 0, time.Now())
	d := DeadLetter{Topic: "t", OriginalTopic: "o", Reason: "r", ErrorClass: "e", Group: "g"}
	s.Add(&d)
	g := s.Result()[0]
	for _, k := range StatsKeys {
		if g.Value(k) != map[StatsKey]string{ByTopic: "t", ByOriginalTopic: "o", ByReason: "r", ByErrorClass: "e", ByGroup: "g", ByFingerprint: FingerprintOf(d).ID}[k] {
			t.Errorf("Value(%s) = %q", k, g.Value(k))
		}
	}
	if fmt.Sprint(g.By()) != fmt.Sprint(StatsKeys) {
		t.Errorf("By() = %v", g.By())
	}
}

// TestStatsMemoryBoundedByGroups streams many records through a few groups and checks that
// what stays allocated does not grow with the records.
func TestStatsMemoryBoundedByGroups(t *testing.T) {
	s, err := NewStats([]StatsKey{ByTopic, ByReason}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1024)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	feed := func(n int) {
		for i := 0; i < n; i++ {
			s.Add(&DeadLetter{Topic: "t.dlq", Reason: Reasons[i%len(Reasons)], Timestamp: time.Unix(int64(i), 0), Value: value})
		}
	}
	feed(1000)
	before := heap()
	feed(200_000)
	after := heap()
	if s.Groups() != len(Reasons) {
		t.Fatalf("%d groups", s.Groups())
	}
	if after > before+1<<20 {
		t.Fatalf("heap grew from %d to %d bytes over 200,000 records in %d groups", before, after, s.Groups())
	}
	var total int64
	for _, g := range s.Result() {
		total += g.Count
	}
	if total != 201_000 {
		t.Fatalf("counted %d", total)
	}
}
