package dedupdriver

import (
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
