package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// DefaultMemoryEntries is how many fingerprints each of Validate's two tables (event ids,
// aggregates) keeps in memory before spilling to disk: about 50 bytes each in a Go map, so
// roughly 6 MiB per table. At 524,288 a run over a million records took 2.8 times the peak
// memory of one over 100,000 (66 → 181 MiB); at 131,072, 1.7 times (72 → 123 MiB), for a
// fifth more CPU time spent spilling (internal/dlq/bench, when spills were SQLite inserts).
const DefaultMemoryEntries = 1 << 17

// fingerprint is the fixed-size value kept per key; its fields' meaning belongs to the table.
type fingerprint [4]int64

// hash64 is FNV-1a over the parts, each followed by a NUL so that ("ab","c") and ("a","bc")
// differ. 64 bits: the chance of any collision among n keys is about n²/2⁶⁵ (one in 37 for a
// billion distinct ids, one in 3.7 million for ten million).
func hash64(parts ...[]byte) uint64 {
	h := newFNV()
	for _, p := range parts {
		h = h.add(p)
	}
	return uint64(h)
}

// fnv64 is FNV-1a as hash/fnv computes it, without its allocation and interface calls:
// Validate hashes every record's id, aggregate and payload.
type fnv64 uint64

func newFNV() fnv64 { return 14695981039346656037 }

// add hashes p and the NUL that ends it (hash64).
func add[T string | []byte](h fnv64, p T) fnv64 {
	for i := 0; i < len(p); i++ {
		h ^= fnv64(p[i])
		h *= 1099511628211
	}
	return h * 1099511628211 // ^= 0, the NUL
}

func (h fnv64) add(p []byte) fnv64 { return add(h, p) }

func (h fnv64) addString(s string) fnv64 { return add(h, s) }

// fingerprintTable maps 64-bit keys to fingerprints with bounded memory. It keeps at most
// limit entries in a Go map. When a Put would take the map past limit, the map is frozen and a
// new one started, and every entry of the frozen map is written, sorted by key, as one run (a
// temporary file of spillStore's) on a goroutine of its own, while the caller goes on; the next
// spill first waits for that one, and runs of one size are merged as they accumulate
// (spillStore.compact). Get looks in the map, then in the frozen map being written, then — when
// a fixed-size Bloom filter over every key spilled says the key may be there, and once the
// write in progress is done — in the runs, newest first (run.get). An entry in the map is
// always newer than its copy on disk, and a newer run's newer than an older one's, because
// Get of a spilled key is followed by a Put of its new value into the map, and the next spill
// writes it again.
type fingerprintTable struct {
	name   string
	limit  int
	mem    map[uint64]fingerprint
	spill  *spillStore
	filter *bloom
	runs   []*run
	// frozen is the map being written (nil when none); its write's end comes on writing.
	frozen  map[uint64]fingerprint
	writing chan error
	block   []byte // the span of a run Get reads
}

func newFingerprintTable(name string, limit int, spill *spillStore) *fingerprintTable {
	return &fingerprintTable{name: name, limit: max(limit, 1), mem: make(map[uint64]fingerprint), spill: spill}
}

func (t *fingerprintTable) Get(ctx context.Context, k uint64) (fingerprint, bool, error) {
	if v, ok := t.mem[k]; ok {
		return v, true, nil
	}
	if v, ok := t.frozen[k]; ok {
		return v, true, nil
	}
	if t.filter == nil || !t.filter.mayContain(k) {
		return fingerprint{}, false, nil
	}
	if err := t.wait(); err != nil {
		return fingerprint{}, false, err
	}
	for i := len(t.runs) - 1; i >= 0; i-- {
		v, ok, err := t.runs[i].get(k, &t.block)
		if err != nil {
			return fingerprint{}, false, fmt.Errorf("spill store %s: %w", t.name, err)
		}
		if ok {
			return v, true, nil
		}
	}
	return fingerprint{}, false, nil
}

