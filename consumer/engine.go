package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// ErrAborted is the cause when Abort stopped the runner.
var ErrAborted = errors.New("consumer aborted: in-flight batches abandoned (rolled back, not committed)")

// ErrDrainTimeout is returned when a shutdown had to abandon batches still in flight after
// ShutdownTimeout. What they did is rolled back and their offsets are not committed.
var ErrDrainTimeout = errors.New("shutdown timeout: batches still in flight were abandoned (rolled back, not committed)")

// MissingTopicError means a source or dead-letter topic does not exist. The runner creates
// nothing implicitly.
type MissingTopicError struct {
	Topic string
	Role  string // "source" or "dead-letter"
}

func (e *MissingTopicError) Error() string {
	if e.Role == "dead-letter" {
		return fmt.Sprintf("dead-letter topic %q does not exist: create it (fieldwork never creates topics) or choose another with --dlq-topic", e.Topic)
	}
	return fmt.Sprintf("%s topic %q does not exist", e.Role, e.Topic)
}

// defaultPollWait bounds one poll (Runner.pollWait), so that the loop notices idleness
// promptly.
const defaultPollWait = 500 * time.Millisecond

// maxQueued is the queue, in batches, at which fetching a partition pauses (pause.go).
const maxQueued = 8

// fetchMaxWait bounds a fetch request's long poll (kgo.FetchMaxWait).
const fetchMaxWait = 100 * time.Millisecond

// progressEvery is how often Run logs its running totals.
const progressEvery = 15 * time.Second

// Runner is a consumer: a Kafka consumer group member that applies events through a
// Handler with durable deduplication. See the package documentation for the guarantees. A
// Runner runs once; Stats, Done and Abort are safe to call from any goroutine.
type Runner struct {
	o config
	// chain is the handler wrapped in the middleware (middleware.go).
	chain Handler
	log   *slog.Logger
	m     *metrics
	c     counters
	cl    *kgo.Client

	// hardCtx is cancelled by Abort or by a fatal error: every batch in flight is abandoned.
	hardCtx    context.Context
	hardCancel context.CancelCauseFunc

	done chan struct{} // closed when Run returns
	// pollWake is signalled when a worker takes a batch, so that a poll loop waiting for
	// the queues to drain goes on at once.
	pollWake chan struct{}
	// pollWait bounds one poll: defaultPollWait.
	pollWait time.Duration
	// pollMu guards pollCut, which cuts short the poll in flight (set while the poll loop
	// waits in PollFetches, nil between polls), and cutPending, a cut asked for between two
	// polls, which the next poll takes at once (see cutPoll).
	pollMu     sync.Mutex
	pollCut    context.CancelFunc
	cutPending bool
	// firstAssigned is closed when the group first assigns this member partitions.
	firstAssigned chan struct{}
	assignedOnce  sync.Once

	idle idleCheck

	// limits are the dead-letter topics' size limits, read at start.
	limits map[string]sizeLimit
	// share is the share group's configuration, read at start (the option ShareGroup).
	share shareGroup

	// br is the dead-letter breaker, nil when it is off (breaker.go); softStop ends the
	// poll loop as a signal does (a drain) when it trips.
	br       *breaker
	softStop context.CancelFunc

	mu      sync.Mutex
	workers map[tp]*worker
	// gen counts assignment changes (assigned, revoked, lost): an idle check that saw the
	// assignment change while it asked the broker throws its answer away.
	gen      uint64
	lastRecv time.Time
	// halts are the partitions stopped at a dead letter that cannot be written, by partition
	// (the last one each), kept after the partition is revoked: Run returns them.
	halts map[tp]*HaltedError
}

