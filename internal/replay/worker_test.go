package replay

import (
	"slices"
	"testing"

	"golang.org/x/time/rate"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// TestRateShare: a worker's share is the rate times its partitions left over every partition
// left; done partitions count for no one, and a worker with none left gets nothing.
func TestRateShare(t *testing.T) {
	cp := func(topic string, p int32, acked, end int64) dedup.ReplayCheckpoint {
		return dedup.ReplayCheckpoint{Topic: topic, Partition: p, AckedThrough: acked, End: end}
	}
	cps := []dedup.ReplayCheckpoint{cp("dlq", 0, 10, 99), cp("dlq", 1, 99, 99), cp("dlq", 2, -1, 50), cp("dlq", 3, 20, 30)}
	for _, c := range []struct {
		name  string
		cps   []dedup.ReplayCheckpoint
		parts []int32
		want  float64
	}{
		{"one of three left", cps, []int32{0}, 100},
		{"a done partition counts for no one", cps, []int32{0, 1}, 100},
		{"two of three left", cps, []int32{2, 3}, 200},
		{"every partition left", cps, []int32{0, 2, 3}, 300},
		{"none of its partitions left", cps, []int32{1}, 0},
		{"another topic's partition is not its own", []dedup.ReplayCheckpoint{cp("other", 0, 0, 9), cp("dlq", 0, 0, 9)}, []int32{0}, 150},
		{"nothing left at all", []dedup.ReplayCheckpoint{cp("dlq", 0, 9, 9)}, []int32{0}, 0},
	} {
		if got := rateShare(300, c.cps, "dlq", c.parts); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestLimiterSetRate: setRate changes the bucket's rate and burst as newLimiter sets them.
func TestLimiterSetRate(t *testing.T) {
	l := newLimiter(100)
	l.setRate(2000)
	if l.bucket.Limit() != rate.Limit(2000) || l.bucket.Burst() != 100 {
		t.Fatalf("after setRate(2000): %v/s, burst %d", l.bucket.Limit(), l.bucket.Burst())
	}
	l.setRate(3)
	if l.bucket.Limit() != rate.Limit(3) || l.bucket.Burst() != 1 {
		t.Fatalf("after setRate(3): %v/s, burst %d", l.bucket.Limit(), l.bucket.Burst())
	}
}

func TestRateText(t *testing.T) {
	for in, want := range map[float64]string{5000: "5000/s", 2.5: "2.5/s", 1000.0 / 3: "333.33/s", 0.004: "0.004/s", 12.346: "12.35/s"} {
		if got := RateText(in); got != want {
			t.Errorf("RateText(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestJournalingLowersTheShareFirst: a worker that finishes a partition lowers its share before
// the journal write that shows it done, by the journal it read last; a partition not of its
// session, or not finished, changes nothing.
func TestJournalingLowersTheShareFirst(t *testing.T) {
	cp := func(p int32, acked, end int64) dedup.ReplayCheckpoint {
		return dedup.ReplayCheckpoint{Topic: "dlq", Partition: p, AckedThrough: acked, End: end}
	}
	var told []float64
	w := &worker{from: "dlq", ex: Execution{Rate: 300}, opts: WorkerOptions{OnShare: func(r float64) { told = append(told, r) }}}
	s := &session{parts: []int32{0, 1}, lim: newLimiter(200), share: 200,
		view: []dedup.ReplayCheckpoint{cp(0, 5, 99), cp(1, 5, 99), cp(2, 5, 99)}}
	w.journaling(s, []dedup.ReplayCheckpoint{cp(0, 50, 99), cp(2, 99, 99)})
	if s.share != 200 || len(told) != 0 {
		t.Fatalf("after no partition of its own finished: share %v, told %v", s.share, told)
	}
	w.journaling(s, []dedup.ReplayCheckpoint{cp(0, 99, 99)})
	if s.share != 100 || s.lim.bucket.Limit() != 100 || !slices.Equal(told, []float64{100}) {
		t.Fatalf("after partition 0 finished: share %v, limit %v, told %v; want 100", s.share, s.lim.bucket.Limit(), told)
	}
	// Its next look at the journal, which has partition 0 done, raises it again.
	if got := rateShare(300, []dedup.ReplayCheckpoint{cp(0, 99, 99), cp(1, 50, 99), cp(2, 50, 99)}, "dlq", s.left()); got != 150 {
		t.Fatalf("share by the next journal: %v, want 150", got)
	}
}
