package consume

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// worker consumes one assigned partition: the poll loop appends fetched records to its
// queue, and its goroutine takes them off in batches of at most BatchMax, strictly in offset
// order, one batch at a time. The poll loop polls only while some worker has less than a
// batch queued and none has maxQueued batches or more (franz-go fetches again only once
// its buffered records are taken), which bounds memory; it keeps allowing rebalances
// meanwhile.
type worker struct {
	e  *Engine
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

	// finished is one past the last record whose batch is done (database committed, dead
	// letters acknowledged), written under mu; committed is the offset Kafka acknowledged,
	// written by the worker goroutine only. Offset -1: none yet. After the worker has exited
	// the engine reads both, to commit what is done and not yet committed.
	finished, committed kgo.EpochOffset
}

func newWorker(e *Engine, t tp) *worker {
	ctx, cancel := context.WithCancel(e.hardCtx)
	return &worker{
		e: e, tp: t, ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), hw: -1,
		finished: kgo.EpochOffset{Epoch: -1, Offset: -1}, committed: kgo.EpochOffset{Epoch: -1, Offset: -1},
	}
}

// enqueue appends records fetched for the partition. Called by the poll loop only.
func (w *worker) enqueue(recs []*kgo.Record, hw int64) {
	w.mu.Lock()
	w.queue = append(w.queue, recs...)
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

// idle reports whether the worker has nothing queued and nothing in flight, and the offset
// after the last record it finished (-1: none yet).
func (w *worker) idle() (idle bool, finished int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) == 0 && !w.inFlight, w.finished.Offset
}

// finish records that every record before off is done.
func (w *worker) finish(off kgo.EpochOffset) {
	w.mu.Lock()
	w.finished = off
	w.mu.Unlock()
}

// take waits for the next batch; nil means exit.
func (w *worker) take() ([]*kgo.Record, int64) {
	for {
		w.mu.Lock()
		if w.stopping || w.ctx.Err() != nil {
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
			return batch, hw
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-w.ctx.Done():
		}
	}
}

func (w *worker) run() {
	defer close(w.done)
	defer w.e.wakePoller() // its queue is gone
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
		w.mu.Lock()
		w.inFlight = false
		w.mu.Unlock()
		if err != nil {
			if w.ctx.Err() == nil {
				w.e.fail(err)
			}
			return
		}
	}
}