// New returns a runner of h over the markers of store, ready to Run. The options Topics and
// Group are required; the others have the defaults their documentation gives.
func New(store *inbox.Store, h Handler, opts ...Opt) (*Runner, error) {
	c := config{Handler: h}
	if store != nil {
		c.Store = inboxlink.Store(store)
	}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&c)
		}
	}
	o := c.withDefaults()
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("consumer options: %w", err)
	}
	if o.ShareGroup != "" {
		o.Group = o.ShareGroup // the group named in dead letters, logs and replay targets
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	m := newMetrics(o.Registerer)
	e := &Runner{
		o: o, log: o.Logger, m: m, br: newBreaker(o.Breaker, m),
		hardCtx: ctx, hardCancel: cancel, workers: map[tp]*worker{}, halts: map[tp]*HaltedError{},
		done: make(chan struct{}), pollWake: make(chan struct{}, 1), pollWait: defaultPollWait, firstAssigned: make(chan struct{}), softStop: func() {},
	}
	e.chain = chain(e.terminal(), o.Middleware)
	return e, nil
}

// Stats returns the running totals.
func (e *Runner) Stats() Stats { return e.c.snapshot() }

// Done is closed when Run has returned.
func (e *Runner) Done() <-chan struct{} { return e.done }

// Abort stops the runner at once: batches in flight are abandoned (their transactions roll
// back, their offsets are not committed) and Run returns ErrAborted without waiting to leave
// the group. Nothing is committed that is not done, so this is as safe as a crash, only
// faster to recover from. Safe to call at any time, more than once.
func (e *Runner) Abort() { e.hardCancel(ErrAborted) }

// fail stops the runner with a fatal error (the first one wins).
func (e *Runner) fail(err error) {
	e.log.Error("stopping the consumer", "error", err)
	e.hardCancel(err)
}

// Run consumes until ctx is cancelled (then drains: the batches in flight finish, within
// ShutdownTimeout, their offsets are committed and the member leaves the group), until the
// engine is idle for StopWhenIdle, until Abort, or until a fatal error. A drain that
// finishes returns nil; one that had to abandon batches after ShutdownTimeout returns
// ErrDrainTimeout; Abort (even during a drain) returns ErrAborted; a fatal error (a topic
// missing at start, MaxInfraRetries exceeded, a store error that retrying cannot fix) is
// returned as it is. Partitions stopped at a dead letter that could not be written
// (*HaltedError, one per partition) are joined to whatever Run returns, so a run that had
// to stop a partition never returns nil. When the dead-letter breaker trips (the option Breaker)
// the runner drains as for a signal, committing nothing past the trip, and Run returns the
// *TrippedError (fwerr.KindTripped). With ShareGroup, Run is a share group member's: a drain
// finishes the records of the poll in hand and acknowledges them, and it refuses to start
// (*ShareDLQError) when the group's dead-letter topic would lose what is rejected to it.
func (e *Runner) Run(ctx context.Context) error {
	defer close(e.done)
	defer e.hardCancel(nil)
	if e.o.ShareGroup != "" {
		return e.runShare(ctx)
	}
	if err := e.checkTopics(ctx); err != nil {
		return err
	}
	opts := append(slices.Clone(e.o.Kafka),
		kgo.ConsumerGroup(e.o.Group),
		kgo.ConsumeTopics(e.o.Topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Events of aborted transactions never happened. Transaction markers are delivered
		// (and skipped by decode) so that the committed offset passes a marker that ends the
		// log, and a partition can be seen to be done.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		// Dead letters are produced with this client, batched up to each dead-letter topic's
		// own limit instead of franz-go's default 1,000,012 bytes.
		kgo.ProducerBatchMaxBytesFn(e.batchMaxBytes),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// A fetch request long-polls a broker for this long when its partitions have nothing
		// new, and a partition resumed meanwhile (pause.go) is fetched only by the next
		// request: franz-go's 5 s default left a resumed partition idle behind partitions at
		// their end, and Kafka's own consumer's 500 ms (fetch.max.wait.ms) a quarter of a
		// second on average each time a busy partition beside an idle one was resumed. New
		// records end the long poll at once either way; an idle member asks ten times a
		// second.
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.OnPartitionsAssigned(e.assigned),
		kgo.OnPartitionsRevoked(e.revoked),
		kgo.OnPartitionsLost(e.lost),
		kgo.WithLogger(kgoLogger{e.log}),
	)
	if e.o.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(e.o.InstanceID))
	}
	if e.o.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(e.o.SessionTimeout))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka consumer client: %w", err)
	}
	e.cl = cl
	e.log.Info("consumer starting",
		"topics", strings.Join(e.o.Topics, ","), "group", e.o.Group, "consumer", e.o.Consumer,
		"handler", e.o.Name, "dead_letter_topics", strings.Join(e.dlqTopics(), ","),
		"store", e.o.Store.Table(), "batch_max", e.o.BatchMax, "max_attempts", e.o.MaxAttempts,
		"tx_per_event", e.o.TxPerEvent, "batch_handler", e.batchHandler() != nil)

	started := time.Now()
	runCtx, softStop := context.WithCancel(ctx)
	defer softStop()
	e.softStop = softStop
	go e.awaitPartitions(runCtx, started)
	loopErr := e.pollLoop(runCtx)
	abandoned := e.shutdown(loopErr == nil)
	return e.finishRun(loopErr, abandoned, started)
}

