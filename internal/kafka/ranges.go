package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// ErrUnknownTopic is returned (wrapped) when a topic does not exist.
var ErrUnknownTopic = errors.New("topic does not exist")

// UnknownTopicError names the missing topic.
type UnknownTopicError struct{ Topic string }

func (e *UnknownTopicError) Error() string { return fmt.Sprintf("topic %q does not exist", e.Topic) }
func (e *UnknownTopicError) Unwrap() error { return ErrUnknownTopic }

// ErrorKind says a missing topic is not found (exit 9), as every missing thing is.
func (e *UnknownTopicError) ErrorKind() fwerr.Kind { return fwerr.KindNotFound }

// Selection says which records of a topic to read: the one type of --partition,
// --start-offset, --end-offset, --since and --until, from the flags (cmdutil.SelectionFlags)
// through a plan to the replay journal, which keeps it as JSON with these field names
// (replay.Spec embeds it). Offsets are inclusive on both ends, as an operator says "offsets
// 100 to 200" (the last is last_offset, as every inclusive end in JSON). Times select records
// whose timestamp t satisfies Since <= t < Until (by the broker's time index). Nil/zero
// fields mean "from the start" and "to the end as of now".
type Selection struct {
	Partitions  []int32   `json:"partitions,omitempty"` // empty: every partition
	StartOffset *int64    `json:"start_offset,omitempty"`
	EndOffset   *int64    `json:"last_offset,omitempty"`
	Since       time.Time `json:"since,omitzero"`
	Until       time.Time `json:"until,omitzero"`
}

// Selection is the selection of the one record at a: its partition, from its offset to its
// offset.
func (a RecordAddress) Selection() Selection {
	start, last := a.Offset, a.Offset
	return Selection{Partitions: []int32{a.Partition}, StartOffset: &start, EndOffset: &last}
}

// Ranged reports whether the selection names partitions or offsets.
func (sel Selection) Ranged() bool {
	return len(sel.Partitions) > 0 || sel.StartOffset != nil || sel.EndOffset != nil
}

// Narrowed reports whether anything narrows the selection: partitions, offsets or times.
func (sel Selection) Narrowed() bool {
	return sel.Ranged() || !sel.Since.IsZero() || !sel.Until.IsZero()
}

// PartitionRange is the half-open offset range [Start, End) of one partition, fixed when the
// plan is made. LogStart and HighWatermark are the partition's bounds at that time.
//
// In JSON a range is inclusive at both ends, as every offset range fieldwork writes
// (docs/design.md §4, "Offsets in JSON"): start_offset is its first offset and last_offset
// its last (End-1; start_offset-1 for an empty range), never the exclusive End, which only
// high_watermark, an exclusive bound by Kafka's definition, is.
type PartitionRange struct {
	Topic         string
	Partition     int32
	Start         int64
	End           int64
	LogStart      int64
	HighWatermark int64
}

// partitionRangeJSON is a PartitionRange as JSON.
type partitionRangeJSON struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Start         int64  `json:"start_offset"`
	Last          int64  `json:"last_offset"`
	LogStart      int64  `json:"log_start_offset"`
	HighWatermark int64  `json:"high_watermark"`
}

// MarshalJSON writes the range inclusive at both ends (start_offset, last_offset).
func (r PartitionRange) MarshalJSON() ([]byte, error) {
	return json.Marshal(partitionRangeJSON{Topic: r.Topic, Partition: r.Partition, Start: r.Start, Last: r.End - 1,
		LogStart: r.LogStart, HighWatermark: r.HighWatermark})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *PartitionRange) UnmarshalJSON(b []byte) error {
	var j partitionRangeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = PartitionRange{Topic: j.Topic, Partition: j.Partition, Start: j.Start, End: j.Last + 1, LogStart: j.LogStart, HighWatermark: j.HighWatermark}
	return nil
}

// Len is the number of offsets in the range (records, less compacted or control ones).
func (r PartitionRange) Len() int64 { return max(0, r.End-r.Start) }

// PartitionBounds are a partition's log start, last stable offset and high watermark.
type PartitionBounds struct {
	Partition     int32
	LogStart      int64
	LastStable    int64
	HighWatermark int64
}

