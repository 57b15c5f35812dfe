package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultRecordLimit is the size a topic is assumed to accept when its configuration cannot
// be read: franz-go's default batch limit, a little under Kafka's own default
// message.max.bytes (1,048,588), so that a record thought to fit is not refused by a broker
// left at its default.
const DefaultRecordLimit = 1_000_012

// franz-go accepts batch limits in [512, 1 GiB] (kgo.ProducerBatchMaxBytesFn); outside it a
// produce to the topic fails.
const (
	minBatchBytes = 512
	maxBatchBytes = 1 << 30
)

// LimitSource says where a RecordLimit's figure comes from. Its values are stable (JSON).
type LimitSource string

const (
	// LimitTopic: the topic's own max.message.bytes (a dynamic topic config).
	LimitTopic LimitSource = "topic"
	// LimitBrokers: the smallest message.max.bytes of the brokers holding the topic's
	// partitions (the topic has no max.message.bytes of its own).
	LimitBrokers LimitSource = "brokers"
	// LimitEffective: the topic's reported effective max.message.bytes, used when the
	// brokers' message.max.bytes cannot be read (RecordLimit.Err says why).
	LimitEffective LimitSource = "effective"
	// LimitDefault: nothing could be read (RecordLimit.Err says why); Bytes is
	// DefaultRecordLimit.
	LimitDefault LimitSource = "default"
)

// RecordLimit is the largest record batch a topic accepts, as the broker compares it with
// max.message.bytes, and where that figure comes from.
type RecordLimit struct {
	Bytes  int         `json:"bytes"`
	Source LimitSource `json:"source"`
	// Err is why a less certain source was used (LimitEffective, LimitDefault); nil otherwise.
	Err error `json:"-"`
}

// BatchMax is the limit as franz-go's producer takes it (kgo.ProducerBatchMaxBytesFn),
// clamped to the range it accepts.
func (l RecordLimit) BatchMax() int32 { return int32(min(max(l.Bytes, minBatchBytes), maxBatchBytes)) }

// Describe says in words where the figure comes from, for a log or an error message.
func (l RecordLimit) Describe() string {
	switch l.Source {
	case LimitTopic:
		return "max.message.bytes of the topic"
	case LimitBrokers:
		return "message.max.bytes of the brokers (the topic has no max.message.bytes of its own)"
	case LimitEffective:
		return "effective max.message.bytes of the topic"
	}
	return "default (the topic's configuration could not be read)"
}

// RecordLimits reads the record size limit of each topic (ReadRecordLimits).
func (c *Cluster) RecordLimits(ctx context.Context, topics []string) (map[string]RecordLimit, error) {
	return ReadRecordLimits(ctx, c.Admin, topics)
}

// ReadRecordLimits reads the largest record batch each topic accepts: the topic's own
// max.message.bytes when it overrides it, else the smallest message.max.bytes of the brokers
// holding its partitions (leaders and replicas), else what the topic reports as its effective
// value. A topic whose configuration cannot be read at all gets DefaultRecordLimit, with Err
// saying why: a limit is always returned for every topic, a missing one included. The error
// is ctx's, when it ended before the answers came (no map then).
func ReadRecordLimits(ctx context.Context, adm *kadm.Client, topics []string) (map[string]RecordLimit, error) {
	out := make(map[string]RecordLimit, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	var holders map[string][]int32 // read once, when a topic first needs its brokers
	for _, t := range topics {
		if err != nil {
			out[t] = fallback(fmt.Errorf("describe topic configs: %w", err))
			continue
		}
		rc, rerr := rcs.On(t, nil)
		if rerr == nil {
			rerr = rc.Err
		}
		if rerr != nil {
			out[t] = fallback(fmt.Errorf("describe topic config: %w", rerr))
			continue
		}
		reported, ok, source := topicMaxMessageBytes(rc)
		if ok && source == kmsg.ConfigSourceDynamicTopicConfig {
			out[t] = RecordLimit{Bytes: reported, Source: LimitTopic}
			continue
		}
		if holders == nil {
			holders = topicBrokers(ctx, adm, topics)
		}
		b, berr := brokerMessageMaxBytes(ctx, adm, holders[t])
		switch {
		case berr == nil:
			out[t] = RecordLimit{Bytes: b, Source: LimitBrokers}
		case ok:
			out[t] = RecordLimit{Bytes: reported, Source: LimitEffective, Err: fmt.Errorf("cannot read the brokers' message.max.bytes: %w", berr)}
		default:
			out[t] = fallback(fmt.Errorf("no max.message.bytes in the topic's config, and the brokers': %w", berr))
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return out, nil
}

func fallback(err error) RecordLimit {
	return RecordLimit{Bytes: DefaultRecordLimit, Source: LimitDefault, Err: err}
}

// topicBrokers are the broker ids leading or replicating each topic's partitions; a topic
// the metadata does not describe has none (every broker of the cluster is then asked).
func topicBrokers(ctx context.Context, adm *kadm.Client, topics []string) map[string][]int32 {
	out := map[string][]int32{}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return out
	}
	for _, t := range topics {
		for _, p := range md.Topics[t].Partitions {
			out[t] = append(out[t], p.Leader)
			out[t] = append(out[t], p.Replicas...)
		}
	}
	return out
}

// topicMaxMessageBytes is a topic's max.message.bytes as described, and where it is set.
func topicMaxMessageBytes(rc kadm.ResourceConfig) (int, bool, kmsg.ConfigSource) {
	for _, c := range rc.Configs {
		if c.Key != "max.message.bytes" || c.Value == nil {
			continue
		}
		n, err := strconv.Atoi(*c.Value)
		if err != nil || n < 0 {
			return 0, false, 0
		}
		return n, true, c.Source
	}
	return 0, false, 0
}

// brokerMessageMaxBytes is the smallest message.max.bytes of the given brokers (every broker
// of the cluster when none is given).
func brokerMessageMaxBytes(ctx context.Context, adm *kadm.Client, brokers []int32) (int, error) {
	ids := slices.Clone(brokers)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	ids = slices.DeleteFunc(ids, func(id int32) bool { return id < 0 })
	if len(ids) == 0 {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return 0, err
		}
		ids = md.Brokers.NodeIDs()
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		return 0, err
	}
	least, found := 0, false
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, fmt.Errorf("broker %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key != "message.max.bytes" || c.Value == nil {
				continue
			}
			n, err := strconv.Atoi(*c.Value)
			if err != nil {
				return 0, fmt.Errorf("broker %s: message.max.bytes %q: %w", rc.Name, *c.Value, err)
			}
			if !found || n < least {
				least, found = n, true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("no broker reported message.max.bytes")
	}
	return least, nil
}