// finishRun is what Run returns once the member has left its group, and its last log line:
// the loop's error, or ErrAborted, or ErrDrainTimeout when batches were abandoned, joined with
// the breaker's trip and the halts.
func (e *Runner) finishRun(loopErr error, abandoned bool, started time.Time) error {
	switch cause := context.Cause(e.hardCtx); {
	case loopErr != nil:
	case errors.Is(cause, ErrAborted): // Abort during the drain
		loopErr = ErrAborted
	case abandoned:
		loopErr = ErrDrainTimeout
	}
	if t := e.trippedError(); t != nil {
		loopErr = errors.Join(loopErr, t.kinded())
	}
	if halts := e.haltErrors(); len(halts) > 0 {
		loopErr = errors.Join(append([]error{loopErr}, halts...)...)
	}
	st := e.Stats()
	args := []any{"records", st.Records, "processed", st.Processed, "duplicates", st.Duplicates,
		"stale", st.Stale, "dead_lettered", st.DeadLettered, "dead_letters_bounded", st.DeadLettersBounded,
		"retried", st.Retried, "other_group", st.OtherGroup, "infra_retries", st.InfraRetries}
	if e.o.ShareGroup != "" {
		args = append(args, "released", st.Released, "redelivered", st.Redelivered, "broker_dead_lettered", st.BrokerDeadLettered)
	}
	e.log.Info("consumer stopped", append(args, "elapsed", time.Since(started).Round(time.Millisecond).String())...)
	return loopErr
}

