package dedup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A batch's keys are its distinct storage keys, sorted, and each id has its own: a short id
// itself, a long id its hash, and a short id that reads as a long id's key that long id's.
func TestKeysOf(t *testing.T) {
	long1, long2 := strings.Repeat("a", MaxInlineEventIDBytes+1), strings.Repeat("b", MaxInlineEventIDBytes+1)
	k1, k2 := EventKey(long1), EventKey(long2)
	ids := []string{"e-2", "e-1", long1, "e-2", long2, long1, k1}
	batch, err := keysOf(ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"e-1", "e-2", k1, k2}
	slices.Sort(want)
	if !slices.Equal(batch.keys, want) {
		t.Errorf("keys %.20q, want %.20q", batch.keys, want)
	}
	for i, key := range []string{"e-2", "e-1", k1, "e-2", k2, k1, k1} {
		if got := batch.keyOf(i); got != key {
			t.Errorf("key of id %d (%.20q): %.20q, want %.20q", i, ids[i], got, key)
		}
	}
	if _, err := keysOf([]string{"ok", ""}); err == nil {
		t.Error("an empty id passed")
	}
	if batch, err := keysOf(nil); err != nil || len(batch.keys) != 0 || len(batch.of) != 0 {
		t.Errorf("no ids: %+v, %v", batch, err)
	}
}

// BenchmarkKeysOf measures a lookup batch of processed check's size: 1,000 short ids.
func BenchmarkKeysOf(b *testing.B) {
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = "evt-" + strings.Repeat("0", 4) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := keysOf(ids); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDedupeMarkers measures a consumer's batch: 1,000 markers of distinct ids.
func BenchmarkDedupeMarkers(b *testing.B) {
	ms := make([]Marker, 1000)
	for i := range ms {
		ms[i] = Marker{EventID: fmt.Sprintf("%08x-0000-4000-8000-%012d", i*2654435761%1000003, i), Topic: "tasks", Offset: int64(i),
			AggregateID: "task-" + strconv.Itoa(i%500), AggregateVersion: int64(i / 500), Versioned: true}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := dedupeMarkers(ms); err != nil {
			b.Fatal(err)
		}
	}
}
