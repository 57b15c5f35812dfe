package replay

import (
	"sync"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// tracker keeps, per source partition, the contiguous prefix of records that are done: sent
// and acknowledged, or needing no send (not selected, quarantined, skipped, incomplete). Acks
// arrive out of source order (one source partition feeds several target partitions), so a checkpoint
// moves only over a prefix with no unacknowledged record in it: resuming from it re-sends
// nothing that was acknowledged before the checkpoint, and loses nothing.
//
// Counts are committed with the prefix too: the journal's counts always describe exactly the
// records behind its checkpoints, so a resumed run neither loses nor double-counts.
//
// Safe for concurrent use: the read loop records reads, the producer's callbacks record acks,
// the flusher takes snapshots.
type tracker struct {
	mu    sync.Mutex
	parts []*partState
	index map[dedup.SourceRef]int // topic+partition (Offset 0) → parts index
	// lastPart is the parts index of the record read last.
	lastPart int

	committed dedup.RunCounts
	// sends are acknowledged sends not yet journaled; spare is the array of a journaled
	// snapshot, handed back (reuse), which the next snapshot's sends fill: growing a new
	// array for every journal write was most of a replay's garbage.
	sends, spare []dedup.ReplaySend
	// produced and journaled count records handed to the producer and records whose send is
	// in the journal (or failed): their difference bounds what a crash can duplicate.
	produced, journaled, acked, failed int64
	firstErr                           error
}

type partState struct {
	topic     string
	partition int32
	start     int64 // first offset of the range, inclusive
	end       int64 // last offset of the range, inclusive
	done      int64 // the contiguous prefix is done through this offset
	lastRead  int64
	q         []entry // records after done, in read order
	qa        []entry // the array q lives in, from its start (push)
	base      int64   // sequence number of q[0]
	dirty     bool    // done moved since the last snapshot
	// counts are the partition's committed counts, journaled with its checkpoint by a worker
	// of a run shared by workers (shared; from the partition's journaled counts).
	counts dedup.RunCounts
	shared bool
}

// push appends e to q. The settled records leave q from its front, so that q slides along its
// array: when it reaches the end while at most half the array is in use, q moves back to the
// array's start instead of growing a new array (which was one array every few thousand
// records, a record's worth of garbage each).
func (p *partState) push(e entry) {
	if len(p.q) == cap(p.q) && len(p.q) <= cap(p.qa)/2 {
		p.q = p.qa[:copy(p.qa[:cap(p.qa)], p.q)]
	}
	p.q = append(p.q, e)
	if cap(p.q) > cap(p.qa) {
		p.qa = p.q[:0]
	}
}

type entry struct {
	offset  int64
	outcome Outcome
	settled bool
}

func newTracker(ranges []kafka.PartitionRange, base dedup.RunCounts) *tracker {
	t := &tracker{index: map[dedup.SourceRef]int{}, committed: base}
	for _, r := range ranges {
		t.index[dedup.SourceRef{Topic: r.Topic, Partition: r.Partition}] = len(t.parts)
		t.parts = append(t.parts, &partState{topic: r.Topic, partition: r.Partition, start: r.Start, end: r.End - 1,
			done: r.Start - 1, lastRead: r.Start - 1})
	}
	return t
}

// share makes the tracker a worker's of a run shared by workers: each partition's counts start
// from its journaled ones (cps), and are journaled with its checkpoint.
func (t *tracker) share(cps []dedup.ReplayCheckpoint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, cp := range cps {
		if i, ok := t.index[dedup.SourceRef{Topic: cp.Topic, Partition: cp.Partition}]; ok && cp.Worker != nil {
			t.parts[i].counts = cp.Worker.Counts
		}
	}
	for _, p := range t.parts {
		p.shared = true
	}
}

// ticket names a record in flight: its partition and sequence number.
type ticket struct {
	part int
	seq  int64
}

// read records that the read loop reached d. It returns the ticket to ack d with when d is to
// be sent; other outcomes are settled at once.
func (t *tracker) read(d *decision) ticket {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A fetch hands over the records of one partition in a run: the last one's partition is
	// compared before the index is hashed.
	pi := t.lastPart
	if p := t.parts[pi]; p.partition != d.rec.Partition || p.topic != d.rec.Topic {
		pi = t.index[dedup.SourceRef{Topic: d.rec.Topic, Partition: d.rec.Partition}]
		t.lastPart = pi
	}
	p := t.parts[pi]
	p.lastRead = d.rec.Offset
	if d.outcome != OutcomeSend {
		if len(p.q) == 0 {
			t.commit(p, d.outcome)
			p.done, p.dirty = d.rec.Offset, true
			return ticket{part: -1}
		}
		p.push(entry{offset: d.rec.Offset, outcome: d.outcome, settled: true})
		return ticket{part: -1}
	}
	t.produced++
	p.push(entry{offset: d.rec.Offset, outcome: OutcomeSend})
	return ticket{part: pi, seq: p.base + int64(len(p.q)) - 1}
}

// ack settles a sent record and returns how many acknowledged sends wait for the journal. A
// failed send (err != nil) is remembered; it never settles, so the checkpoint stays before it.
func (t *tracker) ack(tk ticket, s dedup.ReplaySend, err error) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
		return len(t.sends)
	}
	t.acked++
	t.sends = append(t.sends, s)
	p := t.parts[tk.part]
	p.q[tk.seq-p.base].settled = true
	for len(p.q) > 0 && p.q[0].settled {
		t.commit(p, p.q[0].outcome)
		p.done, p.dirty = p.q[0].offset, true
		p.q = p.q[1:]
		p.base++
	}
	if len(p.q) == 0 && p.lastRead > p.done {
		p.done, p.dirty = p.lastRead, true
	}
	return len(t.sends)
}

