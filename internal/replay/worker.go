package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// A run shared by workers (docs/design.md §3.3, "Workers"): `replay --execute --workers`
// records the run without sending (CreateWorkerRun); `replay resume RUN --worker`, started in
// any number of processes on any number of machines, joins the consumer group named after the
// run (GroupName) on the run's source topic and sends the partitions Kafka assigns it
// (RunWorker). The group only assigns: the workers read the run's journaled ranges with the
// replay's own reader, never the group's offsets, and never commit any.

// DefaultWorkerSessionTimeout is the group session timeout of a worker: a worker that dies
// without leaving (SIGKILL, a lost machine) has its partitions handed to the others this long
// after its last heartbeat.
const DefaultWorkerSessionTimeout = 10 * time.Second

// GroupName is the consumer group the workers of run id join.
func GroupName(runID string) string { return "fieldwork-replay-" + runID }

// CreateWorkerRun records the run of a scanned plan as one shared by workers, status planned,
// and sends nothing: every source partition of the plan has a checkpoint and a worker row,
// held by none until a worker takes it. opts are as Execute's (the rate is the whole run's,
// shared by its workers).
func CreateWorkerRun(ctx context.Context, c *kafka.Cluster, st *dedup.Store, p *Plan, opts ExecOptions) (*Summary, error) {
	if p.Resume != nil {
		return nil, fwerr.Usagef("run %s is already journaled: start its workers with `fieldwork replay resume %s --worker --execute`", p.Resume.Run.ID, p.Resume.Run.ID)
	}
	opts = opts.withDefaults()
	if err := checkSourceTopic(ctx, c, p); err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		opts.RunID = action.NewRunID(time.Now())
	}
	run := dedup.ReplayRun{
		ID: opts.RunID, Operator: opts.Operator, Reason: opts.Reason, Selection: p.selection(opts),
		Sources: []string{p.Spec.From}, Target: p.Spec.TargetLabel(), Status: dedup.RunPlanned,
	}
	if p.SourceTopicID != "" {
		run.SourceTopicIDs = map[string]string{p.Spec.From: p.SourceTopicID}
	}
	cps := make([]dedup.ReplayCheckpoint, 0, len(p.Ranges))
	for _, r := range p.Ranges {
		cps = append(cps, dedup.ReplayCheckpoint{Topic: r.Topic, Partition: r.Partition, Start: r.Start, End: r.End - 1, AckedThrough: r.Start - 1,
			Worker: &dedup.PartitionWorker{}})
	}
	if len(cps) == 0 {
		return nil, fwerr.Usagef("the plan reads no partition: nothing for workers to share")
	}
	if err := st.CreateReplayRun(ctx, run, cps); err != nil {
		return nil, err
	}
	return &Summary{RunID: run.ID, Status: dedup.RunPlanned, Operator: run.Operator, Reason: run.Reason, Source: p.Spec.From, Target: run.Target,
		PartitionerChoices: p.partitioners.choices(), Targets: []dedup.TargetCount{}, Quarantined: []RecordRef{}, Incomplete: []RecordRef{}, Recorded: true,
		DuplicateWindow: int64(opts.MaxBuffered + opts.FlushRecords)}, nil
}

// SharedByWorkers reports whether the run of these checkpoints is shared by workers.
func SharedByWorkers(cps []dedup.ReplayCheckpoint) bool { return len(cps) > 0 && cps[0].Worker != nil }

// WorkerOptions configure RunWorker.
type WorkerOptions struct {
	// Owner names this worker in the journal (default Owner()).
	Owner string
	// Rate, when RateGiven, replaces the run's journaled rate for this worker's share (it is
	// not journaled: the other workers keep the run's).
	Rate      float64
	RateGiven bool
	// SessionTimeout is the group session timeout (default DefaultWorkerSessionTimeout).
	SessionTimeout time.Duration
	// OnAssigned, when set, is told the partitions of each assignment (an empty one too).
	OnAssigned func(partitions []int32)
	// OnShare, when set and the run has a rate, is told this worker's share of it (records per
	// second) when a session starts and whenever it changes (rateShare).
	OnShare func(perSecond float64)
}

