package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientOn returns a franz-go client on brokers (comma-separated), closed at cleanup.
func ClientOn(t testing.TB, brokers string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopicOn creates topic name on brokers with the partitions and replicas given, waits
// until the metadata shows a leader for every partition (a client that asks before is told
// the topic does not exist), and deletes it at cleanup. retention.ms is -1 unless configs
// says otherwise: sample events carry fixed past timestamps, which time-based retention
// would delete in the middle of a test.
func CreateTopicOn(t testing.TB, brokers, name string, partitions int32, replicas int16, configs map[string]*string) {
	t.Helper()
	CreateTopicWith(t, ClientOn(t, brokers), name, partitions, replicas, configs)
}

// ReadTopic reads every record of topic on brokers up to the end offsets it has when called,
// failing the test when that takes more than a minute.
func ReadTopic(t testing.TB, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(ClientOn(t, brokers))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl := ClientOn(t, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %v (still to read up to %v)", topic, err, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset < end {
				out = append(out, r)
				if r.Offset == end-1 {
					delete(want, r.Partition)
				}
			}
		})
	}
	return out
}
