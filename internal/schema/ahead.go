package schema

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Read is one record as ReadEvent read it: its event, or Err, the record's problem.
type Read struct {
	Record *kgo.Record
	Event  envelope.Event
	Err    error
}

const (
	// aheadBatch is how many records Ahead hands to its goroutine at a time.
	aheadBatch = 256
	// aheadDepth is how many batches may be handed over and not yet judged.
	aheadDepth = 3
)

// Ahead reads the envelopes of the records a reader gives it (ReadEvent) on a goroutine of its
// own, ahead of judge, which gets every record on the reader's goroutine, in the order the
// reader gave them: a reader that judges records in offset order keeps its order and its
// results while the envelopes are read on another core. Records are handed over 256 at a time
// and at most three such batches wait, so memory holds at most about a thousand records
// beyond the reader's own. A registry failure (ReadEvent's fatal) ends the reading: the
// records before it are judged, the record is not, and Add or Finish returns the failure.
type Ahead struct {
	judge func(Read) error
	cur   []Read
	todo  chan []Read
	done  chan aheadDone
	free  chan []Read
	// exited is closed when the goroutine has returned.
	exited   chan struct{}
	inflight int
	stopped  bool
	err      error
}

type aheadDone struct {
	reads []Read
	fatal error
}

// Ahead starts reading envelopes ahead of judge. The caller gives records with Add, and ends
// with Finish (the remaining records judged) or Stop (none judged); Stop may follow Finish.
func (d *Decoder) Ahead(ctx context.Context, judge func(Read) error) *Ahead {
	a := &Ahead{
		judge:  judge,
		cur:    make([]Read, 0, aheadBatch),
		todo:   make(chan []Read, aheadDepth),
		done:   make(chan aheadDone, aheadDepth),
		free:   make(chan []Read, aheadDepth),
		exited: make(chan struct{}),
	}
	go func() {
		defer close(a.exited)
		defer close(a.done)
		var fatal error
		for reads := range a.todo {
			if fatal != nil { // after a registry failure nothing more is read
				a.done <- aheadDone{}
				continue
			}
			for i := range reads {
				ev, err, f := d.ReadEvent(ctx, reads[i].Record)
				if f != nil {
					fatal, reads = f, reads[:i]
					break
				}
				reads[i].Event, reads[i].Err = ev, err
			}
			a.done <- aheadDone{reads: reads, fatal: fatal}
		}
	}()
	return a
}

// Add gives the next record. Its error is judge's, or a registry failure: the reader stops.
func (a *Ahead) Add(rec *kgo.Record) error {
	if a.err != nil {
		return a.err
	}
	a.cur = append(a.cur, Read{Record: rec})
	if len(a.cur) < aheadBatch {
		return nil
	}
	a.handOver()
	return a.collect(aheadDepth)
}

// Finish judges the records given and not yet judged, ends the goroutine, and returns the
// first error of judge or of the registry.
func (a *Ahead) Finish() error {
	if a.stopped {
		return a.err
	}
	if a.err == nil && len(a.cur) > 0 {
		a.handOver()
	}
	_ = a.collect(1)
	a.Stop()
	return a.err
}

// Stop ends the goroutine without judging what is left; it waits for the goroutine to return.
func (a *Ahead) Stop() {
	if a.stopped {
		return
	}
	a.stopped = true
	close(a.todo)
	for range a.done {
	}
	<-a.exited
	a.cur = nil
}

// handOver sends the batch being filled to the goroutine and starts a new one.
func (a *Ahead) handOver() {
	a.todo <- a.cur
	a.inflight++
	select {
	case b := <-a.free:
		a.cur = b[:0]
	default:
		a.cur = make([]Read, 0, aheadBatch)
	}
}

// collect judges the batches read so far, waiting for the oldest while limit or more are in
// flight: collect(aheadDepth) keeps the goroutine at most that far ahead, collect(1) waits
// for every batch.
func (a *Ahead) collect(limit int) error {
	for a.inflight > 0 && a.err == nil {
		var d aheadDone
		if a.inflight >= limit {
			d = <-a.done
		} else {
			select {
			case d = <-a.done:
			default:
				return nil
			}
		}
		a.inflight--
		for _, r := range d.reads {
			if err := a.judge(r); err != nil {
				a.err = err
				break
			}
		}
		if a.err == nil {
			a.err = d.fatal
		}
		clear(d.reads) // hold no record once judged
		select {
		case a.free <- d.reads[:0]:
		default:
		}
	}
	return a.err
}
