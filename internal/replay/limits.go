package replay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// targetLimits are the record size limits of a replay's target topics (kafka.RecordLimits:
// the rule the consumer sizes its dead letters by), so that the producer batches up to what
// each target accepts rather than franz-go's default 1,000,012 bytes: a 1 MiB dead letter
// goes back into a topic that takes 8 MiB.
//
// Each limit is read once, before the first record to its topic is handed to the producer:
// the --to topic before anything is read, a topic named by dead-letter headers where the
// target cache first looks it up. franz-go asks for a topic's limit when it first meets one
// of its partitions, after the record that made it look, so it always finds the figure read;
// batchMax only loads from a sync.Map and never blocks the producer.
type targetLimits struct {
	c *kafka.Cluster
	m sync.Map // topic → kafka.RecordLimit
}

func newTargetLimits(c *kafka.Cluster) *targetLimits { return &targetLimits{c: c} }

// read reads the limit of topic unless it is known.
func (l *targetLimits) read(ctx context.Context, topic string) error {
	if _, ok := l.m.Load(topic); ok {
		return nil
	}
	lims, err := l.c.RecordLimits(ctx, []string{topic})
	if err != nil {
		return fmt.Errorf("read the record size limit of target topic %s: %w", topic, err)
	}
	l.m.Store(topic, lims[topic])
	return nil
}

// get is topic's limit; the default one when it was not read.
func (l *targetLimits) get(topic string) kafka.RecordLimit {
	if v, ok := l.m.Load(topic); ok {
		return v.(kafka.RecordLimit)
	}
	return kafka.RecordLimit{Bytes: kafka.DefaultRecordLimit, Source: kafka.LimitDefault}
}

// batchMax is kgo.ProducerBatchMaxBytesFn's function.
func (l *targetLimits) batchMax(topic string) int32 { return l.get(topic).BatchMax() }

// tooLarge explains a send refused as too large (kerr.MessageTooLarge, by the producer or the
// broker): the record's size and its target's limit (the caller names the record). Other
// errors are returned as they are.
func (l *targetLimits) tooLarge(out *kgo.Record, err error) error {
	if !errors.Is(err, kerr.MessageTooLarge) {
		return err
	}
	lim := l.get(out.Topic)
	return fmt.Errorf("the record is %d bytes (key, value and headers as sent), more than %s accepts: %d bytes (%s): %w",
		recordBytes(out), out.Topic, lim.Bytes, lim.Describe(), err)
}

// recordBytes is the size of a record's key, value and headers.
func recordBytes(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
