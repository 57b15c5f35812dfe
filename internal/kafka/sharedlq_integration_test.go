package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// The share-group dead-letter settings are read from a real 4.4 broker: the cluster's prefix
// and feature level, a group's configs as set, and a topic's enable flag.
func TestShareDLQSettings(t *testing.T) {
	cl := testenv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := kafka.ReadShareDLQCluster(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prefix != kafka.DefaultShareDLQPrefix || c.ShareVersion < 2 || c.AutoCreate {
		t.Fatalf("cluster settings %+v, want prefix %q, share.version >= 2, no auto-create", c, kafka.DefaultShareDLQPrefix)
	}

	group := testenv.Name(t, "fw-share")
	g, err := kafka.ReadShareGroupConfig(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	if g.DLQTopic != "" || g.CopyRecord {
		t.Fatalf("unconfigured group %+v, want no DLQ and no copy", g)
	}
	dlq := kafka.DefaultShareDLQPrefix + group
	if err := kafka.SetShareGroupConfig(ctx, cl, group, map[string]string{
		kafka.ConfigShareGroupDLQTopic:   dlq,
		kafka.ConfigShareGroupDLQCopy:    "true",
		kafka.ConfigShareDeliveryLimit:   "3",
		kafka.ConfigShareAutoOffsetReset: "earliest",
	}); err != nil {
		t.Fatal(err)
	}
	// The controller applies the change; the broker answering the read sees it a moment later.
	want := kafka.ShareGroupConfig{DLQTopic: dlq, CopyRecord: true, DeliveryLimit: 3, AutoOffsetReset: "earliest", AutoOffsetResetSet: true}
	testenv.WaitUntil(t, 20*time.Second, nil, "the group's configs as set", func() bool {
		g, err = kafka.ReadShareGroupConfig(ctx, cl, group)
		if err != nil {
			t.Fatal(err)
		}
		return g == want
	})

	plain := testenv.Topic(t, 1, nil)
	enabled := testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw")
	testenv.CreateTopic(t, enabled, 1, map[string]*string{kafka.ConfigShareDLQTopicEnable: kmsg.StringPtr("true")})
	got, err := kafka.ShareDLQTopics(ctx, cl, plain, enabled, testenv.Name(t, "fw-absent"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[plain] || !got[enabled] {
		t.Fatalf("enable flags %v, want %s false and %s true only", got, plain, enabled)
	}
}
