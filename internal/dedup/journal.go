package dedup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// The replay journal (docs/design.md §3.3): every executed `fieldwork replay` run,
// its per-partition checkpoints and its acknowledged sends, in tables of the
// store's schema that migrations 002 and 003 create (replay_runs,
// replay_checkpoints, replay_send_batches; on SQLite with the schema
// prefix), with the topic IDs of the topics each run reads
// (replay_run_topics: migration 006). The tables
// belong to the schema, not to one marker table: stores of several marker
// tables in one schema share one journal.
//
// The journal knows which record it sent, not only where: see
// dedupdriver.SendBatch.SentRecord for the rule, and what a run journaled
// before record identity (no topic ID, no source timestamps) means.

// Run statuses.
const (
	RunPlanned     = dedupdriver.RunPlanned
	RunRunning     = dedupdriver.RunRunning
	RunCompleted   = dedupdriver.RunCompleted
	RunInterrupted = dedupdriver.RunInterrupted
	RunFailed      = dedupdriver.RunFailed
)

// RunStatuses are the valid run statuses, in lifecycle order.
var RunStatuses = []string{RunPlanned, RunRunning, RunCompleted, RunInterrupted, RunFailed}

// ReplayRun is a journaled run; see dedupdriver.ReplayRun.
type ReplayRun = dedupdriver.ReplayRun

// JSONText is a journal column holding JSON as text; see dedupdriver.JSONText.
type JSONText = dedupdriver.JSONText

// RunCounts are a run's record counts.
type RunCounts = dedupdriver.RunCounts

// ReplayCheckpoint is one source partition of a run and how far it got.
type ReplayCheckpoint = dedupdriver.ReplayCheckpoint

// PartitionWorker is the state of one partition of a run shared by workers: the worker that
// holds it and the counts behind its checkpoint.
type PartitionWorker = dedupdriver.PartitionWorker

// ReplaySend is one acknowledged send of a run.
type ReplaySend = dedupdriver.ReplaySend

// ReplayProgress is one flush of a running run.
type ReplayProgress = dedupdriver.ReplayProgress

// ReplayRunFilter selects runs for ReplayRuns.
type ReplayRunFilter = dedupdriver.ReplayRunFilter

// TargetCount is a run's sends to one target partition.
type TargetCount = dedupdriver.TargetCount

// SourceRef names a record by where it was read: topic, partition, offset.
type SourceRef = dedupdriver.SourceRef

// SourceRecord is a record whose replays ReplayedSources looks up: where it is and what tells
// it apart from another record at the same place (its topic's ID, its event id, its
// timestamp).
type SourceRecord = dedupdriver.SourceRecord

// ReplayRef is the latest replay of a source record.
type ReplayRef = dedupdriver.ReplayRef

// DefaultRunsLimit is how many entries the journal listings (replay runs, processed journal,
// groups journal) show unless --limit says otherwise; ReplayRuns with no limit returns every run.
const DefaultRunsLimit = 50

// RunNotFoundError means no run has the id.
type RunNotFoundError struct{ ID string }

func (e *RunNotFoundError) Error() string {
	return fmt.Sprintf("no replay run %q in the journal", e.ID)
}

// ErrRunNotOwned means a progress write or a takeover lost the run to
// another process (or the run is gone).
var ErrRunNotOwned = errors.New("the replay run is driven by another process")

func (s *Store) journal() dedupdriver.Journal { return s.caps.Journal }

func checkRunID(id string) error { return checkText("run id", -1, id, 200) }

// CreateReplayRun records a new run and its checkpoints in one transaction.
// run.Status is usually RunRunning with run.Owner set to the process that
// drives it. A zero CreatedAt means now. run.SourceTopicIDs may name only
// topics of run.Sources, each with a non-empty ID.
func (s *Store) CreateReplayRun(ctx context.Context, run ReplayRun, cps []ReplayCheckpoint) error {
	if err := checkRunID(run.ID); err != nil {
		return fmt.Errorf("create replay run: %w", err)
	}
	for topic, id := range run.SourceTopicIDs {
		if !slices.Contains(run.Sources, topic) {
			return fmt.Errorf("create replay run %s: a topic ID for %s, which the run does not read", run.ID, topic)
		}
		if err := checkText("topic ID of "+topic, -1, id, 100); err != nil {
			return fmt.Errorf("create replay run %s: %w", run.ID, err)
		}
	}
	if err := s.journal().CreateReplayRun(ctx, run, cps); err != nil {
		return fmt.Errorf("create replay run %s: %w", run.ID, err)
	}
	return nil
}

// SaveReplayProgress writes one flush of a running run in one transaction:
// the sends acknowledged since the last flush (written once per FlushID, so
// that a flush retried after an error that may have hidden its commit does
// not store them twice), the checkpoints
// that moved (a checkpoint never moves back), the counts and the status
// (with p.Finished, finished_at). Either all of it is written or, on error,
// none. It returns ErrRunNotOwned, writing nothing, when p.Owner no longer
// owns the run.
func (s *Store) SaveReplayProgress(ctx context.Context, p ReplayProgress) error {
	ok, err := s.journal().SaveReplayProgress(ctx, p)
	if err != nil {
		return fmt.Errorf("journal progress of replay run %s (%d sends): %w", p.RunID, len(p.Sends), err)
	}
	if !ok {
		return fmt.Errorf("journal progress of replay run %s: %w", p.RunID, ErrRunNotOwned)
	}
	return nil
}

