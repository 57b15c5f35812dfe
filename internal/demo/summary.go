package demo

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// Summary is the story in numbers: what `fieldwork demo -o json` prints. Field names are
// snake_case and stable.
type Summary struct {
	Seed    uint64 `json:"seed"`
	Brokers string `json:"brokers"`
	DSN     string `json:"dsn"`
	Dir     string `json:"dir"`
	Group   string `json:"group"`
	// RejectedType is the event type the buggy release rejected.
	RejectedType string `json:"rejected_type"`

	// EventsProduced is the number of records produced into tasks, faults included; Produced
	// breaks it down as the sample manifest does.
	EventsProduced int           `json:"events_produced"`
	Produced       sample.Counts `json:"produced"`
	// DistinctEvents is the number of distinct valid events in the stream: first sends and
	// stale re-emits (sample.Manifest.UniqueEventIDs).
	DistinctEvents int `json:"distinct_events"`

	// EventsProcessed is the events the consumer handled over the whole story (applied or
	// ignored as stale, each marked once); Applied and StaleIgnored split it.
	EventsProcessed int64 `json:"events_processed"`
	Applied         int64 `json:"applied"`
	StaleIgnored    int64 `json:"stale_ignored"`
	// DuplicatesAbsorbed is the records skipped because their event was already handled.
	DuplicatesAbsorbed int64 `json:"duplicates_absorbed"`
	// DeadLettered counts the dead letters written, by reason; DeadLetteredTotal sums them.
	DeadLettered      map[string]int64 `json:"dead_lettered"`
	DeadLetteredTotal int64            `json:"dead_lettered_total"`
	// RecordsDelivered is every record the consumer was handed (produced and replayed).
	RecordsDelivered int64 `json:"records_delivered"`

	// Replayed is the dead letters the replay sent back; ReplayRunID names the journaled run.
	Replayed    int64  `json:"replayed"`
	ReplayRunID string `json:"replay_run_id"`
	// Resolved is the dead letters whose event the consumer has a marker for at the end, and
	// applied; Stale those whose event it marked but ignored as stale (dlq.StatusStale).
	Resolved int64 `json:"resolved"`
	Stale    int64 `json:"stale"`
	// StillPending is the dead letters not resolved at the end, by status (pending, or
	// unknown when they carry no event id) and by reason.
	StillPending         int64            `json:"still_pending"`
	StillPendingByStatus map[string]int64 `json:"still_pending_by_status"`
	StillPendingByReason map[string]int64 `json:"still_pending_by_reason"`
	// ProcessedMarkers is the consumer's markers in the store at the end.
	ProcessedMarkers int64 `json:"processed_markers"`

	ConsumeRuns []ConsumeRun `json:"consume_runs"`
	// Steps are the command lines the story stood for, in order, with their outcome.
	Steps     []StepRecord `json:"steps"`
	ElapsedMS int64        `json:"elapsed_ms"`
	// Kept is set when the stack was left running (--keep).
	Kept bool `json:"kept"`
}

// StepRecord is one command line of the story.
type StepRecord struct {
	Step    int    `json:"step"`
	Title   string `json:"title"`
	Command string `json:"command"`
	Result  string `json:"result"`
}

func newSummary(seed uint64) *Summary {
	return &Summary{
		Seed: seed, Group: Group, RejectedType: RejectedType,
		DeadLettered: map[string]int64{}, StillPendingByStatus: map[string]int64{}, StillPendingByReason: map[string]int64{},
		ConsumeRuns: []ConsumeRun{}, Steps: []StepRecord{},
	}
}

func (s *Summary) addRun(r ConsumeRun) {
	s.ConsumeRuns = append(s.ConsumeRuns, r)
	s.Applied += r.Applied
	s.StaleIgnored += r.Stale
	s.EventsProcessed = s.Applied + s.StaleIgnored
	s.DuplicatesAbsorbed += r.Duplicates
	s.RecordsDelivered += r.Records
	for reason, n := range r.DeadLetteredByReason {
		s.DeadLettered[reason] += n
		s.DeadLetteredTotal += n
	}
}

