package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// A share group member (the option ShareGroup) polls, hands each partition's records to a
// goroutine of their own that runs them in batches through the same core as a consumer
// group's (handleBatch: decode, claim, apply, breaker, dead letters), acknowledges each record
// once its batch is done, and polls again only when every record of the poll is acknowledged:
// franz-go accepts at the next poll whatever the previous one left unacknowledged, and a record
// must never be accepted before its marker and effects commit (docs/design.md §3.8).

// shareGroup is what the runner read of its share group at start.
type shareGroup struct {
	// dlqTopic is the group's dead-letter topic (errors.deadletterqueue.topic.name), written by
	// the broker; "" when the group has none and fieldwork writes the dead letters itself.
	dlqTopic string
	// limit is the group's delivery count limit (share.delivery.count.limit, or the
	// brokers' default).
	limit int
}

// defaultShareDeliveryLimit is Kafka's default group.share.delivery.count.limit, assumed when
// neither the group's nor the brokers' configuration can be read.
const defaultShareDeliveryLimit = 5

// releasable reports whether rec, failing retryably, is released for another delivery rather
// than dead-lettered: a share group's record before its last delivery.
func (e *Runner) releasable(rec *kgo.Record) bool {
	return e.o.ShareGroup != "" && int(rec.DeliveryCount()) < e.share.limit
}