// WorkerSummary is what one worker did.
type WorkerSummary struct {
	RunID  string `json:"run_id"`
	Group  string `json:"group"`
	Worker string `json:"worker"`
	// Status is the run's when the worker left it: completed once every partition's range is
	// done; running while other workers (or a later one) have partitions left.
	Status string `json:"status"`
	// Assignments counts the group generations in which this worker held partitions;
	// Partitions are the ones it sent from.
	Assignments int     `json:"assignments"`
	Partitions  []int32 `json:"partitions"`
	// SentNow is what this worker had acknowledged; Counts and Targets are the whole run's.
	SentNow         int64               `json:"sent_this_attempt"`
	Counts          dedup.RunCounts     `json:"counts"`
	Targets         []dedup.TargetCount `json:"targets"`
	DuplicateWindow int64               `json:"duplicate_window"`
	ElapsedMS       int64               `json:"elapsed_ms"`
}

// WorkerRun reads run runID and its checkpoints from the journal for its workers: a run it does
// not hold is not found, and a run driven by one process is refused (a usage error).
func WorkerRun(ctx context.Context, st *dedup.Store, runID string) (dedup.ReplayRun, []dedup.ReplayCheckpoint, error) {
	run, cps, err := journaledRun(ctx, st, runID)
	if err == nil && !SharedByWorkers(cps) {
		err = fwerr.Usagef("run %s is driven by one process, not shared by workers: continue it with `fieldwork replay resume %s`", runID, runID)
	}
	return run, cps, err
}

// RunWorker is one worker of a run shared by workers (CreateWorkerRun): it joins the run's
// consumer group (GroupName) on the run's source topic and, for each assignment the group
// gives it, continues those partitions from their checkpoints as `replay resume` does (the
// records the journal shows acknowledged beyond a checkpoint are not sent again), journaling
// each partition's checkpoint and counts while it holds it. It returns when the run is
// completed (every partition's range done, whoever did it), when ctx is cancelled (an
// interruption: its partitions are checkpointed and released, the group rebalances them to
// the other workers), or when its sends fail.
//
// Rebalances are eager: when the group rebalances, the worker stops reading, awaits the
// acknowledgement of the records in flight (bounded as an interruption is), journals them
// and releases its partitions before the rebalance goes on (OnPartitionsRevoked), so that
// the next holder starts from a checkpoint that knows every acknowledged send. A worker
// killed without leaving had sent at most its duplicate window beyond its journal; the next
// holder, after the session timeout, sends those records again.
//
// The rate is the run's, shared by the partitions left (rateShare): a worker holding k of the
// n partitions whose ranges are not done sends at most rate*k/n records per second, so the
// workers together stay within it, and a partition that finishes hands its share on to the
// others as the journal shows it done (each worker looks every flush interval). The worker
// that finishes a partition lowers its share before its journal write shows it done, so the
// shares never add up to more than the rate.
func RunWorker(ctx context.Context, c *kafka.Cluster, st *dedup.Store, runID string, opts WorkerOptions) (*WorkerSummary, error) {
	run, cps, err := WorkerRun(ctx, st, runID)
	if err != nil {
		return nil, err
	}
	spec, journaledEx, _, err := unmarshalSpec(string(run.Selection))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	if opts.Owner == "" {
		opts.Owner = Owner()
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultWorkerSessionTimeout
	}
	ex := Execution{}
	if journaledEx != nil {
		ex = *journaledEx
	}
	if opts.RateGiven {
		ex.Rate = opts.Rate
	}
	ex = ex.withDefaults()
	w := &worker{c: c, st: st, runID: runID, from: spec.From, opts: opts, ex: ex, nParts: len(cps),
		sum: &WorkerSummary{RunID: runID, Group: GroupName(runID), Worker: opts.Owner, Partitions: []int32{}, Targets: []dedup.TargetCount{},
			DuplicateWindow: int64(ex.MaxBuffered + ex.FlushRecords)},
		failed: make(chan error, 1), check: make(chan struct{}, 1)}
	start := time.Now()
	if run.Status == dedup.RunCompleted {
		return w.finish(ctx, start, nil)
	}
	cl, err := kgo.NewClient(append(c.Options(),
		kgo.ConsumerGroup(GroupName(runID)),
		kgo.ConsumeTopics(spec.From),
		kgo.DisableAutoCommit(),
		// Eager: every rebalance revokes every partition, so that one session (one producer,
		// one journal flusher) serves a generation's assignment.
		kgo.Balancers(kgo.RoundRobinBalancer()),
		kgo.SessionTimeout(opts.SessionTimeout),
		kgo.OnPartitionsAssigned(w.assigned),
		kgo.OnPartitionsRevoked(w.revoked),
		kgo.OnPartitionsLost(w.revoked),
	)...)
	if err != nil {
		return nil, fmt.Errorf("kafka group client: %w", err)
	}
	// The group assigns; the workers read with the replay's reader.
	cl.PauseFetchTopics(spec.From)
	go w.watchGroup(cl)
	runErr := w.loop(ctx)
	w.stop()
	cl.Close() // leaves the group: the others rebalance now, not after the session timeout
	return w.finish(ctx, start, runErr)
}

