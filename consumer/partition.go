package consumer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// worker consumes one assigned partition: the poll loop appends fetched records to its
// queue, and its goroutine takes them off in batches of at most BatchMax, strictly in offset
// order, one batch at a time. The poll loop pauses fetching a partition whose queue holds
// maxQueued batches, which bounds memory without holding the other partitions up, and
// resumes it once half of that is done (see pause.go).
type worker struct {
	e  *Runner
	tp tp

	// ctx is cancelled to abandon the batch in flight (hard stop, lost partition, fatal).
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	queue    []*kgo.Record
	hw       int64 // the partition's high watermark as last fetched
	stopping bool
	inFlight bool
	wake     chan struct{}
	// commitWake wakes the committer goroutine (committer).
	commitWake chan struct{}
	// halted is set when the worker stopped at a record whose dead letter cannot be written
	// (the goroutine has exited; the partition stays assigned, paused, and uncommitted past
	// the record).
	halted *HaltedError

	// paused: the poll loop has paused fetching the partition (its queue is full, or it is
	// halted). Read and written by the poll loop only, under the runner's mu.
	paused bool

	// finished is one past the last record whose batch is done (database committed, dead
	// letters acknowledged), written under mu; committed is the offset Kafka acknowledged,
	// written by the committer goroutine only (and by the worker goroutine once that has
	// stopped, as it exits). Offset -1: none yet. After the worker has exited
	// the runner reads both, to commit what is done and not yet committed.
	finished, committed kgo.EpochOffset
}

func newWorker(e *Runner, t tp) *worker {
	ctx, cancel := context.WithCancel(e.hardCtx)
	return &worker{
		e: e, tp: t, ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), commitWake: make(chan struct{}, 1), hw: -1,
		finished: kgo.EpochOffset{Epoch: -1, Offset: -1}, committed: kgo.EpochOffset{Epoch: -1, Offset: -1},
	}
}

// enqueue appends records fetched for the partition. Called by the poll loop only. A
// halted worker drops them: they are not committed, so they are read again.
func (w *worker) enqueue(recs []*kgo.Record, hw int64) {
	w.mu.Lock()
	if w.halted == nil {
		w.queue = append(w.queue, recs...)
	}
	w.hw = hw
	w.mu.Unlock()
	w.signal()
}

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// stop asks the worker to exit after the batch in flight; queued records are dropped
// (their offsets are not committed, so whoever owns the partition next reads them again).
func (w *worker) stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.signal()
}

// abort abandons the batch in flight: its transaction rolls back and nothing of it is
// committed.
func (w *worker) abort() { w.cancel() }

// queued is the number of records waiting, 0 once the worker is stopping.
func (w *worker) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return 0
	}
	return len(w.queue)
}

// idle reports whether the worker has nothing queued and nothing in flight, and whether it
// is halted.
func (w *worker) idle() (idle, halted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) == 0 && !w.inFlight, w.halted != nil
}

// isHalted reports whether the worker stopped at a dead letter it cannot write.
func (w *worker) isHalted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.halted != nil
}

// finish records that every record before off is done.
func (w *worker) finish(off kgo.EpochOffset) {
	w.mu.Lock()
	w.finished = off
	w.mu.Unlock()
}

// commitRetry is how long the committer waits before committing again an offset whose
// commit failed: without it the offset would wait for the next batch, and a quiet partition
// would never show as done to StopWhenIdle.
const commitRetry = time.Second

// commitSoon asks the committer to commit the finished offset.
func (w *worker) commitSoon() {
	select {
	case w.commitWake <- struct{}{}:
	default:
	}
}

// committer commits the finished offset in the background, one commit at a time, so that a
// batch does not wait for Kafka to acknowledge the offset of the batch before it
// (docs/design.md §3.5): an offset is still committed only once its batch is done. A failed
// commit is tried again after commitRetry, or as soon as the next batch is done. It alone
// writes committed while the worker runs.
func (w *worker) committer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var retry <-chan time.Time
	for {
		select {
		case <-w.commitWake:
		case <-retry:
		case <-stop:
			return
		}
		retry = nil
		_ = w.commit(w.ctx)
		w.mu.Lock()
		behind := w.finished.Offset > w.committed.Offset
		w.mu.Unlock()
		if behind && w.ctx.Err() == nil {
			retry = time.After(commitRetry)
		}
	}
}

// take waits for the next batch; nil means exit.
func (w *worker) take() ([]*kgo.Record, int64) {
	for {
		w.mu.Lock()
		if w.stopping || w.ctx.Err() != nil || w.e.br.isTripped() {
			w.queue = nil
			w.mu.Unlock()
			return nil, 0
		}
		if n := min(len(w.queue), w.e.o.BatchMax); n > 0 {
			batch := w.queue[:n:n]
			w.queue = w.queue[n:]
			w.inFlight = true
			hw := w.hw
			w.mu.Unlock()
			w.e.wakePoller()
			w.e.drained(w)
			return batch, hw
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-w.ctx.Done():
		}
	}
}

// commit commits the finished offset when Kafka does not have it yet. A failure is logged
// and left to the next commit (the next batch's, take's retry, or the one at revoke or
// shutdown); the error returned is the context's only, when the worker is abandoned.
func (w *worker) commit(ctx context.Context) error {
	w.mu.Lock()
	done := w.finished
	w.mu.Unlock()
	if done.Offset <= w.committed.Offset {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err := w.e.commitOffset(cctx, w.tp, done)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.e.m.commitFailed.Inc()
		w.e.log.Warn("offset commit failed; the next commit covers it", "topic", w.tp.topic, "partition", w.tp.partition,
			"offset", done.Offset, "error", err)
		return nil
	}
	w.committed = done
	return nil
}

func (w *worker) run() {
	defer close(w.done)
	defer w.e.wakePoller() // its queue is gone
	stop, stopped := make(chan struct{}), make(chan struct{})
	go w.committer(stop, stopped)
	defer func() {
		// The last batch's offset, unless the batch was abandoned: then the runner commits
		// what is finished (see Runner.revoked and shutdown).
		close(stop)
		<-stopped
		if w.ctx.Err() == nil {
			_ = w.commit(w.ctx)
		}
	}()
	first := true
	for {
		batch, hw := w.take()
		if batch == nil {
			return
		}
		if first {
			first = false
			w.e.log.Info("partition resumes", "topic", w.tp.topic, "partition", w.tp.partition,
				"offset", batch[0].Offset, "high_watermark", hw)
		} else if batch[0].Offset != w.finished.Offset {
			// Normal after transaction markers or compaction; anything else is a bug.
			w.e.log.Debug("offsets skipped between batches", "topic", w.tp.topic, "partition", w.tp.partition,
				"expected", w.finished.Offset, "got", batch[0].Offset)
		}
		err := w.e.runBatch(w, batch, hw)
		var halt *HaltedError
		halted := errors.As(err, &halt)
		w.mu.Lock()
		w.inFlight = false
		if halted {
			w.halted = halt
			w.queue = nil
		}
		w.mu.Unlock()
		if halted {
			// This partition stops; the others go on (see the package documentation).
			w.e.halt(halt)
			return
		}
		if errors.Is(err, errBreakerCut) {
			// The runner is stopping: what is done before the cut is committed as the
			// worker exits.
			return
		}
		if err != nil {
			if w.ctx.Err() == nil {
				w.e.fail(err)
			}
			return
		}
	}
}