// runShare is Run for a share group member.
func (e *Runner) runShare(ctx context.Context) error {
	if err := e.prepareShare(ctx); err != nil {
		return err
	}
	if err := e.checkTopics(ctx); err != nil {
		return err
	}
	opts := append(slices.Clone(e.o.Kafka),
		kgo.ShareGroup(e.o.ShareGroup),
		kgo.ConsumeTopics(e.o.Topics...),
		// A share fetch acquires about BatchMax records. franz-go's strict limit
		// (kgo.ShareMaxRecordsStrict, which also stops fetching ahead) left a member that
		// produces its own dead letters fetching nothing at all after a while, in the
		// integration test against Kafka 4.4.0: not used.
		kgo.ShareMaxRecords(int32(e.o.BatchMax)),
		kgo.ShareAckCallback(e.shareAcked),
		kgo.ProducerBatchMaxBytesFn(e.batchMaxBytes),
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.WithLogger(kgoLogger{e.log}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka share consumer client: %w", err)
	}
	e.cl = cl
	writer, to := writerFieldwork, strings.Join(e.dlqTopics(), ",")
	if e.share.dlqTopic != "" {
		writer, to = writerBroker, e.share.dlqTopic
	}
	e.log.Info("share group member starting",
		"topics", strings.Join(e.o.Topics, ","), "share_group", e.o.ShareGroup, "consumer", e.o.Consumer,
		"handler", e.o.Name, "dead_letters_by", writer, "dead_letter_topic", to, "delivery_limit", e.share.limit,
		"store", e.o.Store.Table(), "batch_max", e.o.BatchMax, "max_attempts_per_delivery", e.o.MaxAttempts,
		"version_guard", e.o.VersionGuard, "batch_handler", e.batchHandler() != nil)

	started := time.Now()
	e.mu.Lock()
	e.lastRecv = started // the idle window counts from the start: a share group has no assignment to wait for
	e.mu.Unlock()
	runCtx, softStop := context.WithCancel(ctx)
	defer softStop()
	e.softStop = softStop
	abandoned, loopErr := e.sharePollLoop(runCtx)
	e.leaveShare()
	return e.finishRun(loopErr, abandoned, started)
}

// prepareShare reads the share group's configuration: its dead-letter topic, checked so that a
// rejected record cannot be lost to a misconfiguration, and its delivery limit; with
// ShareStartEarliest it sets share.auto.offset.reset=earliest on a group without one.
func (e *Runner) prepareShare(ctx context.Context) error {
	cl, err := kgo.NewClient(e.o.Kafka...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g, err := kafka.ReadShareGroupConfig(ctx, cl, e.o.ShareGroup)
	if err != nil {
		return kafka.Denied(fmt.Errorf("read the configuration of share group %s: %w", e.o.ShareGroup, err), kafka.OpDescribeConfigs, kafka.ResourceGroup, e.o.ShareGroup)
	}
	cluster, cerr := kafka.ReadShareDLQCluster(ctx, cl)
	e.share = shareGroup{dlqTopic: g.DLQTopic, limit: g.DeliveryLimit}
	if e.share.limit <= 0 {
		e.share.limit = defaultShareDeliveryLimit
		if cerr == nil && cluster.DeliveryLimit > 0 {
			e.share.limit = cluster.DeliveryLimit
		}
	}
	if g.DLQTopic != "" {
		if cerr != nil {
			return fmt.Errorf("share group %s has the dead-letter topic %s, but the cluster's dead-letter settings cannot be read to check it: %w", e.o.ShareGroup, g.DLQTopic, cerr)
		}
		if err := checkShareDLQ(ctx, cl, e.o.ShareGroup, g.DLQTopic, cluster); err != nil {
			return err
		}
	}
	if e.o.ShareStartEarliest {
		if g.AutoOffsetResetSet {
			e.log.Info("share group has its own start: kept", "share_group", e.o.ShareGroup, kafka.ConfigShareAutoOffsetReset, g.AutoOffsetReset)
			return nil
		}
		if err := kafka.SetShareGroupConfig(ctx, cl, e.o.ShareGroup, map[string]string{kafka.ConfigShareAutoOffsetReset: "earliest"}); err != nil {
			return kafka.Denied(fmt.Errorf("start share group %s at the earliest records: %w", e.o.ShareGroup, err), kafka.OpAlterConfigs, kafka.ResourceGroup, e.o.ShareGroup)
		}
		e.log.Info("share group had no start of its own: set to the earliest records", "share_group", e.o.ShareGroup,
			kafka.ConfigShareAutoOffsetReset, "earliest")
	}
	return nil
}

// ShareDLQError reports a share group whose dead-letter topic would lose what is rejected to
// it: the broker archives a rejected record, logging only a warning, when the cluster does not
// write share-group dead letters, when the topic's name lacks the cluster's prefix, or when the
// topic is missing or not enabled for share groups. The runner refuses to start on it.
type ShareDLQError struct {
	Group, Topic string
	// Problem says what is wrong and how to fix it.
	Problem string
}

func (e *ShareDLQError) Error() string {
	return fmt.Sprintf("share group %s: its dead-letter topic %s would lose the records rejected to it: %s", e.Group, e.Topic, e.Problem)
}

// checkShareDLQ checks the broker's dead-letter path of a share group (KIP-1191): each way a
// rejected record is archived instead of dead-lettered.
func checkShareDLQ(ctx context.Context, cl *kgo.Client, group, topic string, c kafka.ShareDLQCluster) error {
	enabled, err := kafka.ShareDLQTopics(ctx, cl, topic)
	if err != nil {
		return fmt.Errorf("share group %s: check its dead-letter topic %s: %w", group, topic, err)
	}
	on, exists := enabled[topic]
	for _, f := range kafka.JudgeShareDLQPath(c, group, topic, exists, on) {
		if f.Loss {
			// A check's failure (exit 3 from fieldwork consume, as groups check's loss).
			return fwerr.Wrap(fwerr.KindCheck, &ShareDLQError{Group: group, Topic: topic, Problem: f.Message})
		}
	}
	return nil
}

// sharePollLoop polls and handles each poll's records until shutdown. It returns whether a
// drain had to abandon batches after ShutdownTimeout, and nil for a drain (ctx cancelled, or
// idle) or the cause of an abort or a fatal error.
func (e *Runner) sharePollLoop(ctx context.Context) (abandoned bool, err error) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(e.hardCtx, stop)
	defer unhook()
	lastProgress, lastStats := time.Now(), Stats{}
	for {
		if e.hardCtx.Err() != nil {
			return false, context.Cause(e.hardCtx)
		}
		if ctx.Err() != nil {
			e.log.Info("shutting down: every record polled is handled and acknowledged; leaving the share group")
			return false, nil
		}
		if e.shareIdle(runCtx) {
			return false, nil
		}
		if st := e.Stats(); time.Since(lastProgress) >= progressEvery && st != lastStats {
			lastProgress, lastStats = time.Now(), st
			e.log.Info("progress", "records", st.Records, "processed", st.Processed, "duplicates", st.Duplicates,
				"stale", st.Stale, "dead_lettered", st.DeadLettered, "released", st.Released, "redelivered", st.Redelivered,
				"retried", st.Retried, "infra_retries", st.InfraRetries)
		}
		pctx, cancel := context.WithTimeout(runCtx, e.pollWait)
		fs := e.cl.PollRecords(pctx, -1)
		cancel()
		if fs.IsClientClosed() {
			return false, errors.New("kafka client closed unexpectedly")
		}
		if denied := e.fetchErrors(fs); denied != nil {
			e.fail(denied)
			return false, denied
		}
		parts := map[tp][]*kgo.Record{}
		fs.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			parts[k] = append(parts[k], r)
		})
		if len(parts) == 0 {
			continue
		}
		e.mu.Lock()
		e.lastRecv = time.Now()
		e.mu.Unlock()
		if e.handlePoll(ctx, parts) {
			return true, nil
		}
	}
}