// worker is one RunWorker.
type worker struct {
	c      *kafka.Cluster
	st     *dedup.Store
	runID  string
	from   string
	opts   WorkerOptions
	ex     Execution
	nParts int
	sum    *WorkerSummary

	mu      sync.Mutex
	current *session
	gen     int
	failed  chan error
	// check asks the loop to look at the journal now: a session sent all it had.
	check chan struct{}
}

// session is the sending of one assignment.
type session struct {
	cancel context.CancelFunc
	done   chan struct{}
	// parts are the partitions assigned; lim, once the session sends under a rate, its cap,
	// and share the cap's rate; view the run's checkpoints as last read from the journal, and
	// finished the partitions of parts this session has finished (known before the journal
	// has them).
	parts    []int32
	lim      *limiter
	share    float64
	view     []dedup.ReplayCheckpoint
	finished []int32
}

// left are the session's partitions it has not finished.
func (s *session) left() []int32 {
	return slices.DeleteFunc(slices.Clone(s.parts), func(p int32) bool { return slices.Contains(s.finished, p) })
}

// loop waits for the run to complete, ctx to be cancelled or a session to fail; it checks
// the journal every flush interval.
func (w *worker) loop(ctx context.Context) error {
	tick := time.NewTicker(time.Duration(w.ex.FlushIntervalMS) * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		case err := <-w.failed:
			return err
		case <-w.check:
		case <-tick.C:
		}
		done, err := w.st.ReleaseReplayPartitions(ctx, w.runID, "")
		if err != nil && ctx.Err() == nil {
			return err
		}
		if done {
			return nil
		}
		w.reshare(ctx)
	}
}

// rateShare is the share of rate of a worker holding parts of topic: rate × its partitions
// whose range is not done / every partition whose range is not done, by the checkpoints (0
// when none of its partitions is left). Workers that read the same journal get shares that
// add up to rate at most; so do workers that read it at different times, as long as parts
// leaves out what a worker has finished and not yet read done (session.left): a journal read
// earlier counts more partitions left, which only makes a share smaller.
func rateShare(rate float64, cps []dedup.ReplayCheckpoint, topic string, parts []int32) float64 {
	left, mine := 0, 0
	for _, cp := range cps {
		if cp.AckedThrough >= cp.End {
			continue
		}
		left++
		if cp.Topic == topic && slices.Contains(parts, cp.Partition) {
			mine++
		}
	}
	if mine == 0 {
		return 0
	}
	return rate * float64(mine) / float64(left)
}

// reshare sets the current session's cap to its share of the rate by the journal now: more as
// the other partitions finish. A journal it cannot read leaves the cap as it is.
func (w *worker) reshare(ctx context.Context) {
	if w.ex.Rate <= 0 {
		return
	}
	_, cps, err := w.st.ReplayRun(ctx, w.runID)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.current; s != nil && s.lim != nil {
		s.view = cps
		w.setShare(s)
	}
}

// journaling lowers s's share, before a journal write shows partitions of s done, by those
// it finishes: the other workers raise theirs only once they read them done, so the shares
// never add up to more than the rate. (Its own next look at the journal then raises it by
// the partitions no longer left.)
func (w *worker) journaling(s *session, cps []dedup.ReplayCheckpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	more := false
	for _, cp := range cps {
		if cp.Topic == w.from && cp.AckedThrough >= cp.End && slices.Contains(s.parts, cp.Partition) && !slices.Contains(s.finished, cp.Partition) {
			s.finished = append(s.finished, cp.Partition)
			more = true
		}
	}
	if more && s.lim != nil {
		w.setShare(s)
	}
}

