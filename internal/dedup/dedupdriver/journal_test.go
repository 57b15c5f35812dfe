package dedupdriver

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
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
	if b.SourceTimestamps != nil {
		t.Fatalf("sends without source timestamps grouped with some: %+v", b)
	}
	recs := []SourceRecord{{SourceRef: SourceRef{"d", 1, 7}, EventID: "e"}, {SourceRef: SourceRef{"d", 1, 8}, EventID: "e"}, {SourceRef: SourceRef{"d", 0, 5}, EventID: "e"}}
	var spans []BatchSpan
	for i, b := range bs {
		spans = append(spans, BatchSpan{ID: int64(i), Topic: b.SourceTopic, Partition: b.SourcePartition, First: b.SourceOffsets[0], Last: b.SourceOffsets[len(b.SourceOffsets)-1], At: b.At, RunID: "r"})
	}
	out, err := ResolveLatest(recs, spans, func(ids []int64) (out []SendBatch, runs []BatchRun, _ error) {
		for _, id := range ids {
			out, runs = append(out, bs[id]), append(runs, BatchRun{ID: "r", Batch: id})
		}
		return out, runs, nil
	})
	if err != nil || len(out) != 2 || out[SourceRef{"d", 1, 7}].TargetOffset != 70 || out[SourceRef{"d", 0, 5}].TargetPartition != 1 {
		t.Fatalf("resolved %+v", out)
	}
	sorted := SortSends([]ReplaySend{s(1, 9, "t", 0, t0), s(0, 5, "t", 1, t0), s(1, 9, "t", 5, t0)})
	if len(sorted) != 2 || sorted[0].SourcePartition != 0 || sorted[1].TargetPartition != 0 {
		t.Fatalf("SortSends %+v", sorted)
	}
}

// TestGroupSendsManyBatches groups sends of more batches than a scan looks through (the map
// takes over), shuffled, and finds every send once, in its batch, each batch in source-offset
// order and the batches in their order.
func TestGroupSendsManyBatches(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	var sends []ReplaySend
	for i := range 3000 {
		sends = append(sends, ReplaySend{SourceTopic: fmt.Sprintf("d%d", i%2), SourcePartition: int32(i % 13), SourceOffset: int64(i),
			SourceTimestamp: t0.Add(time.Duration(i) * time.Millisecond), EventID: fmt.Sprint("e", i),
			TargetTopic: fmt.Sprintf("t%d", i%3), TargetPartition: int32(i % 5), TargetOffset: int64(10 * i), At: t0})
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
	sends[17].SourceTimestamp = time.Time{} // its batch alone loses its timestamps
	bs := GroupSends(sends)
	if len(bs) != 2*13*3 { // every (topic, partition, target) of i mod 2, 13 and 3
		t.Fatalf("%d batches", len(bs))
	}
	seen := 0
	for k, b := range bs {
		if !b.Valid() {
			t.Fatalf("batch %d invalid: %+v", k, b)
		}
		if k > 0 {
			p := bs[k-1]
			if cmp.Or(strings.Compare(p.SourceTopic, b.SourceTopic), cmp.Compare(p.SourcePartition, b.SourcePartition), strings.Compare(p.TargetTopic, b.TargetTopic)) >= 0 {
				t.Fatalf("batch %d out of order after %d", k, k-1)
			}
		}
		for j, o := range b.SourceOffsets {
			if j > 0 && o <= b.SourceOffsets[j-1] {
				t.Fatalf("batch %d: offsets out of order: %v", k, b.SourceOffsets)
			}
			i := int(o)
			if fmt.Sprintf("d%d", i%2) != b.SourceTopic || int32(i%13) != b.SourcePartition || fmt.Sprintf("t%d", i%3) != b.TargetTopic ||
				b.EventIDs[j] != fmt.Sprint("e", i) || b.TargetPartitions[j] != int32(i%5) || b.TargetOffsets[j] != int64(10*i) {
				t.Fatalf("batch %d holds send %d wrongly: %+v", k, i, b.Send(j))
			}
			if b.SourceTimestamps != nil && b.SourceTimestamps[j] != t0.UnixMilli()+int64(i) {
				t.Fatalf("batch %d: send %d's timestamp %d", k, i, b.SourceTimestamps[j])
			}
			seen++
		}
		if hasUntimed := b.Find(sends[17].SourceOffset) >= 0 && b.SourceTopic == sends[17].SourceTopic && b.SourcePartition == sends[17].SourcePartition && b.TargetTopic == sends[17].TargetTopic; hasUntimed != (b.SourceTimestamps == nil) {
			t.Fatalf("batch %d: timestamps %v, holds the untimed send %v", k, b.SourceTimestamps != nil, hasUntimed)
		}
	}
	if seen != len(sends) {
		t.Fatalf("%d sends grouped of %d", seen, len(sends))
	}
}

// TestGroupSendsKeepsSourceTimestamps: sends that carry their source record's timestamp are
// grouped with them, in the order of their offsets, and read back by Send.
func TestGroupSendsKeepsSourceTimestamps(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_123).UTC()
	s := func(o int64, ts time.Time) ReplaySend {
		return ReplaySend{SourceTopic: "d", SourceOffset: o, SourceTimestamp: ts, EventID: "e", TargetTopic: "t", TargetOffset: o}
	}
	bs := GroupSends([]ReplaySend{s(9, t0.Add(9*time.Millisecond)), s(3, t0), s(5, t0.Add(-time.Hour))})
	if len(bs) != 1 || !bs[0].Valid() || fmt.Sprint(bs[0].SourceOffsets) != "[3 5 9]" {
		t.Fatalf("batches %+v", bs)
	}
	b := bs[0]
	if fmt.Sprint(b.SourceTimestamps) != fmt.Sprint([]int64{t0.UnixMilli(), t0.Add(-time.Hour).UnixMilli(), t0.UnixMilli() + 9}) {
		t.Fatalf("timestamps %v", b.SourceTimestamps)
	}
	if got := b.Send(1); !got.SourceTimestamp.Equal(t0.Add(-time.Hour)) || got.SourceOffset != 5 {
		t.Fatalf("Send(1) = %+v", got)
	}
}