func (t *fingerprintTable) Put(ctx context.Context, k uint64, v fingerprint) error {
	if _, ok := t.mem[k]; !ok && len(t.mem) >= t.limit {
		if err := t.flush(ctx); err != nil {
			return err
		}
	}
	t.mem[k] = v
	return nil
}

// Spilled reports whether any entry has been written to disk.
func (t *fingerprintTable) Spilled() bool { return t.filter != nil }

// wait waits for the spill in progress, if any, and returns its error.
func (t *fingerprintTable) wait() error {
	if t.writing == nil {
		return nil
	}
	err := <-t.writing
	t.writing, t.frozen = nil, nil
	return err
}

// flush spills the map: it waits for the spill before, freezes the map, adds its keys to the
// filter and starts writing it.
func (t *fingerprintTable) flush(ctx context.Context) error {
	if err := t.wait(); err != nil {
		return err
	}
	if err := t.spill.open(); err != nil {
		return err
	}
	if t.filter == nil {
		t.filter = newBloom(bloomBits)
	}
	for k := range t.mem {
		t.filter.add(k)
	}
	// The new map grows as it fills: the frozen one is let go once written, so that memory
	// holds two full maps only for a moment, if ever.
	t.frozen, t.mem = t.mem, make(map[uint64]fingerprint)
	t.writing = make(chan error, 1)
	// t.runs is changed by the write only, and read only after wait, which receives its end.
	go func(m map[uint64]fingerprint, done chan<- error) { done <- t.write(ctx, m) }(t.frozen, t.writing)
	return nil
}

// write writes m as one run, sorted by key, then merges the newest runs when runFanIn of one
// size are there (spillStore.merge).
func (t *fingerprintTable) write(ctx context.Context, m map[uint64]fingerprint) error {
	// The entries are copied out with their values, in the map's order, then sorted: looking
	// each sorted key up in the map again was a quarter of a spill's time (a cache miss each).
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		entries = append(entries, entry{k, v})
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.k, b.k) })
	r, err := t.spill.write(ctx, entries)
	if err != nil {
		return fmt.Errorf("spill store %s: %w", t.name, err)
	}
	t.runs = append(t.runs, r)
	if t.runs, err = t.spill.compact(ctx, t.runs); err != nil {
		return fmt.Errorf("spill store %s: %w", t.name, err)
	}
	return nil
}

// bloom is the filter over the spilled keys: a fixed 8 MiB Bloom filter (2²⁶ bits) with 3
// probes. With ten million keys on disk it answers "maybe" for about 5% of absent keys, so
// most new keys are known to be new without a disk read. The keys are 64-bit hashes already:
// the probes are taken from the key, mixed once (double hashing, h1 + i·h2), rather than by
// hashing its bytes again per probe, which was a tenth of a spilling lint's CPU time.
type bloom struct {
	words []uint64
	mask  uint32
}

// bloomBits is the size of a table's filter over every key it spilled; a run's own is smaller.
const bloomBits, bloomProbes = 1 << 26, 3

// newBloom makes a filter of bits bits, a power of two of 64 or more.
func newBloom(bits uint32) *bloom { return &bloom{words: make([]uint64, bits/64), mask: bits - 1} }

// probes are the key's bloomProbes bit positions, below mask+1.
func probes(k uint64, mask uint32) [bloomProbes]uint32 {
	// splitmix64's finalizer: every bit of k moves both halves.
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	h1, h2 := uint32(k), uint32(k>>32)|1
	var p [bloomProbes]uint32
	for i := range p {
		p[i] = (h1 + uint32(i)*h2) & mask
	}
	return p
}

func (b *bloom) add(k uint64) {
	for _, p := range probes(k, b.mask) {
		b.words[p/64] |= 1 << (p % 64)
	}
}

func (b *bloom) mayContain(k uint64) bool {
	for _, p := range probes(k, b.mask) {
		if b.words[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}
