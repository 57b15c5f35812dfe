package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// Defaults of execution.
const (
	// DefaultMaxBuffered is the producer's cap on records handed to it and not yet
	// acknowledged (franz-go's MaxBufferedRecords). An idempotent producer has one request in
	// flight per broker, and a request carries up to a megabyte per partition (some 9,000
	// dead letters of 300-byte events over three partitions): the buffer must hold the next
	// request while one is in flight, or reading stalls on every acknowledgement. At 10,000 a
	// 500,000-record replay ran at 215,000-255,000 records/s; at 30,000 at 252,000-288,000.
	// It bounds the duplicates a crash can cause (Summary.DuplicateWindow).
	DefaultMaxBuffered = 30_000
	// maxBufferedBytes also bounds the producer's buffer in bytes, for large records.
	maxBufferedBytes = 64 << 20
	// DefaultFlushRecords: the journal is written when this many acknowledged sends wait for
	// it, and at least every DefaultFlushInterval.
	DefaultFlushRecords  = 2_000
	DefaultFlushInterval = time.Second
	// drainTimeout bounds waiting for the acknowledgements of records in flight after an
	// interruption, and each journal write.
	drainTimeout = 30 * time.Second
	// atEvery is how many records share one reading of the clock for fw.replay.at: reading
	// it for every record was a tenth of a replay's CPU on a virtual machine.
	atEvery = 64
	// deliveryTimeout fails a record the brokers have not acknowledged in this long (the run
	// then fails, resumable), rather than retrying forever.
	deliveryTimeout = 2 * time.Minute
)

// ExecOptions configure Execute.
type ExecOptions struct {
	// RunID names a new run (action.NewRunID); ignored when resuming.
	RunID    string
	Operator string
	// Reason is journaled and stamped as fw.replay.reason; a resumed run keeps its own.
	Reason string
	// Rate caps records sent per second; 0: no cap.
	Rate float64
	// Owner names this process in the journal (default Owner()).
	Owner string
	// MaxBuffered, FlushRecords and FlushInterval default to the Default* values.
	MaxBuffered   int
	FlushRecords  int
	FlushInterval time.Duration
	// Progress, when set, is called from the read loop every few hundred records and once at
	// the end.
	Progress func(Progress)
	// Recheck, when set, is asked about a new run as soon as it is recorded, before anything
	// is sent: its error refuses the run, which is then marked failed (LaterGivesWay).
	Recheck func(ctx context.Context, runID string) error
	// SinglePass executes a plan that was not scanned first (Scan): the plan's records are
	// read once, and sent as they are read. When the plan's target is known up front
	// (Plan.TargetKnown: --to with the default partitioner) Execute checks that it exists
	// before it reads anything. Otherwise each record's target is checked when it is read
	// (one metadata request per target topic): the first record that cannot be routed, or
	// whose target topic or partition does not exist, stops the run before it is sent. The
	// records before it were sent and journaled; the run is marked failed, and can be resumed
	// once the target exists. A new run is recorded when the first record to send is read:
	// a plan that selects nothing, or whose first selected record is refused, records no run
	// and sends nothing (Summary.Recorded false), as after a scan.
	SinglePass bool
}

// Progress is a running replay's figures.
type Progress struct {
	Read, Total    int64
	Produced, Sent int64 // handed to the producer, acknowledged (this process)
	Counts         dedup.RunCounts
	Elapsed        time.Duration
}

// InterruptedText is the error of a run interrupted (SIGINT, SIGTERM, the console quit) in
// its summary and its journal row, in place of what failed of the interruption.
const InterruptedText = "interrupted"

