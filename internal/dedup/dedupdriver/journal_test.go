package dedupdriver

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"
)

func TestGroupSendsSortsEachBatchBySourceOffset(t *testing.T) {
	t0 := time.Unix(100, 0)
	s := func(p int32, o int64, target string, tp int32, at time.Time) ReplaySend {
		return ReplaySend{SourceTopic: "d", SourcePartition: p, SourceOffset: o, EventID: "e", TargetTopic: target, TargetPartition: tp, TargetOffset: o * 10, At: at}
	}
	bs := GroupSends([]ReplaySend{s(1, 9, "t", 0, t0), s(0, 5, "t", 1, t0), s(1, 3, "t", 2, t0.Add(time.Second)), s(1, 4, "u", 0, t0), s(1, 7, "t", 1, t0)})
	if len(bs) != 3 || bs[0].SourcePartition != 0 || bs[1].TargetTopic != "t" || bs[2].TargetTopic != "u" {
		t.Fatalf("batches %+v", bs)
	}
	b := bs[1]
	if !b.Valid() || len(b.SourceOffsets) != 3 || b.SourceOffsets[0] != 3 || b.SourceOffsets[2] != 9 || b.TargetPartitions[0] != 2 || b.TargetOffsets[1] != 70 || !b.At.Equal(t0.Add(time.Second)) {
		t.Fatalf("batch %+v", b)
	}
	if b.Find(7) != 1 || b.Find(8) != -1 || b.Find(100) != -1 {
		t.Fatal("Find")
	}
	out := map[SourceRef]ReplayRef{}
	ResolveRefs([]SourceRef{{"d", 1, 7}, {"d", 1, 8}, {"d", 0, 5}}, bs, []string{"r", "r", "r"}, out)
	if len(out) != 2 || out[SourceRef{"d", 1, 7}].TargetOffset != 70 || out[SourceRef{"d", 0, 5}].TargetPartition != 1 {
		t.Fatalf("resolved %+v", out)
	}
	sorted := SortSends([]ReplaySend{s(1, 9, "t", 0, t0), s(0, 5, "t", 1, t0), s(1, 9, "t", 5, t0)})
	if len(sorted) != 2 || sorted[0].SourcePartition != 0 || sorted[1].TargetPartition != 0 {
		t.Fatalf("SortSends %+v", sorted)
	}
}

func TestPackRoundTrip(t *testing.T) {
	for _, b := range []SendBatch{
		{SourceOffsets: []int64{0}, EventIDs: []string{""}, TargetPartitions: []int32{0}, TargetOffsets: []int64{0}},
		{SourceOffsets: []int64{5, 6, 7, 100, 1 << 40}, EventIDs: []string{"a", "", "0190a0f2-7c2e-7000-8000-000000000001", "é", "x"},
			TargetPartitions: []int32{3, 0, 2147483647, 1, 7}, TargetOffsets: []int64{900, 12, 13, 1 << 50, 0}},
		{SourceOffsets: []int64{-1, math.MaxInt64}, EventIDs: []string{"p", "q"}, TargetPartitions: []int32{-1, math.MinInt32}, TargetOffsets: []int64{math.MinInt64, math.MaxInt64}},
	} {
		data := b.Pack(nil)
		var got SendBatch
		if err := got.Unpack(data); err != nil {
			t.Fatalf("unpack %v: %v", b, err)
		}
		if fmt.Sprint(got.SourceOffsets, got.EventIDs, got.TargetPartitions, got.TargetOffsets) !=
			fmt.Sprint(b.SourceOffsets, b.EventIDs, b.TargetPartitions, b.TargetOffsets) {
			t.Fatalf("round trip: got %+v, want %+v", got, b)
		}
		// Every truncation is refused, never read as fewer records.
		for i := range len(data) {
			if err := got.Unpack(data[:i]); err == nil {
				t.Fatalf("%v cut to %d of %d bytes was unpacked", b.SourceOffsets, i, len(data))
			}
		}
		if err := got.Unpack(append(data, 0)); err == nil {
			t.Fatal("a trailing byte was accepted")
		}
	}
}

func TestUnpackRefuses(t *testing.T) {
	one := SendBatch{SourceOffsets: []int64{1}, EventIDs: []string{"e"}, TargetPartitions: []int32{0}, TargetOffsets: []int64{2}}
	good := one.Pack(nil)
	bad := map[string][]byte{
		"another version":     append([]byte{2}, good[1:]...),
		"no records":          {packedVersion, 0},
		"a count of millions": {packedVersion, 0x80, 0x89, 0x7a, 1, 1, 0, 0},
		"a partition > int32": append([]byte{packedVersion, 1, 2, 4}, append(binaryVarint(1<<33), 0)...),
		"an id past the end":  {packedVersion, 1, 2, 4, 0, 9, 'a'},
	}
	for name, data := range bad {
		var b SendBatch
		if err := b.Unpack(data); err == nil {
			t.Errorf("%s: unpacked %+v", name, b)
		}
	}
}

func binaryVarint(v int64) []byte { return binary.AppendVarint(nil, v) }

func FuzzUnpack(f *testing.F) {
	b := SendBatch{SourceOffsets: []int64{5, 6}, EventIDs: []string{"a", "bc"}, TargetPartitions: []int32{1, 2}, TargetOffsets: []int64{7, 9}}
	f.Add(b.Pack(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got SendBatch
		if got.Unpack(data) != nil {
			return
		}
		if !got.Valid() {
			t.Fatalf("unpacked an invalid batch from %x", data)
		}
		var again SendBatch
		if err := again.Unpack(got.Pack(nil)); err != nil ||
			fmt.Sprint(again.SourceOffsets, again.EventIDs, again.TargetPartitions, again.TargetOffsets) !=
				fmt.Sprint(got.SourceOffsets, got.EventIDs, got.TargetPartitions, got.TargetOffsets) {
			t.Fatalf("%x: packed again, unpacked %+v, %v; first %+v", data, again, err, got)
		}
	})
}
