package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// DefaultSampleSize is how many of the newest records per partition Topic decodes to detect
// the envelope formats in use.
const DefaultSampleSize = 100

// maxSampleMalformed bounds how many malformed records of the sample Topic lists.
const maxSampleMalformed = 10

// TopicConfigKeys are the topic configs Topic reports: the ones that decide how long a
// record can be replayed and whether old versions of a key survive.
var TopicConfigKeys = kafka.RetentionConfigKeys

// TopicOptions tune Topic.
type TopicOptions struct {
	// SampleSize is how many of the newest records per partition are decoded (DefaultSampleSize
	// when 0; negative disables sampling).
	SampleSize int
	Progress   ProgressFunc
	// Schemas decodes registry-framed values before the envelope is read (docs/design.md
	// §3.6); nil detects their framing only.
	Schemas *schema.Decoder
}

// TopicReport is what `inspect topic` shows.
type TopicReport struct {
	Topic      string          `json:"topic"`
	Partitions []PartitionInfo `json:"partitions"`
	Totals     TopicTotals     `json:"totals"`
	// Configs are the retention configs the cluster reported (none when it could not be
	// asked: Retention says why).
	Configs []ConfigValue `json:"configs"`
	// Retention is what the configs mean: how long a record stays, forever, or unknown and why.
	Retention kafka.Retention `json:"retention"`
	Sample    FormatSample    `json:"sample"`
	Groups    []GroupLag      `json:"groups"`
	// GroupsError says why consumer groups could not be listed (for example missing ACLs);
	// the rest of the report stands.
	GroupsError string `json:"groups_error,omitempty"`
}

// PartitionInfo is one partition's placement and offsets. Records is HighWatermark-LogStart:
// the number of offsets, an upper bound on the records (transaction markers and compacted
// records take offsets too).
type PartitionInfo struct {
	Partition     int32   `json:"partition"`
	Leader        int32   `json:"leader"`
	Replicas      []int32 `json:"replicas"`
	ISR           []int32 `json:"isr"`
	LogStart      int64   `json:"log_start_offset"`
	LastStable    int64   `json:"last_stable_offset"`
	HighWatermark int64   `json:"high_watermark"`
	Records       int64   `json:"records"`
}

// TopicTotals sums the partitions.
type TopicTotals struct {
	Partitions int   `json:"partitions"`
	Records    int64 `json:"records"`
}

// ConfigValue is one topic config and where its value comes from: "topic" (set on the
// topic), "broker", "cluster" (a dynamic cluster-wide default) or "default" (Kafka's).
type ConfigValue struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// FormatSample counts the envelope formats among the newest PerPartition records of each
// partition. Malformed lists the first few records of the sample that do not decode.
// Partitioners says which producers' partitioners the sample's keyed records agree with.
type FormatSample struct {
	PerPartition int               `json:"per_partition"`
	Records      int64             `json:"records"`
	Formats      []FormatCount     `json:"formats"`
	Malformed    []MalformedRecord `json:"malformed"`
	Partitioners PartitionerSample `json:"partitioners"`
}

// PartitionerSample compares the sample's keyed records with where each partitioner
// (kafka.Partitioners) puts their keys: a partitioner every keyed record agrees with is one
// the producers may have used; with one partition, or no keyed record, nothing is told.
type PartitionerSample struct {
	// Keyed counts the sampled records with a key that every partitioner hashes (not null,
	// not empty), but for those a replay wrote.
	Keyed  int64              `json:"keyed_records"`
	Agrees []PartitionerCount `json:"agreement"`
	// Matching are the partitioners every keyed record agrees with, in kafka.Partitioners
	// order: empty when none does (several producers, or a custom or manual placement).
	Matching []string `json:"matching"`
	// Replayed counts the keyed records of the sample that a replay wrote
	// (dlq.WrittenByReplay), left out as a replay's inference leaves them out: the replay
	// placed them by its own rule, not the topic's producers.
	Replayed int64 `json:"replayed_records"`
}

// PartitionerCount is how many keyed records of the sample sit where Partitioner puts them.
type PartitionerCount struct {
	Partitioner string `json:"partitioner"`
	Agree       int64  `json:"agree"`
}

// FormatCount is how many sampled records decoded as Format ("malformed" for none).
type FormatCount struct {
	Format string `json:"format"`
	Count  int64  `json:"count"`
}

// GroupLag is one group that has committed offsets on the topic, or a share group that has
// start offsets on it.
type GroupLag struct {
	Group string `json:"group"`
	// Type is the group's type as the broker lists it: classic, consumer or share.
	Type       string           `json:"type"`
	State      string           `json:"state"`
	Partitions []GroupPartition `json:"partitions"`
	TotalLag   int64            `json:"total_lag"`
}