// Summary is what an executed (or resumed) run did. Counts are the whole run's, resumed
// attempts included; Targets are its acknowledged sends per target partition.
type Summary struct {
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
	Resumed  bool   `json:"resumed"`
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
	Source   string `json:"topic"`
	Target   string `json:"target"`
	// PartitionerChoices are the partitioners this attempt placed keyed records by, per
	// target topic, and why (Report.PartitionerChoices): a single pass has no plan to say so.
	// Empty with --partitioner, and when no record was placed by its key.
	PartitionerChoices []PartitionerChoice `json:"partitioner_choices"`
	Counts             dedup.RunCounts     `json:"counts"`
	Targets            []dedup.TargetCount `json:"targets"`
	Quarantined        []RecordRef         `json:"quarantined"`
	// Incomplete lists the bounded copies this attempt read and did not send (at most
	// 1,000); IncompleteCount counts the whole run's (incompleteOf: the journal keeps no
	// column for them, they are the selected records neither sent, quarantined nor skipped).
	Incomplete      []RecordRef `json:"incomplete"`
	IncompleteCount int64       `json:"incomplete_count"`
	// SentNow is what this process had acknowledged; RecordsPerSecond is SentNow over the
	// attempt's ElapsedMS.
	SentNow          int64   `json:"sent_this_attempt"`
	ElapsedMS        int64   `json:"elapsed_ms"`
	RecordsPerSecond float64 `json:"records_per_second"`
	// DuplicateWindow bounds how many records a crash of this process could have sent without
	// the journal knowing (so that a resume sends them again): the producer's buffer plus one
	// journal batch.
	DuplicateWindow int64  `json:"duplicate_window"`
	Error           string `json:"error,omitempty"`

	// Recorded is false when a single-pass run (ExecOptions.SinglePass) selected nothing: no
	// run was journaled and nothing was sent. Read is how many records this attempt read;
	// MalformedSent how many of the records it sent were dead-lettered as malformed (a
	// single-pass run can only warn about them afterwards).
	Recorded      bool  `json:"-"`
	Read          int64 `json:"-"`
	MalformedSent int64 `json:"-"`

	// Stopped is set when the run stopped itself (--stop-on-redeadletter, *StoppedError).
	Stopped bool `json:"stopped,omitempty"`
	// Execution is how the run executed (its rate, its batching) and where each setting came
	// from. Set by the flow (Run).
	Execution *ExecutionReport `json:"execution"`
	// guards are the guards' notices of a single pass (checked as the records were sent).
	guards []Notice
}

// Err is the run's outcome as an exit code: nil when completed with nothing quarantined and
// nothing incomplete; a check failure (exit 3) when records were quarantined or were bounded
// copies (never sent).
func (s *Summary) Err() error {
	var held []string
	if n := s.Counts.Quarantined; n > 0 {
		held = append(held, fmt.Sprintf("%s quarantined: their fw.replay.count reached --max-replays", wording.Plural(n, "record")))
	}
	if n := s.IncompleteCount; n > 0 {
		held = append(held, fmt.Sprintf("%s not sent, incomplete: %s", wording.Plural(n, "record"), incompleteWhy(s.Incomplete)))
	}
	if len(held) == 0 {
		return nil
	}
	return fwerr.Checkf("%s; the other %d selected records were handled", strings.Join(held, "; "), s.Counts.Selected-s.Counts.Quarantined-s.IncompleteCount)
}

// incompleteWhy says what the incomplete records listed are: bounded copies, dead letters
// holding only coordinates whose original record is gone, or both.
func incompleteWhy(refs []RecordRef) string {
	const (
		bounded = "bounded copies whose value is not whole (fw.dlq.value_omitted)"
		gone    = "dead letters holding only coordinates whose original record is gone (original_gone says why)"
	)
	var nGone int
	for _, r := range refs {
		if r.OriginalGone != "" {
			nGone++
		}
	}
	switch {
	case nGone == 0:
		return bounded
	case nGone == len(refs):
		return gone
	}
	return bounded + ", or " + gone
}

// incompleteOf is how many of a run's selected records were incomplete: the journal counts
// them as selected only.
func incompleteOf(c dedup.RunCounts) int64 { return c.Selected - c.Sent - c.Quarantined - c.Skipped }

// Execute sends what p selects, journaling the run in st as it goes, and returns the summary.
//
// Guarantees. The producer is idempotent with acks=all (franz-go's defaults), so a retried
// batch is written once. Acknowledged sends are journaled in batches (every FlushRecords
// records or FlushInterval), each batch in one transaction with the checkpoints they move and
// the counts: after a crash the journal's checkpoints never claim a record that was not
// acknowledged, and a resume re-sends only what the journal does not show as acknowledged.
// The records handed to the producer and not yet journaled are kept under DuplicateWindow
// (reading pauses when they reach it), which bounds the duplicates a crash can cause.
//
// On cancellation of ctx (SIGINT/SIGTERM) reading stops, the records in flight are awaited
// (up to 30s), the journal is written and the run is marked interrupted; the error is then an
// interruption (exit 130). Any other failure marks it failed. Either can be resumed.
func Execute(ctx context.Context, c *kafka.Cluster, st *dedup.Store, p *Plan, opts ExecOptions) (*Summary, error) {
	opts = opts.withDefaults()
	sum := &Summary{Source: p.Spec.From, Target: p.Spec.TargetLabel(), PartitionerChoices: []PartitionerChoice{}, Quarantined: []RecordRef{}, Incomplete: []RecordRef{},
		DuplicateWindow: int64(opts.MaxBuffered + opts.FlushRecords)}
	targets, checkTargets, err := sendTargets(ctx, c, p, opts.SinglePass)
	if err != nil {
		return nil, err
	}
	// The records read must be those the plan was made of: a source topic recreated since
	// (another topic ID) holds others, which the journal would take for the plan's.
	if err := checkSourceTopic(ctx, c, p); err != nil {
		return nil, err
	}
	base, create, err := startRun(ctx, st, p, &opts, sum)
	if err != nil {
		return nil, err
	}
	e := &executor{
		st: st, plan: p, opts: opts, sum: sum, create: create,
		tr:       newTracker(p.Ranges, base),
		flushNow: make(chan struct{}, 1),
		flushed:  make(chan struct{}),
		prov:     provenanceOf(sum.RunID, sum.Reason, &p.Spec),
		targets:  targets, checkTargets: checkTargets,
	}
	if create == nil {
		e.choicesJournaled = p.partitioners.made.Load()
	}
	if opts.SinglePass && p.Resume == nil {
		// Nothing was scanned: the guards look at the records as they are sent, and warn after.
		e.guard = newGuard(c, st, &p.Spec)
	}
	runErr := e.run(ctx, c)
	if e.create != nil {
		// A single pass that selected nothing (or failed before it did): no run was recorded,
		// nothing was sent.
		if runErr != nil {
			return nil, runErr
		}
		sum.Targets = []dedup.TargetCount{}
		return sum, nil
	}
	sum.Recorded = true
	return e.conclude(ctx, runErr)
}

