package kafka_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestRecordLimitsOnKafka reads, in one call, the limit of a topic with its own
// max.message.bytes, of one without (the brokers' message.max.bytes, as the broker itself
// reports it) and of one that does not exist (the default, with the reason).
func TestRecordLimitsOnKafka(t *testing.T) {
	c := testenv.Cluster(t)
	str := func(s string) *string { return &s }
	own := testenv.Topic(t, 2, map[string]*string{"max.message.bytes": str(strconv.Itoa(8 << 20))})
	plain := testenv.Topic(t, 1, nil)
	missing := testenv.Name(t, "fw-missing")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// What the brokers say, asked directly: the figure a topic without an override gets.
	md, err := c.Admin.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bcs, err := c.Admin.DescribeBrokerConfigs(ctx, md.Brokers.NodeIDs()...)
	if err != nil {
		t.Fatal(err)
	}
	brokerMax := -1
	for _, rc := range bcs {
		for _, cf := range rc.Configs {
			if cf.Key == "message.max.bytes" && cf.Value != nil {
				n, _ := strconv.Atoi(*cf.Value)
				if brokerMax < 0 || n < brokerMax {
					brokerMax = n
				}
			}
		}
	}
	if brokerMax <= 0 {
		t.Fatalf("the brokers report no message.max.bytes: %+v", bcs)
	}

	got, err := c.RecordLimits(ctx, []string{own, plain, missing})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic  string
		bytes  int
		source kafka.LimitSource
		err    bool
	}{
		{own, 8 << 20, kafka.LimitTopic, false},
		{plain, brokerMax, kafka.LimitBrokers, false},
		{missing, kafka.DefaultRecordLimit, kafka.LimitDefault, true},
	} {
		l, ok := got[tc.topic]
		if !ok || l.Bytes != tc.bytes || l.Source != tc.source || (l.Err != nil) != tc.err {
			t.Errorf("%s: %+v (present %v), want %d bytes from %s (error: %v)", tc.topic, l, ok, tc.bytes, tc.source, tc.err)
		}
	}
	if l := got[missing]; !errors.Is(l.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("%s: error %v, want UNKNOWN_TOPIC_OR_PARTITION", missing, l.Err)
	}
	if len(got) != 3 {
		t.Errorf("%d limits, want 3: %v", len(got), got)
	}

	// A context that has ended gets no guesses.
	done, stop := context.WithCancel(context.Background())
	stop()
	if m, err := c.RecordLimits(done, []string{own}); err == nil {
		t.Errorf("cancelled: %v, want an error", m)
	}
}

// TestRecordLimitBatchMax: franz-go takes batch limits in [512, 1 GiB] only.
func TestRecordLimitBatchMax(t *testing.T) {
	for _, tc := range []struct {
		bytes int
		want  int32
	}{
		{0, 512}, {511, 512}, {512, 512}, {1_000_012, 1_000_012}, {8 << 20, 8 << 20}, {1 << 30, 1 << 30}, {2 << 30, 1 << 30},
	} {
		if got := (kafka.RecordLimit{Bytes: tc.bytes}).BatchMax(); got != tc.want {
			t.Errorf("BatchMax(%d) = %d, want %d", tc.bytes, got, tc.want)
		}
	}
}
