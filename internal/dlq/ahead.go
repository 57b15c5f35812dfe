package dlq

import (
	"context"
	"runtime"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/ahead"
)

// Reading ahead (ScanOptions.Ahead, through package ahead): the scanning goroutine hands the
// records it reads, in batches, to workers (aheadWorkers) that parse and filter them, and
// write each match's JSON when a listing will write it (aheadReader.encode), and parses a
// batch itself rather than wait for one no worker has started; it takes the batches back in
// the order it handed them out and calls the scan's callback with each dead letter, as
// Scan.read does without workers: the same dead letters, counts, progress and errors, in the
// same order, on the same goroutine. Only the work that depends on no other record moves:
// decoding a registry-framed payload stays in order on the scanning goroutine (the decoder
// asks the registry, and notes its problems in the order met), and so does what the callback
// does (status lookups, the share-group folding, the limit, the aggregates, the writing).
const (
	// aheadBatch is how many records a worker takes at once: enough that handing a batch over
	// costs little beside parsing it, few enough that a batch is soon ready. A worker lets
	// the Kafka client have the core after each batch (package ahead), and the client's
	// next fetch waits for one: with batches of 64 instead of 256 (and as many records
	// handed out), dlq list -o jsonl read 1,000,000 dead letters in 1.81 s instead of 1.87.
	aheadBatch = 64
	// aheadPerWorker is how many batches may be handed out per worker and not yet taken back:
	// what the read runs ahead of the callback (about 1,000 records on two cores), and what
	// it holds of the records' memory (a record holds its whole decompressed record batch).
	aheadPerWorker = 16
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

// aheadItem is one record of a batch, and what a worker made of it.
type aheadItem struct {
	rec   *kgo.Record
	d     DeadLetter
	state aheadState
}

// aheadReader is one Scan.read through workers (package ahead): they parse a batch's records
// (aheadParser.parse), and the scanning goroutine takes the batches back in order (emit).
type aheadReader struct {
	ctx    context.Context
	s      *Scan
	f      Filter
	encode aheadJSON
	res    *ScanResult
	fn     func(DeadLetter) error
	r      *ahead.Reader[aheadItem]
}

// newAheadReader starts workers for a read of s through f; encode says whether they write
// each match's JSON too.
func newAheadReader(ctx context.Context, s *Scan, workers int, f Filter, encode aheadJSON, res *ScanResult, fn func(DeadLetter) error) *aheadReader {
	a := &aheadReader{ctx: ctx, s: s, f: f, encode: encode, res: res, fn: fn}
	a.r = ahead.New(ahead.Options[aheadItem]{
		Batch:   aheadBatch,
		Workers: workers,
		Depth:   aheadPerWorker,
		// Parsing and filtering depend on no other record: any goroutine may parse any batch.
		Steal: true,
		Work:  func() func(*ahead.Batch[aheadItem]) { return a.parser().parse },
		Emit:  a.emit,
	})
	return a
}

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

// parse parses, filters and (encode) writes the JSON of b's records.
func (p *aheadParser) parse(b *ahead.Batch[aheadItem]) {
	a := p.a
	envelopes := !a.s.opts.Parse.NoEnvelope
	var buf []byte
	switch a.encode {
	case aheadJSONKept:
		buf = make([]byte, 0, p.size+p.size/8)
	case aheadJSONReused:
		buf = b.Buf[:0]
	}
	for i := range b.Items {
		it := &b.Items[i]
		r := it.rec
		p.parser.ParseInto(r, &it.d)
		// Without a decoder, DecodePayloads only detects framing; an unframed payload is what
		// any decoder makes of it, so only a framed one waits for the decoder.
		it.d.DecodePayloads(a.ctx, nil, r, envelopes)
		switch {
		case a.s.opts.Schemas != nil && (it.d.KeySchema != nil || it.d.ValueSchema != nil):
			it.state = aheadDecode
			continue
		case !a.f.Match(&it.d):
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
		b.Buf = buf
	}
}

// add takes one record from the read; it returns the callback's error once there is one.
func (a *aheadReader) add(r *kgo.Record) error { return a.r.Add(aheadItem{rec: r}) }

// emit counts a batch's records and hands the callback its matches, as Scan.read does.
func (a *aheadReader) emit(b *ahead.Batch[aheadItem]) error {
	progress, total := a.s.opts.Progress, a.s.Total()
	for i := range b.Items {
		a.res.Read++
		if progress != nil && a.res.Read%progressEvery == 0 {
			progress(a.res.Read, total)
		}
		it := &b.Items[i]
		switch it.state {
		case aheadSkipped:
			continue
		case aheadDecode:
			it.d.DecodePayloads(a.ctx, a.s.opts.Schemas, it.rec, !a.s.opts.Parse.NoEnvelope)
			if !a.f.Match(&it.d) {
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
	if ferr := a.r.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// close stops the workers once they are done with what they were handed.
func (a *aheadReader) close() { a.r.Close() }
