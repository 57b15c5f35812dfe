package dlq_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestDiscoversShareDLQTopics: with the default pattern, discovery finds a topic that carries
// errors.deadletterqueue.group.enable=true whatever its name, and one named with the
// cluster's prefix; a pattern the operator chose is taken as it is.
func TestDiscoversShareDLQTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	flagged := testenv.Name(t, "fw-sharedisc") + "-queue"
	testenv.CreateTopic(t, flagged, 1, map[string]*string{kafka.ConfigShareDLQTopicEnable: kmsg.StringPtr("true")})
	prefixed := kafka.DefaultShareDLQPrefix + testenv.Name(t, "fw-sharedisc")
	testenv.CreateTopic(t, prefixed, 1, nil)
	plain := testenv.Name(t, "fw-sharedisc") + "-plain"
	testenv.CreateTopic(t, plain, 1, nil)
	if dlq.DefaultTopicPattern.MatchString(flagged) || dlq.DefaultTopicPattern.MatchString(plain) {
		t.Fatalf("the test's names must not match the default pattern")
	}
	c := testenv.Cluster(t)
	got, err := dlq.Topics(ctx, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, flagged) || !slices.Contains(got, prefixed) || slices.Contains(got, plain) {
		t.Fatalf("discovered %v: want %s and %s, not %s", got, flagged, prefixed, plain)
	}
	if !slices.IsSorted(got) {
		t.Fatalf("discovered %v: not sorted", got)
	}
	d, err := dlq.Discover(ctx, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The prefixed name matches the default pattern already (dlq.): only the flag adds.
	if !slices.Contains(d.Flagged, flagged) || slices.Contains(d.Flagged, prefixed) || d.Matched+len(d.Prefixed)+len(d.Flagged) != len(d.Topics) {
		t.Fatalf("discovery %+v: want %s flagged, %s matched", d, flagged, prefixed)
	}
}

// TestOriginals reads originals on the real broker: found; expired below the log start;
// recreated beyond the end, or written after the dead letter; deleted with the topic.
func TestOriginals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := testenv.Topic(t, 1, nil)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(src))
	for _, v := range []string{"a", "b", "c"} {
		testenv.Produce(t, cl, &kgo.Record{Key: []byte(v), Value: []byte(v)})
	}
	c := testenv.Cluster(t)
	del := kadm.Offsets{}
	del.AddOffset(src, 0, 1, -1)
	if res, err := c.Admin.DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		t.Fatalf("delete records: %v %v", err, res.Error())
	}
	now := time.Now().UTC()
	dl := func(topic string, offset int64, at time.Time) dlq.DeadLetter {
		p := int32(0)
		return dlq.DeadLetter{Convention: dlq.ConventionShareGroup, Timestamp: at, OriginalTopic: topic, OriginalPartition: &p, OriginalOffset: &offset}
	}
	ds := []dlq.DeadLetter{
		dl(src, 2, now.Add(time.Minute)),
		dl(src, 0, now.Add(time.Minute)),
		dl(src, 7, now.Add(time.Minute)),
		dl(src, 1, now.Add(-time.Hour)), // the record there was written after this dead letter
		dl(testenv.Name(t, "fw-absent"), 0, now),
		{Convention: dlq.ConventionShareGroup}, // no coordinates
	}
	os, err := dlq.Originals(ctx, c, ds)
	if err != nil {
		t.Fatal(err)
	}
	want := []dlq.OriginalState{dlq.OriginalFound, dlq.OriginalExpired, dlq.OriginalRecreated, dlq.OriginalRecreated, dlq.OriginalDeleted, ""}
	for i, o := range os {
		if o.State != want[i] {
			t.Errorf("dead letter %d: %s (%s), want %s", i, o.State, o.Detail, want[i])
		}
	}
	if r := os[0].Record; r == nil || string(r.Value) != "c" {
		t.Fatalf("found %+v, want the record c", r)
	}
}