// setShare caps s at its share by the journal it read last and the partitions it has left
// (rateShare; none left keeps the cap) and tells OnShare of a change. Called with w.mu held.
func (w *worker) setShare(s *session) {
	share := rateShare(w.ex.Rate, s.view, w.from, s.left())
	if share <= 0 || share == s.share {
		return
	}
	s.share = share
	s.lim.setRate(share)
	if w.opts.OnShare != nil {
		w.opts.OnShare(share)
	}
}

// watchGroup polls the group's client, whose fetches are paused, for the errors it reports
// through its polls (a group the principal may not read, a topic it may not describe): they
// end the worker, which would otherwise wait for an assignment that never comes. It returns
// when the client is closed.
func (w *worker) watchGroup(cl *kgo.Client) {
	for {
		fs := cl.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		var failed error
		fs.EachError(func(topic string, _ int32, err error) {
			if failed == nil && kafka.IsAuthorization(err) {
				failed = kafka.Denied(err, kafka.OpRead, kafka.ResourceGroup, GroupName(w.runID))
			}
		})
		if failed != nil {
			select {
			case w.failed <- failed:
			default:
			}
			return
		}
	}
}

// assigned starts the session of a new assignment (called by the group's loop).
func (w *worker) assigned(ctx context.Context, _ *kgo.Client, parts map[string][]int32) {
	ps := slices.Sorted(slices.Values(parts[w.from]))
	if w.opts.OnAssigned != nil {
		w.opts.OnAssigned(ps)
	}
	if len(ps) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	sctx, cancel := context.WithCancel(ctx)
	s := &session{cancel: cancel, done: make(chan struct{}), parts: ps}
	w.current = s
	gen := w.gen
	go func() {
		defer close(s.done)
		// A partition another worker took meanwhile (this one was slow to heartbeat, the
		// group moved on): the session ends, the group's next assignment follows.
		if err := w.send(sctx, s, gen); err != nil && sctx.Err() == nil && !errors.Is(err, dedup.ErrRunNotOwned) {
			select {
			case w.failed <- err:
			default:
			}
		}
	}()
}

// revoked ends the current session before the group goes on: reading stops, the records in
// flight are awaited and journaled, the partitions released.
func (w *worker) revoked(context.Context, *kgo.Client, map[string][]int32) { w.stop() }

func (w *worker) stop() {
	w.mu.Lock()
	s := w.current
	w.current = nil
	w.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
}

