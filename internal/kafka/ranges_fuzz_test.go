package kafka

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// fuzzBounds makes a topic's partitions from raw, 6 bytes a partition: the log start above
// base, then how far the last stable offset and the high watermark lie above it. The last
// stable offset never passes the high watermark, as on a broker.
func fuzzBounds(raw []byte, base int64) []PartitionBounds {
	var out []PartitionBounds
	for p := int32(0); len(raw) >= 6 && p < 64; p++ {
		start := base + int64(binary.BigEndian.Uint16(raw))
		stable := start + int64(binary.BigEndian.Uint16(raw[2:]))
		hw := stable + int64(binary.BigEndian.Uint16(raw[4:]))%4 // a transaction still open
		out = append(out, PartitionBounds{Partition: p, LogStart: start, LastStable: stable, HighWatermark: hw})
		raw = raw[6:]
	}
	return out
}

// fuzzOffsetsAt answers offsetsAfter for each partition from raw, 2 bytes a partition: an
// offset from the log start up to a little past the high watermark (records that arrived
// after the bounds were taken). A partition raw does not reach has no answer.
func fuzzOffsetsAt(raw []byte, bounds []PartitionBounds) map[int32]int64 {
	out := map[int32]int64{}
	for _, b := range bounds {
		if len(raw) < 2 {
			break
		}
		span := b.HighWatermark - b.LogStart + 3
		out[b.Partition] = b.LogStart + int64(binary.BigEndian.Uint16(raw))%span
		raw = raw[2:]
	}
	return out
}

// FuzzPlanRanges gives planRanges arbitrary partition bounds and selections (partitions,
// inclusive offsets, a time window with the broker's offsets for it). It asserts that it never
// panics; that an error is a usage error exactly when the selection names a partition the
// topic lacks, an offset outside a selected partition or an inverted range; and that
// otherwise each selected partition has one range, in the order first named, that holds
// exactly the offsets the selection asks for: LogStart <= Start <= End <= HighWatermark,
// nothing at or past the last stable offset, nothing selected left out. The seeds are in
// testdata/fuzz/FuzzPlanRanges, most on three partitions: records at offsets 0..9; at 5..25
// with the last stable offset 25 (a transaction still open at 25); none.
func FuzzPlanRanges(f *testing.F) {
	f.Fuzz(func(t *testing.T, rawBounds []byte, base int64, rawParts []byte, hasStart bool, start int64,
		hasEnd bool, end int64, hasSince bool, rawSince []byte, hasUntil bool, rawUntil []byte) {
		if base < 0 || base > math.MaxInt64/2 {
			return // offsets are never negative, and a partition's never reach MaxInt64
		}
		const topic = "fuzz"
		bounds := fuzzBounds(rawBounds, base)
		var sel Selection
		for _, p := range rawParts {
			sel.Partitions = append(sel.Partitions, int32(p%80)) // some beyond the topic's
		}
		if hasStart {
			sel.StartOffset = &start
		}
		if hasEnd {
			sel.EndOffset = &end
		}
		var since, until map[int32]int64
		at := time.Date(2026, 3, 14, 9, 27, 0, 0, time.UTC)
		if hasSince {
			sel.Since, since = at, fuzzOffsetsAt(rawSince, bounds)
		}
		if hasUntil {
			sel.Until, until = at.Add(time.Hour), fuzzOffsetsAt(rawUntil, bounds)
			if hasSince && len(rawUntil) > 0 && rawUntil[0]&0x80 != 0 {
				sel.Until = at // an empty window: a usage error
			}
		}

		ranges, err := planRanges(topic, bounds, sel, since, until)

		byPart := map[int32]PartitionBounds{}
		for _, b := range bounds {
			byPart[b.Partition] = b
		}
		var want []int32
		for _, p := range sel.Partitions {
			if !slices.Contains(want, p) {
				want = append(want, p)
			}
		}
		if len(sel.Partitions) == 0 {
			for _, b := range bounds {
				want = append(want, b.Partition)
			}
		}
		// Selection.Check's rules: a negative offset, a range that ends before it starts, an
		// empty window, a range and a window both.
		wantErr := hasStart && hasEnd && end < start || !sel.Since.IsZero() && !sel.Until.IsZero() && !sel.Until.After(sel.Since) ||
			(hasStart || hasEnd) && (hasSince || hasUntil) || hasStart && start < 0 || hasEnd && end < 0
		usage := wantErr // the selection's own rules are usage errors; a partition or offset that is not there is not found
		for _, p := range want {
			b, ok := byPart[p]
			outside := func(o int64) bool { return o < b.LogStart || o >= b.HighWatermark }
			if !ok || hasStart && outside(start) || hasEnd && outside(end) {
				wantErr = true
			}
		}
		if err != nil {
			if !wantErr {
				t.Fatalf("selection %+v of %+v: unexpected error %v", sel, bounds, err)
			}
			if k := fwerr.KindOf(err); k != fwerr.KindUsage && (usage || k != fwerr.KindNotFound) || strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("error %v is not a usage or not-found error with a message", err)
			}
			if ranges != nil {
				t.Fatalf("ranges %+v beside error %v", ranges, err)
			}
			return
		}
		if wantErr {
			t.Fatalf("selection %+v of %+v: no error, ranges %+v", sel, bounds, ranges)
		}
		if len(ranges) != len(want) {
			t.Fatalf("%d ranges for partitions %v: %+v", len(ranges), want, ranges)
		}
		var total int64
		for i, r := range ranges {
			b := byPart[want[i]]
			if r.Topic != topic || r.Partition != want[i] || r.LogStart != b.LogStart || r.HighWatermark != b.HighWatermark {
				t.Fatalf("range %d is %+v, want partition %d of %+v", i, r, want[i], b)
			}
			if !(b.LogStart <= r.Start && r.Start <= r.End && r.End <= b.HighWatermark) {
				t.Fatalf("range %+v is not within %+v", r, b)
			}
			// Exactly the offsets asked for: the first is the highest lower bound, the end the
			// lowest upper bound (or Start, when nothing is left).
			lo, hi := b.LogStart, b.LastStable
			if hasStart {
				lo = max(lo, start)
			}
			if hasEnd {
				hi = min(hi, end+1)
			}
			if o, ok := since[r.Partition]; ok {
				lo = max(lo, min(o, b.HighWatermark))
			}
			if o, ok := until[r.Partition]; ok {
				hi = min(hi, o)
			}
			if r.Start != lo || r.End != max(lo, hi) {
				t.Fatalf("range %+v of %+v, selection %+v (since %v, until %v): want [%d, %d)", r, b, sel, since, until, lo, max(lo, hi))
			}
			if r.Len() != r.End-r.Start {
				t.Fatalf("Len %d of %+v", r.Len(), r)
			}
			total += r.Len()
		}
		if Total(ranges) != total {
			t.Fatalf("Total %d, ranges add up to %d", Total(ranges), total)
		}
	})
}
