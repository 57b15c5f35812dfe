package testenv

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CreateTopic creates the topic name with the given partitions (replication 1) and configs
// on the real broker, waits until the broker's metadata shows it with a leader for every
// partition, and deletes it at cleanup. It fails the test when the broker cannot be reached
// or refuses the topic.
//
// Records keep forever (retention.ms -1) unless configs say otherwise: the sample events and
// fixtures carry fixed past timestamps, which the broker's default retention (seven days, by
// record time) would delete at its next check, in the middle of a test.
//
// Waiting for the metadata is what makes the topic usable at once: a broker answers
// CreateTopics before every part of it knows the topic, and a client that asks too early
// is told it does not exist (a producer retries; a metadata check or a plan of its offsets
// does not).
func CreateTopic(t testing.TB, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	CreateTopicWith(t, Client(t), name, partitions, 1, configs)
}

// CreateTopicWith is CreateTopic through cl, on whichever brokers cl talks to (a private
// broker, a cluster), with replicas replicas: the one way every test creates a topic.
func CreateTopicWith(t testing.TB, cl *kgo.Client, name string, partitions int32, replicas int16, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := createTopic(ctx, adm, name, partitions, replicas, configs); err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, name)
	})
}

// GrowTopic adds partitions to the topic name on the real broker until it has partitions,
// and waits until the metadata shows every one with a leader, as CreateTopic does.
func GrowTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := adm.UpdatePartitions(ctx, int(partitions), name)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("grow topic %s to %d partitions: %v", name, partitions, err)
	}
	if err := waitTopic(ctx, adm, name, partitions); err != nil {
		t.Fatal(err)
	}
}

// createTopic creates name and waits until it is in the metadata, bounded by ctx.
func createTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32, replicas int16, configs map[string]*string) error {
	cfg := maps.Clone(configs)
	if cfg == nil {
		cfg = map[string]*string{}
	}
	if _, ok := cfg["retention.ms"]; !ok {
		forever := "-1"
		cfg["retention.ms"] = &forever
	}
	resp, err := adm.CreateTopic(ctx, partitions, replicas, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return waitTopic(ctx, adm, name, partitions)
}

// waitTopic polls the metadata until name has partitions partitions, each with a leader.
func waitTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32) error {
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	var last error
	for {
		last = topicReady(ctx, adm, name, partitions)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s not in the metadata after its creation: %v", name, last)
		case <-poll.C:
		}
	}
}

func topicReady(ctx context.Context, adm *kadm.Client, name string, partitions int32) error {
	details, err := adm.ListTopics(ctx, name)
	if err != nil {
		return err
	}
	d, ok := details[name]
	switch {
	case !ok:
		return fmt.Errorf("not listed")
	case d.Err != nil:
		return d.Err
	case int32(len(d.Partitions)) != partitions:
		return fmt.Errorf("%d of %d partitions", len(d.Partitions), partitions)
	}
	for _, p := range d.Partitions {
		if p.Err != nil {
			return fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		}
		if p.Leader < 0 {
			return fmt.Errorf("partition %d has no leader", p.Partition)
		}
	}
	return nil
}