// dlqTopics are the dead-letter topics fieldwork writes: none for a share group whose broker
// writes them.
func (e *Runner) dlqTopics() []string {
	if e.share.dlqTopic != "" {
		return nil
	}
	var out []string
	for _, t := range e.o.Topics {
		if d := e.o.dlqTopic(t); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// checkTopics fails when a source or dead-letter topic does not exist, and reads the
// dead-letter topics' size limits.
func (e *Runner) checkTopics(ctx context.Context) error {
	cl, err := kgo.NewClient(e.o.Kafka...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	all := append(slices.Clone(e.o.Topics), e.dlqTopics()...)
	md, err := e.readMetadata(mctx, kadm.NewClient(cl), all)
	if kafka.IsAuthorization(err) {
		if t := kafka.FirstDenied(mctx, kadm.NewClient(cl), all); t != "" {
			return kafka.Denied(err, e.topicOp(t), kafka.ResourceTopic, t)
		}
	}
	if err != nil {
		return fmt.Errorf("read metadata of %s: %w", strings.Join(all, ", "), err)
	}
	for _, t := range all {
		role := "source"
		if !slices.Contains(e.o.Topics, t) {
			role = "dead-letter"
		}
		td, ok := md.Topics[t]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return &MissingTopicError{Topic: t, Role: role}
		}
		if td.Err != nil {
			return kafka.Denied(fmt.Errorf("%s topic %q: %w", role, t, td.Err), e.topicOp(t), kafka.ResourceTopic, t)
		}
	}
	e.limits = readSizeLimits(mctx, kadm.NewClient(cl), e.dlqTopics(), e.log)
	return nil
}

// topicOp is the operation the runner needs on topic: READ on a source, WRITE on a
// dead-letter topic.
func (e *Runner) topicOp(topic string) string {
	if slices.Contains(e.o.Topics, topic) {
		return kafka.OpRead
	}
	return kafka.OpWrite
}

// readMetadata reads the topics' metadata, retrying within ctx's bound: the connection check
// before the runner starts has already reached a broker, so a failure here is one of the
// cluster's brokers restarting or not ready yet (one closes the connection on the first
// request while it starts), not a wrong address, and a consumer started beside a rolling
// restart must not exit for it.
func (e *Runner) readMetadata(ctx context.Context, adm *kadm.Client, topics []string) (kadm.Metadata, error) {
	wait := 100 * time.Millisecond
	for {
		md, err := adm.Metadata(ctx, topics...)
		if err == nil || ctx.Err() != nil {
			return md, err
		}
		if kafka.IsAuthorization(err) { // retrying cannot grant an ACL
			return md, err
		}
		e.log.Warn("reading the topics' metadata failed; retrying", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return md, err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// pollLoop polls and hands records to the partition workers until shutdown. It returns nil
// for a drain (ctx cancelled or idle) and the cause for an abort or a fatal error.
func (e *Runner) pollLoop(ctx context.Context) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(e.hardCtx, stop)
	defer unhook()
	lastProgress, lastStats := time.Now(), Stats{}
	for {
		if e.hardCtx.Err() != nil {
			return context.Cause(e.hardCtx)
		}
		if ctx.Err() != nil {
			e.log.Info("shutting down: draining in-flight batches", "timeout", e.o.ShutdownTimeout.String())
			return nil
		}
		if e.idle.done(runCtx, e) {
			return nil
		}
		if st := e.Stats(); time.Since(lastProgress) >= progressEvery && st != lastStats {
			lastProgress, lastStats = time.Now(), st
			e.log.Info("progress", "records", st.Records, "processed", st.Processed, "duplicates", st.Duplicates,
				"stale", st.Stale, "dead_lettered", st.DeadLettered, "retried", st.Retried, "other_group", st.OtherGroup, "infra_retries", st.InfraRetries)
		}

		e.throttle()
		if e.backlogged() {
			// Every partition fetched has a batch queued: fetch more once one is taken.
			select {
			case <-e.pollWake:
			case <-runCtx.Done():
			case <-time.After(e.pollWait):
			}
			continue
		}
		// Everything buffered at once, every partition's share together: a poll bounded by a
		// record count hands the records out partition after partition, and one partition
		// with much buffered would keep the others waiting for their first records.
		pctx, cancel := context.WithTimeout(runCtx, e.pollWait)
		e.polling(cancel)
		fs := e.cl.PollFetches(pctx)
		e.polling(nil)
		cancel()
		if fs.IsClientClosed() {
			return errors.New("kafka client closed unexpectedly")
		}
		if denied := e.fetchErrors(fs); denied != nil {
			e.cl.AllowRebalance() // or leaving the group waits for it
			e.fail(denied)
			return denied
		}
		e.handOut(fs)
	}
}

// fetchErrors logs the errors of a poll, a deadline or cancellation aside, and returns the
// first that retrying cannot mend: an authorization error, named (retrying cannot grant an
// ACL), or a group whose members speak another assignment protocol.
func (e *Runner) fetchErrors(fs kgo.Fetches) error {
	var denied error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if errors.Is(err, kerr.InconsistentGroupProtocol) && denied == nil {
			// Another application's consumers hold the group with another protocol (a
			// librdkafka consumer's range assignor): joining would fail until they leave,
			// and sharing their group would take their partitions.
			denied = fmt.Errorf("consumer group %s is used by members of another assignment protocol (another application's consumers: groups describe %s lists them); a group's members must share one, and this group is likely not the one to join: choose another --group: %w", e.o.Group, e.o.Group, err)
			return
		}
		if kafka.IsAuthorization(err) && denied == nil {
			// Retrying cannot grant an ACL: fail now, naming it (a group's error comes
			// with no topic).
			if t == "" {
				denied = kafka.Denied(err, kafka.OpRead, kafka.ResourceGroup, e.o.Group)
			} else {
				denied = kafka.Denied(err, kafka.OpRead, kafka.ResourceTopic, t)
			}
			return
		}
		e.log.Warn("fetch error", "topic", t, "partition", p, "error", err)
	})
	return denied
}

// handOut queues each partition's fetched records to its worker and lets a rebalance
// proceed.
func (e *Runner) handOut(fs kgo.Fetches) {
	var orphan *tp
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		e.mu.Lock()
		w := e.workers[tp{p.Topic, p.Partition}]
		e.lastRecv = time.Now()
		e.mu.Unlock()
		if w == nil {
			orphan = &tp{p.Topic, p.Partition}
			return
		}
		w.enqueue(p.Records, p.HighWatermark)
	})
	e.cl.AllowRebalance()
	if orphan != nil {
		// Cannot happen with BlockRebalanceOnPoll (assignment precedes fetching and
		// revocation waits for the poll); if it did, dropping the records would let a
		// later commit skip them, so stop instead.
		e.fail(fmt.Errorf("records for %s/%d arrived with no worker for the partition", orphan.topic, orphan.partition))
	}
}

