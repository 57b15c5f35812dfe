package dlq

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Reading ahead (ScanOptions.Ahead): the scanning goroutine hands the records it reads, in
// batches, to workers (aheadWorkers) that parse and filter them, and write each match's JSON
// when a listing will write it (aheadReader.encode), and parses a batch itself rather than
// wait for one no worker has started; it takes the batches
// back in the order it handed them out and calls the scan's callback with each dead letter, as
// Scan.read does without workers: the same dead letters, counts, progress and errors, in the
// same order, on the same goroutine. Only the work that depends on no other record moves:
// decoding a registry-framed payload stays in order on the scanning goroutine (the decoder
// asks the registry, and notes its problems in the order met), and so does what the callback
// does (status lookups, the share-group folding, the limit, the aggregates, the writing).
const (
	// aheadBatch is how many records a worker takes at once: enough that handing a batch over
	// costs little beside parsing it, few enough that a batch is soon ready.
	aheadBatch = 256
	// aheadPerWorker is how many batches may be handed out per worker and not yet taken back:
	// what the read runs ahead of the callback (about 1,000 records on two cores), and what
	// it holds of the records' memory (a record holds its whole decompressed record batch).
	aheadPerWorker = 4
)

// aheadWorkers is how many workers read ahead: one per core the process may use but one,
// none on one core (the scanning goroutine parses then, as without Ahead). The scanning
// goroutine and the Kafka client's need the other; more workers than that keep them
// waiting for a core while the workers parse what they cannot hand on yet.
func aheadWorkers() int {
	return runtime.GOMAXPROCS(0) - 1
}

// aheadJSON is whether, and into what memory, the workers write each match's JSON
// (DeadLetter.ahead) for a listing written as JSON.
type aheadJSON uint8

const (
	aheadNoJSON aheadJSON = iota
	// aheadJSONKept: into memory of each batch's own, for a listing that may hold entries
	// after handing them on (a status batch).
	aheadJSONKept
	// aheadJSONReused: into a batch's buffer, written over once the callback has had the
	// batch, for a listing whose callback is done with an entry when it returns
	// (ListOptions.JSON).
	aheadJSONReused
)

// aheadState is what a worker made of a record.
type aheadState uint8

const (
	aheadMatched aheadState = iota // parsed, and the filter keeps it
	aheadSkipped                   // parsed, and the filter drops it
	aheadDecode                    // parsed; its payloads are framed: decode and filter in order
)

// aheadItem is one record of a batch as a worker left it.
type aheadItem struct {
	d     DeadLetter
	state aheadState
}

// aheadRecords are records handed to a worker, and what it made of them once done is closed.
// Whoever claims them parses them: a worker, or the scanning goroutine when it needs them
// before a worker got to them (so that it never waits for work no one is doing).
type aheadRecords struct {
	recs  []*kgo.Record
	items []aheadItem
	// claim is 2×gen while the gen-th handing out of the batch is unclaimed, 2×gen+1 once
	// claimed: a worker that finds in the channel a batch the scanning goroutine claimed
	// (and has since taken back and is filling again) claims nothing.
	claim atomic.Uint64
	gen   uint64
	done  chan struct{}
	// buf holds the lines of aheadJSONReused.
	buf []byte
}

// aheadReader is one Scan.read through workers.
type aheadReader struct {
	ctx    context.Context
	s      *Scan
	f      Filter
	encode aheadJSON
	res    *ScanResult
	fn     func(DeadLetter) error

	work    chan aheadTicket
	wg      sync.WaitGroup
	own     *aheadParser // the scanning goroutine's, for the records it claims
	cur     *aheadRecords
	pending []*aheadRecords // handed out, in order
	free    []*aheadRecords
	limit   int // most batches pending
	// err is the callback's error (ErrStop included): the read stops at it.
	err error
}

// newAheadReader starts workers for a read of s through f; encode says whether they write
// each match's JSON too.
func newAheadReader(ctx context.Context, s *Scan, workers int, f Filter, encode aheadJSON, res *ScanResult, fn func(DeadLetter) error) *aheadReader {
	a := &aheadReader{ctx: ctx, s: s, f: f, encode: encode, res: res, fn: fn, limit: workers * aheadPerWorker}
	a.own = a.parser()
	a.work = make(chan aheadTicket, a.limit)
	for range workers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			p := a.parser()
			for t := range a.work {
				if t.b.claimFor(t.gen) {
					p.parse(t.b)
					// Let the Kafka client's goroutines have the core: a fetch that waits
					// for one holds up the whole read (the scheduler would make it wait up
					// to 10ms while a batch follows another).
					runtime.Gosched()
				}
			}
		}()
	}
	return a
}

// aheadTicket is a batch handed out, the gen-th time.
type aheadTicket struct {
	b   *aheadRecords
	gen uint64
}

// claim claims b for the gen-th handing out, unless someone did.
func (b *aheadRecords) claimFor(gen uint64) bool { return b.claim.CompareAndSwap(2*gen, 2*gen+1) }

// aheadParser parses batches on one goroutine: a Parser of its own (Scan.reader's options,
// its own string table).
type aheadParser struct {
	a      *aheadReader
	parser *Parser
	size   int // the JSON of the last batch, the next one's first guess
}

func (a *aheadReader) parser() *aheadParser {
	popts := a.s.opts.Parse
	popts.strings = newInterner()
	return &aheadParser{a: a, parser: NewParser(popts)}
}

