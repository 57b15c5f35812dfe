package schema

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/ahead"
	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Read is one record as ReadEvent read it: its event, or Err, the record's problem. The
// event's Data and text attributes are views of the record's value (envelope.DecodeRecordView),
// valid as long as the record: a judge that keeps them past the call copies them.
type Read struct {
	Record *kgo.Record
	Event  envelope.Event
	Err    error
	// fatal is the registry's failure (ReadEvent's fatal) met at this record: it is not
	// judged, and the reading ends.
	fatal error
}

const (
	// aheadBatch is how many records Ahead hands over at a time.
	aheadBatch = 256
	// aheadDepth is how many batches per worker may be handed over and not yet judged.
	aheadDepth = 3
)

// Ahead reads the envelopes of the records a reader gives it (ReadEvent) on other goroutines
// (package ahead), ahead of judge, which gets every record on the reader's goroutine, in the
// order the reader gave them: a reader that judges records in offset order keeps its order
// and its results while the envelopes are read on another core. Records are handed over 256
// at a time and at most three such batches per worker wait, so memory holds about a thousand
// records per worker beyond the reader's own. Without a registry the envelopes are read by
// one worker per core but one, and by the reader too rather than wait; with one, by a single
// worker, in order, as the registry is asked and its problems noted in the order met. A
// registry failure (ReadEvent's fatal) ends the reading: the records before it are judged,
// the record is not, and Add or Finish returns the failure.
type Ahead struct {
	r *ahead.Reader[Read]
}

// Ahead starts reading envelopes ahead of judge. The caller gives records with Add, and ends
// with Finish (the remaining records judged) or Stop (none judged); Stop may follow Finish.
func (d *Decoder) Ahead(ctx context.Context, judge func(Read) error) *Ahead {
	// down is the first registry failure met: after it nothing more is read.
	var down atomic.Pointer[error]
	workers, steal := 1, !d.Configured()
	if steal {
		workers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return &Ahead{r: ahead.New(ahead.Options[Read]{
		Batch:   aheadBatch,
		Workers: workers,
		Depth:   aheadDepth,
		Steal:   steal,
		Work: func() func(*ahead.Batch[Read]) {
			return func(b *ahead.Batch[Read]) {
				for i := range b.Items {
					if f := down.Load(); f != nil {
						b.Items[i].fatal = *f
						return
					}
					r := &b.Items[i]
					var fatal error
					r.Event, r.Err, fatal = d.readEvent(ctx, r.Record, envelope.DecodeRecordView)
					if fatal != nil {
						down.CompareAndSwap(nil, &fatal)
						r.fatal = fatal
						return
					}
				}
			}
		},
		Emit: func(b *ahead.Batch[Read]) error {
			for _, r := range b.Items {
				if r.fatal != nil {
					return r.fatal
				}
				if err := judge(r); err != nil {
					return err
				}
			}
			return nil
		},
	})}
}

// Add gives the next record. Its error is judge's, or a registry failure: the reader stops.
func (a *Ahead) Add(rec *kgo.Record) error { return a.r.Add(Read{Record: rec}) }

// Finish judges the records given and not yet judged, ends the goroutines, and returns the
// first error of judge or of the registry.
func (a *Ahead) Finish() error {
	err := a.r.Flush()
	a.r.Close()
	return err
}

// Stop ends the goroutines without judging what is left; it waits for them to return.
func (a *Ahead) Stop() { a.r.Close() }
