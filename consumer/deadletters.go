package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// HaltedError reports a partition the runner stopped because the dead letter of one of its
// records could not be written at all: not whole, not as a bounded copy without its value,
// for a reason retrying cannot cure (the dead-letter topic was deleted, the consumer may not
// write to it, the broker refuses even the copy). The partition's committed offset stays at
// the record, so that nothing is lost: the record is read again, and dead-lettered, once the
// dead-letter topic accepts it. The other partitions keep working; Run returns the error
// when it stops. See the package documentation.
type HaltedError struct {
	Topic     string
	Partition int32
	Offset    int64
	// EventID is the record's event id, "" when unreadable.
	EventID string
	// DeadLetterTopic is where the dead letter was to go.
	DeadLetterTopic string
	// Reason is the dead letter's fw.dlq.reason.
	Reason string
	// Err is the producer's last error.
	Err error
}

func (e *HaltedError) Error() string {
	id := ""
	if e.EventID != "" {
		id = " (event " + e.EventID + ")"
	}
	return fmt.Sprintf("partition %s/%d stopped at offset %d: the %s record there%s cannot be dead-lettered to %s, not even as a copy without its value: %v; "+
		"its offset is not committed, so it is read again once the dead-letter topic accepts it (check that the topic exists and that this consumer may write to it, then restart)",
		e.Topic, e.Partition, e.Offset, e.Reason, id, e.DeadLetterTopic, e.Err)
}

func (e *HaltedError) Unwrap() error { return e.Err }

// What of a dead letter is sent: the whole record, a copy with a prefix of its value, or a
// copy without its value.
const (
	sendWhole = iota
	sendCut
	sendNoValue
)

// outgoing is one dead letter on its way.
type outgoing struct {
	dl    deadLetter
	whole *kgo.Record // dlq.NewDeadLetter's record
	rec   *kgo.Record // what is sent
	send  int
	why   string // why it is not sent whole
	// denied is the authorization failure that refused it: no smaller copy is tried.
	denied error
	kept   int // bytes of the value a cut copy keeps
}

// bound replaces what is sent by the next smaller form, saying why.
func (o *outgoing) bound(why string, limit int) {
	if o.why == "" {
		o.why = why
	}
	o.send++
	o.rec, o.kept = boundedCopy(o.whole, o.why, limit, o.send == sendNoValue)
	if o.kept == 0 {
		o.send = sendNoValue
	}
}

// produceDeadLetters produces dls (sorted by offset) and waits for every acknowledgement.
//
//   - A dead letter larger than its topic accepts (sizeLimit) is sent at once as a bounded
//     copy: the value cut to fit (fw.dlq.value_omitted says why, fw.dlq.value_bytes gives
//     the original length).
//   - Infrastructure errors (a broker unavailable, a timeout, a leader moving) are retried
//     with InfraBackoff, up to MaxInfraRetries. A record acknowledged before a retry may be
//     sent again: dead letters are at least once, like everything else.
//   - An error retrying cannot cure makes the next smaller form go out at once: the whole
//     record, then a copy with the value cut to fit, then a copy without the value.
//   - When even that is refused, the record is given up on: produceDeadLetters returns the
//     HaltedError of the first such record (by offset) once every other dead letter of the
//     batch is acknowledged or given up on too, and the caller commits only the offsets
//     before it.
//
// The error is for the runner to stop: the context ended, or MaxInfraRetries was exceeded.
func (e *Runner) produceDeadLetters(ctx context.Context, w *worker, dls []deadLetter) (*HaltedError, error) {
	pending := make([]*outgoing, 0, len(dls))
	for _, dl := range dls {
		o := &outgoing{dl: dl, whole: dlq.NewDeadLetter(dl.rec, dl.meta)}
		o.rec = o.whole
		lim := e.sizeLimit(o.whole.Topic)
		if n := batchBytes(o.whole); n > lim.bytes {
			o.bound(fmt.Sprintf("the dead letter is %d bytes, more than the %d its topic accepts (%s)", n, lim.bytes, lim.source), lim.bytes)
		}
		pending = append(pending, o)
	}
	var given []*outgoing
	r := e.o.InfraBackoff.start()
	for len(pending) > 0 {
		again, gaveUp, infraErr, err := e.produceRound(ctx, pending)
		if err != nil {
			return nil, err
		}
		pending, given = again, append(given, gaveUp...)
		if infraErr == nil {
			continue
		}
		stop := func(n int) error {
			return fmt.Errorf("produce dead letters to %s: giving up after %d retries: %w", pending[0].rec.Topic, n, infraErr)
		}
		if err := e.infraRetry(ctx, r, stop, "dead_letter", "producing dead letters failed; retrying", infraErr,
			"topic", w.tp.topic, "partition", w.tp.partition, "failed", len(pending)); err != nil {
			return nil, err
		}
	}
	return haltedBy(given), nil
}

