package cmdutil

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DayDuration is a flag value taking a Go duration or a number of days: 30d, 1d12h, 36h.
type DayDuration time.Duration

func (d *DayDuration) String() string { return CompactDuration(time.Duration(*d)) }
func (d *DayDuration) Type() string   { return "duration" }
func (d *DayDuration) Set(s string) error {
	v, err := ParseDayDuration(s)
	if err != nil {
		return err
	}
	*d = DayDuration(v)
	return nil
}

// ParseDayDuration reads a number of days (30d), a Go duration (36h) or both (1d12h).
func ParseDayDuration(in string) (time.Duration, error) {
	s := strings.TrimSpace(in)
	bad := fmt.Errorf("%q: want a number of days (30d), a Go duration (36h) or both (1d12h)", in)
	var days int64
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > 100_000 {
			return 0, bad
		}
		days, s = n, s[i+1:]
		if s == "" {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, bad
	}
	return time.Duration(days)*24*time.Hour + d, nil
}
