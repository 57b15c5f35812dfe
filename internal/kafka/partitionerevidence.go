package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// PartitionerEvidence is what a topic's keyed records say about the partitioner that placed
// them: for each of Partitioners, how many of the keyed records it puts in the partition they
// are in. `inspect topic` shows it for its sample; a replay infers its partitioner from it
// (docs/design.md §3.3). It is the one place where a record is compared with the partitioners.
type PartitionerEvidence struct {
	Topic string
	// Partitions is the topic's partition count.
	Partitions int
	// Keyed counts the records read with a key every partitioner hashes (not null, not empty),
	// but for those Excluded.
	Keyed int64
	// Agree[i] counts the keyed records that Partitioners[i] puts where they are.
	Agree []int64
	// Excluded counts the keyed records left out because exclude said so: records the topic's
	// producers did not place (a replay's, placed by the replay's own rule).
	Excluded int64
	exclude  func(*kgo.Record) bool
}

// NewPartitionerEvidence is the empty evidence of topic, of partitions partitions. A keyed
// record for which exclude (when not nil) is true is counted as Excluded, not as evidence.
func NewPartitionerEvidence(topic string, partitions int, exclude func(*kgo.Record) bool) PartitionerEvidence {
	return PartitionerEvidence{Topic: topic, Partitions: partitions, Agree: make([]int64, len(Partitioners)), exclude: exclude}
}

// Add counts r when it is keyed: as evidence, or as Excluded.
func (e *PartitionerEvidence) Add(r *kgo.Record) {
	if len(r.Key) == 0 {
		return
	}
	if e.exclude != nil && e.exclude(r) {
		e.Excluded++
		return
	}
	e.Keyed++
	for i, p := range Partitioners {
		if q, _ := p.KeyPartition(r.Key, e.Partitions); q == r.Partition {
			e.Agree[i]++
		}
	}
}

// Matching are the partitioners that place every keyed record where it is, in Partitioners
// order: none when there is no keyed record, or when none does (several producers, or a custom
// or manual placement).
func (e PartitionerEvidence) Matching() []Partitioner {
	var out []Partitioner
	for i, p := range Partitioners {
		if e.Keyed > 0 && e.Agree[i] == e.Keyed {
			out = append(out, p)
		}
	}
	return out
}

// AgreeWith is how many keyed records p places where they are.
func (e PartitionerEvidence) AgreeWith(p Partitioner) int64 {
	for i, q := range Partitioners {
		if q == p && i < len(e.Agree) {
			return e.Agree[i]
		}
	}
	return 0
}

// DefaultEvidenceSample is how many of the newest records of each partition
// SamplePartitioners reads by default.
const DefaultEvidenceSample = 200

// SamplePartitioners reads the newest perPartition records (below the last stable offset) of
// each partition of topic, at most partitions×perPartition records whatever the topic's size,
// and counts them as evidence (NewPartitionerEvidence: but for those exclude says). A
// one-partition topic is not read: every partitioner agrees there.
func (c *Cluster) SamplePartitioners(ctx context.Context, topic string, perPartition int, exclude func(*kgo.Record) bool) (PartitionerEvidence, error) {
	if perPartition <= 0 {
		perPartition = DefaultEvidenceSample
	}
	bounds, err := c.Bounds(ctx, topic)
	if err != nil {
		return PartitionerEvidence{}, err
	}
	ev := NewPartitionerEvidence(topic, len(bounds), exclude)
	if len(bounds) < 2 {
		return ev, nil
	}
	var ranges []PartitionRange
	for _, b := range bounds {
		ranges = append(ranges, PartitionRange{Topic: topic, Partition: b.Partition, Start: max(b.LogStart, b.LastStable-int64(perPartition)),
			End: b.LastStable, LogStart: b.LogStart, HighWatermark: b.HighWatermark})
	}
	err = c.Read(ctx, ranges, func(r *kgo.Record) error {
		ev.Add(r)
		return nil
	})
	if err != nil {
		return PartitionerEvidence{}, Denied(fmt.Errorf("read %s: %w", topic, err), OpRead, ResourceTopic, topic)
	}
	return ev, nil
}
