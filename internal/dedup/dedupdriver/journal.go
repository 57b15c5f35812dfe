package dedupdriver

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"
)

// The replay journal (docs/design.md §3.3): migrations 002 and 003 create three tables
// in the store's schema, shared by every marker table (migration line) of
// that schema: replay_runs, replay_checkpoints and replay_send_batches (the
// acknowledged sends, a row per flush, source partition and target topic).
//
// Record identity (migration 006). Coordinates alone do not name a
// record: a topic deleted and recreated, or a sandbox broker restarted over the same store,
// puts other records at the same topic, partition and offset. So a run journals the Kafka
// topic ID of each topic it reads (replay_run_topics), and each send the source record's
// event id and timestamp; a journaled send counts as a replay of a record only when they agree
// (SentRecord). Runs journaled before the migration have no topic ID and their sends no
// timestamp: what they did not record is not compared, so their sends are recognised by
// coordinates and event id, the identity they always had.

// Run statuses. A run is created running (or planned, when it is recorded
// before its first send) and ends completed, interrupted or failed; resume
// takes an interrupted, failed or abandoned running run back to running.
const (
	RunPlanned     = "planned"
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunInterrupted = "interrupted"
	RunFailed      = "failed"
)

// RunCounts are a run's record counts. They cover the records behind the
// run's checkpoints: a record is counted once the contiguous acknowledged
// prefix of its source partition has passed it, so that a resumed run
// neither loses nor double-counts what it reads again.
type RunCounts struct {
	Selected    int64 `json:"selected"`
	Sent        int64 `json:"sent"`
	Quarantined int64 `json:"quarantined"`
	Skipped     int64 `json:"skipped"`
}

// ReplayRun is one row of replay_runs.
type ReplayRun struct {
	ID       string `json:"run_id"`
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
	// Selection is the run's selection as JSON text (flags, offsets, filters).
	Selection JSONText `json:"selection"`
	// Sources are the topics the run reads, in order.
	Sources []string `json:"source_topics"`
	// SourceTopicIDs are the Kafka topic IDs of Sources (topic → ID) as the brokers gave them
	// when the run was planned. A topic without one (a run journaled before record identity,
	// or a broker that gives no topic IDs) is absent.
	SourceTopicIDs map[string]string `json:"source_topic_ids,omitempty"`
	// Target says where records go: a topic (--to), or "original" (each
	// record's dead-letter headers name it).
	Target string `json:"target"`
	Status string `json:"status"`
	// Owner is the process executing the run (host:pid) while it runs; it
	// keeps two processes from driving one run.
	Owner string `json:"owner,omitempty"`
	// Error is the last failure of a failed run.
	Error string `json:"error,omitempty"`
	RunCounts
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// ReplayCheckpoint is one source partition of a run: the inclusive range
// fixed at plan time and how far the run got. AckedThrough is the highest
// offset such that every record of the range up to it is done (sent and
// acknowledged, quarantined, skipped or not selected); Start-1 when none is.
type ReplayCheckpoint struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Start        int64  `json:"start_offset"`
	End          int64  `json:"last_offset"` // inclusive (the column end_offset)
	AckedThrough int64  `json:"acked_through"`
	// Worker is set on the checkpoints of a run shared by workers (migration 013): which
	// worker holds the partition and the counts behind its checkpoint. nil for a run driven by
	// one process. CreateReplayRun given a checkpoint with Worker set records the run as one for
	// workers.
	Worker *PartitionWorker `json:"worker,omitempty"`
}