// wakePoller tells a poll loop waiting for queues to drain to look again.
func (e *Runner) wakePoller() {
	select {
	case e.pollWake <- struct{}{}:
	default:
	}
}

// assignWaitNote is how long a member that has joined no assignment yet waits before it says
// why (awaitPartitions), and then how long between two notes.
const assignWaitNote, assignWaitAgain = 10 * time.Second, 30 * time.Second

// awaitPartitions says, while the group has assigned this member no partition since it
// started, what it is waiting for: a rebalance, which a member that stopped without leaving
// the group (a SIGKILL, a lost host) holds until its session times out. Without it a restart
// after a kill sits silent for up to the session timeout (45s by default) before its first
// partition.
func (e *Runner) awaitPartitions(ctx context.Context, started time.Time) {
	t := time.NewTimer(assignWaitNote)
	defer t.Stop()
	session := "Kafka's default, 45s"
	if e.o.SessionTimeout > 0 {
		session = e.o.SessionTimeout.String()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.firstAssigned:
			return
		case <-t.C:
			e.log.Warn("waiting for the group to assign partitions: its rebalance waits for every member, and a member that stopped without leaving the group (killed) holds its partitions until its session times out",
				"group", e.o.Group, "waited", time.Since(started).Round(time.Second).String(), "session_timeout", session)
			t.Reset(assignWaitAgain)
		}
	}
}

// assigned starts a worker per new partition. With BlockRebalanceOnPoll it runs between
// polls, before any record of these partitions is fetched. The idle time counts from here.
func (e *Runner) assigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	e.lastRecv = time.Now()
	cl.ResumeFetchPartitions(assigned) // paused when this member had them before (pause.go)
	for topic, ps := range assigned {
		slices.Sort(ps)
		for _, p := range ps {
			k := tp{topic, p}
			if _, ok := e.workers[k]; ok {
				continue
			}
			w := newWorker(e, k)
			e.workers[k] = w
			go w.run()
		}
		e.log.Info("partitions assigned", "topic", topic, "partitions", fmt.Sprint(ps))
	}
	e.m.assigned.Set(float64(len(e.workers)))
	if len(assigned) > 0 {
		e.assignedOnce.Do(func() { close(e.firstAssigned) })
	}
}