// TestSentRecord is the rule of record identity, case by case: what both sides know must agree.
func TestSentRecord(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_000)
	timed := SendBatch{SourceOffsets: []int64{7}, SourceTimestamps: []int64{ts.UnixMilli()}, EventIDs: []string{"e"}, TargetPartitions: []int32{0}, TargetOffsets: []int64{1}}
	legacy := timed
	legacy.SourceTimestamps = nil
	rec := func(topicID, eventID string, at time.Time) SourceRecord {
		return SourceRecord{SourceRef: SourceRef{"d", 0, 7}, TopicID: topicID, EventID: eventID, Timestamp: at}
	}
	for _, c := range []struct {
		name    string
		b       SendBatch
		runID   string
		r       SourceRecord
		sentRec bool
	}{
		{"everything agrees", timed, "A", rec("A", "e", ts), true},
		{"the topic was recreated", timed, "A", rec("B", "e", ts), false},
		{"another event id", timed, "A", rec("A", "f", ts), false},
		{"another timestamp", timed, "A", rec("A", "e", ts.Add(time.Millisecond)), false},
		{"the asker knows no topic id", timed, "A", rec("", "e", ts), true},
		{"the run journaled no topic id", timed, "", rec("B", "e", ts), true},
		{"the asker knows no timestamp", timed, "A", rec("A", "e", time.Time{}), true},
		{"journaled before record identity", legacy, "", rec("B", "e", ts.Add(time.Hour)), true},
		{"journaled before record identity, another event id", legacy, "", rec("B", "f", ts), false},
	} {
		if got := c.b.SentRecord(0, c.runID, c.r); got != c.sentRec {
			t.Errorf("%s: SentRecord = %v, want %v", c.name, got, c.sentRec)
		}
	}
}

