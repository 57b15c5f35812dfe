package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestRetentionOnKafka reads the retention of topics of every kind from the real broker in
// one call: one that does not exist does not fail the others.
func TestRetentionOnKafka(t *testing.T) {
	c := testenv.Cluster(t)
	str := func(s string) *string { return &s }
	hour := testenv.Topic(t, 1, map[string]*string{"retention.ms": str("3600000")})
	forever := testenv.Topic(t, 1, map[string]*string{"retention.ms": str("-1")})
	compact := testenv.Topic(t, 1, map[string]*string{"cleanup.policy": str("compact"), "retention.ms": str("3600000")})
	both := testenv.Topic(t, 1, map[string]*string{"cleanup.policy": str("compact,delete"), "retention.ms": str("129600000"), "retention.bytes": str("1048576")})
	missing := testenv.Name(t, "fw-missing")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := c.Retention(ctx, []string{hour, forever, compact, both, missing, hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d topics in the answer, want 5: %v", len(got), got)
	}
	check := func(topic string, state kafka.RetentionState, horizon time.Duration, describe string) kafka.Retention {
		t.Helper()
		r := got[topic]
		if r.Topic != topic || r.State != state || r.Horizon != horizon || r.Describe() != describe {
			t.Errorf("%s: %+v (%s), want %s %v %q", topic, r, r.Describe(), state, horizon, describe)
		}
		return r
	}
	r := check(hour, kafka.RetentionKnown, time.Hour, "1h")
	if r.Ms == nil || *r.Ms != 3600000 || r.CleanupPolicy != "delete" || r.Bytes == nil {
		t.Errorf("%s configs: %+v", hour, r)
	}
	if len(r.Configs) != 3 || r.Configs[1].Name != "retention.ms" || r.Configs[1].Source != "topic" || r.Configs[0].Source != "default" {
		t.Errorf("%s reported configs: %+v", hour, r.Configs)
	}
	check(forever, kafka.RetentionForever, 0, "forever")
	check(compact, kafka.RetentionForever, 0, "compacted: not deleted by age")
	r = check(both, kafka.RetentionKnown, 36*time.Hour, "1d12h (and compacted)")
	if r.Bytes == nil || *r.Bytes != 1048576 {
		t.Errorf("%s retention.bytes %v", both, r.Bytes)
	}
	r = check(missing, kafka.RetentionUnknown, 0, "unknown (no such topic)")
	if r.Cause != kafka.CauseNoTopic || !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("%s: cause %q err %v", missing, r.Cause, r.Err)
	}
}

// TestRetentionDenied: a user whose ACLs deny DescribeConfigs on one topic learns the
// retention of the other and that this one's is unknown because it was denied. The broker
// is franz-go's in-process one, since the shared Kafka enforces no ACLs and must not be
// reconfigured.
func TestRetentionDenied(t *testing.T) {
	acl := func(topic string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	cl, err := kfake.NewCluster(
		kfake.NumBrokers(1), kfake.SeedTopics(1, "open", "closed"),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "oncall", "pw",
			acl("open", kmsg.ACLOperationDescribe), acl("open", kmsg.ACLOperationDescribeConfigs),
			acl("closed", kmsg.ACLOperationDescribe)),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kafka.Connect(ctx, config.Connection{
		Brokers: cl.ListenAddrs(),
		SASL:    config.SASL{Mechanism: "PLAIN", Username: "oncall"}, Password: "pw",
	}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	got, err := c.Retention(ctx, []string{"open", "closed"})
	if err != nil {
		t.Fatalf("one denied topic failed the call: %v", err)
	}
	if r := got["open"]; r.State != kafka.RetentionKnown || r.Horizon != 7*24*time.Hour {
		t.Errorf("open: %+v", r)
	}
	r := got["closed"]
	if r.State != kafka.RetentionUnknown || r.Cause != kafka.CauseDenied || !errors.Is(r.Err, kerr.TopicAuthorizationFailed) ||
		!strings.Contains(r.Why, "denied") || r.Ms != nil || r.Describe() != "unknown (DescribeConfigs denied)" {
		t.Errorf("closed: %+v (%s)", r, r.Describe())
	}
}