// revoked lets the revoked partitions' batches in flight finish (bounded), then commits what
// is done and not yet committed, so the next owner starts exactly after it. With
// BlockRebalanceOnPoll no poll runs meanwhile, so no record of these partitions is handed out
// after this returns.
func (e *Runner) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	ws := e.detach(revoked)
	if len(ws) == 0 {
		return
	}
	e.log.Info("partitions revoked: finishing batches in flight", "partitions", describe(revoked))
	e.stopWorkers(ws, min(e.o.ShutdownTimeout, 30*time.Second))
	e.commitFinished(ctx, ws)
}

// lost abandons the lost partitions' batches: the member is out of the group, its commits
// would be refused, and the new owner redoes whatever was not committed (the markers make
// that safe).
func (e *Runner) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	ws := e.detach(lost)
	if len(ws) == 0 {
		return
	}
	e.log.Warn("partitions lost: abandoning batches in flight", "partitions", describe(lost))
	for _, w := range ws {
		w.abort()
	}
	for _, w := range ws {
		<-w.done
	}
}

// detach removes the workers of the given partitions from the runner and returns them. It
// resumes fetching them (franz-go would keep them paused when they come back) and counts an
// assignment change, which resets what the idle check knew.
func (e *Runner) detach(parts map[string][]int32) []*worker {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	var ws []*worker
	var paused map[string][]int32
	for topic, ps := range parts {
		for _, p := range ps {
			k := tp{topic, p}
			if w, ok := e.workers[k]; ok {
				ws = append(ws, w)
				delete(e.workers, k)
				e.br.forget(k)
				e.m.dropLag(topic, p)
				if w.paused {
					paused = addPartition(paused, k)
				}
			}
		}
	}
	if len(paused) > 0 {
		e.cl.ResumeFetchPartitions(paused)
	}
	e.m.assigned.Set(float64(len(e.workers)))
	return ws
}

// stopWorkers asks ws to finish their batches in flight and waits up to grace; past it the
// remaining batches are abandoned, and it reports so.
func (e *Runner) stopWorkers(ws []*worker, grace time.Duration) (abandoned bool) {
	for _, w := range ws {
		w.stop()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, w := range ws {
		select {
		case <-w.done:
		case <-timer.C:
			abandoned = true
		}
		if abandoned {
			break
		}
	}
	if abandoned {
		e.log.Warn("batches still in flight after the grace period: abandoning them (rolled back, not committed)", "grace", grace.String())
		for _, w := range ws {
			w.abort()
		}
	}
	for _, w := range ws {
		<-w.done
	}
	return abandoned
}

// commitFinished commits the finished offsets of exited workers that Kafka does not have yet
// (their last commit failed).
func (e *Runner) commitFinished(ctx context.Context, ws []*worker) {
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for _, w := range ws {
		if w.finished.Offset > w.committed.Offset {
			if offsets[w.tp.topic] == nil {
				offsets[w.tp.topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[w.tp.topic][w.tp.partition] = w.finished
		}
	}
	if len(offsets) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if cerr := e.commitOffsets(cctx, offsets); cerr != nil {
		e.m.commitFailed.Inc()
		e.log.Warn("final offset commit failed: the next owner re-reads those records and skips them as duplicates", "error", cerr)
	}
}

// shutdown stops every worker (draining or abandoning), commits what is done, leaves the
// group and closes the client.
func (e *Runner) shutdown(graceful bool) (abandoned bool) {
	e.mu.Lock()
	var ws []*worker
	for k, w := range e.workers {
		ws = append(ws, w)
		delete(e.workers, k)
	}
	e.mu.Unlock()
	if graceful {
		abandoned = e.stopWorkers(ws, e.o.ShutdownTimeout)
	} else {
		for _, w := range ws {
			w.abort()
		}
		for _, w := range ws {
			<-w.done
		}
	}
	leaveCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e.hardCtx.Err() == nil {
		e.commitFinished(leaveCtx, ws)
	} else {
		cancel() // an abort does not wait for the group
	}
	_ = e.cl.LeaveGroupContext(leaveCtx)
	e.cl.Close()
	return abandoned
}

func describe(parts map[string][]int32) string {
	var b strings.Builder
	topics := make([]string, 0, len(parts))
	for t := range parts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for i, t := range topics {
		if i > 0 {
			b.WriteString(" ")
		}
		ps := slices.Clone(parts[t])
		slices.Sort(ps)
		fmt.Fprintf(&b, "%s%v", t, ps)
	}
	return b.String()
}

// commitOffset commits one partition's offset.
func (e *Runner) commitOffset(ctx context.Context, k tp, off kgo.EpochOffset) error {
	return e.commitOffsets(ctx, map[string]map[int32]kgo.EpochOffset{k.topic: {k.partition: off}})
}

// commitOffsets commits offsets and returns the first error, the request's or a partition's.
func (e *Runner) commitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset) error {
	var cerr error
	e.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = commitResponseErr(resp, err)
	})
	return kafka.Denied(cerr, kafka.OpRead, kafka.ResourceGroup, e.o.Group)
}