// GroupPartition is a group's committed offset on one partition and its lag: how many offsets
// lie between the commit and the high watermark.
//
// A share group commits nothing: Committed is -1 and StartOffset its share-partition start
// offset, Lag the broker's count of records from there not yet acknowledged (-1: not
// reported).
type GroupPartition struct {
	Partition   int32  `json:"partition"`
	Committed   int64  `json:"committed_offset"`
	StartOffset *int64 `json:"start_offset,omitempty"`
	Lag         int64  `json:"lag"`
}

// Topic describes topic: partitions and offsets, configs, envelope formats from a bounded
// sample of the newest records, and the lag of each consumer group with commits on it. A
// missing topic is a *kafka.UnknownTopicError.
func Topic(ctx context.Context, c *kafka.Cluster, topic string, opts TopicOptions) (*TopicReport, error) {
	bounds, err := c.Bounds(ctx, topic)
	if err != nil {
		return nil, err
	}
	rep := &TopicReport{Topic: topic, Partitions: []PartitionInfo{}, Configs: []ConfigValue{}, Groups: []GroupLag{}}

	details, err := c.Admin.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("describe topic %s: %w", topic, err)
	}
	td := details[topic]
	if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, &kafka.UnknownTopicError{Topic: topic}
	}
	if err := kafka.Denied(td.Err, kafka.OpDescribe, kafka.ResourceTopic, topic); kafka.IsAuthorization(err) {
		return nil, err
	}
	hwm := make(map[int32]int64, len(bounds))
	for _, b := range bounds {
		pi := PartitionInfo{Partition: b.Partition, Leader: -1, Replicas: []int32{}, ISR: []int32{},
			LogStart: b.LogStart, LastStable: b.LastStable, HighWatermark: b.HighWatermark,
			Records: max(0, b.HighWatermark-b.LogStart)}
		if pd, ok := td.Partitions[b.Partition]; ok {
			pi.Leader = pd.Leader
			pi.Replicas = sortedCopy(pd.Replicas)
			pi.ISR = sortedCopy(pd.ISR)
		}
		rep.Partitions = append(rep.Partitions, pi)
		rep.Totals.Records += pi.Records
		hwm[b.Partition] = b.HighWatermark
	}
	rep.Totals.Partitions = len(rep.Partitions)

	// One reader of retention for every command: a topic whose configs cannot be read (no
	// DescribeConfigs ACL) is reported with its retention unknown, the rest stands.
	ret, err := c.Retention(ctx, []string{topic})
	if err != nil {
		return nil, err
	}
	rep.Retention = ret[topic]
	for _, cf := range rep.Retention.Configs {
		rep.Configs = append(rep.Configs, ConfigValue{Name: cf.Name, Value: cf.Value, Source: cf.Source})
	}
	if rep.Sample, err = sampleFormats(ctx, c, topic, bounds, opts); err != nil {
		return nil, err
	}
	rep.Groups, err = groupLags(ctx, c, topic, hwm)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.GroupsError = err.Error()
		rep.Groups = []GroupLag{}
	}
	return rep, nil
}

// Warnings say what the report could not read, each in a sentence: the retention when it is
// unknown (DescribeConfigs denied, not reported), the consumer groups when they could not be
// listed. The rest of the report stands.
func (r *TopicReport) Warnings() []string {
	var out []string
	if r.Retention.State == kafka.RetentionUnknown {
		out = append(out, fmt.Sprintf("the retention of %s is unknown: %s", r.Topic, r.Retention.Why))
	}
	if r.GroupsError != "" {
		out = append(out, fmt.Sprintf("the consumer groups of %s are not shown: %s", r.Topic, r.GroupsError))
	}
	return out
}

