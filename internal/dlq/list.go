package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Entry is a dead letter as `dlq list` shows it: the normalised view and, when a store was
// given, its status.
type Entry struct {
	DeadLetter
	Status StatusInfo
	// Duplicates are the addresses of the other dead letters of the same record that a
	// listing folded into this one (a share group's broker may write several: see
	// collapser); nil when none.
	Duplicates []kafka.RecordAddress
	// DuplicateOf is, for a share group's dead letter that a follow found after the first
	// dead letter of the same record had been shown (Follow: a stream, whose lines are not
	// revised), that first one's address; nil otherwise.
	DuplicateOf *kafka.RecordAddress
}

// MarshalJSON writes the DeadLetter's fields (see DeadLetter.MarshalJSON) followed by status:
// its Status, or null when it was not looked up; last_replay: the latest journaled replay of
// the dead letter (StatusInfo.Replay, whatever the status), null when none is known; and,
// only when the listing folded other dead letters of the same record into it, duplicates:
// their addresses; only when a follow found it after the first of its record,
// duplicate_of: that one's address.
func (e Entry) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends what MarshalJSON writes to dst (see DeadLetter.AppendJSON).
func (e Entry) AppendJSON(dst []byte) ([]byte, error) {
	out := append(dst, e.ahead...)
	if e.ahead == nil {
		var err error
		if out, err = e.DeadLetter.appendJSON(dst); err != nil {
			return nil, err
		}
	}
	out = append(out[:len(out)-1], `,"status":`...)
	if e.Status.Status == "" {
		out = append(out, "null"...)
	} else {
		out = appendJSONString(out, string(e.Status.Status))
	}
	out = append(out, `,"last_replay":`...)
	if e.Status.Replay == nil {
		out = append(out, "null"...)
	} else {
		b, err := json.Marshal(e.Status.Replay)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	if len(e.Duplicates) > 0 {
		out = append(out, `,"duplicates":[`...)
		for i, a := range e.Duplicates {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSONString(out, a.String())
		}
		out = append(out, ']')
	}
	if e.DuplicateOf != nil {
		out = append(out, `,"duplicate_of":`...)
		out = appendJSONString(out, e.DuplicateOf.String())
	}
	return append(out, '}'), nil
}

// jsonField is one field appended to an object by appendJSONFields.
type jsonField struct {
	name  string
	value any
}

// appendJSONFields appends to dst the JSON object of d (DeadLetter.AppendJSON) with fields
// added at its end, in order.
func appendJSONFields(dst []byte, d DeadLetter, fields ...jsonField) ([]byte, error) {
	start := len(dst)
	out, err := d.AppendJSON(dst)
	if err != nil {
		return nil, err
	}
	if len(out)-start < 2 || out[len(out)-1] != '}' {
		return nil, errors.New("dlq: a dead letter's JSON is not an object")
	}
	out = out[:len(out)-1]
	for _, f := range fields {
		if len(out)-start > 1 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(f.name)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// ListOptions select the dead letters List hands on.
type ListOptions struct {
	Filter Filter
	// Lookup tells statuses; without a store no status is looked up.
	Lookup StatusLookup
	// Statuses keeps only dead letters with one of these statuses (a store is needed).
	Statuses []Status
	// Limit stops the listing after this many dead letters; 0 is no limit.
	Limit int
	// StatusBatch is how many dead letters are looked up together (DefaultStatusBatch).
	StatusBatch int
	// JSON says the entries will be written as JSON (Entry.AppendJSON) by emit, before it
	// returns, as output.Stream's Write writes them: a scan reading ahead (ScanOptions.Ahead)
	// then writes each dead letter's JSON beside the scan too, into memory written over once
	// emit has returned (without a status lookup), so emit must not keep an entry to write
	// it later.
	JSON bool
}

// aheadJSON is what a scan reading ahead writes of the entries' JSON for o (ListOptions.JSON).
// A status lookup holds a batch of dead letters before they are handed on: their JSON then
// needs memory of its own.
func (o ListOptions) aheadJSON() aheadJSON {
	switch {
	case !o.JSON:
		return aheadNoJSON
	case o.Lookup.Enabled():
		return aheadJSONKept
	}
	return aheadJSONReused
}

// ListResult says what List did.
type ListResult struct {
	ScanResult
	// Listed is the number of dead letters handed to emit.
	Listed int
	// More is true when the limit was reached and at least one more dead letter matched.
	More bool
	// Shares are the scan's topics, in scan order, with what each had listed of the limit and
	// whether the limit left some of its dead letters out (see List); nil without a limit.
	Shares []TopicShare
}

// TopicShare is one topic's part of a limit: the dead letters of it that were listed and,
// when the limit left some out, at most how many.
type TopicShare struct {
	Topic  string
	Listed int
	// More is true when at least one of the topic's dead letters is left out.
	More bool
	// Left is at most how many are left out when More: the offsets not read of the topic's
	// partitions that had more (the filters and compaction may leave fewer); 0 otherwise.
	Left int64
}

// List runs s and hands emit every dead letter that passes the filter and the status filter,
// until the limit. Statuses are looked up in batches while the scan streams: emit is called
// late by at most a batch.
//
// The limit is shared fairly (docs/design.md §4): evenly among the scan's topics and, within
// a topic, evenly among its partitions, what a small topic or partition does not use going to
// the others (water-filling: each gets as many as it has, up to one level, the highest level
// the limit allows, the remainder one each to the first ones in scan order). The counts are
// not known before reading, so the shares are worked out in rounds: the first from the
// partitions' offsets (what each can have at most), each partition then read from where it
// stopped until it has its share and one more dead letter (so that "more remain" is never a
// guess) or to its end (what it has is then known), and the shares worked out again from
// what the rounds found, never below what was listed, until every partition has its share.
// A round is one read of its partitions, one after another (kafka.Cluster.ReadInOrder).
// Dead letters are handed on as they are found, in topic, partition and offset order within
// a round; what a later round adds (a partition that had fewer than its offsets promised left
// room) follows. Nothing else is held back: memory does not grow with the limit. A share
// group's dead letters are the exception: those of one DLQ partition are held until the
// partition is read, so that the dead letters of one record are listed once, in one row of
// the limit (Entry.Duplicates). Shares says what
// each topic had listed and which the limit cut. Without a limit everything is listed in scan
// order. The scan must read in order (ScanOptions.InOrder).
func List(ctx context.Context, s *Scan, o ListOptions, emit func(Entry) error) (ListResult, error) {
	if o.Limit <= 0 {
		return listAll(ctx, s, o, emit)
	}
	var res ListResult
	parts := make([]partShare, 0, len(s.ranges))
	for _, r := range s.ranges {
		parts = append(parts, partShare{r: r})
	}
	if s.opts.Progress != nil {
		s.opts.Progress(0, s.Total())
	}
	read := s.reader()
	// One batcher for every read (the topic IDs it asked for are kept). A round reads its
	// partitions in one read, each from where it stopped: once a partition has its share and
	// one more dead letter (more, r.Start then at that one), its read ends there
	// (kafka.ErrSkipPartition), and what the read had gone on to parse of it is passed over.
	at := make(map[kafka.TopicPartition]*partShare, len(parts))
	for i := range parts {
		at[kafka.TopicPartition{Topic: parts[i].r.Topic, Partition: parts[i].r.Partition}] = &parts[i]
	}
	partOf := func(topic string, partition int32) *partShare {
		return at[kafka.TopicPartition{Topic: topic, Partition: partition}]
	}
	col := newCollapser(emit)
	b := NewStatusBatcher(o.Lookup, o.StatusBatch, func(d DeadLetter, info StatusInfo) error {
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, info.Status) {
			return nil
		}
		p := partOf(d.Topic, d.Partition)
		if p.more {
			return nil
		}
		if dup, err := col.duplicate(&d); dup || err != nil {
			return err
		}
		if p.taken >= p.share {
			p.more, p.r.Start = true, d.Offset
			return nil
		}
		p.taken++
		res.Listed++
		return col.add(Entry{DeadLetter: d, Status: info})
	})
	gate := func(r *kgo.Record) error {
		if partOf(r.Topic, r.Partition).more {
			return kafka.ErrSkipPartition
		}
		return nil
	}
	for {
		round := s.nextRound(parts, o.Limit)
		if len(round) == 0 {
			break
		}
		err := s.read(ctx, round, o.Filter, read, o.aheadJSON(), gate, &res.ScanResult, func(d DeadLetter) error { return b.Add(ctx, d) })
		if err == nil {
			err = b.Flush(ctx)
		}
		if err == nil {
			err = col.flush()
		}
		if errors.Is(err, ErrStop) {
			res.Stopped = true
			return res, nil
		}
		if err != nil {
			return res, err
		}
		for _, r := range round {
			if p := partOf(r.Topic, r.Partition); !p.more {
				p.done = true // read to its end: what it listed is all it has
			}
		}
	}
	s.shares(parts, &res)
	res.Stopped = res.More
	s.progressEnd(res.ScanResult)
	return res, nil
}

// nextRound works the shares of limit out again from what parts have listed, and returns the
// ranges of the partitions the next round reads, each from where it stopped, with their
// shares set; none when every partition has its share or is read to its end.
func (s *Scan) nextRound(parts []partShare, limit int) []kafka.PartitionRange {
	shares := allot(int64(limit), parts)
	var round []kafka.PartitionRange
	for i := range parts {
		p := &parts[i]
		if slices.Contains(s.deleted, p.r.Topic) {
			p.done, p.more = true, false // a topic deleted while it was read has no more
		}
		if p.done || (p.more && int64(p.taken) >= shares[i]) {
			continue
		}
		p.share, p.more = int(shares[i]), false
		round = append(round, p.r)
	}
	return round
}

// shares sets what each topic had listed of the limit, and whether the limit cut it.
func (s *Scan) shares(parts []partShare, res *ListResult) {
	for _, p := range parts {
		if slices.Contains(s.deleted, p.r.Topic) {
			continue
		}
		if n := len(res.Shares); n == 0 || res.Shares[n-1].Topic != p.r.Topic {
			res.Shares = append(res.Shares, TopicShare{Topic: p.r.Topic})
		}
		t := &res.Shares[len(res.Shares)-1]
		t.Listed += p.taken
		if p.more {
			t.More, t.Left = true, t.Left+p.r.Len()
			res.More = true
		}
	}
}

// partShare is one partition's part of a shared limit, as List works it out.
type partShare struct {
	// r is the partition's planned range, its Start moved to where reading goes on.
	r     kafka.PartitionRange
	taken int  // dead letters listed
	share int  // at most how many it lists, as of the round being read
	done  bool // read to its end: taken is all it has
	more  bool // one more dead letter was found, at r.Start: its round's read of it ends
}

// most is at most how many dead letters p has: what it listed, and every offset not read
// unless it was read to its end.
func (p partShare) most() int64 {
	if p.done {
		return int64(p.taken)
	}
	return int64(p.taken) + p.r.Len()
}

// allot shares limit among parts: among their topics by fill, each topic's part among its
// partitions by fill again, none below what it has listed.
func allot(limit int64, parts []partShare) []int64 {
	var topicFloor, topicCap []int64
	var first []int // the index of each topic's first partition
	for i, p := range parts {
		if i == 0 || parts[i-1].r.Topic != p.r.Topic {
			first = append(first, i)
			topicFloor, topicCap = append(topicFloor, 0), append(topicCap, 0)
		}
		t := len(first) - 1
		topicFloor[t] += int64(p.taken)
		topicCap[t] += p.most()
	}
	topicShare := fill(limit, topicFloor, topicCap)
	out := make([]int64, 0, len(parts))
	for t, from := range first {
		to := len(parts)
		if t+1 < len(first) {
			to = first[t+1]
		}
		floor, capacity := make([]int64, 0, to-from), make([]int64, 0, to-from)
		for _, p := range parts[from:to] {
			floor, capacity = append(floor, int64(p.taken)), append(capacity, p.most())
		}
		out = append(out, fill(topicShare[t], floor, capacity)...)
	}
	return out
}

// fill shares n among parts that each have at least floor[i] and at most capacity[i]
// (floor ≤ capacity, the floors adding up to at most n): part i gets
// max(floor[i], min(capacity[i], level)) at the highest level whose total is at most n, and
// what that leaves of n goes one each to the first parts, in order, that are at the level and
// could take more. When the capacities add up to at most n, each gets its capacity.
func fill(n int64, floor, capacity []int64) []int64 {
	at := func(level int64) (total int64) {
		for i := range floor {
			total += max(floor[i], min(capacity[i], level))
		}
		return total
	}
	var top int64
	for _, c := range capacity {
		top = max(top, c)
	}
	if at(top) <= n {
		return slices.Clone(capacity)
	}
	lo, hi := int64(0), top // at(lo) <= n < at(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if at(mid) <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	out := make([]int64, len(floor))
	left := n
	for i := range floor {
		out[i] = max(floor[i], min(capacity[i], lo))
		left -= out[i]
	}
	for i := range out {
		if left == 0 {
			break
		}
		if out[i] == lo && capacity[i] > lo {
			out[i]++
			left--
		}
	}
	return out
}

// listAll is List without a limit: every dead letter, in scan order.
func listAll(ctx context.Context, s *Scan, o ListOptions, emit func(Entry) error) (ListResult, error) {
	var res ListResult
	col := newCollapser(emit)
	b := NewStatusBatcher(o.Lookup, o.StatusBatch, func(d DeadLetter, info StatusInfo) error {
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, info.Status) {
			return nil
		}
		if dup, err := col.duplicate(&d); dup || err != nil {
			return err
		}
		res.Listed++
		return col.add(Entry{DeadLetter: d, Status: info})
	})
	sr, err := s.run(ctx, o.Filter, o.aheadJSON(), func(d DeadLetter) error { return b.Add(ctx, d) })
	res.ScanResult = sr
	if err == nil && !sr.Stopped {
		err = b.Flush(ctx)
		if err == nil {
			err = col.flush()
		}
		if errors.Is(err, ErrStop) {
			res.Stopped, err = true, nil
		}
	}
	return res, err
}
