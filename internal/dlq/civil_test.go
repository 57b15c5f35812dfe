package dlq

import (
	"testing"
	"time"
)

// TestCivil holds unixDays and civil to package time on every day of the years 0 to 9999.
func TestCivil(t *testing.T) {
	first := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	firstDay := first.Unix() / 86400
	if got := unixDays(0, 1, 1); got != firstDay || year0Unix != first.Unix() {
		t.Fatalf("unixDays(0, 1, 1) = %d (year0Unix %d), want %d", got, year0Unix, firstDay)
	}
	if want := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix(); year10000Unix != want {
		t.Fatalf("year10000Unix = %d, want %d", year10000Unix, want)
	}
	days := 0
	for tm := first; tm.Year() < 10000; tm = tm.AddDate(0, 0, 1) {
		day := firstDay + int64(days)
		days++
		y, mo, d := tm.Date()
		if got := unixDays(y, int(mo), d); got != day {
			t.Fatalf("unixDays(%d, %d, %d) = %d, want %d", y, mo, d, got, day)
		}
		if gy, gmo, gd := civil(day); gy != y || gmo != int(mo) || gd != d {
			t.Fatalf("civil(%d) = %d-%d-%d, want %v", day, gy, gmo, gd, tm)
		}
	}
	if days != 3652425 {
		t.Fatalf("walked %d days, want 3652425", days)
	}
}