// halt records a partition stopped at a dead letter it cannot write.
func (e *Runner) halt(h *HaltedError) {
	e.log.Error("partition stopped: a dead letter cannot be written; the other partitions go on", "error", h.Error())
	e.mu.Lock()
	e.halts[tp{h.Topic, h.Partition}] = h
	e.m.halted.Set(float64(len(e.halts)))
	e.mu.Unlock()
	e.wakePoller() // to pause it
}

// tripped stops the runner after the dead-letter breaker tripped in a batch of k: no worker
// takes another batch, the poll loop stops and the runner drains, commits what is done
// (nothing past the trip) and leaves the group.
func (e *Runner) tripped(k tp, t *TrippedError) {
	e.log.Error("dead-letter breaker tripped: stopping the consumer; nothing is committed or dead-lettered past the trip",
		"topic", k.topic, "partition", k.partition, "offset", t.Offset, "rule", t.Rule, "limit", t.Limit,
		"consecutive", t.Consecutive, "failed", t.Failed, "records", t.Records,
		"dominant_reason", t.Dominant.Reason, "dominant_count", t.Dominant.Count, "dominant_fingerprint", t.Dominant.Fingerprint,
		"dominant_error", t.Dominant.Error)
	e.softStop()
	e.wakePoller()
}

// trippedError is the breaker's TrippedError, with the dead letters written by the run, nil
// when it has not tripped.
func (e *Runner) trippedError() *TrippedError {
	if e.br == nil {
		return nil
	}
	e.br.mu.Lock()
	defer e.br.mu.Unlock()
	if e.br.tripped == nil {
		return nil
	}
	t := *e.br.tripped
	t.DeadLettered = e.c.deadLettered.Load()
	return &t
}

// clearHalt forgets a halt of k once a batch of k has committed past it (a later owner of
// the partition wrote the dead letter after all).
func (e *Runner) clearHalt(k tp, done int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.halts[k]; ok && done > h.Offset {
		delete(e.halts, k)
		e.m.halted.Set(float64(len(e.halts)))
	}
}

// haltErrors are the halts, in partition order.
func (e *Runner) haltErrors() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]tp, 0, len(e.halts))
	for k := range e.halts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	out := make([]error, len(keys))
	for i, k := range keys {
		out[i] = e.halts[k]
	}
	return out
}

// commitResponseErr is the first error of an offset commit: the request's or a partition's.
func commitResponseErr(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
