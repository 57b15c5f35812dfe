package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Owner names this process in the journal while it drives a run: host:pid.
func Owner() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// StaleAfter is how long a run marked running by a process on another host may go without a
// journal write before this one may take it over: a live run writes its progress every
// second (DefaultFlushInterval).
const StaleAfter = 30 * time.Second

// ownerAlive reports whether the process named by owner (host:pid) may still be running: it
// is on another host (unknown), or on this host and the pid exists.
func ownerAlive(owner string) bool {
	host, pid, ok := strings.Cut(owner, ":")
	me, _ := os.Hostname()
	if !ok || host != me {
		return true
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return true
	}
	if n == os.Getpid() {
		return true
	}
	err = syscall.Kill(n, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Concurrent are the runs that read topic now, but run self ("" for none): marked running and
// driven by a process that may be alive (driven), newest first.
func Concurrent(ctx context.Context, st *dedup.Store, topic, self string) ([]dedup.ReplayRun, error) {
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Status: dedup.RunRunning, Limit: 1000})
	if errors.Is(err, dedup.ErrNotMigrated) {
		return nil, nil // no journal: no run
	}
	if err != nil {
		return nil, err
	}
	var out []dedup.ReplayRun
	for _, r := range runs {
		if r.ID == self || !slices.Contains(r.Sources, topic) {
			continue
		}
		_, cps, err := st.ReplayRun(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		if driven(r, cps, time.Now()) {
			out = append(out, r)
		}
	}
	return out, nil
}

// driven reports whether a run marked running may be driven now: by its process (on this
// host its pid exists, on another its journal was written within StaleAfter, as resume
// judges), or, for a run shared by workers, by a worker holding a partition (the same test of
// the worker's process and its partition's last write) or by workers yet to start (recorded
// within StaleAfter).
func driven(r dedup.ReplayRun, cps []dedup.ReplayCheckpoint, now time.Time) bool {
	if !SharedByWorkers(cps) {
		return mayBeAlive(r.Owner, r.UpdatedAt, now)
	}
	if now.Sub(r.CreatedAt) < StaleAfter {
		return true
	}
	for _, cp := range cps {
		if w := cp.Worker; w != nil && w.Owner != "" && mayBeAlive(w.Owner, w.UpdatedAt, now) {
			return true
		}
	}
	return false
}

// Resume is a journaled run being continued.
type Resume struct {
	Run         dedup.ReplayRun
	Checkpoints []dedup.ReplayCheckpoint
	// Sent are the records beyond the checkpoints that the journal shows acknowledged: they
	// are not sent again.
	Sent map[dedup.SourceRef]bool
	// Execution is how the run was journaled to execute (its rate, its batching): nil for a
	// run journaled without (by an earlier version), whose settings are unknown.
	Execution *Execution
}

// ErrNothingToResume means the run is completed.
var ErrNothingToResume = errors.New("the run is completed: nothing to resume")

// Resumable reports whether a run with this status is one to resume: it stopped before its
// end (interrupted, failed). A running run resumes only when abandoned (LoadRun's force), a
// completed one has nothing left.
func Resumable(status string) bool {
	return slices.Contains(ResumableStatuses, status)
}

// ResumableStatuses are the statuses of the runs that can be resumed.
var ResumableStatuses = []string{dedup.RunInterrupted, dedup.RunFailed}

// journaledRun reads run id and its checkpoints from the journal: a run it does not hold is
// not found (exit 9).
func journaledRun(ctx context.Context, st *dedup.Store, id string) (dedup.ReplayRun, []dedup.ReplayCheckpoint, error) {
	run, cps, err := st.ReplayRun(ctx, id)
	var nf *dedup.RunNotFoundError
	if errors.As(err, &nf) {
		return run, nil, fwerr.NotFoundf("%v (see `fieldwork replay runs`)", err)
	}
	return run, cps, err
}

// LoadRun reads run id from the journal and plans its continuation: each partition from just
// after its checkpoint to the end offset journaled when the run was planned (never re-taken),
// skipping the records journaled as sent beyond the checkpoint. A run marked running is
// refused while its process may be alive (same host and the pid exists, or its last journal
// write is younger than StaleAfter) unless force. A run whose source topic was deleted and
// recreated since (its topic ID is not the journaled one) is refused with a
// *SourceRecreatedError, force or not: its checkpoints and journaled sends name records that
// no longer exist. A run journaled without a topic ID (before the journal recorded them)
// cannot be checked, and resumes as it always did.
func LoadRun(ctx context.Context, c *kafka.Cluster, st *dedup.Store, id string, force bool) (*Plan, error) {
	run, cps, err := journaledRun(ctx, st, id)
	if err != nil {
		return nil, err
	}
	switch run.Status {
	case dedup.RunCompleted:
		return nil, fmt.Errorf("run %s: %w", id, ErrNothingToResume)
	case dedup.RunRunning:
		if err := checkAbandoned(run, force); err != nil {
			return nil, err
		}
	}
	spec, execution, choices, err := unmarshalSpec(string(run.Selection))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	// The topic's ID now: the run's, unless the topic was recreated since.
	topicID, err := c.TopicID(ctx, spec.From)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	if then := run.SourceTopicIDs[spec.From]; then != "" && topicID != "" && then != topicID {
		return nil, &SourceRecreatedError{Topic: spec.From, RunID: id, Then: then, Now: topicID}
	}
	sends, err := st.ReplaySendsAfterCheckpoint(ctx, id)
	if err != nil {
		return nil, err
	}
	sent := make(map[dedup.SourceRef]bool, len(sends))
	for _, s := range sends {
		sent[dedup.SourceRef{Topic: s.SourceTopic, Partition: s.SourcePartition, Offset: s.SourceOffset}] = true
	}
	p := &Plan{Spec: spec, Resume: &Resume{Run: run, Checkpoints: cps, Sent: sent, Execution: execution}, SourceTopicID: topicID}
	// A key goes where the run's earlier attempts placed it: by the partitioners they chose.
	p.partitioners.seed(choices)
	starts := map[string]map[int32]int64{}
	for _, cp := range cps {
		r := kafka.PartitionRange{Topic: cp.Topic, Partition: cp.Partition, Start: cp.AckedThrough + 1, End: cp.End + 1}
		if r.Len() > 0 {
			if starts[cp.Topic] == nil {
				bounds, err := c.Bounds(ctx, cp.Topic)
				if err != nil {
					return nil, err
				}
				starts[cp.Topic] = map[int32]int64{}
				for _, b := range bounds {
					starts[cp.Topic][b.Partition] = b.LogStart
				}
			}
			if ls, ok := starts[cp.Topic][cp.Partition]; ok && ls > r.Start {
				// Retention deleted part of what is left: read what remains.
				p.LostOffsets += min(ls, r.End) - r.Start
				r.Start = min(ls, r.End)
			}
		}
		r.LogStart, r.HighWatermark = r.Start, r.End
		p.Ranges = append(p.Ranges, r)
	}
	return p, nil
}

// checkAbandoned refuses to take over a run marked running whose process may still drive
// it: on this host, while its pid exists; on another host (where the pid means nothing here),
// until its journal has been silent for StaleAfter. force skips the check.
func checkAbandoned(run dedup.ReplayRun, force bool) error {
	now := time.Now()
	if force || !mayBeAlive(run.Owner, run.UpdatedAt, now) {
		return nil
	}
	if onThisHost(run.Owner) {
		return fwerr.Usagef("run %s is still driven by process %s on this host; stop it first (SIGINT marks it interrupted) or pass --force", run.ID, run.Owner)
	}
	age := now.Sub(run.UpdatedAt).Round(time.Second)
	return fwerr.Usagef("run %s is running in process %s (journal written %s ago); if that process is gone, wait %s or pass --force",
		run.ID, run.Owner, age, StaleAfter-age)
}

// onThisHost reports whether owner (host:pid) names a process of this host.
func onThisHost(owner string) bool {
	host, _, _ := strings.Cut(owner, ":")
	me, _ := os.Hostname()
	return host == me
}

// mayBeAlive reports whether the process owner (host:pid), whose last journal write was at
// written, may still be running: on this host, its pid exists; on another, it wrote within
// StaleAfter of now.
func mayBeAlive(owner string, written, now time.Time) bool {
	if onThisHost(owner) {
		return ownerAlive(owner)
	}
	return now.Sub(written) < StaleAfter
}