func TestPackRoundTrip(t *testing.T) {
	for _, b := range []SendBatch{
		{SourceOffsets: []int64{0}, EventIDs: []string{""}, TargetPartitions: []int32{0}, TargetOffsets: []int64{0}},
		{SourceOffsets: []int64{5, 6, 7, 100, 1 << 40}, EventIDs: []string{"a", "", "0190a0f2-7c2e-7000-8000-000000000001", "é", "x"},
			TargetPartitions: []int32{3, 0, 2147483647, 1, 7}, TargetOffsets: []int64{900, 12, 13, 1 << 50, 0}},
		{SourceOffsets: []int64{-1, math.MaxInt64}, EventIDs: []string{"p", "q"}, TargetPartitions: []int32{-1, math.MinInt32}, TargetOffsets: []int64{math.MinInt64, math.MaxInt64}},
		{SourceOffsets: []int64{3}, SourceTimestamps: []int64{-1}, EventIDs: []string{"a"}, TargetPartitions: []int32{0}, TargetOffsets: []int64{0}},
		{SourceOffsets: []int64{5, 6, 9}, SourceTimestamps: []int64{1_700_000_000_000, 1_699_999_999_000, math.MaxInt64}, EventIDs: []string{"a", "b", "c"},
			TargetPartitions: []int32{1, 1, 2}, TargetOffsets: []int64{10, 11, 4}},
		{SourceOffsets: []int64{0, 1}, SourceTimestamps: []int64{math.MinInt64, math.MaxInt64}, EventIDs: []string{"", ""}, TargetPartitions: []int32{0, 0}, TargetOffsets: []int64{0, 1}},
	} {
		data := b.Pack(nil)
		if want := byte(packedV1); b.SourceTimestamps != nil && data[0] != packedV2 || b.SourceTimestamps == nil && data[0] != want {
			t.Fatalf("%v packed in version %d", b.SourceOffsets, data[0])
		}
		var got SendBatch
		if err := got.Unpack(data); err != nil {
			t.Fatalf("unpack %v: %v", b, err)
		}
		if fmt.Sprint(got.SourceOffsets, got.SourceTimestamps, got.EventIDs, got.TargetPartitions, got.TargetOffsets) !=
			fmt.Sprint(b.SourceOffsets, b.SourceTimestamps, b.EventIDs, b.TargetPartitions, b.TargetOffsets) || (got.SourceTimestamps == nil) != (b.SourceTimestamps == nil) {
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
		"another version":            append([]byte{3}, good[1:]...),
		"version 0":                  append([]byte{0}, good[1:]...),
		"no records":                 {packedV1, 0},
		"a count of millions":        {packedV1, 0x80, 0x89, 0x7a, 1, 1, 0, 0},
		"a partition > int32":        append([]byte{packedV1, 1, 2, 4}, append(binaryVarint(1<<33), 0)...),
		"an id past the end":         {packedV1, 1, 2, 4, 0, 9, 'a'},
		"version 2 without its time": append([]byte{packedV2}, good[1:]...),
		"a count of two in 9 bytes":  {packedV2, 2, 2, 4, 0, 0, 2, 2, 4, 0},
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
	b.SourceTimestamps = []int64{1_700_000_000_000, 1_700_000_000_004}
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
			fmt.Sprint(again.SourceOffsets, again.SourceTimestamps, again.EventIDs, again.TargetPartitions, again.TargetOffsets) !=
				fmt.Sprint(got.SourceOffsets, got.SourceTimestamps, got.EventIDs, got.TargetPartitions, got.TargetOffsets) {
			t.Fatalf("%x: packed again, unpacked %+v, %v; first %+v", data, again, err, got)
		}
	})
}

// TestJSONText: journaled JSON is encoded as the value it holds, text that is not JSON as a
// string, and decoding gives the text back.
func TestJSONText(t *testing.T) {
	for _, tc := range []struct {
		text JSONText
		want string
	}{
		{`{"from":"tasks.dlq","limit":5}`, `{"t":{"from":"tasks.dlq","limit":5}}`},
		{`[1,2]`, `{"t":[1,2]}`},
		{`written by hand`, `{"t":"written by hand"}`},
		{``, `{"t":""}`},
	} {
		b, err := json.Marshal(struct {
			T JSONText `json:"t"`
		}{tc.text})
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%q) = %s, %v; want %s", tc.text, b, err, tc.want)
			continue
		}
		var back struct {
			T JSONText `json:"t"`
		}
		if err := json.Unmarshal(b, &back); err != nil || back.T != tc.text {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q", b, back.T, err, tc.text)
		}
	}
}

