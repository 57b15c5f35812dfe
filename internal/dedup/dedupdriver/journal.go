package dedupdriver

import (
	"context"
	"time"
)

// The replay journal (DESIGN 3.3): migration 002 creates three tables in the
// store's schema, shared by every marker table (migration line) of that
// schema: replay_runs, replay_checkpoints and replay_sends.

// Run statuses. A run is created running (or planned, when it is recorded
// before its first send) and ends completed, interrupted or failed; resume
// takes an interrupted, failed or abandoned running run back to running.
const (
	RunPlanned     = "planned"
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunInterrupted = "interrupted"
	RunFailed      = "failed"
)

// RunCounts are a run's record counts. They cover the records behind the
// run's checkpoints: a record is counted once the contiguous acknowledged
// prefix of its source partition has passed it, so that a resumed run
// neither loses nor double-counts what it reads again.
type RunCounts struct {
	Selected    int64 `json:"selected"`
	Sent        int64 `json:"sent"`
	Quarantined int64 `json:"quarantined"`
	Skipped     int64 `json:"skipped"`
}

// ReplayRun is one row of replay_runs.
type ReplayRun struct {
	ID       string `json:"id"`
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
	// Selection is the run's selection as JSON text (flags, offsets, filters).
	Selection string `json:"selection"`
	// Sources are the topics the run reads, in order.
	Sources []string `json:"source_topics"`
	// Target says where records go: a topic (--to), or "original" (each
	// record's dead-letter headers name it).
	Target string `json:"target"`
	Status string `json:"status"`
	// Owner is the process executing the run (host:pid) while it runs; it
	// keeps two processes from driving one run.
	Owner string `json:"owner,omitempty"`
	// Error is the last failure of a failed run.
	Error string `json:"error,omitempty"`
	RunCounts
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// ReplayCheckpoint is one source partition of a run: the inclusive range
// fixed at plan time and how far the run got. AckedThrough is the highest
// offset such that every record of the range up to it is done (sent and
// acknowledged, quarantined, skipped or not selected); Start-1 when none is.
type ReplayCheckpoint struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Start        int64  `json:"start_offset"`
	End          int64  `json:"end_offset"`
	AckedThrough int64  `json:"acked_through"`
}

// ReplaySend is one acknowledged send: where the record was read and where
// the broker put it. At is the acknowledgement's time.
type ReplaySend struct {
	SourceTopic     string    `json:"source_topic"`
	SourcePartition int32     `json:"source_partition"`
	SourceOffset    int64     `json:"source_offset"`
	EventID         string    `json:"event_id,omitempty"`
	TargetTopic     string    `json:"target_topic"`
	TargetPartition int32     `json:"target_partition"`
	TargetOffset    int64     `json:"target_offset"`
	At              time.Time `json:"at"`
}

// ReplayProgress is one flush of a running run, written in one transaction:
// the new sends, the checkpoints that moved, the counts and the status.
// It applies only while Owner owns the run.
type ReplayProgress struct {
	RunID       string
	Owner       string
	Status      string
	Counts      RunCounts
	Error       string
	Checkpoints []ReplayCheckpoint // only AckedThrough is written
	Sends       []ReplaySend
	// Finished sets finished_at (a final status); otherwise it stays NULL.
	Finished bool
	Now      time.Time
}

// ReplayRunFilter selects runs for ListReplayRuns, newest first.
type ReplayRunFilter struct {
	Status string
	Limit  int
}

// TargetCount is how many acknowledged sends of a run went to one target
// partition.
type TargetCount struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Records   int64  `json:"records"`
}

// SourceRef names a record by where it was read.
type SourceRef struct {
	Topic     string
	Partition int32
	Offset    int64
}

// ReplayRef is the latest replay of a source record: the run, the
// acknowledgement's time and where the replayed copy was written.
type ReplayRef struct {
	RunID           string
	At              time.Time
	TargetTopic     string
	TargetPartition int32
	TargetOffset    int64
}

// Journal is implemented by both drivers.
type Journal interface {
	// CreateReplayRun inserts the run and its checkpoints in one transaction.
	CreateReplayRun(ctx context.Context, run ReplayRun, cps []ReplayCheckpoint) error
	// SaveReplayProgress writes p in one transaction and reports false
	// (writing nothing) when the run does not exist or p.Owner no longer
	// owns it. Sends already journaled for the same source record are kept.
	SaveReplayProgress(ctx context.Context, p ReplayProgress) (bool, error)
	// TakeReplayRun sets the run's owner to owner and its status to
	// running if its status and owner are still fromStatus and fromOwner
	// (compare and swap) and reports whether it did.
	TakeReplayRun(ctx context.Context, id, fromStatus, fromOwner, owner string, now time.Time) (bool, error)
	// GetReplayRun returns the run (nil when absent) and its checkpoints,
	// ordered by topic and partition.
	GetReplayRun(ctx context.Context, id string) (*ReplayRun, []ReplayCheckpoint, error)
	ListReplayRuns(ctx context.Context, f ReplayRunFilter) ([]ReplayRun, error)
	// ReplaySendsAfterCheckpoint returns the run's journaled sends whose
	// source offset is beyond its partition's checkpoint.
	ReplaySendsAfterCheckpoint(ctx context.Context, id string) ([]ReplaySend, error)
	// ReplayTargetCounts counts the run's sends per target partition.
	ReplayTargetCounts(ctx context.Context, id string) ([]TargetCount, error)
	// ReplayedSources returns, for each ref that was replayed, the latest
	// send of it (by acknowledgement time, then run id).
	ReplayedSources(ctx context.Context, refs []SourceRef) (map[SourceRef]ReplayRef, error)
}
