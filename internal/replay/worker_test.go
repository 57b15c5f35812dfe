package replay

import (
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
