package replay

import (
	"testing"
	"time"
)

// BenchmarkLimiterWait is the cost of one wait when the cap is far above the rate reached (the
// bucket never empties): what --rate adds to every record of a replay that is not held back.
func BenchmarkLimiterWait(b *testing.B) {
	l := newLimiter(1e12)
	ctx := b.Context()
	for b.Loop() {
		if err := l.wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLimiterHoldsRate waits 2,000 times at a cap of 4,000/s and reports the rate reached
// (records/s) and the time taken: 500ms at the cap, less the 50ms burst (200 records) that may
// go at once, so 450ms (4,444 records/s) at the fastest.
func BenchmarkLimiterHoldsRate(b *testing.B) {
	const n, perSecond = 2000, 4000.0
	ctx := b.Context()
	var total time.Duration
	for b.Loop() {
		l := newLimiter(perSecond)
		start := time.Now()
		for range n {
			if err := l.wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(start)
	}
	per := total / time.Duration(b.N)
	b.ReportMetric(n/per.Seconds(), "records/s")
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/2000")
}
