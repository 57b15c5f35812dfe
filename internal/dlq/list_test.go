package dlq

import (
	"slices"
	"testing"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// TestFill: a limit is water-filled: each part gets what it has up to one level, the
// remainder one each to the first parts at the level, never below a floor.
func TestFill(t *testing.T) {
	for _, tc := range []struct {
		n                     int64
		floor, capacity, want []int64
	}{
		{200, []int64{0, 0}, []int64{3000, 32}, []int64{168, 32}},
		{200, []int64{0, 0, 0}, []int64{3000, 3000, 32}, []int64{84, 84, 32}},
		{7, []int64{0, 0, 0}, []int64{5, 5, 5}, []int64{3, 2, 2}},
		{1, []int64{0, 0}, []int64{5, 5}, []int64{1, 0}},
		{100, []int64{0, 0}, []int64{10, 20}, []int64{10, 20}},
		{10, []int64{6, 0}, []int64{9, 9}, []int64{6, 4}}, // a floor above the level stays
		{0, []int64{0}, []int64{5}, []int64{0}},
	} {
		got := fill(tc.n, tc.floor, tc.capacity)
		if !slices.Equal(got, tc.want) {
			t.Errorf("fill(%d, %v, %v) = %v, want %v", tc.n, tc.floor, tc.capacity, got, tc.want)
		}
	}
}

// TestAllot: among topics first, then within each topic among its partitions.
func TestAllot(t *testing.T) {
	part := func(topic string, p int32, n int64) partShare {
		return partShare{r: kafka.PartitionRange{Topic: topic, Partition: p, End: n}}
	}
	parts := []partShare{part("big.dlq", 0, 1000), part("big.dlq", 1, 1000), part("big.dlq", 2, 1000), part("tasks.dlq", 0, 32)}
	if got, want := allot(200, parts), []int64{56, 56, 56, 32}; !slices.Equal(got, want) {
		t.Errorf("allot = %v, want %v", got, want)
	}
	// A partition that turned out to have fewer leaves the rest to its siblings.
	parts[1].done, parts[1].taken = true, 6
	if got, want := allot(200, parts), []int64{81, 6, 81, 32}; !slices.Equal(got, want) {
		t.Errorf("allot after a short partition = %v, want %v", got, want)
	}
}
