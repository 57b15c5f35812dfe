package kafka

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// TestSelectionCheck: the one rule of --partition, --start-offset, --end-offset, --since and
// --until, which the flags, a replay's journaled selection and Plan all apply.
func TestSelectionCheck(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	off := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name string
		sel  Selection
		err  string
	}{
		{"everything", Selection{}, ""},
		{"a range", Selection{Partitions: []int32{0, 2}, StartOffset: off(0), EndOffset: off(0)}, ""},
		{"a window", Selection{Since: at, Until: at.Add(time.Second)}, ""},
		{"open window", Selection{Until: at}, ""},
		{"negative partition", Selection{Partitions: []int32{1, -1}}, "--partition -1: partitions are numbered from 0"},
		{"negative start", Selection{StartOffset: off(-1)}, "--start-offset -1: offsets are not negative"},
		{"negative end", Selection{EndOffset: off(-2)}, "--end-offset -2: offsets are not negative"},
		{"inverted range", Selection{StartOffset: off(9), EndOffset: off(3)}, "--end-offset 3 is before --start-offset 9"},
		{"range and window", Selection{EndOffset: off(3), Since: at}, "choose either an offset range (--start-offset/--end-offset) or a time window (--since/--until), not both"},
		{"empty window", Selection{Since: at, Until: at}, "--until 2026-12-01T00:00:00Z is not after --since 2026-12-01T00:00:00Z"},
	} {
		err := tc.sel.Check()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || fwerr.KindOf(err) != fwerr.KindUsage):
			t.Errorf("%s: error %v; want a usage error saying %q", tc.name, err, tc.err)
		}
	}
}

// TestSelectionJSON: the selection is written with the names the replay journal keeps it
// under (the inclusive end is last_offset), absent bounds left out, and read back whole; a
// record's address selects that one offset of its partition.
func TestSelectionJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		sel  Selection
		want string
	}{
		{Selection{}, `{}`},
		{RecordAddress{Topic: "t", Partition: 3, Offset: 42}.Selection(), `{"partitions":[3],"start_offset":42,"last_offset":42}`},
		{Selection{Since: at, Until: at.Add(time.Hour)}, `{"since":"2026-12-01T00:00:00Z","until":"2026-12-01T01:00:00Z"}`},
	} {
		b, err := json.Marshal(tc.sel)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.sel, b, err, tc.want)
			continue
		}
		var back Selection
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); string(again) != tc.want {
			t.Errorf("%s read back as %s", tc.want, again)
		}
	}
	if sel := (RecordAddress{Partition: 1, Offset: 5}).Selection(); !sel.Ranged() || !sel.Narrowed() || (Selection{}).Narrowed() || (Selection{Since: at}).Ranged() || !(Selection{Since: at}).Narrowed() {
		t.Error("Ranged or Narrowed says otherwise")
	}
}
