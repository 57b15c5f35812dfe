package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// journaler journals what the rewriter sends as a replay journals it (docs/design.md §3.3,
// "Journal"), with nothing else: a run in the store, every acknowledged send (source offset,
// event id, target partition and offset), each source partition's checkpoint (the contiguous
// acknowledged offsets) and the counts, written in one transaction every
// replay.DefaultFlushRecords acknowledgements and at least every replay.DefaultFlushInterval,
// by the store's own SaveReplayProgress. No decision, filter, lookup or resume: with the
// rewriter, the floor of a replay that keeps both the provenance and the journal contracts.
type journaler struct {
	st    *dedup.Store
	runID string
	topic string // the source topic

	mu     sync.Mutex
	sends  []dedup.ReplaySend
	spare  []dedup.ReplaySend
	parts  map[int32]*ackedPrefix
	counts dedup.RunCounts
	err    error

	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	flushes int

	slab []ackOf // each send's source, carved a few hundred at a time
}

// ackOf is what an acknowledgement journals of the record it was sent for; it is the sent
// record's Context, as the replay's own sends carry theirs (no closure a record).
type ackOf struct {
	context.Context
	topic     string
	partition int32
	offset    int64
	timestamp time.Time
	eventID   string
}

// ackedPrefix is a source partition's contiguous acknowledged offsets (through done) and the
// acknowledged offsets beyond it, in a ring as wide as the records the producer can hold.
type ackedPrefix struct {
	done  int64
	ring  []bool
	moved bool
}

const ackRing = 1 << 16 // > replay.DefaultMaxBuffered: no two offsets in flight share a slot

func newJournaler(ctx context.Context, st *dedup.Store, topic string, ranges []kafka.PartitionRange) *journaler {
	j := &journaler{st: st, topic: topic, runID: "bench-" + time.Now().UTC().Format("20060102-150405.000000"), parts: map[int32]*ackedPrefix{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	cps := make([]dedup.ReplayCheckpoint, 0, len(ranges))
	for _, r := range ranges {
		cps = append(cps, dedup.ReplayCheckpoint{Topic: r.Topic, Partition: r.Partition, Start: r.Start, End: r.End - 1, AckedThrough: r.Start - 1})
		j.parts[r.Partition] = &ackedPrefix{done: r.Start - 1, ring: make([]bool, ackRing)}
	}
	run := dedup.ReplayRun{ID: j.runID, Operator: "bench", Reason: "benchmark", Selection: dedup.JSONText(`{"topic":"` + topic + `"}`),
		Sources: []string{topic}, Target: "original", Status: dedup.RunRunning, Owner: "bench"}
	if err := st.CreateReplayRun(ctx, run, cps); err != nil {
		fail("journal: %v", err)
	}
	go j.flusher(ctx)
	return j
}

// source returns the Context of the record sent for r (its event id read by the rewriter),
// ctx the producer's.
func (j *journaler) source(ctx context.Context, r *kgo.Record, eventID string) *ackOf {
	if len(j.slab) == cap(j.slab) {
		j.slab = make([]ackOf, 0, 256)
	}
	j.slab = append(j.slab, ackOf{Context: ctx, topic: r.Topic, partition: r.Partition, offset: r.Offset, timestamp: r.Timestamp, eventID: eventID})
	return &j.slab[len(j.slab)-1]
}

// acked is the promise of every record sent.
func (j *journaler) acked(r *kgo.Record, err error) {
	src := r.Context.(*ackOf)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		if j.err == nil {
			j.err = err
		}
		return
	}
	j.sends = append(j.sends, dedup.ReplaySend{SourceTopic: src.topic, SourcePartition: src.partition, SourceOffset: src.offset,
		SourceTimestamp: src.timestamp, EventID: src.eventID, TargetTopic: r.Topic, TargetPartition: r.Partition, TargetOffset: r.Offset})
	p := j.parts[src.partition]
	p.ring[src.offset%ackRing] = true
	for p.ring[(p.done+1)%ackRing] {
		p.done++
		p.ring[p.done%ackRing] = false
		p.moved = true
		j.counts.Selected++
		j.counts.Sent++
	}
	if len(j.sends) >= replay.DefaultFlushRecords {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
}

func (j *journaler) flusher(ctx context.Context) {
	defer close(j.stopped)
	tick := time.NewTicker(replay.DefaultFlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-tick.C:
		case <-j.kick:
		}
		if err := j.flush(ctx, dedup.RunRunning, false); err != nil {
			fail("journal: %v", err)
		}
	}
}

// flush writes the sends acknowledged since the last flush, the checkpoints that moved and the
// counts, in one transaction.
func (j *journaler) flush(ctx context.Context, status string, final bool) error {
	j.mu.Lock()
	sends := j.sends
	j.sends = j.spare[:0]
	var cps []dedup.ReplayCheckpoint
	for part, p := range j.parts {
		if p.moved {
			cps = append(cps, dedup.ReplayCheckpoint{Topic: j.topic, Partition: part, AckedThrough: p.done})
			p.moved = false
		}
	}
	counts := j.counts
	j.mu.Unlock()
	// Stamped once a flush, as the replay's tracker stamps them (a clock read a record costs).
	now := time.Now()
	for i := range sends {
		sends[i].At = now
	}
	j.flushes++
	err := j.st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: j.runID, Owner: "bench", Status: status, Counts: counts,
		Checkpoints: cps, Sends: sends, FlushID: fmt.Sprintf("bench#%d", j.flushes), Finished: final, Now: now})
	j.mu.Lock()
	j.spare = sends[:0]
	j.mu.Unlock()
	return err
}

// finish stops the flusher after the producer's flush and journals the rest, the run completed.
func (j *journaler) finish(ctx context.Context) error {
	close(j.stop)
	<-j.stopped
	j.mu.Lock()
	err := j.err
	j.mu.Unlock()
	if err != nil {
		return err
	}
	return j.flush(ctx, dedup.RunCompleted, true)
}

// check fails the benchmark unless the journal holds the run completed with n records sent,
// every checkpoint at its range's end, and n sends.
func (j *journaler) check(ctx context.Context, n int64) {
	run, cps, err := j.st.ReplayRun(ctx, j.runID)
	if err != nil {
		fail("journal: %v", err)
	}
	if run.Status != dedup.RunCompleted || run.Sent != n {
		fail("journal: run %s %s with %d sent, want completed with %d", j.runID, run.Status, run.Sent, n)
	}
	for _, cp := range cps {
		if cp.AckedThrough != cp.End {
			fail("journal: %s/%d acknowledged through %d, want %d", cp.Topic, cp.Partition, cp.AckedThrough, cp.End)
		}
	}
	targets, err := j.st.ReplayTargetCounts(ctx, j.runID)
	if err != nil {
		fail("journal: %v", err)
	}
	var sends int64
	for _, t := range targets {
		sends += t.Records
	}
	if sends != n {
		fail("journal: %d sends journaled, want %d", sends, n)
	}
}
