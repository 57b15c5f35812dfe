package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// What ReadInOrder fetches ahead of the partition it hands on, and how long a fetch may wait
// at the broker for records.
const (
	// readAheadBytes bounds what the partitions fetched together are expected to hold: the
	// partition whose turn it is and as many of the next ones as fit, by what is held of
	// them and their offsets not yet read times the average record read so far (their keys,
	// values and headers, and recordOverhead each; firstRecordGuess before any). The others
	// are paused until they fit (a paused partition's records the client had fetched are
	// dropped and fetched again once it is resumed, so nothing is lost).
	readAheadBytes = 4 << 20
	// recordOverhead is what a held record costs beyond its bytes (the client's Record and
	// its headers' slice).
	recordOverhead = 160
	// firstRecordGuess is the size a record is taken to have before any is read.
	firstRecordGuess = 1 << 10
	// readInOrderMaxWait is how long the broker may hold a fetch for want of records: a
	// partition read to its end while the next one was paused may be alone in the fetch
	// asked for next, which would otherwise wait the client's default 5 seconds before the
	// next partition is fetched.
	readInOrderMaxWait = 20 * time.Millisecond
)

// ErrSkipPartition, returned by ReadInOrder's fn, ends the read of the record's partition: no
// more of its records are handed on, and the read goes on with the next partition.
var ErrSkipPartition = errors.New("kafka: skip the rest of the partition")

// ReadInOrder calls fn for every record in ranges as Read does, but one partition after
// another, in the order of ranges, each in offset order: a read whose results must not depend
// on how the partitions' fetches interleave (which record is first, which are kept). One
// client fetches the partition whose turn it is together with as many of the next ones as
// readAheadBytes allows; what arrives for a partition before its turn is held until then. A
// topic of a thousand small partitions is read in a few fetches instead of a client and a
// fetch each, and a large partition is read alone, as it would be by a client of its own.
// fn may end its partition's read early with ErrSkipPartition. deleted is as ReadSkipping's:
// nil makes a topic deleted while it is read an *UnknownTopicError; otherwise what was read of
// it is still handed on, in its turn, and the rest of it is skipped.
func (c *Cluster) ReadInOrder(ctx context.Context, ranges []PartitionRange, fn func(*kgo.Record) error, deleted func(topic string)) error {
	o := &ordered{fn: fn, index: map[string]map[int32]*orderedPart{}}
	consume := make(map[string]map[int32]kgo.Offset)
	for _, r := range ranges {
		if r.Len() == 0 {
			continue
		}
		if o.index[r.Topic] == nil {
			o.index[r.Topic] = map[int32]*orderedPart{}
			consume[r.Topic] = map[int32]kgo.Offset{}
		}
		p := &orderedPart{r: r, next: r.Start, active: true}
		o.parts = append(o.parts, p)
		o.index[r.Topic][r.Partition] = p
		consume[r.Topic][r.Partition] = kgo.NewOffset().At(r.Start)
	}
	if len(o.parts) == 0 {
		return nil
	}
	cl, err := c.reader(consume, kgo.KeepControlRecords(), kgo.MaxConcurrentFetches(readConcurrentFetches),
		kgo.FetchMaxWait(readInOrderMaxWait))
	if err != nil {
		return err
	}
	defer cl.Close()
	polls := startPoller(ctx, cl)
	defer polls.stop()
	o.cl = cl
	o.window()
	skip := func(gone []string) {
		for _, t := range gone {
			for _, p := range o.index[t] {
				if !p.done {
					o.finish(p)
				}
			}
			deleted(t)
		}
	}
	for o.head < len(o.parts) {
		fetches, idle := polls.poll(ctx)
		if err := ctx.Err(); err != nil {
			return fwerr.Wrap(fwerr.KindInterrupted, err)
		}
		if idle {
			// The client retries a deleted topic's partitions quietly, for ever: ask.
			gone := c.TopicsGone(ctx, o.unread()...)
			if len(gone) > 0 && deleted == nil {
				return &UnknownTopicError{Topic: gone[0]}
			}
			skip(gone)
		} else if err := fetchError(fetches); err != nil {
			// A topic deleted while it is read may fail its fetches before it goes quiet;
			// any other failure ends the read.
			if deleted != nil {
				skip(c.TopicsGone(ctx, o.unread()...))
			}
			if err := o.liveFetchError(fetches); err != nil {
				return err
			}
		}
		var stop error
		fetches.EachPartition(func(ft kgo.FetchTopicPartition) {
			if stop == nil {
				stop = o.take(ft)
			}
		})
		if stop != nil {
			return stop
		}
		if err := o.advance(); err != nil {
			return err
		}
		o.window()
	}
	return nil
}