// handlePoll runs each partition's records of one poll on a goroutine of its own and waits
// for all of them. Once ctx is cancelled the poll's records still finish, within
// ShutdownTimeout (a record is released unhandled only when it must be: each release spends
// one of its deliveries); past it the batches are abandoned (rolled back, their records left
// unacknowledged, which leaving the group releases) and handlePoll reports it.
func (e *Runner) handlePoll(ctx context.Context, parts map[tp][]*kgo.Record) (abandoned bool) {
	var wg sync.WaitGroup
	ws := make([]*worker, 0, len(parts))
	for k, recs := range parts {
		w := newWorker(e, k)
		ws = append(ws, w)
		wg.Go(func() {
			defer close(w.done)
			e.sharePartition(w, recs)
		})
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
		return false
	case <-ctx.Done():
	}
	t := time.NewTimer(e.o.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-all:
		return false
	case <-t.C:
		for _, w := range ws {
			w.abort()
		}
		<-all
		return true
	}
}

// sharePartition runs one partition's records of a poll in batches of at most BatchMax, in
// offset order. Once the runner is stopping (the breaker, a halt, a fatal error; not a
// drain) the batches not started are released.
func (e *Runner) sharePartition(w *worker, recs []*kgo.Record) {
	defer w.cancel()
	for len(recs) > 0 {
		if w.ctx.Err() != nil || e.br.isTripped() || e.stoppingShare() {
			e.ackAll(w.tp, recs, kgo.AckRelease)
			return
		}
		n := min(len(recs), e.o.BatchMax)
		batch := recs[:n:n]
		recs = recs[n:]
		if err := e.shareBatch(w, batch); err != nil {
			if w.ctx.Err() == nil && !errors.Is(err, errBreakerCut) && !errors.As(err, new(*HaltedError)) {
				e.fail(err)
			}
			if w.ctx.Err() == nil {
				e.ackAll(w.tp, recs, kgo.AckRelease)
			}
			return
		}
	}
}

// stoppingShare reports whether a halt stopped the member (the breaker's trip and a fatal
// error are seen through their own state).
func (e *Runner) stoppingShare() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.halts) > 0
}