func TestRenderMigrationsFollowsTheLine(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, s := range Line {
		fsys[fmt.Sprintf("migrations/%03d_%s.sql", s.Version, s.Name)] = &fstest.MapFile{Data: []byte("-- nothing\n")}
	}
	if ms, err := RenderMigrations(fsys, nil); err != nil || len(ms) != len(Line) || !Empty(ms[0].SQL) {
		t.Fatalf("the line: %v %v", ms, err)
	}
	delete(fsys, "migrations/005_replay_packed_sends.sql")
	if _, err := RenderMigrations(fsys, nil); err == nil || !strings.Contains(err.Error(), "006_replay_record_identity.sql is not step 5") {
		t.Fatalf("a step missing: %v", err)
	}
	fsys["migrations/005_replay_packed_sends.sql"] = &fstest.MapFile{Data: []byte("-- nothing\n")}
	fsys["migrations/099_more.sql"] = &fstest.MapFile{Data: []byte("SELECT 1;\n")}
	if _, err := RenderMigrations(fsys, nil); err == nil {
		t.Fatal("a step beyond the line was read")
	}
	if Empty("-- a comment\n\nSELECT 1;") || !Empty("  -- only\n\n") {
		t.Fatal("Empty")
	}
}

// bare is a driver that keeps no journal.
type bare struct{ Driver }

func (bare) Name() string { return "bare" }

func TestCheckNamesTheJournalsADriverLacks(t *testing.T) {
	_, err := Check(bare{})
	if err == nil || !strings.Contains(err.Error(), "the bare store driver lacks the replay journal") ||
		!strings.Contains(err.Error(), "ActionJournal") || !strings.Contains(err.Error(), "GroupJournal") {
		t.Fatalf("Check of a driver without journals: %v", err)
	}
}

