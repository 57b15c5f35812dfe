package inspect

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// A compacted topic's record count is its offsets: the overview says it is a bound; a topic
// that only deletes says the count.
func TestTopicRecordsOfACompactedTopic(t *testing.T) {
	s, _, _, _ := output.Test()
	p := output.NewPrinter(s, output.FormatTable)
	for policy, want := range map[string]string{
		"compact":        "at most 1500 (offsets: compaction removes records and keeps their offsets)",
		"compact,delete": "at most 1500 (offsets: compaction removes records and keeps their offsets)",
		"delete":         "1500",
	} {
		rep := &inspect.TopicReport{Topic: "t", Retention: kafka.Retention{CleanupPolicy: policy}}
		rep.Totals.Records = 1500
		if got := topicSections(p, rep)[0].Fields[1]; got != [2]string{"records", want} {
			t.Errorf("%s: %q, want %q", policy, got, want)
		}
	}
}

// The partitioners' section says how many keyed records it told by, and how many a replay
// wrote it left out; with none but those, that there is nothing to tell by.
func TestPartitionersSectionTitle(t *testing.T) {
	for _, tc := range []struct {
		ps         inspect.PartitionerSample
		partitions int
		want       string
	}{
		{inspect.PartitionerSample{Keyed: 30, Matching: []string{"crc32"}}, 5,
			"Partitioners (30 keyed records sampled: agree with crc32)"},
		{inspect.PartitionerSample{Keyed: 30, Replayed: 12, Matching: []string{"crc32"}}, 5,
			"Partitioners (30 keyed records sampled, 12 a replay wrote left out: agree with crc32)"},
		{inspect.PartitionerSample{Keyed: 30, Matching: []string{}}, 5,
			"Partitioners (30 keyed records sampled: none agrees with every keyed record (several producers, or a custom placement))"},
		{inspect.PartitionerSample{Replayed: 600, Matching: []string{}}, 3,
			"Partitioners (0 keyed records sampled, 600 a replay wrote left out: nothing to tell by)"},
	} {
		if got := partitionersSection(tc.ps, tc.partitions).Title; got != tc.want {
			t.Errorf("%+v: title %q, want %q", tc.ps, got, tc.want)
		}
	}
}