// shareBatch handles one batch of a share group's records and acknowledges each record by the
// acknowledgement rule (docs/design.md §3.8), only once the batch is done: its transaction
// committed and, when fieldwork writes the dead letters, each one acknowledged by Kafka.
//
//   - accept: applied, stale, a duplicate, for another group, or dead-lettered by fieldwork;
//   - release: failed retryably before the group's delivery limit (released), or at or after
//     the breaker's cut, or a dead letter fieldwork could not write (HaltedError);
//   - reject: poison, when the group has a dead-letter topic (the broker writes the dead
//     letter); an exhausted record there is released instead, on its last delivery, so that
//     the broker writes it as exceeding the delivery count.
//
// It returns errBreakerCut or a *HaltedError when the runner is to stop, another error when it
// must stop at once (the batch is then left unacknowledged: leaving the group releases it).
func (e *Runner) shareBatch(w *worker, recs []*kgo.Record) error {
	start := time.Now()
	for _, r := range recs {
		dc := r.DeliveryCount()
		e.m.deliveries.WithLabelValues(r.Topic).Observe(float64(dc))
		if dc > 1 {
			e.c.redelivered.Add(1)
		}
	}
	b, err := e.handleBatch(w, recs, e.share.dlqTopic == "")
	if err != nil {
		return err
	}
	acks := make(map[*kgo.Record]kgo.AckStatus, len(b.res.released)+len(b.dls))
	for _, dl := range b.res.released {
		acks[dl.rec] = kgo.AckRelease
		e.log.Warn("released for another delivery", "topic", dl.rec.Topic, "partition", dl.rec.Partition,
			"offset", dl.rec.Offset, "event_id", dl.meta.EventID, "delivery_count", dl.rec.DeliveryCount(),
			"delivery_limit", e.share.limit, "error", dl.meta.Error)
	}
	dls := b.dls
	if b.halt != nil {
		// Released, and dead-lettered when delivered again; dead letters are at least once.
		dls = slices.DeleteFunc(dls, func(dl deadLetter) bool {
			if dl.rec.Offset >= b.halt.Offset {
				acks[dl.rec] = kgo.AckRelease
				return true
			}
			return false
		})
	}
	if b.cut >= 0 {
		for _, r := range recs {
			if r.Offset >= b.cut {
				acks[r] = kgo.AckRelease
			}
		}
	}
	writer := writerFieldwork
	if e.share.dlqTopic != "" {
		writer = writerBroker
		for _, dl := range dls {
			e.leaveToBroker(dl, acks)
		}
	}
	released := 0
	for _, r := range recs {
		st, ok := acks[r]
		if !ok {
			st = kgo.AckAccept
		}
		if st == kgo.AckRelease {
			released++
		}
		r.Ack(st)
		e.m.acks.WithLabelValues(r.Topic, st.String()).Inc()
	}
	e.c.released.Add(int64(released - countBroker(dls, writer)))
	e.countBatch(w.tp, recs, start, b.records, b.other, b.res, dls, writer)
	if writer == writerBroker {
		e.c.brokerDeadLettered.Add(int64(len(dls)))
	}
	switch {
	case b.halt != nil:
		e.haltShare(b.halt)
		return b.halt
	case b.cut >= 0:
		return errBreakerCut
	}
	return nil
}

// countBroker is how many of dls the broker writes on a release (exhausted, on their last
// delivery): released, but counted as dead letters.
func countBroker(dls []deadLetter, writer string) int {
	if writer != writerBroker {
		return 0
	}
	n := 0
	for _, dl := range dls {
		if dl.meta.Reason == dlq.ReasonExhausted {
			n++
		}
	}
	return n
}

// leaveToBroker acknowledges a dead letter for the broker to write into the group's
// dead-letter topic: rejected, or, exhausted on its last delivery, released (the broker then
// writes it as exceeding the delivery count, which says exhausted).
func (e *Runner) leaveToBroker(dl deadLetter, acks map[*kgo.Record]kgo.AckStatus) {
	st := kgo.AckReject
	if dl.meta.Reason == dlq.ReasonExhausted {
		st = kgo.AckRelease
	}
	acks[dl.rec] = st
	e.log.Warn("dead-lettered by the broker", "topic", dl.rec.Topic, "partition", dl.rec.Partition, "offset", dl.rec.Offset,
		"event_id", dl.meta.EventID, "reason", dl.meta.Reason, "ack", st.String(), "delivery_count", dl.rec.DeliveryCount(),
		"error", dl.meta.Error, "dead_letter_topic", e.share.dlqTopic)
}

// haltShare records a dead letter fieldwork could not write and stops the member: a share
// group has no partition of its own to stop, and the record, released, comes back to a member
// until the group's delivery limit (then the broker archives it), so the operator must act.
func (e *Runner) haltShare(h *HaltedError) {
	e.log.Error("a dead letter cannot be written: the record is released and the share group member stops",
		"error", h.Error(), "delivery_limit", e.share.limit)
	e.mu.Lock()
	e.halts[tp{h.Topic, h.Partition}] = h
	e.m.halted.Set(float64(len(e.halts)))
	e.mu.Unlock()
	e.softStop()
}

// ackAll acknowledges recs with st.
func (e *Runner) ackAll(k tp, recs []*kgo.Record, st kgo.AckStatus) {
	for _, r := range recs {
		r.Ack(st)
	}
	if st == kgo.AckRelease {
		e.c.released.Add(int64(len(recs)))
	}
	e.m.acks.WithLabelValues(k.topic, st.String()).Add(float64(len(recs)))
}

