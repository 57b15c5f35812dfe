package output

import "time"

// Clock is the time a Progress reads and the ticker that redraws it: the system's in a
// command, a fake one in tests, which decide when a tick comes.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel that delivers a tick every d and a function that stops it.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the real time.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker is time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