// parse parses, filters and (encode) writes the JSON of b's records, and closes b.done.
func (p *aheadParser) parse(b *aheadRecords) {
	a := p.a
	envelopes := !a.s.opts.Parse.NoEnvelope
	var buf []byte
	switch a.encode {
	case aheadJSONKept:
		buf = make([]byte, 0, p.size+p.size/8)
	case aheadJSONReused:
		buf = b.buf[:0]
	}
	for i, r := range b.recs {
		it := &b.items[i]
		it.d = p.parser.Parse(r)
		// Without a decoder, DecodePayloads only detects framing; an unframed payload is what
		// any decoder makes of it, so only a framed one waits for the decoder.
		it.d.DecodePayloads(a.ctx, nil, r, envelopes)
		switch {
		case a.s.opts.Schemas != nil && (it.d.KeySchema != nil || it.d.ValueSchema != nil):
			it.state = aheadDecode
			continue
		case !a.f.Match(it.d):
			it.state = aheadSkipped
			continue
		}
		it.state = aheadMatched
		// A share group's dead letter is held until its partition is read (collapser): its
		// line is written then, not here. On an error the line is left to be written (and
		// to fail) in order.
		if _, held := originalAddress(&it.d); a.encode != aheadNoJSON && !held {
			if out, err := it.d.appendJSON(buf); err == nil {
				it.d.ahead = out[len(buf):len(out):len(out)]
				buf = out
			}
		}
	}
	p.size = len(buf)
	if a.encode == aheadJSONReused {
		b.buf = buf
	}
	close(b.done)
}

// add takes one record from the read; it returns the callback's error once there is one.
func (a *aheadReader) add(r *kgo.Record) error {
	if a.cur == nil {
		a.cur = a.batch()
	}
	a.cur.recs = append(a.cur.recs, r)
	if len(a.cur.recs) == aheadBatch {
		a.handOut()
		a.takeBack(false)
	}
	return a.err
}

// release keeps b for another batch, without its records: a record batch's decompressed
// memory lives as long as any of its records, and the read goes on elsewhere.
func (a *aheadReader) release(b *aheadRecords) {
	clear(b.items[:len(b.recs)])
	clear(b.recs)
	a.free = append(a.free, b)
}

// batch is an empty batch, one taken back if there is one.
func (a *aheadReader) batch() *aheadRecords {
	if n := len(a.free); n > 0 {
		b := a.free[n-1]
		a.free = a.free[:n-1]
		b.recs, b.done = b.recs[:0], make(chan struct{})
		return b
	}
	return &aheadRecords{recs: make([]*kgo.Record, 0, aheadBatch), items: make([]aheadItem, aheadBatch), done: make(chan struct{})}
}

// handOut gives the batch being filled to the workers.
func (a *aheadReader) handOut() {
	b := a.cur
	a.cur = nil
	if b == nil || len(b.recs) == 0 {
		return
	}
	b.gen++
	b.claim.Store(2 * b.gen)
	a.pending = append(a.pending, b)
	// At most limit are pending, and the channel holds as many: it blocks only while it also
	// holds tickets of batches the scanning goroutine parsed itself, which workers drop.
	a.work <- aheadTicket{b, b.gen}
}

// takeBack hands the callback the batches done at the head of the queue: every one when all
// is set, else those already done, waiting only while the queue is full.
func (a *aheadReader) takeBack(all bool) {
	for len(a.pending) > 0 && a.err == nil {
		b := a.pending[0]
		if !all && len(a.pending) < a.limit {
			if !isDone(b) {
				return
			}
		} else {
			a.await(b)
		}
		a.pending = a.pending[1:]
		a.err = a.emit(b)
		a.release(b)
	}
}

// await returns once b, the head of the queue, is parsed: the scanning goroutine parses it
// itself when no worker has claimed it, and the next batches no worker has claimed while a
// worker parses it.
func (a *aheadReader) await(b *aheadRecords) {
	if b.claimFor(b.gen) {
		a.own.parse(b)
		return
	}
	for _, c := range a.pending[1:] {
		if isDone(b) {
			return
		}
		if c.claimFor(c.gen) {
			a.own.parse(c)
		}
	}
	<-b.done
}

func isDone(b *aheadRecords) bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// emit counts a batch's records and hands the callback its matches, as Scan.read does.
func (a *aheadReader) emit(b *aheadRecords) error {
	progress, total := a.s.opts.Progress, a.s.Total()
	for i, r := range b.recs {
		a.res.Read++
		if progress != nil && a.res.Read%progressEvery == 0 {
			progress(a.res.Read, total)
		}
		it := &b.items[i]
		switch it.state {
		case aheadSkipped:
			continue
		case aheadDecode:
			it.d.DecodePayloads(a.ctx, a.s.opts.Schemas, r, !a.s.opts.Parse.NoEnvelope)
			if !a.f.Match(it.d) {
				continue
			}
		}
		a.res.Matched++
		if err := a.fn(it.d); err != nil {
			return err
		}
	}
	return nil
}

// end is what a read that returned err (the callback's error, passed back by add, or the
// read's own) ends with, once the callback has what was read before it: the callback's error
// first, as it came first.
func (a *aheadReader) end(err error) error {
	a.handOut()
	a.takeBack(true)
	if a.err != nil {
		return a.err
	}
	return err
}

// reset drops what is pending after a read that failed (its topic deleted: Scan.readAhead
// skips it), so that the next read starts clean.
func (a *aheadReader) reset() {
	for _, b := range a.pending {
		<-b.done
		a.release(b)
	}
	a.pending, a.err = a.pending[:0], nil
}

// close stops the workers once they are done with what they were handed.
func (a *aheadReader) close() {
	close(a.work)
	a.wg.Wait()
}