// shareAcked counts and logs the acknowledgements the broker refused or that could not be
// sent: their records are delivered again once their acquisition lock times out, and skipped
// by their markers if their batch had committed.
func (e *Runner) shareAcked(_ *kgo.Client, rs kgo.ShareAckResults) {
	for _, r := range rs {
		if r.Err == nil {
			continue
		}
		e.m.ackFailures.WithLabelValues(r.Topic).Inc()
		e.log.Warn("share acknowledgement failed: the records are delivered again once their lock times out (skipped by their markers when done)",
			"topic", r.Topic, "partition", r.Partition, "error", r.Err)
	}
}

// leaveShare sends the acknowledgements still pending and leaves the group (which releases
// whatever is acquired and not acknowledged: an abandoned batch's records), then closes the
// client.
func (e *Runner) leaveShare() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e.hardCtx.Err() == nil {
		if err := e.cl.FlushAcks(ctx); err != nil {
			e.log.Warn("sending the last acknowledgements timed out: those records are delivered again once their lock times out", "error", err)
		}
	} else {
		cancel() // an abort does not wait for the group
	}
	_ = e.cl.LeaveGroupContext(ctx)
	e.cl.Close()
}

// shareIdle decides when StopWhenIdle stops a share group member: nothing delivered to it for
// StopWhenIdle (counted from the start), and, asked of the broker at most once a second, no
// share partition of the source topics with anything left to deliver (the group's lag: records
// neither accepted, rejected nor archived, in flight at another member or waiting for their
// lock to time out after a crash). A share group has no committed offsets: its share
// partitions' lag is what says it is done.
func (e *Runner) shareIdle(ctx context.Context) bool {
	d := e.o.StopWhenIdle
	if d <= 0 {
		return false
	}
	e.mu.Lock()
	last := e.lastRecv
	e.mu.Unlock()
	if time.Since(last) < d || time.Since(e.idle.lastAsked) < time.Second {
		return false
	}
	e.idle.lastAsked = time.Now()
	behind, err := e.shareBehind(ctx)
	if err != nil {
		e.log.Warn("idle check: cannot read the share group's offsets from the broker", "error", err)
		return false
	}
	if behind == "" {
		e.log.Info("nothing delivered for a while and nothing left to deliver in the share group: stopping", "stop_when_idle", d.String())
		return true
	}
	if behind != e.idle.behind || time.Since(e.idle.loggedAt) >= time.Minute {
		e.log.Info("quiet, but the share group has records left to deliver (in flight elsewhere, or locked by a member that stopped): waiting", "behind", behind)
		e.idle.behind, e.idle.loggedAt = behind, time.Now()
	}
	return false
}

// shareBehind lists the share partitions of the source topics with records left to deliver,
// as "topic/partition (lag n)", "" when none has: a partition the group has not started on
// counts when it holds records.
func (e *Runner) shareBehind(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &kafka.Cluster{Client: e.cl, Admin: kadm.NewClient(e.cl)}
	c.AwaitGroupCoordinators(ctx, e.o.ShareGroup)
	described, err := c.Admin.DescribeShareGroupOffsets(ctx, e.o.ShareGroup)
	if err == nil {
		err = described.Error()
	}
	if err != nil {
		return "", fmt.Errorf("share-partition offsets of share group %s: %w", e.o.ShareGroup, err)
	}
	offsets := described[e.o.ShareGroup].Offsets
	var b []string
	for _, topic := range e.o.Topics {
		bounds, err := c.Bounds(ctx, topic)
		if err != nil {
			return "", err
		}
		for _, pb := range bounds {
			o, ok := offsets.Lookup(topic, pb.Partition)
			switch {
			case ok && o.Err == nil && o.Lag == 0:
				continue
			case ok && o.Err == nil && o.Lag > 0:
				b = append(b, fmt.Sprintf("%s/%d (lag %d)", topic, pb.Partition, o.Lag))
			case pb.LastStable > pb.LogStart: // not started, or its lag unknown, and records there
				b = append(b, fmt.Sprintf("%s/%d (not started)", topic, pb.Partition))
			}
		}
	}
	slices.Sort(b)
	return strings.Join(b, " "), nil
}
