package dlq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestUTCRFC3339 holds the listing's own reading of fieldwork's time headers to time.Parse:
// on times in UTC of every year, month end and number of fraction digits, and on as many
// again with one byte changed, it reads a time only where time.Parse reads the same one, and
// reads every UTC time of fieldwork's shape that time.Parse reads.
func TestUTCRFC3339(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	subst := []byte("0123456789-:.TZz+ \x00\xff9")
	inputs := []string{
		"2026-11-29T13:10:51Z", "2026-11-29T13:10:51.335648371Z", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z", "2026-12-31T23:59:59.999999999Z", "2026-12-31T23:59:60Z", "2026-12-31T24:00:00Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "0000-01-01T00:00:00Z",
		"2026-11-29T13:10:51.Z", "2026-11-29T13:10:51.1234567890Z", "2026-11-29T13:10:51+00:00", "1900-02-29T00:00:00Z",
		"2000-02-29T00:00:00Z", "2026-11-29t13:10:51z", " 2026-11-29T13:10:51Z", "2026-11-29T13:10:51,5Z",
	}
	for range 20000 {
		y, mo := rng.IntN(10000), 1+rng.IntN(12)
		d := 1 + rng.IntN(daysIn(mo, y))
		if rng.IntN(4) == 0 {
			d = daysIn(mo, y) + rng.IntN(2) // the month's last day, or one past it
		}
		s := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d", y, mo, d, rng.IntN(25), rng.IntN(61), rng.IntN(61))
		if digits := rng.IntN(11); digits > 0 {
			s += "." + fmt.Sprintf("%010d", rng.Int64N(1e10))[:digits]
		}
		s += "Z"
		inputs = append(inputs, s)
		b := []byte(s)
		b[rng.IntN(len(b))] = subst[rng.IntN(len(subst))]
		inputs = append(inputs, string(b))
	}
	read := 0
	for _, s := range inputs {
		want, err := time.Parse(time.RFC3339Nano, s)
		got, ok := utcRFC3339([]byte(s))
		if ok {
			read++
			if err != nil || !got.Equal(want) || got.Location() != time.UTC || !got.Equal(want.UTC()) || got != want.UTC() {
				t.Fatalf("utcRFC3339(%q) = %v; time.Parse: %v, %v", s, got, want, err)
			}
			continue
		}
		if err == nil && len(s) >= 20 && len(s) <= 30 && s[len(s)-1] == 'Z' && s[10] == 'T' && (s[19] == '.' || s[19] == 'Z') {
			t.Fatalf("utcRFC3339(%q) did not read it; time.Parse read %v", s, want)
		}
	}
	if read < len(inputs)/4 {
		t.Fatalf("read %d of %d inputs: the generator makes too few valid times", read, len(inputs))
	}
}
