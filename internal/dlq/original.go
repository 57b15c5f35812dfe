package dlq

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/printable"
)

// OriginalState says whether the source topic still holds a dead letter's original record, at
// the coordinates its headers name (docs/design.md §3.3, the metadata-only replay rule).
type OriginalState string

// The states of an original record. Every state but OriginalFound means the record is gone:
// a replay refuses the dead letter when it holds no copy of the record (CoordinatesOnly).
const (
	// OriginalFound: the record is at its coordinates.
	OriginalFound OriginalState = "found"
	// OriginalExpired: its offset is below the partition's log start: retention or a
	// delete-records request removed it.
	OriginalExpired OriginalState = "expired"
	// OriginalCompacted: its offset is inside the partition's log, but no record is there:
	// compaction removed it (or it was an aborted transaction's).
	OriginalCompacted OriginalState = "compacted"
	// OriginalRecreated: the topic was deleted and created again under its name: the
	// partition is gone, the offset is at or beyond the partition's end, or the record there
	// was written after the dead letter (a later timestamp), or differs from the dead letter's
	// copy of it. Either way the record at those coordinates is not the one dead-lettered.
	OriginalRecreated OriginalState = "recreated"
	// OriginalDeleted: the topic no longer exists.
	OriginalDeleted OriginalState = "deleted"
	// OriginalPending: the offset is at or beyond the last stable offset (an open
	// transaction): not readable yet.
	OriginalPending OriginalState = "pending"
)

// Original is a dead letter's original record as its source topic holds it now.
type Original struct {
	// Topic, Partition and Offset are the coordinates the dead letter names.
	Topic     string
	Partition int32
	Offset    int64
	State     OriginalState
	// Detail says why, in words, when the record is not found.
	Detail string
	// Record is the record read, for OriginalFound; nil otherwise.
	Record *kgo.Record
}

// Found reports whether the record is at its coordinates.
func (o Original) Found() bool { return o.State == OriginalFound }

// MarshalJSON writes topic, partition, offset, state, detail and, when found, the record's
// timestamp, key, value and headers as a dead letter's are written (text when printable, else
// base64 beside it).
func (o Original) MarshalJSON() ([]byte, error) {
	out := struct {
		Topic       string             `json:"topic"`
		Partition   int32              `json:"partition"`
		Offset      int64              `json:"offset"`
		State       OriginalState      `json:"state"`
		Detail      string             `json:"detail,omitempty"`
		Timestamp   *time.Time         `json:"timestamp,omitempty"`
		Key         *string            `json:"key,omitempty"`
		KeyBase64   []byte             `json:"key_base64,omitempty"`
		Value       *string            `json:"value,omitempty"`
		ValueBase64 []byte             `json:"value_base64,omitempty"`
		Headers     []printable.Header `json:"headers,omitempty"`
	}{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, State: o.State, Detail: o.Detail}
	if r := o.Record; r != nil {
		ts := r.Timestamp.UTC()
		out.Timestamp = &ts
		out.Key, out.KeyBase64 = printable.Text(r.Key)
		out.Value, out.ValueBase64 = printable.Text(r.Value)
		out.Headers = make([]printable.Header, len(r.Headers))
		for i, h := range r.Headers {
			out.Headers[i] = printable.HeaderOf(h.Key, h.Value)
		}
	}
	return json.Marshal(out)
}

// originalSpread is how far apart two wanted offsets of one partition may be and still be
// read in one pass: the records between them are read and dropped.
const originalSpread = 4096