// BenchmarkGroupSends groups one journal flush of a replay: 2,000 acknowledged sends read from
// 3 source partitions, each source partition's records spread over 3 target partitions, the
// acknowledgements of the target partitions interleaved (each in its own order), so that the
// sends of a batch come out of source order.
func BenchmarkGroupSends(b *testing.B) {
	const n = 2000
	t0 := time.Now()
	var perTarget [3][]ReplaySend
	for i := range n {
		s := ReplaySend{SourceTopic: "orders.dlq", SourcePartition: int32(i % 3), SourceOffset: int64(i / 3),
			SourceTimestamp: t0, EventID: fmt.Sprintf("%08x-0000-4000-8000-%012d", i, i), TargetTopic: "orders",
			TargetPartition: int32(i / 3 % 3), TargetOffset: int64(i), At: t0}
		perTarget[s.TargetPartition] = append(perTarget[s.TargetPartition], s)
	}
	var sends []ReplaySend
	for k := 0; len(sends) < n; k += 50 { // a produce response acknowledges 50 records a partition
		for p := range perTarget {
			sends = append(sends, perTarget[p][min(k, len(perTarget[p])):min(k+50, len(perTarget[p]))]...)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = GroupSends(sends)
	}
}

func TestSourceWindows(t *testing.T) {
	at := func(topic string, p int32, o int64) SourceRecord {
		return SourceRecord{SourceRef: SourceRef{Topic: topic, Partition: p, Offset: o}}
	}
	recs := []SourceRecord{at("a", 0, 50), at("a", 0, 10), at("a", 0, 900), at("a", 1, 7), at("b", 0, 7), at("a", 0, 50)}
	if got, want := SourceWindows(recs), []SourceWindow{{"a", 0, 10, 900}, {"a", 1, 7, 7}, {"b", 0, 7, 7}}; !slices.Equal(got, want) {
		t.Errorf("windows %v, want %v", got, want)
	}
}

// TestResolveLatest resolves records against the batches of many runs, random and
// overlapping, some of which left records out or sent another record at the same coordinates
// (another event id, another topic ID): the answer must be what a look through every batch
// finds, the latest send that sent each record (by time, then run id, then batch id), while
// the batches read are at first only each record's latest, and at most two reads are made.
func TestResolveLatest(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	for round := range 200 {
		var (
			batches []SendBatch
			runs    []BatchRun
			spans   []BatchSpan
		)
		nRuns := 1 + rnd.IntN(8)
		for r := range nRuns {
			run := fmt.Sprintf("run-%d", rnd.IntN(4)) // runs may share an id: the batch id decides
			topicID := ""
			if rnd.IntN(4) == 0 {
				topicID = "old-topic" // sent before the topic was recreated
			}
			for p := range int32(2) {
				for lo := int64(0); lo < 60; lo += int64(5 + rnd.IntN(20)) {
					b := SendBatch{SourceTopic: "d", SourcePartition: p, TargetTopic: "t", At: t0.Add(time.Duration(rnd.IntN(5)) * time.Second)}
					for o := lo; o < lo+int64(5+rnd.IntN(20)); o++ {
						if rnd.IntN(3) == 0 {
							continue // left out by this run
						}
						id := fmt.Sprint("e", o)
						if rnd.IntN(6) == 0 {
							id = "another"
						}
						b.SourceOffsets = append(b.SourceOffsets, o)
						b.EventIDs = append(b.EventIDs, id)
						b.TargetPartitions = append(b.TargetPartitions, int32(r))
						b.TargetOffsets = append(b.TargetOffsets, int64(len(batches)*1000)+o)
					}
					if len(b.SourceOffsets) == 0 {
						continue
					}
					id := int64(len(batches))
					batches = append(batches, b)
					runs = append(runs, BatchRun{ID: run, SourceTopicID: topicID, Batch: id})
					spans = append(spans, BatchSpan{ID: id, Topic: "d", Partition: p, First: b.SourceOffsets[0], Last: b.SourceOffsets[len(b.SourceOffsets)-1], At: b.At, RunID: run})
				}
			}
		}
		var recs []SourceRecord
		for p := range int32(3) {
			for o := int64(0); o < 90; o += int64(1 + rnd.IntN(3)) {
				recs = append(recs, SourceRecord{SourceRef: SourceRef{"d", p, o}, EventID: fmt.Sprint("e", o), TopicID: "now"})
			}
		}
		rnd.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		// The answer of a look through every batch.
		want := map[SourceRef]ReplayRef{}
		best := map[SourceRef]BatchSpan{}
		for _, r := range recs {
			for k, b := range batches {
				j := b.Find(r.Offset)
				if b.SourcePartition != r.Partition || j < 0 || !b.SentRecord(j, runs[k].SourceTopicID, r) {
					continue
				}
				// Kept: the later by time, then run id, then batch id.
				s := spans[k]
				if old, ok := best[r.SourceRef]; ok && (old.At.After(s.At) || old.At.Equal(s.At) && (old.RunID > s.RunID || old.RunID == s.RunID && old.ID > s.ID)) {
					continue
				}
				best[r.SourceRef] = spans[k]
				want[r.SourceRef] = ReplayRef{RunID: runs[k].ID, At: b.At, TargetTopic: "t", TargetPartition: b.TargetPartitions[j], TargetOffset: b.TargetOffsets[j]}
			}
		}
		var reads [][]int64
		shuffled := slices.Clone(spans) // spans come in no order
		rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := ResolveLatest(recs, shuffled, func(ids []int64) (bs []SendBatch, rs []BatchRun, _ error) {
			reads = append(reads, slices.Clone(ids))
			for _, id := range ids {
				bs, rs = append(bs, batches[id]), append(rs, runs[id])
			}
			return bs, rs, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d records resolved, want %d", round, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("round %d: %v resolved to %+v, want %+v", round, k, got[k], w)
			}
		}
		if len(reads) > 2 {
			t.Fatalf("round %d: %d reads", round, len(reads))
		}
		// The first read is of the records' latest batches only.
		latest := map[int64]bool{}
		for _, r := range recs {
			var top *BatchSpan
			for k := range spans {
				s := &spans[k]
				if s.Partition == r.Partition && s.First <= r.Offset && r.Offset <= s.Last && (top == nil || laterSpan(*s, *top) < 0) {
					top = s
				}
			}
			if top != nil {
				latest[top.ID] = true
			}
		}
		if len(reads) > 0 && len(reads[0]) != len(latest) {
			t.Fatalf("round %d: the first read is of %d batches, the records' latest are %d", round, len(reads[0]), len(latest))
		}
		for _, id := range reads[0:min(1, len(reads))] {
			for _, b := range id {
				if !latest[b] {
					t.Fatalf("round %d: the first read is of batch %d, no record's latest", round, b)
				}
			}
		}
	}
	// A fetch that fails fails the resolution.
	spans := []BatchSpan{{ID: 1, Topic: "d", First: 0, Last: 9}}
	_, err := ResolveLatest([]SourceRecord{{SourceRef: SourceRef{"d", 0, 3}}}, spans, func([]int64) ([]SendBatch, []BatchRun, error) {
		return nil, nil, fmt.Errorf("gone")
	})
	if err == nil {
		t.Error("a failed read did not fail the resolution")
	}
}
