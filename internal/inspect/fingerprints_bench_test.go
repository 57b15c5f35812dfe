package inspect

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used: on a busy machine a benchmark's CPU time per
// operation varies much less than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBloom adds a million keys (as hash64 makes them) to the spill filter, then asks for
// as many absent ones: the cost per key of the filter that spares a disk read.
func BenchmarkBloom(b *testing.B) {
	const n = 1 << 20
	keys := make([]uint64, 2*n)
	for i := range keys {
		keys[i] = hash64([]byte{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24)})
	}
	b.Run("add", func(b *testing.B) {
		f := newBloom(bloomBits)
		i, cpu := 0, cpuTime()
		for b.Loop() {
			f.add(keys[i%n])
			i++
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(i), "cpu-ns/op")
	})
	b.Run("mayContain", func(b *testing.B) {
		f := newBloom(bloomBits)
		for _, k := range keys[:n] {
			f.add(k)
		}
		i, maybe, cpu := 0, 0, cpuTime()
		for b.Loop() {
			if f.mayContain(keys[n+i%n]) {
				maybe++
			}
			i++
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(i), "cpu-ns/op")
		b.ReportMetric(float64(maybe)/float64(i)*100, "%false-maybe")
	})
}

// BenchmarkFingerprintTableSpilled puts 100,000 keys through a table that keeps 16,384 in
// memory (so it spills six times), then gets as many again, half of them never put: the path
// of inspect validate over a topic larger than its memory, with the filters in front of the runs.
func BenchmarkFingerprintTableSpilled(b *testing.B) {
	const n, limit = 100_000, 1 << 14
	ctx := context.Background()
	for b.Loop() {
		spill := &spillStore{dir: b.TempDir()}
		tab := newFingerprintTable("events", limit, spill)
		for k := range uint64(n) {
			if err := tab.Put(ctx, hash64([]byte{byte(k), byte(k >> 8), byte(k >> 16)}), fingerprint{int64(k)}); err != nil {
				b.Fatal(err)
			}
		}
		for k := range uint64(n) {
			key := []byte{byte(k), byte(k >> 8), byte(k >> 16)}
			if k%2 == 1 {
				key = append(key, 1) // never put
			}
			if _, _, err := tab.Get(ctx, hash64(key)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tab.wait(); err != nil {
			b.Fatal(err)
		}
		_ = spill.Close()
	}
}

// BenchmarkSpillWrite writes one spill of DefaultMemoryEntries fingerprints: the work of the
// goroutine that writes a spill behind inspect validate.
func BenchmarkSpillWrite(b *testing.B) {
	ctx := context.Background()
	m := make(map[uint64]fingerprint, DefaultMemoryEntries)
	for k := range uint64(DefaultMemoryEntries) {
		m[hash64([]byte{byte(k), byte(k >> 8), byte(k >> 16)})] = fingerprint{int64(k), 1, 2, 3}
	}
	for b.Loop() {
		b.StopTimer()
		spill := &spillStore{dir: b.TempDir()}
		tab := newFingerprintTable("events", DefaultMemoryEntries, spill)
		tab.mem = map[uint64]fingerprint{0: {}}
		if err := tab.flush(ctx); err != nil { // creates the table
			b.Fatal(err)
		}
		if err := tab.wait(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := tab.write(ctx, m); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = spill.Close()
		b.StartTimer()
	}
}