// TestOriginalsTopicRecreated: the source topic deleted, a dead letter's original is deleted;
// created again and written to, the record now at its offset was written after the dead
// letter: recreated, never taken for the original.
func TestOriginalsTopicRecreated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := testenv.Topic(t, 1, nil)
	produce := func() {
		cl := testenv.Client(t, kgo.DefaultProduceTopic(src))
		testenv.Produce(t, cl, &kgo.Record{Value: []byte("0")}, &kgo.Record{Value: []byte("1")})
	}
	produce()
	p, off := int32(0), int64(1)
	ds := []dlq.DeadLetter{{Convention: dlq.ConventionShareGroup, Timestamp: time.Now().UTC(), OriginalTopic: src, OriginalPartition: &p, OriginalOffset: &off}}
	c := testenv.Cluster(t)
	state := func() dlq.Original {
		t.Helper()
		os, err := dlq.Originals(ctx, c, ds)
		if err != nil {
			t.Fatal(err)
		}
		return os[0]
	}
	if o := state(); o.State != dlq.OriginalFound {
		t.Fatalf("before: %s (%s), want found", o.State, o.Detail)
	}
	testenv.DeleteTopic(t, testenv.Client(t), src)
	// The broker may still answer for the deleted topic's partition for a moment after its
	// metadata dropped it (its bounds, even its records): the read that then finds it gone
	// says deleted, never fails, and so does every later ask.
	testenv.WaitUntil(t, 30*time.Second, nil, "the deleted topic answered as deleted", func() bool {
		return state().State == dlq.OriginalDeleted
	})
	if o := state(); o.State != dlq.OriginalDeleted {
		t.Fatalf("deleted, asked again: %s (%s), want deleted", o.State, o.Detail)
	}
	testenv.CreateTopic(t, src, 1, nil)
	produce()
	// Asked as a new command would ask, with a client of its own (the one above keeps the
	// topic's absence in its metadata for a while), and for as long as the broker still
	// answers for the deleted topic: a loaded broker applies the recreation after the
	// producer was served.
	c = testenv.Cluster(t)
	var o dlq.Original
	testenv.WaitUntil(t, 30*time.Second, nil, "the recreated topic answered for", func() bool {
		o = state()
		return o.State != dlq.OriginalDeleted
	})
	if o.State != dlq.OriginalRecreated || o.Record != nil {
		t.Fatalf("recreated: %s (%s), want recreated", o.State, o.Detail)
	}
}

// TestOriginalsCompacted: the broker's log cleaner compacts a source topic (two records of
// one key, the segment rolled by a third), so the first offset holds no record any more; a
// coordinates-only dead letter naming it, written with the six headers as the broker writes
// them, has its original compacted.
func TestOriginalsCompacted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := testenv.Topic(t, 1, map[string]*string{
		"cleanup.policy":            kmsg.StringPtr("compact"),
		"segment.ms":                kmsg.StringPtr("100"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
		"min.compaction.lag.ms":     kmsg.StringPtr("0"),
		"delete.retention.ms":       kmsg.StringPtr("100"),
	})
	cl := testenv.Client(t, kgo.DefaultProduceTopic(src))
	testenv.Produce(t, cl, &kgo.Record{Key: []byte("k"), Value: []byte("first")}, &kgo.Record{Key: []byte("k"), Value: []byte("second")})
	// A record written after segment.ms rolls the segment: the first two are then in a
	// segment the cleaner may compact. Records keep coming (each may roll again) until the
	// cleaner has removed offset 0.
	c := testenv.Cluster(t)
	first := func() int64 {
		off := int64(-1)
		err := c.Read(ctx, []kafka.PartitionRange{{Topic: src, Partition: 0, Start: 0, End: 2}}, func(r *kgo.Record) error {
			if off < 0 {
				off = r.Offset
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	n := 0
	testenv.WaitUntil(t, 90*time.Second, nil, "the log cleaner compacting offset 0 away", func() bool {
		if first() != 0 {
			return true
		}
		if n%20 == 0 { // every second or so
			testenv.Produce(t, cl, &kgo.Record{Key: []byte(fmt.Sprintf("roll-%d", n)), Value: []byte("roll")})
		}
		n++
		return false
	})

	dlqTopic := testenv.Topic(t, 1, nil)
	hdr := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	testenv.Produce(t, testenv.Client(t, kgo.DefaultProduceTopic(dlqTopic)), &kgo.Record{Headers: []kgo.RecordHeader{
		hdr(dlq.ShareTopic, src), hdr(dlq.SharePartition, "0"), hdr(dlq.ShareOffset, "0"),
		hdr(dlq.ShareGroup, "g"), hdr(dlq.ShareDeliveryCount, "1"), hdr(dlq.ShareMessage, "Offset rejected by client."),
	}})
	var d dlq.DeadLetter
	err := c.Read(ctx, []kafka.PartitionRange{{Topic: dlqTopic, Partition: 0, Start: 0, End: 1}}, func(r *kgo.Record) error {
		d = dlq.Parse(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Convention != dlq.ConventionShareGroup || !d.CoordinatesOnly() {
		t.Fatalf("the dead letter parsed as %s (coordinates only %v)", d.Convention, d.CoordinatesOnly())
	}
	os, err := dlq.Originals(ctx, c, []dlq.DeadLetter{d})
	if err != nil {
		t.Fatal(err)
	}
	if os[0].State != dlq.OriginalCompacted || os[0].Record != nil {
		t.Fatalf("original: %s (%s), want compacted", os[0].State, os[0].Detail)
	}
}