// PartitionWorker is the state of one partition of a run shared by workers: the worker that
// holds it (host:pid; empty when none does), the counts of the records behind its checkpoint
// (written by that worker with the checkpoint), and when either was last written.
type PartitionWorker struct {
	Owner     string    `json:"owner"`
	Counts    RunCounts `json:"counts"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ReplaySend is one acknowledged send: where the record was read and where
// the broker put it. At is the acknowledgement's time, or (as the replay
// records it) the time its journal batch was taken, at most a flush interval
// later. EventID and SourceTimestamp are the source record's own (its Kafka
// timestamp, millisecond precision): with the run's topic ID they tell the
// record apart from another one later at the same coordinates. A zero
// SourceTimestamp is not known (a send journaled before record identity).
type ReplaySend struct {
	SourceTopic     string    `json:"source_topic"`
	SourcePartition int32     `json:"source_partition"`
	SourceOffset    int64     `json:"source_offset"`
	SourceTimestamp time.Time `json:"source_timestamp,omitzero"`
	EventID         string    `json:"event_id,omitempty"`
	TargetTopic     string    `json:"target_topic"`
	TargetPartition int32     `json:"target_partition"`
	TargetOffset    int64     `json:"target_offset"`
	At              time.Time `json:"at"`
}

// ReplayProgress is one flush of a running run, written in one transaction:
// the new sends, the checkpoints that moved, the counts and the status.
// It applies only while Owner owns the run.
type ReplayProgress struct {
	RunID       string
	Owner       string
	Status      string
	Counts      RunCounts
	Error       string
	Checkpoints []ReplayCheckpoint // only AckedThrough is written
	Sends       []ReplaySend
	// FlushID names this write of Sends: a write retried with the same FlushID (after an
	// error that may have hidden a commit) stores its sends once. Empty: no such guard.
	FlushID string
	// Finished sets finished_at (a final status); otherwise it stays NULL.
	Finished bool
	Now      time.Time
	// Partitioned is a flush of a worker of a run shared by workers: Owner owns partitions,
	// not the run. Each checkpoint (with its Worker's counts) is written only while Owner holds
	// its partition; the sends are written whatever (they were acknowledged); the run's counts
	// become the sum of its partitions', its status and error are left as they are. It reports
	// false when Owner no longer holds one of the checkpoints' partitions.
	Partitioned bool
}

// ReplayRunFilter selects runs for ListReplayRuns, newest first.
type ReplayRunFilter struct {
	Status string
	Limit  int
}

// TargetCount is how many acknowledged sends of a run went to one target
// partition.
type TargetCount struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Records   int64  `json:"records"`
}

// SourceRef names a record by where it was read.
type SourceRef struct {
	Topic     string
	Partition int32
	Offset    int64
}

// SourceRecord is a record whose replays are asked for: where it is, and what tells it apart
// from another record at the same place. TopicID is the Kafka topic ID of Topic as the asker
// sees it now; EventID and Timestamp (its Kafka timestamp) are the record's own. An empty
// TopicID or a zero Timestamp is not known, and not compared.
type SourceRecord struct {
	SourceRef
	TopicID   string
	EventID   string
	Timestamp time.Time
}

// ParseTopicIDs reads a run's topic IDs as the drivers aggregate them from replay_run_topics:
// topic=id pairs separated by commas (neither a topic name nor a topic ID holds = or ,). ""
// is none: nil.
func ParseTopicIDs(s string) map[string]string {
	if s == "" {
		return nil
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if topic, id, ok := strings.Cut(pair, "="); ok {
			out[topic] = id
		}
	}
	return out
}

// BatchRun is the run that journaled a send batch, and the topic ID that run journaled for the
// batch's source topic ("" when none); Batch is the batch's own id.
type BatchRun struct {
	ID            string
	SourceTopicID string
	Batch         int64
}

// ReplayRef is the latest replay of a source record: the run, the
// acknowledgement's time and where the replayed copy was written.
type ReplayRef struct {
	RunID           string
	At              time.Time
	TargetTopic     string
	TargetPartition int32
	TargetOffset    int64
}

// Journal is implemented by both drivers.
type Journal interface {
	// CreateReplayRun inserts the run and its checkpoints in one transaction.
	CreateReplayRun(ctx context.Context, run ReplayRun, cps []ReplayCheckpoint) error
	// SaveReplayProgress writes p in one transaction and reports false
	// (writing nothing) when the run does not exist or p.Owner no longer
	// owns it. Sends are stored as SendBatch rows (GroupSends).
	SaveReplayProgress(ctx context.Context, p ReplayProgress) (bool, error)
	// TakeReplayRun sets the run's owner to owner and its status to
	// running if its status and owner are still fromStatus and fromOwner
	// (compare and swap) and reports whether it did; a selection that is
	// not empty replaces the run's (how the resumed run executes).
	TakeReplayRun(ctx context.Context, id, fromStatus, fromOwner, owner string, selection JSONText, now time.Time) (bool, error)
	// TakeReplayPartitions makes owner the worker holding the given partitions of a run
	// shared by workers (whoever held them before) and marks the run running unless it is
	// completed.
	TakeReplayPartitions(ctx context.Context, id, owner string, parts []ReplayCheckpoint, now time.Time) error
	// ReleaseReplayPartitions lets go of the partitions owner holds (none when owner is empty),
	// marks the run completed when every checkpoint reached the end of its range, and reports
	// whether the run is completed.
	ReleaseReplayPartitions(ctx context.Context, id, owner string, now time.Time) (bool, error)
	// GetReplayRun returns the run (nil when absent) and its checkpoints,
	// ordered by topic and partition.
	GetReplayRun(ctx context.Context, id string) (*ReplayRun, []ReplayCheckpoint, error)
	ListReplayRuns(ctx context.Context, f ReplayRunFilter) ([]ReplayRun, error)
	// ReplaySendsAfterCheckpoint returns the run's journaled sends whose
	// source offset is beyond its partition's checkpoint, each source record
	// once (the first journaled), ordered by source position.
	ReplaySendsAfterCheckpoint(ctx context.Context, id string) ([]ReplaySend, error)
	// ReplayTargetCounts counts the run's journaled sends per target
	// partition.
	ReplayTargetCounts(ctx context.Context, id string) ([]TargetCount, error)
	// ReplayedSources returns, for each of recs that a journaled send sent
	// (ResolveReplays: at its coordinates, and SentRecord), the latest such
	// send (by acknowledgement time, then run id), keyed by its SourceRef.
	ReplayedSources(ctx context.Context, recs []SourceRecord) (map[SourceRef]ReplayRef, error)
	// ReplayedSpans returns, per source partition of topic, the lowest and
	// the highest offset any journaled send read there (by any run); a
	// partition no send read is absent.
	ReplayedSpans(ctx context.Context, topic string) (map[int32]OffsetSpan, error)
}

// OffsetSpan is the offsets First through Last (inclusive) of one partition.
type OffsetSpan struct {
	First, Last int64
}

// Holds reports whether offset is within the span.
func (s OffsetSpan) Holds(offset int64) bool { return offset >= s.First && offset <= s.Last }

// SendBatch is how the drivers store sends: those of one journal flush from one source
// partition to one target topic, as parallel slices in ascending source-offset order. At is
// the latest acknowledgement among them. SourceTimestamps (Unix milliseconds) is nil for a
// batch journaled without them (before record identity, or from sends without one).
type SendBatch struct {
	SourceTopic      string
	SourcePartition  int32
	TargetTopic      string
	SourceOffsets    []int64
	SourceTimestamps []int64
	EventIDs         []string
	TargetPartitions []int32
	TargetOffsets    []int64
	At               time.Time
}

// CountTargets counts sends per target topic and partition, sorted by topic, then partition.
func CountTargets(sends []ReplaySend) []TargetCount {
	type key struct {
		topic string
		part  int32
	}
	idx := map[key]int{}
	var out []TargetCount
	var last key // as in GroupSends: the previous send's target first
	lastI := -1
	for _, s := range sends {
		k := key{s.TargetTopic, s.TargetPartition}
		i, ok := lastI, lastI >= 0 && k == last
		if !ok {
			i, ok = idx[k]
		}
		last, lastI = k, i
		if !ok {
			i = len(out)
			idx[k] = i
			last, lastI = k, i
			out = append(out, TargetCount{Topic: s.TargetTopic, Partition: s.TargetPartition})
		}
		out[i].Records++
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// GroupSends groups sends into batches by source topic, source partition and target topic,
// each sorted by source offset, in a stable order (by source, then target).
//
// It runs once per journal flush over every send acknowledged since the last one, so it places
// rather than appends: a first pass gives each send its batch and counts them, the batches are
// put in their order, each send gets its place in one array of send indexes (the batch's
// range, in source-offset order), and the columns are filled from it, every batch's slices cut
// from one array per column.
func GroupSends(sends []ReplaySend) []SendBatch {
	out, counts, batchOf := assignBatches(sends)
	// order[r] is the batch that goes r-th in the stable order, rank[i] where batch i goes.
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := &out[a], &out[b]
		return cmp.Or(strings.Compare(x.SourceTopic, y.SourceTopic), cmp.Compare(x.SourcePartition, y.SourcePartition),
			strings.Compare(x.TargetTopic, y.TargetTopic))
	})
	rank, first := make([]int, len(out)), make([]int, len(out)+1)
	for r, i := range order {
		rank[i] = r
		first[r+1] = first[r] + counts[i]
	}
	// at[first[r]:first[r+1]] are the indexes of batch r's sends, in the order of sends, then
	// sorted by source offset (acknowledgements arrive out of order).
	at, next := make([]int32, len(sends)), slices.Clone(first[:len(out)])
	for n, b := range batchOf {
		r := rank[b]
		at[next[r]] = int32(n)
		next[r]++
	}
	offsets, stamps := make([]int64, len(sends)), make([]int64, len(sends))
	ids, tparts, toffs := make([]string, len(sends)), make([]int32, len(sends)), make([]int64, len(sends))
	grouped := make([]SendBatch, len(out))
	var keyed []offsetAt // a batch's sends by offset, when they came out of order
	for r, i := range order {
		lo, hi := first[r], first[r+1]
		run := at[lo:hi]
		if !slices.IsSortedFunc(run, func(a, b int32) int { return cmp.Compare(sends[a].SourceOffset, sends[b].SourceOffset) }) {
			keyed = keyed[:0]
			for _, n := range run {
				keyed = append(keyed, offsetAt{sends[n].SourceOffset, n})
			}
			slices.SortFunc(keyed, func(a, b offsetAt) int { return cmp.Compare(a.offset, b.offset) })
			for k, o := range keyed {
				run[k] = o.at
			}
		}
		b := out[i]
		timed := true
		for k, n := range run {
			s := &sends[n]
			offsets[lo+k], stamps[lo+k], ids[lo+k] = s.SourceOffset, s.SourceTimestamp.UnixMilli(), s.EventID
			tparts[lo+k], toffs[lo+k] = s.TargetPartition, s.TargetOffset
			timed = timed && !s.SourceTimestamp.IsZero()
			if s.At.After(b.At) {
				b.At = s.At
			}
		}
		b.SourceOffsets, b.EventIDs = offsets[lo:hi:hi], ids[lo:hi:hi]
		b.TargetPartitions, b.TargetOffsets = tparts[lo:hi:hi], toffs[lo:hi:hi]
		if timed {
			// One unknown timestamp makes the batch's unknown: a batch has all or none.
			b.SourceTimestamps = stamps[lo:hi:hi]
		}
		grouped[r] = b
	}
	return grouped
}

// assignBatches is GroupSends' first pass: the batches in the order their first send came,
// how many sends each holds, and each send's batch.
func assignBatches(sends []ReplaySend) (out []SendBatch, counts []int, batchOf []int32) {
	type key struct {
		st string
		sp int32
		tt string
	}
	var idx map[key]int // once there are more batches than a scan finds quickly
	var keys []key
	batchOf = make([]int32, len(sends))
	// Consecutive sends often share their batch: the previous one's is compared first. The
	// batches of a flush are few (a source partition's records go to a few target topics), and
	// comparing their keys costs less than hashing two strings a send.
	const scanned = 16
	lastI := -1
	for n, s := range sends {
		k := key{s.SourceTopic, s.SourcePartition, s.TargetTopic}
		i, ok := lastI, lastI >= 0 && k == keys[lastI]
		if !ok && idx != nil {
			i, ok = idx[k]
		} else if !ok {
			i = slices.Index(keys, k)
			ok = i >= 0
		}
		if !ok {
			i = len(out)
			keys = append(keys, k)
			if idx == nil && len(keys) > scanned {
				idx = make(map[key]int, 2*scanned)
				for j, k := range keys {
					idx[k] = j
				}
			} else if idx != nil {
				idx[k] = i
			}
			out = append(out, SendBatch{SourceTopic: s.SourceTopic, SourcePartition: s.SourcePartition, TargetTopic: s.TargetTopic})
			counts = append(counts, 0)
		}
		lastI = i
		batchOf[n] = int32(i)
		counts[i]++
	}
	return out, counts, batchOf
}

// offsetAt is a send's source offset and its index in the sends grouped.
type offsetAt struct {
	offset int64
	at     int32
}

// Valid reports whether the parallel slices have one length, at least 1 (SourceTimestamps
// may be nil).
func (b *SendBatch) Valid() bool {
	n := len(b.SourceOffsets)
	return n > 0 && len(b.EventIDs) == n && len(b.TargetPartitions) == n && len(b.TargetOffsets) == n &&
		(b.SourceTimestamps == nil || len(b.SourceTimestamps) == n)
}

// Find returns the index of the send of source offset o, or -1.
func (b *SendBatch) Find(o int64) int {
	i := sort.Search(len(b.SourceOffsets), func(i int) bool { return b.SourceOffsets[i] >= o })
	if i < len(b.SourceOffsets) && b.SourceOffsets[i] == o {
		return i
	}
	return -1
}

// Send returns the i-th send of the batch.
func (b *SendBatch) Send(i int) ReplaySend {
	s := ReplaySend{SourceTopic: b.SourceTopic, SourcePartition: b.SourcePartition, SourceOffset: b.SourceOffsets[i], EventID: b.EventIDs[i],
		TargetTopic: b.TargetTopic, TargetPartition: b.TargetPartitions[i], TargetOffset: b.TargetOffsets[i], At: b.At}
	if b.SourceTimestamps != nil {
		s.SourceTimestamp = time.UnixMilli(b.SourceTimestamps[i]).UTC()
	}
	return s
}

// SentRecord reports whether send i of b, journaled by a run that read b's source topic under
// topic ID runTopicID ("" when it journaled none), sent r, the record now at the same
// coordinates (the caller matched those). It is the one rule of record identity: the send
// counts unless something both sides know differs — the topic ID (the topic was deleted and
// recreated since the send), the event id, or the record's timestamp. A run journaled before
// record identity knows neither the topic ID nor the timestamp, so its sends are told by
// coordinates and event id alone.
func (b *SendBatch) SentRecord(i int, runTopicID string, r SourceRecord) bool {
	if runTopicID != "" && r.TopicID != "" && runTopicID != r.TopicID {
		return false
	}
	if b.EventIDs[i] != r.EventID {
		return false
	}
	return b.SourceTimestamps == nil || r.Timestamp.IsZero() || b.SourceTimestamps[i] == r.Timestamp.UnixMilli()
}

// ResolveLatest finds, for each of recs, the latest journaled send that sent it (SentRecord): by
// the time of its acknowledgement, then by its run's id, then by its batch's, so that equal
// times give the same answer every time. spans are the batches near the records (their source
// partitions, offsets, times and runs); fetch reads batches by id, each with its run
// (BatchRun.Batch names the batch). A record's latest batch holding its offset is read first;
// only for a record that batch did not send (a run that left it out, a topic recreated since)
// are its other batches read, all at once. So one read serves, two at most, of the records'
// latest batches, not of every batch every earlier run wrote of them: the cost of a lookup
// grows with the records, not with how often they were replayed. The answer is keyed by each
// record's SourceRef; a record no batch sent is absent.
func ResolveLatest(recs []SourceRecord, spans []BatchSpan, fetch func(ids []int64) ([]SendBatch, []BatchRun, error)) (map[SourceRef]ReplayRef, error) {
	if len(spans) == 0 {
		return map[SourceRef]ReplayRef{}, nil
	}
	rs := &resolver{spans: spans, fetch: fetch, out: make(map[SourceRef]ReplayRef, len(recs)), read: map[int64]int{}, asked: map[int64]bool{}}
	h := newHolding(recs, spans)
	for _, k := range h.latest {
		if k >= 0 {
			rs.ask(k)
		}
	}
	if err := rs.load(); err != nil {
		return nil, err
	}
	// Each record its latest did not send, with the others holding it, the latest first.
	type unsent struct {
		rec    int
		others []int
	}
	var rest []unsent
	for i, r := range recs {
		if k := h.latest[i]; k >= 0 && !rs.sent(r, k) && h.count[i] > 1 {
			u := unsent{i, h.others(r, k)}
			rest = append(rest, u)
			for _, o := range u.others {
				rs.ask(o)
			}
		}
	}
	if err := rs.load(); err != nil {
		return nil, err
	}
	for _, u := range rest {
		for _, k := range u.others {
			if rs.sent(recs[u.rec], k) {
				break
			}
		}
	}
	return rs.out, nil
}

// resolver holds ResolveLatest's batches read so far and the ids it has yet to read.
type resolver struct {
	spans   []BatchSpan
	fetch   func(ids []int64) ([]SendBatch, []BatchRun, error)
	out     map[SourceRef]ReplayRef
	batches []SendBatch
	runs    []BatchRun
	read    map[int64]int // batch id → index in batches
	ids     []int64       // to read
	asked   map[int64]bool
}

// ask has the batch of span k read by the next load, unless it was asked for before.
func (rs *resolver) ask(k int) {
	if id := rs.spans[k].ID; !rs.asked[id] {
		rs.asked[id] = true
		rs.ids = append(rs.ids, id)
	}
}

// load reads the batches asked for since the last load.
func (rs *resolver) load() error {
	if len(rs.ids) == 0 {
		return nil
	}
	bs, runs, err := rs.fetch(rs.ids)
	if err != nil {
		return err
	}
	for i := range bs {
		rs.read[runs[i].Batch] = len(rs.batches)
		rs.batches, rs.runs = append(rs.batches, bs[i]), append(rs.runs, runs[i])
	}
	rs.ids = rs.ids[:0]
	return nil
}

// sent resolves r by the batch of span k, if that batch (read, and still there) sent it.
func (rs *resolver) sent(r SourceRecord, k int) bool {
	i, ok := rs.read[rs.spans[k].ID]
	if !ok {
		return false
	}
	b := &rs.batches[i]
	j := b.Find(r.Offset)
	if j < 0 || !b.SentRecord(j, rs.runs[i].SourceTopicID, r) {
		return false
	}
	rs.out[r.SourceRef] = ReplayRef{RunID: rs.runs[i].ID, At: b.At, TargetTopic: b.TargetTopic, TargetPartition: b.TargetPartitions[j], TargetOffset: b.TargetOffsets[j]}
	return true
}

// holding is, for each of recs, the latest of the spans whose range holds its offset in its
// partition (laterSpan; -1: none) and how many do: found by one sweep of each partition's
// records and spans in offset order, the spans ranked once, so that a record costs the spans
// that hold it, not every span of its partition.
type holding struct {
	spans   []BatchSpan
	rank    []int // span index → its place, the latest first
	byFirst map[SourceRef][]int
	latest  []int
	count   []int
}

func newHolding(recs []SourceRecord, spans []BatchSpan) *holding {
	h := &holding{spans: spans, rank: make([]int, len(spans)), byFirst: map[SourceRef][]int{}, latest: make([]int, len(recs)), count: make([]int, len(recs))}
	order := make([]int, len(spans))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return laterSpan(spans[a], spans[b]) })
	for r, k := range order {
		h.rank[k] = r
	}
	for k, s := range spans {
		p := SourceRef{Topic: s.Topic, Partition: s.Partition}
		h.byFirst[p] = append(h.byFirst[p], k)
	}
	for _, ks := range h.byFirst {
		slices.SortFunc(ks, func(a, b int) int { return cmp.Compare(spans[a].First, spans[b].First) })
	}
	byPart := map[SourceRef][]int{}
	for i, r := range recs {
		p := SourceRef{Topic: r.Topic, Partition: r.Partition}
		byPart[p] = append(byPart[p], i)
		h.latest[i] = -1
	}
	var active []int
	for p, is := range byPart {
		ks := h.byFirst[p]
		slices.SortFunc(is, func(a, b int) int { return cmp.Compare(recs[a].Offset, recs[b].Offset) })
		active = active[:0]
		next := 0
		for _, i := range is {
			off := recs[i].Offset
			for ; next < len(ks) && spans[ks[next]].First <= off; next++ {
				active = append(active, ks[next])
			}
			// A span that ended before this offset ends before every later one too.
			active = slices.DeleteFunc(active, func(k int) bool { return spans[k].Last < off })
			h.count[i] = len(active)
			for _, k := range active {
				if h.latest[i] < 0 || h.rank[k] < h.rank[h.latest[i]] {
					h.latest[i] = k
				}
			}
		}
	}
	return h
}

// others is the spans holding r's offset other than latest, the latest first.
func (h *holding) others(r SourceRecord, latest int) []int {
	var out []int
	for _, k := range h.byFirst[SourceRef{Topic: r.Topic, Partition: r.Partition}] {
		s := &h.spans[k]
		if s.First > r.Offset {
			break
		}
		if k != latest && s.Last >= r.Offset {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Compare(h.rank[a], h.rank[b]) })
	return out
}

// laterSpan orders spans the latest first: by time, then run id, then batch id, each the
// greatest first.
func laterSpan(a, b BatchSpan) int {
	return cmp.Or(b.At.Compare(a.At), strings.Compare(b.RunID, a.RunID), cmp.Compare(b.ID, a.ID))
}

// SortSends orders sends by source topic, partition and offset and keeps the first of each
// source record (stable: earlier sends win).
func SortSends(sends []ReplaySend) []ReplaySend {
	sort.SliceStable(sends, func(i, j int) bool {
		a, b := sends[i], sends[j]
		if a.SourceTopic != b.SourceTopic {
			return a.SourceTopic < b.SourceTopic
		}
		if a.SourcePartition != b.SourcePartition {
			return a.SourcePartition < b.SourcePartition
		}
		return a.SourceOffset < b.SourceOffset
	})
	out := sends[:0]
	for i, s := range sends {
		if i > 0 && s.SourceTopic == sends[i-1].SourceTopic && s.SourcePartition == sends[i-1].SourcePartition && s.SourceOffset == sends[i-1].SourceOffset {
			continue
		}
		out = append(out, s)
	}
	return out
}

// MarkerAction is a journaled `processed prune` or `processed forget` (migration 007): who deleted markers of which table, why, which (Selection,
// JSON), how many (Counts, JSON; Deleted, the markers deleted), and the error when it failed
// part way. Its ID, the row's number, is its run_id in JSON, as every journaled action's id is.
type MarkerAction struct {
	ID          int64     `json:"run_id"`
	Action      string    `json:"action"`
	MarkerTable string    `json:"marker_table"`
	Operator    string    `json:"operator"`
	Reason      string    `json:"reason"`
	Selection   JSONText  `json:"selection"`
	Counts      JSONText  `json:"counts"`
	Deleted     int64     `json:"deleted"`
	Error       string    `json:"error,omitempty"`
	At          time.Time `json:"at"`
}

// ActionJournal is implemented by both drivers.
type ActionJournal interface {
	// RecordMarkerAction inserts a; its ID and At are the store's.
	RecordMarkerAction(ctx context.Context, a MarkerAction) error
	// ListMarkerActions returns the latest limit actions, newest first.
	ListMarkerActions(ctx context.Context, limit int) ([]MarkerAction, error)
}

// InsertMarkerAction is the statement both drivers record a MarkerAction with, into table
// (its quoted name), created at now (the dialect's current time in SQL); MarkerActionArgs
// are its arguments.
func InsertMarkerAction(table, now string) string {
	return `INSERT INTO ` + table + ` (action, marker_table, operator, reason, selection, counts, deleted, error, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), ` + now + `)`
}

// MarkerActionArgs are InsertMarkerAction's arguments for a.
func MarkerActionArgs(a MarkerAction) []any {
	return []any{a.Action, a.MarkerTable, a.Operator, a.Reason, a.Selection, a.Counts, a.Deleted, a.Error}
}

// ListMarkerActions is the statement both drivers list the newest actions of table (its
// quoted name) with ($1 the limit), in the columns MarkerActionDest scans.
func ListMarkerActions(table string) string {
	return `SELECT id, action, marker_table, operator, reason, selection, counts, deleted, COALESCE(error, ''), created_at