// withDefaults fills in the default of every option not set: the owner, and the rate and
// batching as Execution.withDefaults fills them (the one rule, which the journal keeps; the
// flush interval in whole milliseconds, as journaled).
func (opts ExecOptions) withDefaults() ExecOptions {
	if opts.Owner == "" {
		opts.Owner = Owner()
	}
	return executionOf(opts).options(opts)
}

// sendTargets is the target cache of an execution: it knows each target topic, and its record
// size limit, from the first record to it on (a --to topic's before anything is read).
// checkTargets: it also refuses a record whose target does not exist (a single pass whose
// targets are in the records); a single pass whose target is known up front checks it here.
func sendTargets(ctx context.Context, c *kafka.Cluster, p *Plan, singlePass bool) (targets *targetCache, checkTargets bool, err error) {
	targets = newTargetCache(c, kafka.OpWrite, p)
	targets.limits = newTargetLimits(c)
	if singlePass {
		// Nothing was scanned: a target known up front must exist before anything is read;
		// others are checked record by record.
		if p.TargetKnown() {
			if err := CheckTarget(ctx, c, p); err != nil {
				return nil, false, err
			}
		} else {
			checkTargets = true
		}
	}
	if p.Spec.To != "" {
		// The one target is known: its limit is read before anything is.
		if _, err := targets.lookup(ctx, p.Spec.To); err != nil {
			return nil, false, err
		}
	}
	return targets, checkTargets, nil
}

// startRun journals the run in st before it sends: a resumed run is taken by this process
// with how it now executes; a new one is created (opts.RunID, made when empty), at once, or
// with a single pass by create when its first selected record is read (create is nil
// otherwise). base is the counts the run had journaled. sum gets the run's id, operator and
// reason.
func startRun(ctx context.Context, st *dedup.Store, p *Plan, opts *ExecOptions, sum *Summary) (base dedup.RunCounts, create func(context.Context) error, err error) {
	if p.Resume != nil {
		run := p.Resume.Run
		sum.Resumed, sum.RunID, sum.Operator, sum.Reason = true, run.ID, run.Operator, run.Reason
		// The run is taken with how it now executes, journaled for the next resume.
		if err := st.TakeReplayRun(ctx, run.ID, run.Status, run.Owner, opts.Owner, p.selection(*opts)); err != nil {
			if errors.Is(err, dedup.ErrRunNotOwned) {
				return base, nil, fmt.Errorf("run %s changed while resuming (another process took it?): %w", run.ID, err)
			}
			return base, nil, err
		}
		return run.RunCounts, nil, nil
	}
	if opts.RunID == "" {
		opts.RunID = action.NewRunID(time.Now())
	}
	sum.RunID, sum.Operator, sum.Reason = opts.RunID, opts.Operator, opts.Reason
	run := dedup.ReplayRun{
		ID: opts.RunID, Operator: opts.Operator, Reason: opts.Reason,
		Sources: []string{p.Spec.From}, Target: p.Spec.TargetLabel(), Status: dedup.RunRunning, Owner: opts.Owner,
	}
	if p.SourceTopicID != "" {
		run.SourceTopicIDs = map[string]string{p.Spec.From: p.SourceTopicID}
	}
	cps := make([]dedup.ReplayCheckpoint, 0, len(p.Ranges))
	for _, r := range p.Ranges {
		cps = append(cps, dedup.ReplayCheckpoint{Topic: r.Topic, Partition: r.Partition, Start: r.Start, End: r.End - 1, AckedThrough: r.Start - 1})
	}
	create = func(ctx context.Context) error {
		// The partitioners chosen so far: a single pass has chosen those of its first records'
		// targets when it records its run.
		run.Selection = p.selection(*opts)
		if err := st.CreateReplayRun(ctx, run, cps); err != nil {
			return err
		}
		return recheck(ctx, st, run.ID, opts)
	}
	if opts.SinglePass {
		return base, create, nil
	}
	if err := create(ctx); err != nil {
		return base, nil, err
	}
	return base, nil, nil
}