// PartitionOf is partition p's bounds among a topic's (Bounds), or the not-found error that
// names the partitions the topic has.
func PartitionOf(topic string, bounds []PartitionBounds, p int32) (PartitionBounds, error) {
	for _, b := range bounds {
		if b.Partition == p {
			return b, nil
		}
	}
	return PartitionBounds{}, fwerr.NotFoundf("topic %s has no partition %d (partitions 0..%d)", topic, p, len(bounds)-1)
}

// Bounds lists every partition's offsets of topic, sorted by partition. A missing topic is an
// *UnknownTopicError.
func (c *Cluster) Bounds(ctx context.Context, topic string) ([]PartitionBounds, error) {
	starts, err := c.Admin.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, Denied(fmt.Errorf("list start offsets of %s: %w", topic, err), OpDescribe, ResourceTopic, topic)
	}
	if err := topicErr(topic, starts[topic]); err != nil {
		return nil, err
	}
	ends, err := c.Admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, Denied(fmt.Errorf("list end offsets of %s: %w", topic, err), OpDescribe, ResourceTopic, topic)
	}
	stable, err := c.Admin.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, Denied(fmt.Errorf("list stable offsets of %s: %w", topic, err), OpDescribe, ResourceTopic, topic)
	}
	var out []PartitionBounds
	for p, s := range starts[topic] {
		if s.Err != nil {
			return nil, Denied(fmt.Errorf("start offset of %s/%d: %w", topic, p, s.Err), OpDescribe, ResourceTopic, topic)
		}
		e, ok := ends[topic][p]
		if !ok {
			return nil, fmt.Errorf("end offset of %s/%d: the broker did not report it", topic, p)
		}
		if e.Err != nil {
			return nil, Denied(fmt.Errorf("end offset of %s/%d: %w", topic, p, e.Err), OpDescribe, ResourceTopic, topic)
		}
		ls := e.Offset
		if st, ok := stable[topic][p]; ok && st.Err == nil {
			ls = st.Offset
		}
		out = append(out, PartitionBounds{Partition: p, LogStart: s.Offset, LastStable: ls, HighWatermark: e.Offset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}

// topicErr turns kadm's marker for a missing topic (partition -1 with
// UNKNOWN_TOPIC_OR_PARTITION, or no partitions at all) into an *UnknownTopicError.
func topicErr(topic string, parts map[int32]kadm.ListedOffset) error {
	if len(parts) == 0 {
		return &UnknownTopicError{Topic: topic}
	}
	if o, ok := parts[-1]; ok {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return &UnknownTopicError{Topic: topic}
		}
		return Denied(fmt.Errorf("topic %s: %w", topic, o.Err), OpDescribe, ResourceTopic, topic)
	}
	return nil
}

// Plan fixes the ranges to read for sel, taking the end offsets now: records that arrive later
// are never read. Offsets outside a partition's bounds, an inverted range or an unknown
// partition are usage errors whose message gives the valid range.
func (c *Cluster) Plan(ctx context.Context, topic string, sel Selection) ([]PartitionRange, error) {
	bounds, err := c.Bounds(ctx, topic)
	if err != nil {
		return nil, err
	}
	// A selection Check refuses fails before the broker is asked for offsets by time.
	if err := sel.Check(); err != nil {
		return nil, err
	}
	var sinceOffsets, untilOffsets map[int32]int64
	if !sel.Since.IsZero() {
		if sinceOffsets, err = c.OffsetsAfter(ctx, topic, sel.Since); err != nil {
			return nil, err
		}
	}
	if !sel.Until.IsZero() {
		if untilOffsets, err = c.OffsetsAfter(ctx, topic, sel.Until); err != nil {
			return nil, err
		}
	}
	return planRanges(topic, bounds, sel, sinceOffsets, untilOffsets)
}

// Check is the one rule of a selection, for every command that takes --partition,
// --start-offset, --end-offset, --since and --until, and for a replay's journaled selection:
// partitions and offsets are not negative, a range does not end before it starts, a window
// is not empty, and a selection is an offset range or a time window, not both. Each failure
// is a usage error naming its flag.
func (sel Selection) Check() error {
	for _, p := range sel.Partitions {
		if p < 0 {
			return fwerr.Usagef("--partition %d: partitions are numbered from 0", p)
		}
	}
	if (sel.StartOffset != nil || sel.EndOffset != nil) && (!sel.Since.IsZero() || !sel.Until.IsZero()) {
		return fwerr.Usagef("choose either an offset range (--start-offset/--end-offset) or a time window (--since/--until), not both")
	}
	if sel.StartOffset != nil && *sel.StartOffset < 0 {
		return fwerr.Usagef("--start-offset %d: offsets are not negative", *sel.StartOffset)
	}
	if sel.EndOffset != nil && *sel.EndOffset < 0 {
		return fwerr.Usagef("--end-offset %d: offsets are not negative", *sel.EndOffset)
	}
	if sel.StartOffset != nil && sel.EndOffset != nil && *sel.EndOffset < *sel.StartOffset {
		return fwerr.Usagef("--end-offset %d is before --start-offset %d", *sel.EndOffset, *sel.StartOffset)
	}
	return CheckWindow(sel.Since, sel.Until)
}

// CheckWindow refuses a time window that ends before it starts (a zero bound is open).
func CheckWindow(since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && !until.After(since) {
		return fwerr.Usagef("--until %s is not after --since %s", until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	return nil
}

// planRanges is Plan once the broker has answered: bounds are the topic's partitions, and
// sinceOffsets and untilOffsets the first offset at or after sel.Since and sel.Until in each
// (nil when the selection has no such time). It gives one range per selected partition, each
// once in the order first named (a partition named twice would be read once but counted
// twice), with LogStart <= Start <= End <= HighWatermark. Only records at offsets below
// LastStable are selected.
func planRanges(topic string, bounds []PartitionBounds, sel Selection, sinceOffsets, untilOffsets map[int32]int64) ([]PartitionRange, error) {
	if err := sel.Check(); err != nil {
		return nil, err
	}
	var parts []int32
	if len(sel.Partitions) == 0 {
		for _, b := range bounds {
			parts = append(parts, b.Partition)
		}
	} else {
		seen := make(map[int32]bool, len(sel.Partitions))
		for _, p := range sel.Partitions {
			if !seen[p] {
				seen[p] = true
				parts = append(parts, p)
			}
		}
	}
	out := make([]PartitionRange, 0, len(parts))
	for _, p := range parts {
		b, err := PartitionOf(topic, bounds, p)
		if err != nil {
			return nil, err
		}
		r := PartitionRange{Topic: topic, Partition: p, Start: b.LogStart, End: b.LastStable, LogStart: b.LogStart, HighWatermark: b.HighWatermark}
		if sel.StartOffset != nil {
			s := *sel.StartOffset
			if s < b.LogStart || s >= b.HighWatermark {
				return nil, fwerr.NotFoundf("start offset %d is outside %s/%d, whose records are at offsets %s", s, topic, p, validRange(b))
			}
			r.Start = s
		}
		if sel.EndOffset != nil {
			e := *sel.EndOffset
			if e < b.LogStart || e >= b.HighWatermark {
				return nil, fwerr.NotFoundf("end offset %d is outside %s/%d, whose records are at offsets %s", e, topic, p, validRange(b))
			}
			r.End = min(e+1, b.LastStable)
		}
		if o, ok := sinceOffsets[p]; ok {
			// Records written after the bounds were taken can put the offset at a time past
			// the high watermark: the range is then empty, at the high watermark.
			r.Start = max(r.Start, min(o, b.HighWatermark))
		}
		if o, ok := untilOffsets[p]; ok {
			r.End = min(r.End, o)
		}
		if r.End < r.Start {
			r.End = r.Start
		}
		out = append(out, r)
	}
	return out, nil
}

func validRange(b PartitionBounds) string {
	if b.HighWatermark <= b.LogStart {
		return "none (the partition is empty)"
	}
	return fmt.Sprintf("%d..%d", b.LogStart, b.HighWatermark-1)
}

// OffsetsAfter returns, per partition, the first offset whose timestamp is >= t (the end
// offset when there is none).
func (c *Cluster) OffsetsAfter(ctx context.Context, topic string, t time.Time) (map[int32]int64, error) {
	listed, err := c.Admin.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topic)
	if err != nil {
		return nil, Denied(fmt.Errorf("list offsets of %s at %s: %w", topic, t.Format(time.RFC3339), err), OpDescribe, ResourceTopic, topic)
	}
	out := make(map[int32]int64)
	for p, o := range listed[topic] {
		if o.Err != nil {
			if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
				return nil, &UnknownTopicError{Topic: topic}
			}
			return nil, Denied(fmt.Errorf("offset of %s/%d at %s: %w", topic, p, t.Format(time.RFC3339), o.Err), OpDescribe, ResourceTopic, topic)
		}
		out[p] = o.Offset
	}
	return out, nil
}

// Total is the number of offsets in all ranges.
func Total(ranges []PartitionRange) int64 {
	var n int64
	for _, r := range ranges {
		n += r.Len()
	}
	return n
}

// Fetch sizes of Read. franz-go decodes a whole fetch response into records as soon as it
// arrives, and event and dead-letter topics compress well: 32 MiB fetches became several
// hundred MiB of decoded records at once on a topic of a million records. Fetches of at most
// 512 KiB (256 KiB a partition), one more in flight and one taken ahead (poller) while the
// previous one is processed, keep a reader under 100 MiB and still read faster than kcat
// (internal/dlq/bench). A broker sends a batch larger than the limit anyway, so nothing
// stalls.
const (
	readFetchMaxBytes     = 512 << 10
	readFetchPartBytes    = 256 << 10
	readConcurrentFetches = 2
)

// Read calls fn for every record in ranges, per partition in offset order (partitions
// interleave), and returns when every range is exhausted. It never waits for records beyond
// the planned end offsets: it reads committed data with control records kept, so a
// transaction marker at the end of a range still moves the position past it, and an empty
// range is never fetched. Aborted transactional records are not delivered. A non-nil error
// from fn stops the read and is returned. A topic deleted while it is read ends the read with
// an *UnknownTopicError, within readIdle of its last records.
func (c *Cluster) Read(ctx context.Context, ranges []PartitionRange, fn func(*kgo.Record) error) error {
	return c.ReadSkipping(ctx, ranges, fn, nil)
}

// ReadSkipping is Read that skips a topic deleted while it is read, when deleted is not nil:
// deleted is told its name, what was read of it stays read, and the other ranges are read on.
func (c *Cluster) ReadSkipping(ctx context.Context, ranges []PartitionRange, fn func(*kgo.Record) error, deleted func(topic string)) error {
	remaining := make(map[string]map[int32]int64) // topic → partition → end (exclusive)
	consume := make(map[string]map[int32]kgo.Offset)
	for _, r := range ranges {
		if r.Len() == 0 {
			continue
		}
		if remaining[r.Topic] == nil {
			remaining[r.Topic] = map[int32]int64{}
			consume[r.Topic] = map[int32]kgo.Offset{}
		}
		remaining[r.Topic][r.Partition] = r.End
		consume[r.Topic][r.Partition] = kgo.NewOffset().At(r.Start)
	}
	if len(consume) == 0 {
		return nil
	}
	cl, err := c.reader(consume, kgo.KeepControlRecords(), kgo.MaxConcurrentFetches(readConcurrentFetches))
	if err != nil {
		return err
	}
	defer cl.Close()
	polls := startPoller(ctx, cl)
	defer polls.stop()
	left := 0
	for _, ps := range remaining {
		left += len(ps)
	}
	for left > 0 {
		// The whole buffered fetch at once: the next one is fetched while this one is read.
		fetches, idle := polls.poll(ctx)
		if err := ctx.Err(); err != nil {
			return fwerr.Wrap(fwerr.KindInterrupted, err)
		}
		if idle {
			// The client retries a deleted topic's partitions quietly, for ever: ask.
			for _, t := range c.goneOf(ctx, remaining) {
				if deleted == nil {
					return &UnknownTopicError{Topic: t}
				}
				left -= len(remaining[t])
				delete(remaining, t)
				cl.PauseFetchTopics(t)
				deleted(t)
			}
			continue
		}
		if err := fetchError(fetches); err != nil {
			return err
		}
		var stop error
		fetches.EachPartition(func(ft kgo.FetchTopicPartition) {
			end, ok := remaining[ft.Topic][ft.Partition]
			if stop != nil || !ok {
				return
			}
			done, err := deliver(ft, end, fn)
			if stop = err; done {
				delete(remaining[ft.Topic], ft.Partition)
				cl.PauseFetchPartitions(map[string][]int32{ft.Topic: {ft.Partition}})
				left--
			}
		})
		if stop != nil {
			return stop
		}
	}
	return nil
}

// deliver hands fn ft's records below end, control records left out, and says whether the
// partition's range is read to its end. An error from fn stops it and is returned.
func deliver(ft kgo.FetchTopicPartition, end int64, fn func(*kgo.Record) error) (done bool, err error) {
	for _, rec := range ft.Records {
		if rec.Offset >= end {
			break
		}
		if !rec.Attrs.IsControl() {
			if err := fn(rec); err != nil {
				return false, err
			}
		}
		if rec.Offset >= end-1 {
			break
		}
	}
	n := len(ft.Records)
	return n > 0 && ft.Records[n-1].Offset >= end-1, nil
}

// readIdle is how long Read waits for a fetch before it asks whether the topics it still
// reads exist: a topic deleted after it was planned is never fetched again, and the client
// retries its partitions without a word.
const readIdle = 2 * time.Second

// pollOrIdle is cl's next fetches, or idle when none came within readIdle (the fetches are
// then only the poll's own deadline).
func pollOrIdle(ctx context.Context, cl *kgo.Client) (kgo.Fetches, bool) {
	poll, cancel := context.WithTimeout(ctx, readIdle)
	defer cancel()
	fetches := cl.PollFetches(poll)
	return fetches, ctx.Err() == nil && fetches.NumRecords() == 0 && errors.Is(fetches.Err0(), context.DeadlineExceeded)
}

// poller polls a reader's client on a goroutine of its own (pollOrIdle), one poll ahead of the
// read (which holds one fetch more in memory): the client fetches the next records only once
// the last ones are taken, and a read that takes them when it is done with the previous ones
// leaves the client waiting, for the fetch and then for a core to decode it on, while the read
// waits for the client. Taken at once, the next fetch is decoded while the read works. What
// the client fetched of a partition paused since is handed on as any other fetch: the reads
// drop or hold it as before.
type poller struct {
	next   chan polled
	cancel context.CancelFunc
	done   chan struct{}
}

// polled is one pollOrIdle.
type polled struct {
	fetches kgo.Fetches
	idle    bool
}

// startPoller starts polling cl until ctx ends or stop.
func startPoller(ctx context.Context, cl *kgo.Client) *poller {
	ctx, cancel := context.WithCancel(ctx)
	p := &poller{next: make(chan polled), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			f, idle := pollOrIdle(ctx, cl)
			select {
			case p.next <- polled{f, idle}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

// poll is the next pollOrIdle of the client; nothing once ctx is done (the reads check ctx
// after each poll).
func (p *poller) poll(ctx context.Context) (kgo.Fetches, bool) {
	select {
	case r := <-p.next:
		return r.fetches, r.idle
	case <-ctx.Done():
		return nil, false
	}
}

// stop stops polling and returns once the poller's goroutine has: before the client closes.
func (p *poller) stop() {
	p.cancel()
	<-p.done
}

// goneOf lists the topics of remaining (those with partitions left to read) that no longer
// exist.
func (c *Cluster) goneOf(ctx context.Context, remaining map[string]map[int32]int64) []string {
	var topics []string
	for t, ps := range remaining {
		if len(ps) > 0 {
			topics = append(topics, t)
		}
	}
	return c.TopicsGone(ctx, topics...)
}

// TopicsGone lists, sorted, those of topics that no longer exist, asking the cluster once. A
// failed question is no answer: none.
func (c *Cluster) TopicsGone(ctx context.Context, topics ...string) []string {
	if len(topics) == 0 {
		return nil
	}
	details, err := c.Admin.ListTopics(ctx, topics...)
	if err != nil {
		return nil
	}
	var gone []string
	for _, t := range topics {
		if d, ok := details[t]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			gone = append(gone, t)
		}
	}
	sort.Strings(gone)
	return gone
}

// TopicGone reports whether topic no longer exists (TopicsGone).
func (c *Cluster) TopicGone(ctx context.Context, topic string) bool {
	return len(c.TopicsGone(ctx, topic)) > 0
}

// reader is the client Read and Follow read with: partitions from the given offsets, read
// committed, fetches bounded by readFetchMaxBytes and readFetchPartBytes, plus extra.
func (c *Cluster) reader(consume map[string]map[int32]kgo.Offset, extra ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(append(c.Options(),
		kgo.ConsumePartitions(consume),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(readFetchMaxBytes),
		kgo.FetchMaxPartitionBytes(readFetchPartBytes),
	), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka reader: %w", err)
	}
	return cl, nil
}

// fetchError is the first error of a poll (a cancellation aside), a denial classified as
// READ on its topic.
func fetchError(fetches kgo.Fetches) error {
	var ferr error
	fetches.EachError(func(t string, p int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) {
			ferr = Denied(fmt.Errorf("fetch %s/%d: %w", t, p, err), OpRead, ResourceTopic, t)
		}
	})
	return ferr
}
