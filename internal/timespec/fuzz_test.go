package timespec

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// FuzzParseDuration checks, for any text (seeded from testdata/fuzz/FuzzParseDuration), that
// ParseDuration never panics, never returns a negative duration, that every error is a usage
// error, that Format writes what it reads so that it reads back the same, and that without
// days or weeks it agrees with Go's time.ParseDuration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90m", "7d", "1w2d", "1.5h", "0", "-2h", "3y", "106751d23h47m16.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			assertUsage(t, s, err)
		} else {
			if d < 0 {
				t.Fatalf("%q read as negative %v", s, d)
			}
			back, err := ParseDuration(Format(d))
			if err != nil || back != d {
				t.Fatalf("%q read as %v, written %q, read back as %v, %v", s, d, Format(d), back, err)
			}
		}
		trimmed := strings.TrimSpace(s)
		if strings.ContainsAny(trimmed, "dw") || strings.HasPrefix(trimmed, "-") {
			return
		}
		goD, goErr := time.ParseDuration(trimmed)
		switch {
		case goErr == nil && (err != nil || d != goD):
			t.Fatalf("%q: Go reads %v, ParseDuration %v, %v", trimmed, goD, d, err)
		case goErr != nil && err == nil:
			t.Fatalf("%q: Go refuses it (%v), ParseDuration reads %v", trimmed, goErr, d)
		}
	})
}

// FuzzParseTime checks that ParseTime never panics, that every error is a usage error, and
// that a duration reads as that long before now.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-12-01", "2026-12-01T15:04:05Z", "2h", "7d", "2026-02-30", "yesterday"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err != nil {
			assertUsage(t, s, err)
			return
		}
		if d, derr := ParseDuration(s); derr == nil {
			if d <= 0 || !got.Equal(now.Add(-d)) {
				t.Fatalf("%q read as %v, want %v before %v", s, got, d, now)
			}
		}
	})
}

func assertUsage(t *testing.T, s string, err error) {
	t.Helper()
	if fwerr.KindOf(err) != fwerr.KindUsage {
		t.Fatalf("%q: the error is not a usage error: %v", s, err)
	}
	if err.Error() == "" {
		t.Fatalf("%q: empty error message", s)
	}
}