FROM ` + table + ` ORDER BY created_at DESC, id DESC LIMIT $1`
}

// MarkerActionDest are the scan destinations of ListMarkerActions' columns, the last
// (created_at) at, which each driver reads as its own timestamp.
func MarkerActionDest(a *MarkerAction, at any) []any {
	return []any{&a.ID, &a.Action, &a.MarkerTable, &a.Operator, &a.Reason, &a.Selection, &a.Counts, &a.Deleted, &a.Error, at}
}

// GroupAction is a journaled `groups skip`, `groups reset` (migration 012) or an undo of one
// (migration 008): who moved which group's committed offsets on which topic (a reset's topics
// joined by commas), why, from which offsets to which (Offsets, JSON), the records parked in
// DeadLetterTopic (none for a reset), and, for an undo, the action it undoes (Undoes).
// UndoneBy is read, not written: the undo of this action, when there is one.
type GroupAction struct {
	ID              string    `json:"run_id"`
	Action          string    `json:"action"`
	Group           string    `json:"group"`
	Topic           string    `json:"topic"`
	DeadLetterTopic string    `json:"dead_letter_topic"`
	Operator        string    `json:"operator"`
	Reason          string    `json:"reason"`
	Offsets         JSONText  `json:"offsets"`
	Parked          int64     `json:"parked"`
	Undoes          string    `json:"undoes,omitempty"`
	UndoneBy        string    `json:"undone_by,omitempty"`
	At              time.Time `json:"at"`
}

// GroupJournal is implemented by both drivers.
type GroupJournal interface {
	// RecordGroupAction inserts a; its At is the store's. An undo of a skip already undone
	// fails (undoes is unique).
	RecordGroupAction(ctx context.Context, a GroupAction) error
	// GetGroupAction returns the action id, with UndoneBy set; nil when there is none.
	GetGroupAction(ctx context.Context, id string) (*GroupAction, error)
	// ListGroupActions returns the latest limit actions, newest first, with UndoneBy set.
	ListGroupActions(ctx context.Context, limit int) ([]GroupAction, error)
}

// InsertGroupAction is the statement both drivers record a GroupAction with, into table (its
// quoted name), created at now (the dialect's current time in SQL), and GroupActionArgs its
// arguments.
func InsertGroupAction(table, now string) string {
	return `INSERT INTO ` + table + ` (id, action, group_name, topic, dead_letter_topic, operator, reason, offsets, parked, undoes, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), ` + now + `)`
}

// GroupActionArgs are InsertGroupAction's arguments for a.
func GroupActionArgs(a GroupAction) []any {
	return []any{a.ID, a.Action, a.Group, a.Topic, a.DeadLetterTopic, a.Operator, a.Reason, a.Offsets, a.Parked, a.Undoes}
}

// GetGroupAction is the statement both drivers read one action with ($1 its id), and
// ListGroupActions the one they list the newest with ($1 the limit); table is the quoted name.
func GetGroupAction(table string) string { return selectGroupActions(table) + ` WHERE a.id = $1` }

// ListGroupActions: see GetGroupAction.
func ListGroupActions(table string) string {
	return selectGroupActions(table) + ` ORDER BY a.created_at DESC, a.id DESC LIMIT $1`
}

// selectGroupActions reads the actions of table (its quoted name) as a, each with the undo
// that names it (u), in the columns GroupActionDest scans.
func selectGroupActions(table string) string {
	return `SELECT a.id, a.action, a.group_name, a.topic, a.dead_letter_topic, a.operator, a.reason, a.offsets, a.parked,