// send continues partitions ps of the run from their checkpoints until they are done or ctx
// is cancelled (a revocation), then journals and releases them. long because it is the
// session's whole life: plan, take, execute, journal, release, each with its own failure.
func (w *worker) send(ctx context.Context, s *session, gen int) error {
	ps := s.parts
	p, err := LoadRun(ctx, w.c, w.st, w.runID, true)
	if errors.Is(err, ErrNothingToResume) {
		return nil
	}
	if err != nil {
		return err
	}
	var ranges []kafka.PartitionRange
	var held []dedup.ReplayCheckpoint
	for _, r := range p.Ranges {
		if r.Topic == w.from && slices.Contains(ps, r.Partition) {
			ranges = append(ranges, r)
			held = append(held, dedup.ReplayCheckpoint{Topic: r.Topic, Partition: r.Partition})
		}
	}
	p.Ranges = ranges
	if err := w.st.TakeReplayPartitions(ctx, w.runID, w.opts.Owner, held); err != nil {
		return err
	}
	journalCtx := context.WithoutCancel(ctx)
	defer func() {
		rctx, cancel := context.WithTimeout(journalCtx, drainTimeout)
		defer cancel()
		_, _ = w.st.ReleaseReplayPartitions(rctx, w.runID, w.opts.Owner)
	}()
	w.mu.Lock()
	w.sum.Assignments++
	for _, r := range ranges {
		if !slices.Contains(w.sum.Partitions, r.Partition) {
			w.sum.Partitions = append(w.sum.Partitions, r.Partition)
		}
	}
	slices.Sort(w.sum.Partitions)
	w.mu.Unlock()
	if kafka.Total(ranges) == 0 && allDone(p.Resume.Checkpoints, ranges) {
		return nil
	}
	opts := w.ex.options(ExecOptions{Owner: w.opts.Owner})
	var lim *limiter
	if w.ex.Rate > 0 {
		// At first a partition's share, the least a worker gets, until setShare has it by the
		// journal (when none of ps is left by it, the cap stays there, never the whole rate).
		lim = newLimiter(w.ex.Rate / float64(max(w.nParts, 1)))
		w.mu.Lock()
		s.lim, s.view = lim, p.Resume.Checkpoints
		w.setShare(s)
		w.mu.Unlock()
	}
	run := p.Resume.Run
	sum := &Summary{RunID: run.ID, Resumed: true, Operator: run.Operator, Reason: run.Reason, Source: p.Spec.From, Target: p.Spec.TargetLabel(),
		PartitionerChoices: []PartitionerChoice{}, Quarantined: []RecordRef{}, Incomplete: []RecordRef{}, DuplicateWindow: int64(opts.MaxBuffered + opts.FlushRecords)}
	targets, checkTargets, err := sendTargets(ctx, w.c, p, false)
	if err != nil {
		return err
	}
	e := &executor{
		st: w.st, plan: p, opts: opts, sum: sum,
		tr:       newTracker(p.Ranges, run.RunCounts),
		flushNow: make(chan struct{}, 1),
		flushed:  make(chan struct{}),
		prov:     provenanceOf(run.ID, run.Reason, &p.Spec),
		targets:  targets, checkTargets: checkTargets,
		partitioned: true, flushTag: fmt.Sprintf("%s/%d", w.opts.Owner, gen), lim: lim,
		journaling: func(cps []dedup.ReplayCheckpoint) { w.journaling(s, cps) },
	}
	e.tr.share(p.Resume.Checkpoints)
	runErr := e.run(ctx, w.c)
	// The last journal write: every acknowledged send of the session, its checkpoints.
	ferr := e.flush(journalCtx, dedup.RunRunning, "", false)
	w.mu.Lock()
	w.sum.SentNow += sum.SentNow
	w.mu.Unlock()
	if ctx.Err() != nil {
		return nil // revoked, or the worker stops: the partitions are checkpointed
	}
	if runErr != nil {
		return runErr
	}
	if ferr == nil {
		select { // the partitions are done: perhaps the run is
		case w.check <- struct{}{}:
		default:
		}
	}
	return ferr
}

// allDone reports whether every range's checkpoint is at its end already.
func allDone(cps []dedup.ReplayCheckpoint, ranges []kafka.PartitionRange) bool {
	for _, r := range ranges {
		for _, cp := range cps {
			if cp.Topic == r.Topic && cp.Partition == r.Partition && cp.AckedThrough < cp.End {
				return false
			}
		}
	}
	return true
}

// finish fills the summary with the run's journaled state; runErr is the worker's outcome.
func (w *worker) finish(ctx context.Context, start time.Time, runErr error) (*WorkerSummary, error) {
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer cancel()
	w.sum.ElapsedMS = time.Since(start).Milliseconds()
	run, _, err := w.st.ReplayRun(jctx, w.runID)
	if err != nil {
		return w.sum, errors.Join(runErr, err)
	}
	w.sum.Status, w.sum.Counts = run.Status, run.RunCounts
	if w.sum.Targets, err = w.st.ReplayTargetCounts(jctx, w.runID); err != nil {
		return w.sum, errors.Join(runErr, err)
	}
	if runErr == nil && run.Status == dedup.RunCompleted {
		// As a run of one process: quarantined or incomplete records make it exit 3.
		c := run.RunCounts
		if incomplete := incompleteOf(c); c.Quarantined > 0 || incomplete > 0 {
			runErr = fwerr.Checkf("run %s completed: %d quarantined (fw.replay.count reached --max-replays), %d incomplete (never sent); the other %d selected records were handled",
				w.runID, c.Quarantined, incomplete, c.Selected-c.Quarantined-incomplete)
		}
	}
	return w.sum, runErr
}