// commit counts a record of p whose outcome is o as done.
func (t *tracker) commit(p *partState, o Outcome) {
	countOutcome(&t.committed, o)
	countOutcome(&p.counts, o)
}

// countOutcome adds a done record whose outcome is o to c.
func countOutcome(c *dedup.RunCounts, o Outcome) {
	switch o {
	case OutcomeSend, OutcomeAlreadySent:
		c.Selected++
		c.Sent++
	case OutcomeQuarantined:
		c.Selected++
		c.Quarantined++
	case OutcomeSkipped, OutcomeAlreadyReplayed:
		// The journal counts the settled dead letters an earlier run sent, left out, as
		// skipped: selected and not sent, by choice.
		c.Selected++
		c.Skipped++
	case OutcomeIncomplete:
		// The journal has no count of its own for them: selected and neither sent,
		// quarantined nor skipped (incompleteOf).
		c.Selected++
	}
}

// finish moves every partition whose records are all settled to the end of its range: the
// offsets after the last record read (control records, compacted gaps) are done too. Call it
// only when the read completed.
func (t *tracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.parts {
		if len(p.q) == 0 && p.done < p.end {
			p.done, p.dirty = p.end, true
		}
	}
}

// snapshot takes what the journal has not seen: the new sends (stamped with the time of the
// snapshot when their ack carried none), the moved checkpoints and the committed counts.
func (t *tracker) snapshot() (sends []dedup.ReplaySend, cps []dedup.ReplayCheckpoint, counts dedup.RunCounts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sends, t.sends, t.spare = t.sends, t.spare, nil
	// The sends are stamped here rather than as each ack arrives: a clock read per record
	// was a tenth of a replay's CPU.
	now := time.Now()
	for i := range sends {
		if sends[i].At.IsZero() {
			sends[i].At = now
		}
	}
	for _, p := range t.parts {
		if p.dirty {
			cp := dedup.ReplayCheckpoint{Topic: p.topic, Partition: p.partition, Start: p.start, End: p.end, AckedThrough: p.done}
			if p.shared {
				cp.Worker = &dedup.PartitionWorker{Counts: p.counts}
			}
			cps = append(cps, cp)
			p.dirty = false
		}
	}
	return sends, cps, t.committed
}

// reuse hands back the sends of a snapshot once they are journaled (and no longer referenced
// anywhere): their array holds the sends acknowledged next.
func (t *tracker) reuse(sends []dedup.ReplaySend) {
	t.mu.Lock()
	if cap(sends) > cap(t.spare) {
		t.spare = sends[:0]
	}
	t.mu.Unlock()
}

// journaledN records that n sends reached the journal.
func (t *tracker) journaledN(n int) {
	t.mu.Lock()
	t.journaled += int64(n)
	t.mu.Unlock()
}

// unjournaled is how many records were handed to the producer and are not in the journal:
// what a crash now could send twice.
func (t *tracker) unjournaled() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.produced - t.journaled - t.failed
}

func (t *tracker) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstErr
}

// live are the counters for progress.
type live struct {
	Produced, Acked int64
	Committed       dedup.RunCounts
}

func (t *tracker) live() live {
	t.mu.Lock()
	defer t.mu.Unlock()
	return live{Produced: t.produced, Acked: t.acked, Committed: t.committed}
}