// produceRound produces pending once and sorts out the results: again are to be sent again
// (after an infrastructure error, infraErr the first, or as a smaller copy), given are given
// up on. The error is the context's, when it ended.
func (e *Runner) produceRound(ctx context.Context, pending []*outgoing) (again, given []*outgoing, infraErr, err error) {
	recs := make([]*kgo.Record, len(pending))
	for i, o := range pending {
		recs[i] = o.rec
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	results := e.cl.ProduceSync(pctx, recs...)
	cancel()
	missing := map[string]bool{} // topics confirmed missing in this round, asked once each
	for i, r := range results {
		o := pending[i]
		if r.Err == nil {
			e.deadLettered(o, r.Record)
			continue
		}
		if ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		if e.infraProduceError(ctx, r.Err, o.rec.Topic, missing) {
			infraErr = cmp.Or(infraErr, r.Err)
			again = append(again, o)
			continue
		}
		if kafka.IsAuthorization(r.Err) {
			// A smaller copy is refused as surely: the partition stops at once.
			o.denied = kafka.DeniedWrite(r.Err, o.rec.Topic)
			e.log.Error("dead letter refused: the partition stops here",
				"topic", o.dl.rec.Topic, "partition", o.dl.rec.Partition, "offset", o.dl.rec.Offset,
				"event_id", o.dl.meta.EventID, "dead_letter_topic", o.rec.Topic, "error", o.denied)
			given = append(given, o)
			continue
		}
		if o.send == sendNoValue {
			e.log.Error("dead letter refused even without its value: the partition stops here",
				"topic", o.dl.rec.Topic, "partition", o.dl.rec.Partition, "offset", o.dl.rec.Offset,
				"event_id", o.dl.meta.EventID, "dead_letter_topic", o.rec.Topic, "error", r.Err)
			o.why = r.Err.Error()
			given = append(given, o)
			continue
		}
		e.log.Warn("dead letter refused; sending a smaller copy", "topic", o.dl.rec.Topic, "partition", o.dl.rec.Partition,
			"offset", o.dl.rec.Offset, "dead_letter_topic", o.rec.Topic, "bytes", batchBytes(o.rec), "error", r.Err)
		o.bound("producing it failed: "+r.Err.Error(), e.sizeLimit(o.rec.Topic).bytes)
		again = append(again, o)
	}
	return again, given, infraErr, nil
}

// haltedBy is the HaltedError of the first (by offset) of the dead letters given up on; nil
// when there is none.
func haltedBy(given []*outgoing) *HaltedError {
	if len(given) == 0 {
		return nil
	}
	first := given[0]
	for _, o := range given[1:] {
		if o.dl.rec.Offset < first.dl.rec.Offset {
			first = o
		}
	}
	why := first.denied
	if why == nil {
		why = errors.New(first.why)
	}
	return &HaltedError{
		Topic: first.dl.rec.Topic, Partition: first.dl.rec.Partition, Offset: first.dl.rec.Offset,
		EventID: first.dl.meta.EventID, DeadLetterTopic: first.rec.Topic, Reason: first.dl.meta.Reason,
		Err: why,
	}
}

// deadLettered logs and counts a dead letter the broker acknowledged.
func (e *Runner) deadLettered(o *outgoing, acked *kgo.Record) {
	dl := o.dl
	args := []any{"topic", dl.rec.Topic, "partition", dl.rec.Partition, "offset", dl.rec.Offset,
		"event_id", dl.meta.EventID, "reason", dl.meta.Reason, "attempts", dl.meta.Attempts,
		"error", dl.meta.Error, "dead_letter_topic", acked.Topic, "dead_letter_offset", acked.Offset}
	if o.send == sendWhole {
		e.log.Warn("dead-lettered", args...)
		return
	}
	e.c.deadLettersBounded.Add(1)
	e.m.deadLettersBounded.WithLabelValues(dl.rec.Topic).Inc()
	e.log.Warn("dead-lettered as a bounded copy: the value is cut or left out", append(args,
		"value_bytes", len(dl.rec.Value), "value_kept", o.kept, "why", o.why)...)
}

// infraProduceError reports whether a produce error is the infrastructure's (retry it)
// rather than the record's or the topic's (retrying cannot cure it). Kafka's retriable
// errors and anything that is not a Kafka error code (timeouts, connections refused or
// closed, the client's own retries exhausted) are infrastructure; the other Kafka errors
// (MESSAGE_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED, INVALID_RECORD, POLICY_VIOLATION, …) are
// not. UNKNOWN_TOPIC_OR_PARTITION is retriable in Kafka's book (metadata not propagated
// yet), so it counts as infrastructure unless the topic is confirmed missing: deleted.
// missing caches the answer of the metadata request, per topic.
func (e *Runner) infraProduceError(ctx context.Context, err error, topic string, missing map[string]bool) bool {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		gone, asked := missing[topic]
		if !asked {
			exists, merr := e.topicExists(ctx, topic)
			gone = merr == nil && !exists
			missing[topic] = gone
		}
		return !gone
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return true
}

// topicExists asks the broker whether topic exists.
func (e *Runner) topicExists(ctx context.Context, topic string) (bool, error) {
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := kadm.NewClient(e.cl).Metadata(mctx, topic)
	if err != nil {
		return false, err
	}
	td, ok := md.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return false, nil
	}
	return td.Err == nil, td.Err
}

// sizeLimit is the largest record batch the dead-letter topic accepts.
func (e *Runner) sizeLimit(topic string) sizeLimit {
	if l, ok := e.limits[topic]; ok {
		return l
	}
	return sizeLimit{fallbackMaxMessageBytes, "default"}
}

// batchMaxBytes is the producer's batch limit per topic (kgo.ProducerBatchMaxBytesFn): each
// dead-letter topic's own limit, so that a dead letter its topic accepts is never refused by
// the client. The runner produces to nothing else.
func (e *Runner) batchMaxBytes(topic string) int32 { return e.sizeLimit(topic).batchMax() }
