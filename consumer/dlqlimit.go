package consumer

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// fallbackMaxMessageBytes is the size a dead-letter topic is assumed to accept when its
// configuration cannot be read (kafka.DefaultRecordLimit, franz-go's default batch limit). A
// topic that allows more then only sees larger dead letters as bounded copies, never a
// refusal.
const fallbackMaxMessageBytes = kafka.DefaultRecordLimit

// sizeLimit is the largest record batch a dead-letter topic accepts, and where that figure
// comes from (for the log).
type sizeLimit struct {
	bytes  int
	source string
}

// batchMax is the limit as franz-go's producer takes it.
func (l sizeLimit) batchMax() int32 {
	return kafka.RecordLimit{Bytes: l.bytes}.BatchMax()
}

// readSizeLimits reads the largest record batch each dead-letter topic accepts, by the rule
// of kafka.ReadRecordLimits (the one replay sizes its producer by): the topic's own
// max.message.bytes, else the smallest message.max.bytes of the brokers holding it, else the
// topic's effective value, else fallbackMaxMessageBytes, and the log says why. The reader
// finds the brokers holding each topic itself; the leaders the runner read are not needed.
func readSizeLimits(ctx context.Context, adm *kadm.Client, topics []string, log *slog.Logger) map[string]sizeLimit {
	out := make(map[string]sizeLimit, len(topics))
	lims, err := kafka.ReadRecordLimits(ctx, adm, topics)
	for _, t := range topics {
		l := lims[t] // the reader answers for every topic, unless ctx ended
		if err != nil {
			l = kafka.RecordLimit{Bytes: fallbackMaxMessageBytes, Source: kafka.LimitDefault, Err: err}
		}
		switch l.Source {
		case kafka.LimitEffective:
			log.Warn("dead-letter topic: cannot read the brokers' message.max.bytes; using the topic's effective max.message.bytes",
				"dead_letter_topic", t, "bytes", l.Bytes, "error", l.Err)
		case kafka.LimitDefault:
			log.Warn("dead-letter topic: cannot read its size limit; assuming the conservative default (larger dead letters are written as bounded copies)",
				"dead_letter_topic", t, "max_bytes", l.Bytes, "error", l.Err)
		}
		out[t] = sizeLimit{l.Bytes, l.Describe()}
		log.Info("dead-letter topic size limit", "dead_letter_topic", t, "max_bytes", out[t].bytes, "source", out[t].source)
	}
	return out
}
