// Package gcpace is how a command paces Go's collector for the rest of its run (Floor): the
// reads and the replay allocate a record's worth of garbage per record while their
// live heap stays small, so the default GOGC of 100 has them collect far more often than their
// memory needs. An explicit GOGC or GOMEMLIMIT always wins.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// ReadFloor is the heap a reading command lets grow before it collects (Floor). It was 32 MiB;
// with 48, over 300,000 dead letters in runs in turns, dlq list -o jsonl took 0.97–1.16 CPU s
// instead of 1.05–1.25 and its peak RSS 85 MiB instead of 67; dlq stats 0.51–0.59 instead of
// 0.65–0.73, 85 MiB instead of 72–80; inspect validate, whose live heap is larger, 0.87–0.94
// against 0.92–0.94 and 118–124 MiB either way.
const ReadFloor = 48 << 20

// StatusFloor is that of a read that looks the statuses of what it reads up in the store (dlq
// list and dlq stats with a store). It holds a batch of dead letters while their statuses are
// looked up, a live heap of 11–18 MiB, so a floor of 32 MiB set a heap goal of 32–36 MiB and the
// collector ran 419 times over 1,000,000 dead letters, a third of the listing's CPU time. With
// 64 MiB: 7.4 CPU s instead of 8.6, 7.7 s instead of 8.5, peak RSS 105 MiB instead of 82 (dlq
// stats: 4.5 CPU s instead of 5.4, 106 MiB instead of 92). Without a store the read keeps
// ReadFloor (48 MiB): a floor of 64 MiB would have taken its peak RSS from 70 MiB to 103.
const StatusFloor = 64 << 20

// CheckFloor is processed check's (Floor). The check holds the records of up to four
// lookup batches (about 4,000 records, each pinning its fetched batch: a live heap of 40–50
// MiB), so ReadFloor was below twice its live heap and changed nothing: the collector ran
// at GOGC 100, about a fifth of the check's CPU time. With 128 MiB, over 500,000 dead
// letters: 1.65–1.9 CPU s instead of 2.3–2.4, peak RSS 173 MiB instead of 100–112.
const CheckFloor = 128 << 20

// ReplayFloor is a replay's (Floor; the replay benchmark's too). A replay's live heap is
// bounded by the producer's buffer, and at GOGC 100 it spent a fifth of its CPU collecting. It
// used GOGC 400 under a soft memory limit of 256 MiB until the floor replaced it: over 300,000
// dead letters (replaybench -modes headers), 1.6–2.4 CPU s and 250–265 MiB resident either way,
// the runs' spread wider than any difference.
const ReplayFloor = 192 << 20

// Floor makes the collector run less often for the rest of a command that reads a topic
// through: dlq list, dlq stats, processed check, inspect validate, replay. Such a read allocates a record's worth
// of garbage per record (most of it the Kafka client's: header keys, record structs,
// decompression buffers) while its live heap stays small (a few MiB for a listing), so with
// the default GOGC of 100 the heap goal is a few MiB too: the collector ran 118 times over
// 300,000 dead letters, an eighth of the listing's CPU time (49 times with a floor of 32
// MiB). After each collection the heap goal is set to twice the live heap, as GOGC 100 has
// it, but never below floor: the collector then runs about once per floor's worth of
// garbage, and a command whose live heap is larger than half of floor collects exactly as
// before (a soft memory limit would instead make it collect more often). An explicit GOGC or
// GOMEMLIMIT wins (the runtime reads them from the process's environment: getenv is
// os.Getenv). Only the first call counts.
func Floor(getenv func(string) string, floor uint64) {
	floorOnce.Do(func() {
		if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
			return
		}
		t := &gcFloor{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		t.arm()
	})
}

var floorOnce sync.Once

// gcFloor sets GOGC after each collection (a finalizer of an object dropped at once runs
// after the collection that found it unreachable).
type gcFloor struct {
	floor  uint64
	sample []metrics.Sample
}

// gcSentinel is the object whose finalizer tells that a collection ran; it holds a pointer
// so that it is not batched with other small objects by the tiny allocator.
type gcSentinel struct{ t *gcFloor }

func (t *gcFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{t: t}, func(s *gcSentinel) {
		debug.SetGCPercent(s.t.percent())
		s.t.arm()
	})
}

// percent is the GOGC that makes the next heap goal max(2 × live, floor).
func (t *gcFloor) percent() int {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return floorPercent(t.sample[0].Value.Uint64(), t.floor)
}

// floorPercent is the GOGC whose goal for a live heap of live bytes is max(2 × live, floor),
// at most 2,000 (an almost empty heap).
func floorPercent(live, floor uint64) int {
	if live == 0 || 2*live >= floor {
		return 100
	}
	return int(min(floor*100/live-100, 2000))
}
