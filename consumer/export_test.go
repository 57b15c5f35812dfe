package consumer

import "time"

// SetPollWait sets how long e's poll loop waits in one poll (defaultPollWait otherwise): a
// test sets it far beyond its own bound, to show that nothing waits for a poll to time out.
func SetPollWait(e *Runner, d time.Duration) { e.pollWait = d }