COALESCE(a.undoes, ''), COALESCE(u.id, ''), a.created_at
FROM ` + table + ` a LEFT JOIN ` + table + ` u ON u.undoes = a.id`
}

// GroupActionDest are the scan destinations of the columns GetGroupAction and ListGroupActions read in a, the last
// (created_at) at, which each driver reads as its own timestamp.
func GroupActionDest(a *GroupAction, at any) []any {
	return []any{&a.ID, &a.Action, &a.Group, &a.Topic, &a.DeadLetterTopic, &a.Operator, &a.Reason, &a.Offsets, &a.Parked, &a.Undoes, &a.UndoneBy, at}
}

// JSONText is a journal column holding JSON as text (a run's selection, an action's counts
// or offsets). Stored and compared as the text it is; encoded to JSON as the value it holds,
// not as a string that holds JSON, so `-o json` prints {"selection": {"from": …}}. Text that
// is not JSON (a row written by hand) is encoded as a JSON string.
type JSONText string

// MarshalJSON writes the text itself when it is JSON, else the text as a JSON string.
func (t JSONText) MarshalJSON() ([]byte, error) {
	if json.Valid([]byte(t)) {
		return []byte(t), nil
	}
	return json.Marshal(string(t))
}

// UnmarshalJSON is MarshalJSON's inverse: a JSON string that holds no JSON is its text,
// any other value is kept as the JSON it is.
func (t *JSONText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil && !json.Valid([]byte(s)) {
		*t = JSONText(s)
		return nil
	}
	*t = JSONText(b)
	return nil
}

// A journal's batches are found for a list of records in two steps (ReplayedSources), so that
// the cost grows with the records and the batches near them, not with the records times every
// batch of their partitions: every run over a dead-letter topic journals batches over the same
// offsets, and a join of each record with each of its partition's batches by range (the one
// statement it was) compared 10,000 records with all of them: `dlq list` of 300,000 dead
// letters took 4.4 s with one replay of them journaled and 12 s with five.
//
//  1. SourceWindows: per partition of the records, the lowest and highest offset asked for; the
//     drivers read the spans (BatchSpan) of the batches that overlap a window, an index range
//     of (source topic, partition, last offset) each.
//  2. SpansHolding: of those spans, the batches whose range holds one of the records' offsets,
//     by a binary search of each partition's sorted offsets per span; the drivers then read
//     those batches whole, by their ids.

// SourceWindow is the range of offsets asked for in one partition.
type SourceWindow struct {
	Topic     string
	Partition int32
	Low, High int64
}

// BatchSpan is where a journaled batch lies: its id and its source partition's range.
type BatchSpan struct {
	ID          int64
	Topic       string
	Partition   int32
	First, Last int64
	// At and RunID are the batch's acknowledgement time and run: which of the batches holding a
	// record's offset is read first (ResolveLatest).
	At    time.Time
	RunID string
}

// SourceWindows is recs' windows, one a partition, in the order first seen.
func SourceWindows(recs []SourceRecord) []SourceWindow {
	at := map[SourceRef]int{}
	var out []SourceWindow
	for _, r := range recs {
		k := SourceRef{Topic: r.Topic, Partition: r.Partition}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, SourceWindow{Topic: r.Topic, Partition: r.Partition, Low: r.Offset, High: r.Offset})
			continue
		}
		out[i].Low, out[i].High = min(out[i].Low, r.Offset), max(out[i].High, r.Offset)
	}
	return out
}