func sortedCopy(s []int32) []int32 {
	out := append([]int32{}, s...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// sampleFormats decodes the newest SampleSize records (below the last stable offset) of each
// partition: at most partitions×SampleSize records, whatever the topic's size.
func sampleFormats(ctx context.Context, c *kafka.Cluster, topic string, bounds []kafka.PartitionBounds, opts TopicOptions) (FormatSample, error) {
	n := opts.SampleSize
	if n == 0 {
		n = DefaultSampleSize
	}
	s := FormatSample{PerPartition: max(n, 0), Formats: []FormatCount{}, Malformed: []MalformedRecord{}}
	if n < 0 {
		return s, nil
	}
	var ranges []kafka.PartitionRange
	for _, b := range bounds {
		start := max(b.LogStart, b.LastStable-int64(n))
		ranges = append(ranges, kafka.PartitionRange{Topic: topic, Partition: b.Partition, Start: start, End: b.LastStable,
			LogStart: b.LogStart, HighWatermark: b.HighWatermark})
	}
	counts := map[string]int64{}
	ev := kafka.NewPartitionerEvidence(topic, len(bounds), dlq.WrittenByReplay)
	err := scan(ctx, c, ranges, opts.Progress, func(rec *kgo.Record) error {
		s.Records++
		ev.Add(rec)
		// A registry that failed is a warning here (the run's schema problems), not a stop:
		// the sample only counts formats.
		ev, err, _ := opts.Schemas.ReadEvent(ctx, rec)
		if err != nil {
			counts[FormatMalformed]++
			if len(s.Malformed) < maxSampleMalformed {
				s.Malformed = append(s.Malformed, schema.MalformedRecordOf(rec, err))
			}
			return nil
		}
		counts[string(ev.Format)]++
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("sample %s: %w", topic, err)
	}
	for f, n := range counts {
		s.Formats = append(s.Formats, FormatCount{Format: f, Count: n})
	}
	s.Partitioners.Keyed, s.Partitioners.Replayed, s.Partitioners.Agrees, s.Partitioners.Matching = ev.Keyed, ev.Excluded, []PartitionerCount{}, []string{}
	for i, p := range kafka.Partitioners {
		s.Partitioners.Agrees = append(s.Partitioners.Agrees, PartitionerCount{Partitioner: string(p), Agree: ev.Agree[i]})
	}
	for _, p := range ev.Matching() {
		s.Partitioners.Matching = append(s.Partitioners.Matching, string(p))
	}
	sort.Slice(s.Formats, func(i, j int) bool {
		if s.Formats[i].Count != s.Formats[j].Count {
			return s.Formats[i].Count > s.Formats[j].Count
		}
		return s.Formats[i].Format < s.Formats[j].Format
	})
	return s, nil
}

// groupLags lists every group, fetches all their commits in one batch
// (kafka.Cluster.GroupCommits), and keeps the groups with a commit on topic, each partition's
// lag by kafka.Lag; share groups with start offsets on topic are kept beside them, with the
// broker's lag (kafka.Cluster.ShareGroupStarts). Groups whose commits cannot be fetched (another group type, no
// permission) are left out: nothing says they read this topic.
func groupLags(ctx context.Context, c *kafka.Cluster, topic string, hwm map[int32]int64) ([]GroupLag, error) {
	listed, err := c.Admin.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return nil, fmt.Errorf("list consumer groups: %w", err)
	}
	var names, shareNames []string
	for _, name := range listed.Groups() {
		if listed[name].GroupType == "share" {
			shareNames = append(shareNames, name)
		} else {
			names = append(names, name)
		}
	}
	out := []GroupLag{}
	starts, _ := c.ShareGroupStarts(ctx, shareNames...)
	for _, name := range shareNames {
		if parts := starts[name][topic]; len(parts) > 0 {
			out = append(out, shareGroupLag(name, listed[name].State, parts))
		}
	}
	commits, _ := c.GroupCommits(ctx, names...)
	for _, name := range names {
		parts := commits[name][topic]
		if len(parts) == 0 {
			continue
		}
		g := GroupLag{Group: name, Type: listed[name].GroupType, State: listed[name].State, Partitions: []GroupPartition{}}
		for p, at := range parts {
			lag := int64(0)
			if end, known := hwm[p]; known {
				lag = kafka.Lag(at, end)
			}
			g.Partitions = append(g.Partitions, GroupPartition{Partition: p, Committed: at, Lag: lag})
			g.TotalLag += lag
		}
		sort.Slice(g.Partitions, func(i, j int) bool { return g.Partitions[i].Partition < g.Partitions[j].Partition })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// shareGroupLag is a share group's GroupLag on a topic: its start offsets and the broker's lag.
func shareGroupLag(name, state string, parts map[int32]kafka.ShareStart) GroupLag {
	g := GroupLag{Group: name, Type: "share", State: state, Partitions: []GroupPartition{}}
	for p, st := range parts {
		start := st.Start
		g.Partitions = append(g.Partitions, GroupPartition{Partition: p, Committed: -1, StartOffset: &start, Lag: st.Lag})
		g.TotalLag += max(0, st.Lag)
	}
	sort.Slice(g.Partitions, func(i, j int) bool { return g.Partitions[i].Partition < g.Partitions[j].Partition })
	return g
}
