package consumer

import "context"

// One partition must never hold up the others. franz-go fetches again only once the records
// it has buffered are polled, so a poll loop that stopped polling because one partition's
// queue is full (a slow handler, a batch retrying on infrastructure) would starve every other
// partition, and one that kept polling would queue that partition's records without bound.
// So the poll loop pauses fetching a partition whose queue holds maxQueued batches
// (kgo.Client.PauseFetchPartitions: franz-go drops what it had buffered for it and fetches it
// again from there once resumed), resumes it once its queue is down to resumeAt batches, and
// pauses a halted partition for good. franz-go keeps a partition paused across rebalances, so
// a partition is resumed when it is revoked or lost, and again when it is assigned.

// resumeAt is the queue, in batches, at which a paused partition is fetched again.
const resumeAt = maxQueued / 2

// The poll loop pauses and resumes between polls, and a poll waits up to pollWait for
// records. While every partition with records to fetch is paused, what is left to fetch (a
// partition at its end, one with nothing new) has none: the poll would wait out its whole
// pollWait while the paused partitions' queues drain, and their workers would then wait for
// records they should have had fetched long before (with one partition at its end beside
// busy ones, a quarter of a second of every half second). So a worker whose paused
// partition's queue is down to resumeAt cuts the poll short (drained), and the poll loop
// resumes the partition at once.

// drained is called by w's goroutine when it has taken a batch: when fetching its partition
// is paused and its queue is down to resumeAt batches, the poll in flight is cut short, so
// that the poll loop resumes the partition now.
func (e *Runner) drained(w *worker) {
	e.mu.Lock()
	// Most batches are taken from partitions that are not paused: their queue and halt are
	// not asked for (each takes w's lock while e.mu is held).
	due := w.paused && e.resumeDue(w, w.queued(), w.isHalted())
	e.mu.Unlock()
	if due {
		e.cutPoll()
	}
}

// resumeDue is whether fetching w's partition, paused, is to be resumed, with n records
// queued: w is not halted and its queue is down to resumeAt batches. Called with e.mu held.
func (e *Runner) resumeDue(w *worker, n int, halted bool) bool {
	return w.paused && !halted && n <= resumeAt*e.o.BatchMax
}

// cutPoll ends the poll in flight, or, between two polls, the next one as soon as it starts.
func (e *Runner) cutPoll() {
	e.pollMu.Lock()
	defer e.pollMu.Unlock()
	if e.pollCut != nil {
		e.pollCut()
		return
	}
	e.cutPending = true
}

// polling records the cancel function of the poll the poll loop is starting (nil once it has
// returned); a cut asked for since the last poll cancels it at once.
func (e *Runner) polling(cancel context.CancelFunc) {
	e.pollMu.Lock()
	defer e.pollMu.Unlock()
	e.pollCut = cancel
	if cancel != nil && e.cutPending {
		e.cutPending = false
		cancel()
	}
}

// throttle pauses the partitions whose queue is full or whose worker is halted, and resumes
// the paused ones whose queue has drained. Called by the poll loop only, between polls.
func (e *Runner) throttle() {
	e.mu.Lock()
	defer e.mu.Unlock()
	var pause, resume map[string][]int32
	for k, w := range e.workers {
		n, halted := w.queued(), w.isHalted()
		switch {
		case !w.paused && (halted || n >= maxQueued*e.o.BatchMax):
			w.paused = true
			pause = addPartition(pause, k)
		case e.resumeDue(w, n, halted):
			w.paused = false
			resume = addPartition(resume, k)
		}
	}
	// Under mu, so that a rebalance callback's resume (detach) cannot pass a pause of the
	// same partition.
	if len(pause) > 0 {
		e.cl.PauseFetchPartitions(pause)
		e.log.Debug("fetching paused", "partitions", describe(pause))
	}
	if len(resume) > 0 {
		e.cl.ResumeFetchPartitions(resume)
		e.log.Debug("fetching resumed", "partitions", describe(resume))
	}
}

// backlogged reports whether the poll loop should wait before polling again: every partition
// that is fetched has a batch queued already (the others are paused).
func (e *Runner) backlogged() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.workers) == 0 {
		return false
	}
	for _, w := range e.workers {
		if !w.paused && w.queued() < e.o.BatchMax {
			return false
		}
	}
	return true
}

func addPartition(m map[string][]int32, k tp) map[string][]int32 {
	if m == nil {
		m = map[string][]int32{}
	}
	m[k.topic] = append(m[k.topic], k.partition)
	return m
}
