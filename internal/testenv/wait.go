package testenv

import (
	"testing"
	"time"
)

// WaitUntil polls cond every 50ms until it holds, and fails t when it has not within, or
// when stop (nil: never) is closed first: the one bounded wait for a condition that a test
// cannot be told of.
func WaitUntil(t testing.TB, within time.Duration, stop <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		select {
		case <-stop:
			t.Fatalf("%s: a process it waited on exited", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