// recheck asks opts.Recheck of a run just recorded; a run it refuses is marked failed, with
// the refusal as its error and nothing sent (resumable once the other run is done).
func recheck(ctx context.Context, st *dedup.Store, runID string, opts *ExecOptions) error {
	if opts.Recheck == nil {
		return nil
	}
	err := opts.Recheck(ctx, runID)
	if err == nil {
		return nil
	}
	if serr := st.SaveReplayProgress(context.WithoutCancel(ctx), dedup.ReplayProgress{RunID: runID, Owner: opts.Owner,
		Status: dedup.RunFailed, Error: err.Error(), Finished: true, Now: time.Now()}); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// conclude ends a recorded run once it has read and sent what it would: the guards' notices of
// a single pass, the run's final status and journal write, its counts and targets, and the
// error its outcome is (runErr, the run's, made an interruption when the run was interrupted).
func (e *executor) conclude(ctx context.Context, runErr error) (*Summary, error) {
	sum := e.sum
	journalCtx := context.WithoutCancel(ctx)
	if e.guard != nil {
		gctx, cancel := context.WithTimeout(journalCtx, drainTimeout)
		sum.guards = e.guard.notices(gctx) // warnings after the fact: a failed look is a notice, no failure of the run
		cancel()
	}
	status := dedup.RunCompleted
	switch {
	case runErr == nil:
	case ctx.Err() != nil: // SIGINT/SIGTERM: whatever failed after it failed because of it
		status = dedup.RunInterrupted
	case IsStopped(runErr): // stopped itself, cleanly: resumable as an interruption is
		status, sum.Stopped = dedup.RunInterrupted, true
	default:
		status = dedup.RunFailed
	}
	if errors.Is(runErr, dedup.ErrRunNotOwned) {
		// Another process drives the run now: it is not ours to mark.
		return sum, runErr
	}
	sum.Status = status
	sum.PartitionerChoices = e.plan.partitioners.choices()
	switch {
	case status == dedup.RunInterrupted && !sum.Stopped:
		// What failed after the interruption failed of it ("context canceled"): the summary
		// and the journal say what happened.
		sum.Error = InterruptedText
	case runErr != nil:
		sum.Error = runErr.Error()
	}
	jerr := e.flush(journalCtx, status, sum.Error, true)
	sum.Counts = e.tr.live().Committed
	sum.IncompleteCount = incompleteOf(sum.Counts)
	if runErr == nil && jerr != nil {
		runErr = fmt.Errorf("the replay completed but its journal could not be written (run %s stays marked running): %w", sum.RunID, jerr)
	}
	tctx, cancel := context.WithTimeout(journalCtx, drainTimeout)
	defer cancel()
	if targets, err := e.st.ReplayTargetCounts(tctx, sum.RunID); err == nil {
		sum.Targets = targets
	} else if runErr == nil {
		runErr = err
	}
	if sum.Targets == nil {
		sum.Targets = []dedup.TargetCount{}
	}
	if status == dedup.RunInterrupted && runErr != nil && !sum.Stopped && fwerr.KindOf(runErr) != fwerr.KindInterrupted {
		runErr = fwerr.Wrap(fwerr.KindInterrupted, runErr)
	}
	return sum, runErr
}

// executor is one Execute call.
type executor struct {
	st   *dedup.Store
	plan *Plan
	opts ExecOptions
	sum  *Summary
	tr   *tracker
	prov Provenance
	// create records a new run of a single pass when the first selected record is read; nil
	// once the run is recorded (at once, without SinglePass).
	create func(context.Context) error
	// strip caches, per header key, whether outgoing drops it; slab holds what it builds.
	strip headerStripper
	slab  slab
	// targets looks each record's target up before it is sent, which reads its record size
	// limit (targets.limits, the producer's batch limit). checkTargets: it also refuses a
	// target that does not exist, in a single pass whose targets are in the records (false
	// otherwise: the scan or CheckTarget did).
	targets      *targetCache
	checkTargets bool
	// guard checks the records of a single pass as they are sent (nil after a scan).
	guard *guard
	// partitioned is set for a worker of a run shared by workers (RunWorker): it journals the
	// partitions it holds, not the run; flushTag then names its session in the flush ids (the
	// owner's alone repeats from one session to the next).
	partitioned bool
	flushTag    string
	// choicesJournaled is how many of the plan's partitioner choices the run's journaled
	// selection holds (journalChoices).
	choicesJournaled int32
	// lim, when set, is the cap on records per second in place of one at opts.Rate: a
	// worker's share of the run's rate, which the worker changes as partitions finish.
	lim *limiter
	// journaling, when set, is told the checkpoints of each journal write before it is made
	// (a worker lowers its share for the partitions they finish before the others can read
	// them done).
	journaling func(cps []dedup.ReplayCheckpoint)

	flushNow chan struct{}
	// flushes numbers the journal writes (flush ids); retry is a failed one to write again.
	// Both belong to whoever calls flush: the flusher goroutine, then Execute after it ends.
	flushes int
	retry   *pendingFlush
	mu      sync.Mutex
	flushed chan struct{} // closed and replaced after every journal write
	jerr    error         // the journal write that failed
}

// run reads the plan's ranges once and sends what they select: a producer of its own, the
// watch of --stop-on-redeadletter, the journal's flusher, and a pass over the records (pass);
// then it awaits what is in flight and fills the summary's figures.
func (e *executor) run(ctx context.Context, c *kafka.Cluster) error {
	cl, err := e.producer(c)
	if err != nil {
		return err
	}
	defer cl.Close()

	// readCtx stops reading on an interruption or a failure; records already handed to the
	// producer are never cancelled (prodCtx), so that their acknowledgements can be awaited.
	readCtx, stopRead := context.WithCancelCause(ctx)
	defer stopRead(nil)
	prodCtx := context.WithoutCancel(ctx)
	if stopWatch := e.watch(readCtx, c, stopRead); stopWatch != nil {
		defer stopWatch()
	}

	// The flusher writes the journal of a recorded run: it starts once the run is recorded.
	fl := &flusherLoop{e: e, ctx: context.WithoutCancel(ctx), fail: func(err error) { stopRead(err) },
		stopCh: make(chan struct{}), done: make(chan struct{})}
	if e.create == nil {
		fl.start()
	}
	defer fl.stop()

	ps := &pass{e: e, cl: cl, readCtx: readCtx, prodCtx: prodCtx, stopRead: stopRead, flusher: fl,
		lim: e.limiter(), start: time.Now(), total: e.plan.Total(), window: e.sum.DuplicateWindow, sinceAt: atEvery}
	spans, err := replayedSpans(readCtx, e.st, e.plan)
	if err != nil {
		return err
	}
	readErr := readBatches(readCtx, c, e.plan.Ranges, func() *classifier { return newClassifier(c, e.plan, e.st, spans) }, ps.handle)
	readErr = ps.drain(ctx, readErr)
	fl.stop()
	e.sum.Read = ps.read
	if readErr == nil {
		e.mu.Lock()
		readErr = e.jerr
		e.mu.Unlock()
	}
	ps.progress()
	lv := e.tr.live()
	e.sum.SentNow = lv.Acked
	elapsed := time.Since(ps.start)
	e.sum.ElapsedMS = elapsed.Milliseconds()
	if elapsed > 0 {
		e.sum.RecordsPerSecond = float64(lv.Acked) / elapsed.Seconds()
	}
	return readErr
}

// producer is the run's own producer: bounded by the duplicate window's buffer, each batch up
// to its target's own limit, each record to the partition the plan placed it in.
func (e *executor) producer(c *kafka.Cluster) (*kgo.Client, error) {
	popts := append(c.Options(),
		kgo.MaxBufferedRecords(e.opts.MaxBuffered),
		kgo.MaxBufferedBytes(maxBufferedBytes),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		// Batches up to each target's own limit, not franz-go's default 1,000,012 bytes.
		kgo.ProducerBatchMaxBytesFn(e.targets.limits.batchMax),
	)
	// Each record's partition is chosen before it is sent (targetCache.place, the plan's rule);
	// the producer only spreads the records that have none.
	popts = append(popts, kgo.RecordPartitioner(placedPartitioner{}))
	cl, err := kgo.NewClient(popts...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return cl, nil
}

// watch starts, with --stop-on-redeadletter, the watch of the topic read for the run's own
// records coming back (from its end now), which stops the reading through stopRead; the
// function it returns ends the watch. nil: nothing to watch.
func (e *executor) watch(readCtx context.Context, c *kafka.Cluster, stopRead context.CancelCauseFunc) func() {
	n := e.plan.Spec.StopOnRedeadletter
	if n <= 0 {
		return nil
	}
	wctx, stopWatch := context.WithCancel(readCtx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if err := watchRedeadletters(wctx, c, e.plan.Spec.From, e.sum.RunID, n, func(err error) { stopRead(err) }); err != nil && wctx.Err() == nil {
			stopRead(err)
		}
	}()
	return func() { stopWatch(); <-watched }
}

// flusherLoop runs the executor's flusher in its own goroutine, from start until stop (which
// may be called more than once, and before start).
type flusherLoop struct {
	e            *executor
	ctx          context.Context
	fail         func(error)
	stopCh, done chan struct{}
	started      bool
}

func (f *flusherLoop) start() {
	f.started = true
	go func() {
		defer close(f.done)
		f.e.flusher(f.ctx, f.stopCh, f.fail)
	}()
}

// stop ends the flusher and waits for its last write.
func (f *flusherLoop) stop() {
	select {
	case <-f.stopCh:
	default:
		close(f.stopCh)
	}
	if f.started {
		<-f.done
	}
}

// limiter is the run's cap on records per second: lim when set, else one at opts.Rate.
func (e *executor) limiter() *limiter {
	if e.lim != nil {
		return e.lim
	}
	return newLimiter(e.opts.Rate)
}

// pass is the one read of a run: each record the classifier decided on is handled in order
// (handle), a record to send handed to the producer (send).
type pass struct {
	e                *executor
	cl               *kgo.Client
	readCtx, prodCtx context.Context
	stopRead         context.CancelCauseFunc
	flusher          *flusherLoop
	lim              *limiter
	start            time.Time
	total, read      int64
	// window is the duplicate window the records not yet journaled are kept under.
	window int64
	// atTime and at are the fw.replay.at of the records sent, read from the clock every
	// atEvery records (sinceAt counts them).
	atTime  time.Time
	at      []byte
	sinceAt int
	// promise is acked, made once.
	promise func(*kgo.Record, error)
}

// progress tells ExecOptions.Progress how far the run is.
func (ps *pass) progress() {
	e := ps.e
	if e.opts.Progress != nil {
		lv := e.tr.live()
		e.opts.Progress(Progress{Read: ps.read, Total: ps.total, Produced: lv.Produced, Sent: lv.Acked, Counts: lv.Committed, Elapsed: time.Since(ps.start)})
	}
}

// handle is one record of the pass: counted, admitted, and sent when it is to be sent.
func (ps *pass) handle(d *decision) error {
	ps.read++
	// Every 256 records keeps the cost out of a fast replay; a rate-capped one is slow
	// enough to tell every record (at --rate 2, 256 records would be two minutes unseen).
	if ps.read%256 == 0 || ps.e.opts.Rate > 0 {
		ps.progress()
	}
	if err := ps.admit(d); err != nil {
		return err
	}
	if d.outcome != OutcomeSend {
		ps.e.tr.read(d)
		return nil
	}
	return ps.send(d)
}

// admit checks a record before anything is done with it: one that cannot be routed stops the
// run, one to send has its target checked and its partition placed (and passes the guards of
// a single pass); a single pass records its run at its first selected record; the
// quarantined and incomplete ones are listed.
func (ps *pass) admit(d *decision) error {
	e := ps.e
	if d.outcome == OutcomeProblem {
		return fwerr.Usagef("%s%s", d.problem, e.stoppedNote())
	}
	if d.outcome == OutcomeSend {
		if err := e.checkTarget(ps.readCtx, d); err != nil {
			return err
		}
		part, _, err := e.targets.place(ps.readCtx, d)
		if err != nil {
			if fwerr.KindOf(err) == fwerr.KindUsage {
				// The target's partitioner cannot be told (a single pass meets it here).
				return fwerr.Usagef("%v%s", err, e.stoppedNote())
			}
			return err
		}
		d.partition = part
		if e.guard != nil {
			if err := e.guard.add(ps.readCtx, d); err != nil {
				return err
			}
		}
	}
	if e.create != nil && d.outcome != OutcomeFiltered {
		// A single pass records its run before the first selected record is handled.
		if err := e.create(ps.readCtx); err != nil {
			return err
		}
		e.create = nil
		e.choicesJournaled = e.plan.partitioners.made.Load()
		ps.flusher.start()
	}
	if d.outcome == OutcomeSend {
		if err := e.journalChoices(ps.readCtx); err != nil {
			return err
		}
	}
	if d.outcome == OutcomeQuarantined && len(e.sum.Quarantined) < maxListed {
		e.sum.Quarantined = append(e.sum.Quarantined, refOf(d))
	}
	if d.outcome == OutcomeIncomplete && len(e.sum.Incomplete) < maxListed {
		e.sum.Incomplete = append(e.sum.Incomplete, refOf(d))
	}
	return nil
}

// journalChoices journals the partitioners chosen since the run's selection was last written
// (a single pass chooses a target's when it meets the target), before a record placed by one
// is sent: every later attempt of the run places keys by them (LoadRun). It re-takes the run
// this process holds, with the new selection. A worker's run was scanned before it was
// recorded, every choice in it (CreateWorkerRun).
func (e *executor) journalChoices(ctx context.Context) error {
	n := e.plan.partitioners.made.Load()
	if n == e.choicesJournaled || e.partitioned {
		return nil
	}
	if err := e.st.TakeReplayRun(ctx, e.sum.RunID, dedup.RunRunning, e.opts.Owner, e.opts.Owner, e.plan.selection(e.opts)); err != nil {
		return fmt.Errorf("journal the partitioner chosen: %w", err)
	}
	e.choicesJournaled = n
	return nil
}

// send hands a record to the producer, within the duplicate window and the rate, with its
// provenance headers; its acknowledgement is tracked for the journal (a failed one stops the
// reading).
func (ps *pass) send(d *decision) error {
	e := ps.e
	if err := e.waitWindow(ps.readCtx, ps.window); err != nil {
		return err
	}
	if err := ps.lim.wait(ps.readCtx); err != nil {
		return err
	}
	tk := e.tr.read(d)
	// fw.replay.at: the clock is read every atEvery records (and after every wait of
	// --rate), and the time formatted again when it moved by a millisecond.
	if ps.sinceAt++; ps.sinceAt >= atEvery || ps.lim != nil {
		if now := time.Now(); now.Sub(ps.atTime) >= time.Millisecond {
			ps.atTime, ps.at = now, replayAt(now)
		}
		ps.sinceAt = 0
	}
	if d.reason == dlq.ReasonMalformed {
		e.sum.MalformedSent++
	}
	out := e.prov.build(&e.strip, &e.slab, d.sendSource(), d.count, d.target, d.partition, ps.at, d.group)
	out.Key = d.sendKey()
	if d.partition < 0 {
		out.Partition = -1 // placedPartitioner: spread it
	}
	sr := e.slab.last()
	sr.Context, sr.tk, sr.eventID = ps.prodCtx, tk, d.eventID
	sr.src = source{topic: d.rec.Topic, partition: d.rec.Partition, offset: d.rec.Offset, timestamp: d.rec.Timestamp}
	out.Context = sr
	if ps.promise == nil {
		ps.promise = ps.acked
	}
	ps.cl.Produce(ps.prodCtx, out, ps.promise)
	return nil
}

// acked is the promise of every record send hands to the producer (its Context is its sent):
// the acknowledgement is tracked for the journal, a failed send stops the reading.
func (ps *pass) acked(r *kgo.Record, err error) {
	e, sr := ps.e, r.Context.(*sent)
	src := &sr.src
	s := dedup.ReplaySend{SourceTopic: src.topic, SourcePartition: src.partition, SourceOffset: src.offset,
		SourceTimestamp: src.timestamp, EventID: sr.eventID, TargetTopic: r.Topic, TargetPartition: r.Partition, TargetOffset: r.Offset}
	if err != nil {
		at := kafka.RecordAddress{Topic: src.topic, Partition: src.partition, Offset: src.offset}
		err = kafka.DeniedWrite(fmt.Errorf("send %s to %s: %w", at, r.Topic, e.targets.limits.tooLarge(r, err)), r.Topic)
		ps.stopRead(err)
	}
	if n := e.tr.ack(sr.tk, s, err); n >= e.opts.FlushRecords {
		select {
		case e.flushNow <- struct{}{}:
		default:
		}
	}
}

// drain ends the pass: the real error when the reading was stopped by a failed send or
// journal write; the acknowledgement of everything handed to the producer awaited, on
// success as long as it takes (an interruption cuts it short), after a failure or an
// interruption at most drainTimeout; the tracker's error, or its end.
func (ps *pass) drain(ctx context.Context, readErr error) error {
	e := ps.e
	if ctx.Err() == nil {
		// readCtx alone was stopped: by a failed send or journal write, the real error.
		if cause := context.Cause(ps.readCtx); cause != nil && !errors.Is(cause, context.Canceled) {
			readErr = cause
		}
	}
	fctx, cancel := context.WithTimeout(ps.prodCtx, drainTimeout)
	if readErr == nil {
		cancel()
		fctx, cancel = context.WithCancel(ctx)
	}
	ferr := ps.cl.Flush(fctx)
	cancel()
	if readErr == nil && ferr != nil {
		readErr = fwerr.Wrap(fwerr.KindInterrupted, ferr)
		dctx, dcancel := context.WithTimeout(ps.prodCtx, drainTimeout)
		_ = ps.cl.Flush(dctx)
		dcancel()
	}
	if readErr == nil {
		readErr = e.tr.err()
	}
	if readErr == nil {
		e.tr.finish()
	}
	return readErr
}

// checkTarget looks a record's target up before it is sent (once per topic: which reads its
// record size limit) and, with checkTargets, refuses it when its topic (or, with a fixed
// partition, partition) does not exist: a *MissingTargetError.
func (e *executor) checkTarget(ctx context.Context, d *decision) error {
	n, err := e.targets.lookup(ctx, d.target)
	if err != nil || !e.checkTargets || e.targets.exists(d.target, d.partition) {
		return err
	}
	missing := TargetCount{Topic: d.target, Partition: -1}
	if n > 0 { // the topic is there, the partition is not
		missing.Partition = d.partition
	}
	return &MissingTargetError{Targets: []TargetCount{missing},
		text: fmt.Sprintf("%s (where %s goes)", missing.place(), addr(d.rec)), stopped: e.create == nil}
}

// stoppedNote is what a refusal adds once records were sent: the run stopped there.
func (e *executor) stoppedNote() string {
	if e.create != nil || !e.checkTargets {
		return ""
	}
	return "; the replay stopped at this record: the records before it were sent and journaled"
}

// waitWindow blocks while the records handed to the producer and not yet journaled reach
// window, asking the flusher to write the journal.
func (e *executor) waitWindow(ctx context.Context, window int64) error {
	for e.tr.unjournaled() >= window {
		e.mu.Lock()
		ch, jerr := e.flushed, e.jerr
		e.mu.Unlock()
		if jerr != nil {
			return jerr
		}
		if err := e.tr.err(); err != nil {
			return err
		}
		select {
		case e.flushNow <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		case <-ch:
		case <-time.After(50 * time.Millisecond):
			// Acks may have arrived without reaching the flush threshold.
		}
	}
	return nil
}

// flusher writes the journal every FlushInterval and whenever FlushRecords sends wait,
// until stop is closed. A failed write stops the run through fail.
func (e *executor) flusher(ctx context.Context, stop <-chan struct{}, fail func(error)) {
	tick := time.NewTicker(e.opts.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		case <-e.flushNow:
		}
		if err := e.flush(ctx, dedup.RunRunning, "", false); err != nil {
			e.mu.Lock()
			if e.jerr == nil {
				e.jerr = err
			}
			e.mu.Unlock()
			fail(err)
			return
		}
	}
}

// pendingFlush is a journal write that failed: its outcome is unknown (the commit may have
// landed), so the next write retries it under the same flush id, which stores its sends once.
type pendingFlush struct {
	id     string
	sends  []dedup.ReplaySend
	cps    []dedup.ReplayCheckpoint
	counts dedup.RunCounts
}

// flush writes one journal batch: the acknowledged sends, the checkpoints that moved, the
// counts and the status; first the batch a failed write left, if any.
func (e *executor) flush(ctx context.Context, status, errText string, final bool) error {
	wctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	defer func() {
		e.mu.Lock()
		close(e.flushed)
		e.flushed = make(chan struct{})
		e.mu.Unlock()
	}()
	save := func(f pendingFlush, status string, final bool) error {
		return e.st.SaveReplayProgress(wctx, dedup.ReplayProgress{
			RunID: e.sum.RunID, Owner: e.opts.Owner, Status: status, Error: errText, Counts: f.counts,
			Checkpoints: f.cps, Sends: f.sends, FlushID: f.id, Finished: final, Now: time.Now(), Partitioned: e.partitioned,
		})
	}
	if r := e.retry; r != nil {
		if err := save(*r, dedup.RunRunning, false); err != nil {
			return err
		}
		e.retry = nil
		e.tr.journaledN(len(r.sends))
	}
	e.flushes++
	tag := e.opts.Owner
	if e.flushTag != "" {
		tag = e.flushTag
	}
	f := pendingFlush{id: fmt.Sprintf("%s#%d", tag, e.flushes)}
	f.sends, f.cps, f.counts = e.tr.snapshot()
	if e.journaling != nil {
		e.journaling(f.cps)
	}
	if err := save(f, status, final); err != nil {
		e.retry = &f
		return err
	}
	e.tr.journaledN(len(f.sends))
	e.tr.reuse(f.sends)
	return nil
}

// placedPartitioner sends a record to the partition already set on it (the plan's placement),
// and spreads a record whose partition is -1 as franz-go's sticky partitioner does.
type placedPartitioner struct{}

func (placedPartitioner) ForTopic(string) kgo.TopicPartitioner {
	return &placedTopicPartitioner{sticky: kgo.StickyPartitioner().ForTopic("")}
}

type placedTopicPartitioner struct{ sticky kgo.TopicPartitioner }

// RequiresConsistency: a placed record waits for its own partition, never another.
func (p *placedTopicPartitioner) RequiresConsistency(r *kgo.Record) bool { return r.Partition >= 0 }

func (p *placedTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	return p.sticky.Partition(r, n)
}

func (p *placedTopicPartitioner) OnNewBatch() {
	if nb, ok := p.sticky.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