// TakeReplayRun makes owner the driver of run id, status running, provided
// the run still has fromStatus and fromOwner (as the caller read them):
// of two processes resuming one run, one wins and the other gets
// ErrRunNotOwned. A selection that is not empty replaces the run's in the
// same update: how the resumed run executes is journaled as it is taken.
func (s *Store) TakeReplayRun(ctx context.Context, id, fromStatus, fromOwner, owner string, selection JSONText) error {
	ok, err := s.journal().TakeReplayRun(ctx, id, fromStatus, fromOwner, owner, selection, time.Now())
	if err != nil {
		return fmt.Errorf("take replay run %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("take replay run %s: %w", id, ErrRunNotOwned)
	}
	return nil
}

// TakeReplayPartitions makes owner (a worker, host:pid) the holder of parts (their topic and
// partition) of run id, a run shared by workers, whoever held them, and marks the run running
// unless it is completed. The consumer group of the run's workers decides who takes what: the
// journal records it, and refuses the checkpoints of a partition to a worker that no longer
// holds it (SaveReplayProgress with Partitioned).
func (s *Store) TakeReplayPartitions(ctx context.Context, id, owner string, parts []ReplayCheckpoint) error {
	if err := s.journal().TakeReplayPartitions(ctx, id, owner, parts, time.Now()); err != nil {
		return fmt.Errorf("take %d partitions of replay run %s: %w", len(parts), id, err)
	}
	return nil
}

// ReleaseReplayPartitions lets go of the partitions of run id that owner holds (none when
// owner is empty), marks the run completed when every partition's range is done, and reports
// whether it is completed.
func (s *Store) ReleaseReplayPartitions(ctx context.Context, id, owner string) (bool, error) {
	done, err := s.journal().ReleaseReplayPartitions(ctx, id, owner, time.Now())
	if err != nil {
		return false, fmt.Errorf("release the partitions of replay run %s: %w", id, err)
	}
	return done, nil
}

// ReplayRun returns the run and its checkpoints (ordered by topic and
// partition), or a *RunNotFoundError.
func (s *Store) ReplayRun(ctx context.Context, id string) (ReplayRun, []ReplayCheckpoint, error) {
	if err := checkRunID(id); err != nil {
		return ReplayRun{}, nil, fmt.Errorf("read replay run: %w", err)
	}
	run, cps, err := s.journal().GetReplayRun(ctx, id)
	if err != nil {
		return ReplayRun{}, nil, fmt.Errorf("read replay run %s: %w", id, err)
	}
	if run == nil {
		return ReplayRun{}, nil, &RunNotFoundError{ID: id}
	}
	if cps == nil {
		cps = []ReplayCheckpoint{}
	}
	return *run, cps, nil
}

// rowLimit is the SQL LIMIT of a journal listing's limit: 0 (or less) is every row.
func rowLimit(limit int) int {
	if limit <= 0 {
		return math.MaxInt64
	}
	return limit
}

// ReplayRuns lists runs newest first, at most f.Limit (0: every run).
func (s *Store) ReplayRuns(ctx context.Context, f ReplayRunFilter) ([]ReplayRun, error) {
	f.Limit = rowLimit(f.Limit)
	runs, err := s.journal().ListReplayRuns(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list replay runs: %w", err)
	}
	if runs == nil {
		runs = []ReplayRun{}
	}
	return runs, nil
}

// ReplaySendsAfterCheckpoint returns the sends of run id that were
// journaled beyond their partition's checkpoint: acknowledged records that
// a resume must not send again although the contiguous prefix had not yet
// reached them.
func (s *Store) ReplaySendsAfterCheckpoint(ctx context.Context, id string) ([]ReplaySend, error) {
	sends, err := s.journal().ReplaySendsAfterCheckpoint(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read sends of replay run %s: %w", id, err)
	}
	return sends, nil
}

// ReplayTargetCounts counts the acknowledged sends of run id per target
// topic and partition.
func (s *Store) ReplayTargetCounts(ctx context.Context, id string) ([]TargetCount, error) {
	counts, err := s.journal().ReplayTargetCounts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("count sends of replay run %s: %w", id, err)
	}
	if counts == nil {
		counts = []TargetCount{}
	}
	return counts, nil
}

// OffsetSpan is the offsets First through Last (inclusive) of one partition.
type OffsetSpan = dedupdriver.OffsetSpan