// Originals reads the original records of ds from their source topics, by the coordinates
// their headers name, and says of each whether it is still there (OriginalState). The result
// is in the order of ds; a dead letter that names no topic, partition and offset gets the zero
// Original (State ""). Each source topic's bounds are asked once, and the records of a
// partition are read in as few passes as their spread allows.
//
// The rule (docs/design.md §3.3): a missing topic is deleted; a missing partition, or an offset
// at or beyond the partition's end, recreated (a record that was delivered was below the end,
// and offsets only grow); an offset below the log start expired; one at or beyond the last
// stable offset pending; inside the log with no record there compacted. A record found is
// recreated when it was written after the dead letter (its timestamp is later than the dead
// letter's: a record is delivered, then dead-lettered) or, when the dead letter holds a copy,
// its key or value differ from the copy's. The timestamp test trusts the clocks: a producer
// whose clock runs ahead of the broker's can make a record look later than it was.
//
// An error is returned only when the cluster cannot be asked (a denial, a lost connection).
func Originals(ctx context.Context, c *kafka.Cluster, ds []DeadLetter) ([]Original, error) {
	out := make([]Original, len(ds))
	type want struct {
		part   int32
		offset int64
		at     int
	}
	byTopic := map[string][]want{}
	for i := range ds {
		d := &ds[i]
		if !kafka.ValidTopic(d.OriginalTopic) || d.OriginalPartition == nil || d.OriginalOffset == nil {
			continue
		}
		out[i] = Original{Topic: d.OriginalTopic, Partition: *d.OriginalPartition, Offset: *d.OriginalOffset}
		byTopic[d.OriginalTopic] = append(byTopic[d.OriginalTopic], want{*d.OriginalPartition, *d.OriginalOffset, i})
	}
	var reads [][]kafka.PartitionRange // passes: at most one range a partition each
	wanted := map[kafka.RecordAddress][]int{}
	for _, topic := range sortedKeys(byTopic) {
		bounds, err := c.Bounds(ctx, topic)
		// A topic being deleted answers for its partitions before it answers for itself.
		if errors.Is(err, kafka.ErrUnknownTopic) || errors.Is(err, kerr.UnknownTopicOrPartition) {
			for _, w := range byTopic[topic] {
				out[w.at].deleted()
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		byPart := map[int32][]int64{}
		for _, w := range byTopic[topic] {
			o := &out[w.at]
			if o.locate(bounds) {
				a := kafka.RecordAddress{Topic: topic, Partition: w.part, Offset: w.offset}
				if wanted[a] == nil {
					byPart[w.part] = append(byPart[w.part], w.offset)
				}
				wanted[a] = append(wanted[a], w.at)
			}
		}
		for _, p := range sortedKeys(byPart) {
			for k, r := range spans(topic, p, byPart[p]) {
				if k == len(reads) {
					reads = append(reads, nil)
				}
				reads[k] = append(reads[k], r)
			}
		}
	}
	gone, err := readOriginals(ctx, c, reads, wanted, out)
	if err != nil {
		return nil, err
	}
	for a, at := range wanted {
		for _, i := range at {
			o := &out[i]
			switch {
			case o.Record == nil && gone[a.Topic]:
				o.deleted()
			case o.Record == nil:
				o.State, o.Detail = OriginalCompacted, fmt.Sprintf("%s holds no record: compacted away (or an aborted transaction's)", a)
			default:
				judgeFound(o, &ds[i])
			}
		}
	}
	return out, nil
}

// readOriginals reads the passes of ranges, and marks found the originals (out, by wanted)
// of each record read. A topic deleted after its bounds were asked (by an operator meanwhile)
// is skipped by the read: what was read of it stays read, and it is in gone.
func readOriginals(ctx context.Context, c *kafka.Cluster, reads [][]kafka.PartitionRange, wanted map[kafka.RecordAddress][]int, out []Original) (gone map[string]bool, err error) {
	gone = map[string]bool{}
	for _, ranges := range reads {
		err := c.ReadSkipping(ctx, ranges, func(r *kgo.Record) error {
			for _, i := range wanted[kafka.AddressOf(r)] {
				out[i].State, out[i].Record = OriginalFound, r
			}
			return nil
		}, func(topic string) { gone[topic] = true })
		if err != nil {
			return nil, err
		}
	}
	return gone, nil
}

// deleted says o's topic no longer exists.
func (o *Original) deleted() {
	o.State, o.Detail = OriginalDeleted, fmt.Sprintf("the topic %s no longer exists", o.Topic)
}

// locate judges o's coordinates against its topic's bounds: true when a record may be there
// (to be read), else o's state says why none is.
func (o *Original) locate(bounds []kafka.PartitionBounds) bool {
	b, err := kafka.PartitionOf(o.Topic, bounds, o.Partition)
	at := fmt.Sprintf("%s/%d", o.Topic, o.Partition)
	switch {
	case err != nil:
		o.State, o.Detail = OriginalRecreated, fmt.Sprintf("%s has no partition %d now (%d partitions): the topic was recreated", o.Topic, o.Partition, len(bounds))
	case o.Offset < b.LogStart:
		o.State, o.Detail = OriginalExpired, fmt.Sprintf("offset %d is below the log start %d of %s: retention or a delete-records request removed it", o.Offset, b.LogStart, at)
	case o.Offset >= b.HighWatermark:
		o.State, o.Detail = OriginalRecreated, fmt.Sprintf("offset %d is beyond the end of %s (high watermark %d): the topic was recreated", o.Offset, at, b.HighWatermark)
	case o.Offset >= b.LastStable:
		o.State, o.Detail = OriginalPending, fmt.Sprintf("offset %d is at or beyond the last stable offset %d of %s (an open transaction): not readable yet", o.Offset, b.LastStable, at)
	default:
		return true
	}
	return false
}

// judgeFound turns a record found at a dead letter's coordinates into OriginalRecreated when
// it cannot be the record dead-lettered.
func judgeFound(o *Original, d *DeadLetter) {
	r := o.Record
	switch {
	case !d.Timestamp.IsZero() && r.Timestamp.After(d.Timestamp):
		o.Detail = fmt.Sprintf("the record at %s was written at %s, after the dead letter (%s): the topic was recreated",
			kafka.AddressOf(r), r.Timestamp.UTC().Format(time.RFC3339Nano), d.Timestamp.Format(time.RFC3339Nano))
	case !d.CoordinatesOnly() && d.Convention == ConventionShareGroup && (!bytes.Equal(r.Key, d.Key) || !bytes.Equal(r.Value, d.Value)):
		o.Detail = fmt.Sprintf("the record at %s is not the one the dead letter copied (its key or value differ): the topic was recreated", kafka.AddressOf(r))
	default:
		return
	}
	o.State, o.Record = OriginalRecreated, nil
}

// spans cuts a partition's wanted offsets into ranges, one a pass, each covering offsets no
// more than originalSpread apart.
func spans(topic string, p int32, offsets []int64) []kafka.PartitionRange {
	slices.Sort(offsets)
	var out []kafka.PartitionRange
	for i, o := range offsets {
		if i > 0 && o-out[len(out)-1].End < originalSpread {
			out[len(out)-1].End = o + 1
			continue
		}
		out = append(out, kafka.PartitionRange{Topic: topic, Partition: p, Start: o, End: o + 1})
	}
	return out
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
