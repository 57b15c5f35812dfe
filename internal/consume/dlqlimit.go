package consume

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fallbackMaxMessageBytes is the size a dead-letter topic is assumed to accept when its
// configuration cannot be read: franz-go's default batch limit, a little under Kafka's own
// default message.max.bytes (1,048,588), so that a dead letter the engine thinks fits is not
// refused by a broker left at its default. A topic that allows more then only sees larger
// dead letters as bounded copies, never a refusal.
const fallbackMaxMessageBytes = 1_000_012

// franz-go accepts batch limits in [512, 1 GiB] (ProducerBatchMaxBytesFn).
const (
	minBatchBytes = 512
	maxBatchBytes = 1 << 30
)

// sizeLimit is the largest record batch a dead-letter topic accepts, and where that figure
// comes from (for the log).
type sizeLimit struct {
	bytes  int
	source string
}

// batchMax is the limit as franz-go's producer takes it.
func (l sizeLimit) batchMax() int32 { return int32(min(max(l.bytes, minBatchBytes), maxBatchBytes)) }

// readSizeLimits reads the largest record batch each dead-letter topic accepts: the topic's
// own max.message.bytes when it overrides it, else the message.max.bytes of the brokers
// leading its partitions (the smallest), else what the topic reports as its effective value.
// A topic whose configuration cannot be read at all gets fallbackMaxMessageBytes, and the
// log says why. leaders are the broker ids leading each topic's partitions.
func readSizeLimits(ctx context.Context, adm *kadm.Client, topics []string, leaders map[string][]int32, log *slog.Logger) map[string]sizeLimit {
	out := make(map[string]sizeLimit, len(topics))
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	for _, t := range topics {
		if err != nil {
			out[t] = fallbackLimit(log, t, fmt.Errorf("describe topic configs: %w", err))
			continue
		}
		rc, rerr := rcs.On(t, nil)
		if rerr == nil {
			rerr = rc.Err
		}
		if rerr != nil {
			out[t] = fallbackLimit(log, t, fmt.Errorf("describe topic config: %w", rerr))
			continue
		}
		reported, ok, source := topicMaxMessageBytes(rc)
		switch {
		case ok && source == kmsg.ConfigSourceDynamicTopicConfig:
			out[t] = sizeLimit{reported, "max.message.bytes of the topic"}
		default:
			if b, berr := brokerMessageMaxBytes(ctx, adm, leaders[t]); berr == nil {
				out[t] = sizeLimit{b, "message.max.bytes of the brokers (the topic has no max.message.bytes of its own)"}
			} else if ok {
				log.Warn("dead-letter topic: cannot read the brokers' message.max.bytes; using the topic's effective max.message.bytes",
					"dead_letter_topic", t, "bytes", reported, "error", berr)
				out[t] = sizeLimit{reported, "effective max.message.bytes of the topic"}
			} else {
				out[t] = fallbackLimit(log, t, fmt.Errorf("no max.message.bytes in the topic's config, and the brokers': %w", berr))
			}
		}
		log.Info("dead-letter topic size limit", "dead_letter_topic", t, "max_bytes", out[t].bytes, "source", out[t].source)
	}
	return out
}

func fallbackLimit(log *slog.Logger, topic string, err error) sizeLimit {
	log.Warn("dead-letter topic: cannot read its size limit; assuming the conservative default (larger dead letters are written as bounded copies)",
		"dead_letter_topic", topic, "max_bytes", fallbackMaxMessageBytes, "error", err)
	return sizeLimit{fallbackMaxMessageBytes, "default (the topic's configuration could not be read)"}
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
