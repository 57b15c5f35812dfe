package dedup

import (
	"slices"
	"strings"
	"testing"
)

// A batch's keys are its distinct storage keys in first-seen order, and each key gives back
// every id given for it: a short id as itself, long ids through their hash, and a short id that
// reads as a long id's key with that long id.
func TestKeysOf(t *testing.T) {
	long1, long2 := strings.Repeat("a", MaxInlineEventIDBytes+1), strings.Repeat("b", MaxInlineEventIDBytes+1)
	k1 := EventKey(long1)
	batch, err := keysOf([]string{"e-2", "e-1", long1, "e-2", long2, long1, k1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"e-2", "e-1", k1, EventKey(long2)}; !slices.Equal(batch.keys, want) {
		t.Errorf("keys %q, want %q", batch.keys, want)
	}
	for key, want := range map[string][]string{"e-1": {"e-1"}, "e-2": {"e-2"}, k1: {k1, long1}, EventKey(long2): {long2}, "e-3": nil} {
		var got []string
		batch.ids(key, func(id string) { got = append(got, id) })
		if !slices.Equal(got, want) {
			t.Errorf("ids of %.20q: %.20q, want %.20q", key, got, want)
		}
	}
	if _, err := keysOf([]string{"ok", ""}); err == nil {
		t.Error("an empty id passed")
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