func (s *Summary) setStatuses(resolved, left []dlq.Entry) {
	for _, e := range resolved {
		if e.Status.Status == dlq.StatusStale {
			s.Stale++
		} else {
			s.Resolved++
		}
	}
	s.StillPending = int64(len(left))
	for _, e := range left {
		s.StillPendingByStatus[string(e.Status.Status)]++
		s.StillPendingByReason[reasonOf(e.DeadLetter)]++
	}
}

// Check verifies the story's outcome: every replayed dead letter resolved, nothing
// replayable left, one marker per distinct valid event, and every duplicate absorbed. An
// error lists what does not hold.
func (s *Summary) Check() error {
	var errs []error
	if s.Replayed == 0 {
		errs = append(errs, errors.New("nothing was replayed: the stream had no "+RejectedType+" event to reject"))
	}
	if s.Resolved+s.Stale != s.Replayed {
		errs = append(errs, fmt.Errorf("%d dead letters resolved and %d stale, but %d were replayed", s.Resolved, s.Stale, s.Replayed))
	}
	if s.Replayed != s.DeadLettered[dlq.ReasonRejected] {
		errs = append(errs, fmt.Errorf("%d dead letters replayed, but %d were rejected", s.Replayed, s.DeadLettered[dlq.ReasonRejected]))
	}
	for reason, n := range s.StillPendingByReason {
		if reason != dlq.ReasonMalformed {
			errs = append(errs, fmt.Errorf("%d dead letters of reason %s are not resolved", n, reason))
		}
	}
	if want := int64(s.Produced.Poison); s.DeadLettered[dlq.ReasonMalformed] != want {
		errs = append(errs, fmt.Errorf("%d malformed dead letters, but %d poison records were produced", s.DeadLettered[dlq.ReasonMalformed], want))
	}
	if want := int64(s.DistinctEvents); s.ProcessedMarkers != want || s.EventsProcessed != want {
		errs = append(errs, fmt.Errorf("%d markers and %d events processed, but the stream has %d distinct valid events", s.ProcessedMarkers, s.EventsProcessed, want))
	}
	if want := int64(s.Produced.Duplicates); s.DuplicatesAbsorbed != want {
		errs = append(errs, fmt.Errorf("%d duplicates absorbed, but %d were produced", s.DuplicatesAbsorbed, want))
	}
	if len(errs) > 0 {
		return fmt.Errorf("the demo's outcome is not what it should be: %w", errors.Join(errs...))
	}
	return nil
}

// Text helpers for the narration and the step results.

// reasonsLine writes counts by reason, most first: "14 rejected, 3 malformed".
func reasonsLine(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return int(m[b] - m[a]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

func countStatuses(es []dlq.Entry) map[string]int64 {
	m := map[string]int64{}
	for _, e := range es {
		m[string(e.Status.Status)]++
	}
	return m
}

func countReasons(es []dlq.Entry) map[string]int64 {
	m := map[string]int64{}
	for _, e := range es {
		m[reasonOf(e.DeadLetter)]++
	}
	return m
}

// statusLine writes counts by status in dlq.Statuses order: "15 pending, 2 unknown".
func statusLine(m map[string]int64) string {
	var parts []string
	for _, st := range dlq.Statuses {
		if n := m[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func statsLine(rep *dlq.StatsReport) string {
	var parts []string
	for _, g := range rep.Groups {
		parts = append(parts, fmt.Sprintf("%d %s", g.Count, g.Reason))
	}
	if len(parts) == 0 {
		return "no dead letters"
	}
	return "by reason: " + strings.Join(parts, ", ")
}

func consumeLine(r ConsumeRun) string {
	return fmt.Sprintf("%d records: %d applied, %d duplicates, %d stale, %d dead-lettered (%s)",
		r.Records, r.Applied, r.Duplicates, r.Stale, r.DeadLettered, reasonsLine(r.DeadLetteredByReason))
}

func dupClause(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %s skipped as a duplicate", wording.Count(n, "copy was", "copies were"))
}
