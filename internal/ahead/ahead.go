// Package ahead works on a reader's items on other cores, ahead of the reader, which takes the
// results back on its own goroutine in the order it gave the items: a reader that must judge
// records in offset order keeps its order and its results while the work that depends on no
// other record (decoding an envelope, parsing a dead letter, writing its JSON) runs elsewhere.
//
// Items are handed over in batches (Options.Batch) to workers (Options.Workers), and at most
// Options.Depth batches per worker are handed out and not yet taken back, so memory holds a
// bounded number of items beyond the reader's own. A reader that needs the oldest batch before
// a worker started it works on it itself when the work may be done out of order
// (Options.Steal), and on the next batches no worker has started while a worker finishes it,
// so that it never waits for work no one is doing.
package ahead

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// Batch is items handed over together, and what was made of them once worked on.
type Batch[T any] struct {
	Items []T
	// Buf is memory that stays with the batch from one use to the next: work may write into
	// it, and the reader may read it while it has the batch (Options.Emit).
	Buf []byte

	// claim is 2×gen while the gen-th handing out of the batch is unclaimed, 2×gen+1 once
	// claimed: a worker that finds in the channel a batch the reader claimed (and has since
	// taken back and is filling again) claims nothing.
	claim atomic.Uint64
	gen   uint64
	done  chan struct{}
}

// claimFor claims b for the gen-th handing out, unless someone did.
func (b *Batch[T]) claimFor(gen uint64) bool { return b.claim.CompareAndSwap(2*gen, 2*gen+1) }

func (b *Batch[T]) isDone() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// Options are a Reader's.
type Options[T any] struct {
	// Batch is how many items are handed over at a time: enough that handing a batch over
	// costs little beside working on it, few enough that a batch is soon ready.
	Batch int
	// Workers is how many goroutines work on batches (at least one).
	Workers int
	// Depth is how many batches per worker (at least one in all) may be handed out and not yet
	// taken back: how far the work runs ahead of the reader.
	Depth int
	// Steal lets the reader work on a batch itself rather than wait for one no worker has
	// started. Set it only when the batches may be worked on in any order and at once: work
	// that must see the records in order (asking a registry, noting its problems as met) runs
	// on one worker without it.
	Steal bool
	// Work makes what works on batches on one goroutine (one per worker, and the reader's own
	// when it works too), so that each may keep state of its own. It may change a batch's
	// items and Buf.
	Work func() func(*Batch[T])
	// Emit gets each batch once worked on, on the reader's goroutine, in the order handed
	// over. Its error stops the reader: Add and Flush return it, and no later batch is
	// emitted.
	Emit func(*Batch[T]) error
}

// Reader is one reader's work ahead. Its methods are for the reader's goroutine.
type Reader[T any] struct {
	o       Options[T]
	work    chan ticket[T]
	wg      sync.WaitGroup
	own     func(*Batch[T]) // the reader's, for the batches it works on
	cur     *Batch[T]
	pending []*Batch[T] // handed out, in order
	free    []*Batch[T]
	limit   int // most batches pending
	closed  bool
	err     error
}

// ticket is a batch handed out, the gen-th time.
type ticket[T any] struct {
	b   *Batch[T]
	gen uint64
}

// New starts o.Workers workers.
func New[T any](o Options[T]) *Reader[T] {
	o.Workers = max(o.Workers, 1)
	r := &Reader[T]{o: o, limit: o.Workers * max(o.Depth, 1)}
	if o.Steal {
		r.own = o.Work()
	}
	r.work = make(chan ticket[T], r.limit)
	for range o.Workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			w := o.Work()
			for t := range r.work {
				if t.b.claimFor(t.gen) {
					run(w, t.b)
					// Let the Kafka client's goroutines have the core: a fetch that waits
					// for one holds up the whole read (the scheduler would make it wait up
					// to 10ms while a batch follows another).
					runtime.Gosched()
				}
			}
		}()
	}
	return r
}

func run[T any](w func(*Batch[T]), b *Batch[T]) {
	w(b)
	close(b.done)
}

// ErrClosed is Add's error after Close.
var ErrClosed = errors.New("ahead: add to a closed reader")

// Add takes the next item; it returns Emit's error once there is one, and then takes nothing.
func (r *Reader[T]) Add(item T) error {
	if r.err != nil {
		return r.err
	}
	if r.closed {
		return ErrClosed
	}
	if r.cur == nil {
		r.cur = r.batch()
	}
	r.cur.Items = append(r.cur.Items, item)
	if len(r.cur.Items) == r.o.Batch {
		r.handOut()
		r.takeBack(false)
	}
	return r.err
}

// Flush hands Emit every item taken and not yet emitted, and returns Emit's error, if any.
func (r *Reader[T]) Flush() error {
	if r.err == nil {
		r.handOut()
		r.takeBack(true)
	}
	return r.err
}

// Close stops the workers once they are done with the batches they claimed, and drops what was
// not emitted. It may be called more than once.
func (r *Reader[T]) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.drop()
	close(r.work)
	r.wg.Wait()
	r.free = nil
}

// drop lets go of the batch being filled and of those handed out: one no one has started is
// claimed, so that no worker starts it; one a worker has started is waited for.
func (r *Reader[T]) drop() {
	if r.cur != nil {
		r.release(r.cur)
		r.cur = nil
	}
	for _, b := range r.pending {
		if !b.claimFor(b.gen) {
			<-b.done
		}
		r.release(b)
	}
	r.pending = r.pending[:0]
}

// batch is an empty batch, one taken back if there is one.
func (r *Reader[T]) batch() *Batch[T] {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		b.done = make(chan struct{})
		return b
	}
	return &Batch[T]{Items: make([]T, 0, r.o.Batch), done: make(chan struct{})}
}

// release keeps b for another batch, without its items: a record batch's decompressed memory
// lives as long as any of its records, and the read goes on elsewhere.
func (r *Reader[T]) release(b *Batch[T]) {
	clear(b.Items)
	b.Items = b.Items[:0]
	r.free = append(r.free, b)
}

// handOut gives the batch being filled to the workers.
func (r *Reader[T]) handOut() {
	b := r.cur
	r.cur = nil
	if b == nil {
		return
	}
	if len(b.Items) == 0 {
		r.free = append(r.free, b)
		return
	}
	b.gen++
	b.claim.Store(2 * b.gen)
	r.pending = append(r.pending, b)
	// At most limit are pending, and the channel holds as many: it blocks only while it also
	// holds tickets of batches the reader worked on itself, which workers drop.
	r.work <- ticket[T]{b, b.gen}
}

// takeBack emits the batches done at the head of the queue: every one when all is set, else
// those already done, waiting only while the queue is full.
func (r *Reader[T]) takeBack(all bool) {
	for len(r.pending) > 0 && r.err == nil {
		b := r.pending[0]
		if !all && len(r.pending) < r.limit {
			if !b.isDone() {
				return
			}
		} else {
			r.await(b)
		}
		r.pending = r.pending[1:]
		r.err = r.o.Emit(b)
		r.release(b)
	}
}

// await returns once b, the head of the queue, is worked on: the reader (Steal) works on it
// itself when no worker has claimed it, and on the next batches no worker has claimed while
// a worker finishes it.
func (r *Reader[T]) await(b *Batch[T]) {
	if !r.o.Steal {
		<-b.done
		return
	}
	if b.claimFor(b.gen) {
		run(r.own, b)
		return
	}
	for _, c := range r.pending[1:] {
		if b.isDone() {
			return
		}
		if c.claimFor(c.gen) {
			run(r.own, c)
		}
	}
	<-b.done
}
