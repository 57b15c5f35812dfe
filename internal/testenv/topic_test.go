package testenv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCreateTopic creates a topic on the real broker and checks, with one metadata request
// and no wait, that it is there with every partition led and its configs, that records keep
// forever unless told otherwise, that the caller's configs are left as they were, and that
// the topic is deleted at the end of the test that made it.
func TestCreateTopic(t *testing.T) {
	adm := kadm.NewClient(testenv.Client(t))
	compact := "compact"
	configs := map[string]*string{"cleanup.policy": &compact}
	var name string
	t.Run("create", func(t *testing.T) {
		name = testenv.Name(t, "fwt")
		testenv.CreateTopic(t, name, 3, configs)
		details, err := adm.ListTopics(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		d := details[name]
		if d.Err != nil || len(d.Partitions) != 3 {
			t.Fatalf("metadata right after CreateTopic: %v, %d partitions", d.Err, len(d.Partitions))
		}
		for _, p := range d.Partitions {
			if p.Leader < 0 || p.Err != nil {
				t.Fatalf("partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
			}
		}
		rcs, err := adm.DescribeTopicConfigs(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range rc.Configs {
			if c.Value != nil {
				got[c.Key] = *c.Value
			}
		}
		if got["cleanup.policy"] != "compact" || got["retention.ms"] != "-1" {
			t.Fatalf("configs: cleanup.policy %q, retention.ms %q", got["cleanup.policy"], got["retention.ms"])
		}
		if len(configs) != 1 {
			t.Fatalf("CreateTopic changed the caller's configs: %v", configs)
		}
		if topic := testenv.Topic(t, 1, nil); topic == "" || topic == name {
			t.Fatalf("Topic = %q", topic)
		}
	})
	// Deletion is asynchronous on the broker: wait, bounded, until the topic is gone.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		details, err := adm.ListTopics(ctx, name)
		if err == nil && errors.Is(details[name].Err, kerr.UnknownTopicOrPartition) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still there a minute after its test ended: %v %+v", name, err, details[name])
		case <-time.After(50 * time.Millisecond):
		}
	}
}