// ReplayedSpans tells, per partition of topic (a topic replays read), the lowest and the
// highest offset any journaled send read there, by any run: a record of the topic outside its
// partition's span was never replayed, and asking ReplayedSources about it can be spared. A
// partition no send read is absent. One query.
func (s *Store) ReplayedSpans(ctx context.Context, topic string) (map[int32]OffsetSpan, error) {
	spans, err := s.journal().ReplayedSpans(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("look up the offsets replays read of %s: %w", topic, err)
	}
	return spans, nil
}

// replayedChunk bounds the refs sent in one ReplayedSources statement.
const replayedChunk = 10_000

// ReplayedSources tells which of recs were replayed (by any run,
// acknowledged by the broker): for each one that a journaled send sent —
// at its coordinates, and the same record by what both the journal and rec
// know of it (dedupdriver.SendBatch.SentRecord) — the latest such send (by
// acknowledgement time). recs are records of topic, the topic the replays
// read (a dead-letter topic); a rec with an empty Topic means topic. The
// map's keys are the recs' SourceRefs as given; a record never replayed is
// absent. Records given twice at one place must be given as the same record.
// It sends one query per 10,000 records.
func (s *Store) ReplayedSources(ctx context.Context, topic string, recs []SourceRecord) (map[SourceRef]ReplayRef, error) {
	// A record that names no topic is looked up in topic, and answered under its ref as given.
	keys, blank := recs, false
	for i, r := range recs {
		if r.Topic == "" {
			if !blank {
				keys, blank = slices.Clone(recs), true
			}
			keys[i].Topic = topic
		}
	}
	var out map[SourceRef]ReplayRef
	for start := 0; start < len(keys); start += replayedChunk {
		chunk := keys[start:min(start+replayedChunk, len(keys))]
		found, err := s.journal().ReplayedSources(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("look up replays of %d records of %s: %w", len(chunk), topic, err)
		}
		if out == nil {
			out = found // one chunk, as a batch of records mostly is: its map is the answer
			continue
		}
		maps.Copy(out, found)
	}
	if out == nil {
		return map[SourceRef]ReplayRef{}, nil
	}
	if blank {
		byRef := make(map[SourceRef]ReplayRef, len(out))
		for i, r := range recs {
			if v, ok := out[keys[i].SourceRef]; ok {
				byRef[r.SourceRef] = v
			}
		}
		out = byRef
	}
	return out, nil
}

// MarkerAction is a journaled `processed prune` or `processed forget`; see
// dedupdriver.MarkerAction.
type MarkerAction = dedupdriver.MarkerAction

// The actions of the marker journal (its action column).
const (
	ActionPrune  = "prune"
	ActionForget = "forget"
)

func (s *Store) actions() dedupdriver.ActionJournal { return s.caps.Actions }

// RecordMarkerAction journals an executed deletion of this store's markers (a.MarkerTable is
// set to the store's table).
func (s *Store) RecordMarkerAction(ctx context.Context, a MarkerAction) error {
	a.MarkerTable = s.Table()
	if err := s.actions().RecordMarkerAction(ctx, a); err != nil {
		return fmt.Errorf("journal the %s of %d markers: %w", a.Action, a.Deleted, err)
	}
	return nil
}

// MarkerActions returns the latest limit (0: every one) journaled prunes and forgets of the
// schema's marker tables, newest first, each MarkerTable named as TableLabel names it (the
// journal keeps the quoted name).
func (s *Store) MarkerActions(ctx context.Context, limit int) ([]MarkerAction, error) {
	out, err := s.actions().ListMarkerActions(ctx, rowLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list the marker actions: %w", err)
	}
	for i := range out {
		out[i].MarkerTable = unquoteTable(out[i].MarkerTable)
	}
	if out == nil {
		out = []MarkerAction{}
	}
	return out, nil
}

// GroupAction is a journaled `groups skip`, `groups reset` or an undo of one; see
// dedupdriver.GroupAction.
type GroupAction = dedupdriver.GroupAction

// The actions of the group journal (its action column).
const (
	ActionSkip  = "skip"
	ActionUndo  = "undo"
	ActionReset = "reset" // migration 012
)

func (s *Store) groups() dedupdriver.GroupJournal { return s.caps.Groups }

// RecordGroupAction journals an executed move of a consumer group's committed offsets.
func (s *Store) RecordGroupAction(ctx context.Context, a GroupAction) error {
	if err := s.groups().RecordGroupAction(ctx, a); err != nil {
		return fmt.Errorf("journal the %s %s of group %s: %w", a.Action, a.ID, a.Group, err)
	}
	return nil
}

// GroupAction returns the journaled group action id (with the undo that names it), nil when
// there is none.
func (s *Store) GroupAction(ctx context.Context, id string) (*GroupAction, error) {
	a, err := s.groups().GetGroupAction(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read the group action %s: %w", id, err)
	}
	return a, nil
}

// GroupActions returns the latest limit (0: every one) journaled group actions, newest first.
func (s *Store) GroupActions(ctx context.Context, limit int) ([]GroupAction, error) {
	out, err := s.groups().ListGroupActions(ctx, rowLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list the group actions: %w", err)
	}
	if out == nil {
		out = []GroupAction{}
	}
	return out, nil
}
