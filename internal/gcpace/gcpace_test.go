package gcpace

import "testing"

func TestFloorPercent(t *testing.T) {
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 48 << 20, 100}, {30 << 20, 48 << 20, 100}, {24 << 20, 48 << 20, 100},
		{12 << 20, 48 << 20, 300}, {6 << 20, 48 << 20, 700}, {1 << 10, 48 << 20, 2000},
	} {
		if got := floorPercent(c.live, c.floor); got != c.want {
			t.Errorf("floorPercent(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}
