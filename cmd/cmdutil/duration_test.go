package cmdutil

import (
	"testing"
	"time"
)

func TestDayDuration(t *testing.T) {
	good := map[string]time.Duration{"30d": 720 * time.Hour, "1d12h": 36 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute, " 2d ": 48 * time.Hour, "0d": 0}
	for in, want := range good {
		if got, err := ParseDayDuration(in); err != nil || got != want {
			t.Errorf("%q = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "xd", "1w", "1d2", "-1d", "soon"} {
		if _, err := ParseDayDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	compact := map[time.Duration]string{720 * time.Hour: "30d", 36 * time.Hour: "1d12h", 2 * time.Hour: "2h", 90 * time.Minute: "1h30m",
		10 * time.Second: "10s", 24*time.Hour + 30*time.Second: "1d30s", 500 * time.Millisecond: "500ms"}
	for in, want := range compact {
		if got := CompactDuration(in); got != want {
			t.Errorf("CompactDuration(%v) = %q, want %q", in, got, want)
		}
	}
}