// ordered is ReadInOrder's state: the partitions in their order, the one whose turn it is
// (head), and what is held of the later ones.
type ordered struct {
	cl    *kgo.Client
	fn    func(*kgo.Record) error
	parts []*orderedPart
	index map[string]map[int32]*orderedPart
	head  int
	// seen and seenBytes are the records taken so far and their recordSize.
	seen, seenBytes int64
}

// orderedPart is one partition's range, what is held of it, and whether it is read to its end
// (or its topic deleted).
type orderedPart struct {
	r         PartitionRange
	held      []*kgo.Record
	heldBytes int64
	next      int64 // the offset after the last record taken
	done      bool
	active    bool // fetched: not paused (ordered.window)
}

// take hands fn the records of ft when its partition's turn has come and holds them
// otherwise, up to the partition's end.
func (o *ordered) take(ft kgo.FetchTopicPartition) error {
	p := o.index[ft.Topic][ft.Partition]
	if p == nil || p.done {
		return nil
	}
	head := p == o.parts[o.head]
	done, err := deliver(ft, p.r.End, func(r *kgo.Record) error {
		n := recordSize(r)
		o.seen++
		o.seenBytes += n
		if head {
			return o.fn(r)
		}
		p.held = append(p.held, r)
		p.heldBytes += n
		return nil
	})
	if n := len(ft.Records); n > 0 {
		p.next = min(max(p.next, ft.Records[n-1].Offset+1), p.r.End)
	}
	if errors.Is(err, ErrSkipPartition) {
		done, err = true, nil
	}
	if done {
		o.finish(p)
	}
	return err
}

// liveFetchError is fetchError of the fetches of partitions still read.
func (o *ordered) liveFetchError(fetches kgo.Fetches) error {
	var failed kgo.Fetches
	for _, f := range fetches {
		for _, t := range f.Topics {
			for _, p := range t.Partitions {
				if op := o.index[t.Topic][p.Partition]; p.Err != nil && op != nil && !op.done {
					failed = append(failed, kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: t.Topic, Partitions: []kgo.FetchPartition{p}}}})
				}
			}
		}
	}
	return fetchError(failed)
}

// unread are the topics with a partition not yet read to its end.
func (o *ordered) unread() []string {
	var topics []string
	for t, ps := range o.index {
		for _, p := range ps {
			if !p.done {
				topics = append(topics, t)
				break
			}
		}
	}
	return topics
}

// finish marks p read to its end: it is fetched no more.
func (o *ordered) finish(p *orderedPart) {
	p.done = true
	o.cl.PauseFetchPartitions(map[string][]int32{p.r.Topic: {p.r.Partition}})
}

// advance hands fn what is held of the partition whose turn it is, and moves the turn on past
// each partition read to its end.
func (o *ordered) advance() error {
	for o.head < len(o.parts) {
		p := o.parts[o.head]
		for i, r := range p.held {
			p.held[i] = nil
			err := o.fn(r)
			if errors.Is(err, ErrSkipPartition) {
				o.finish(p)
				break
			}
			if err != nil {
				p.held = p.held[i+1:]
				return err
			}
		}
		p.held, p.heldBytes = nil, 0
		if !p.done {
			return nil
		}
		o.head++
	}
	return nil
}

// window fetches the partition whose turn it is and the next ones while what they are
// expected to hold (what is held of them, and their offsets not yet read times the average
// record) stays within readAheadBytes, and pauses the others.
func (o *ordered) window() {
	avg := int64(firstRecordGuess)
	if o.seen > 0 {
		avg = o.seenBytes / o.seen
	}
	var (
		sum           int64
		pause, resume map[string][]int32
		inside        = true
	)
	for i := o.head; i < len(o.parts); i++ {
		p := o.parts[i]
		if p.done {
			continue
		}
		sum += p.heldBytes + (p.r.End-p.next)*avg
		if i > o.head && sum > readAheadBytes {
			inside = false
		}
		switch {
		case inside && !p.active:
			resume = addPartition(resume, p.r)
		case !inside && p.active:
			pause = addPartition(pause, p.r)
		}
		p.active = inside
	}
	if pause != nil {
		o.cl.PauseFetchPartitions(pause)
	}
	if resume != nil {
		o.cl.ResumeFetchPartitions(resume)
	}
}

// addPartition adds r's partition to m, made when nil.
func addPartition(m map[string][]int32, r PartitionRange) map[string][]int32 {
	if m == nil {
		m = map[string][]int32{}
	}
	m[r.Topic] = append(m[r.Topic], r.Partition)
	return m
}

// recordSize is what holding r costs: its key, value and headers, and recordOverhead.
func recordSize(r *kgo.Record) int64 {
	n := recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}
