package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// DefaultMaxReplays is the loop guard's default: a record already replayed this many times is
// quarantined, not sent (docs/design.md §3.3).
const DefaultMaxReplays = 3

// Target partition modes (docs/design.md §3.3).
const (
	// PartitionAuto, the default, puts a record where its key's other records are: in the
	// original partition its dead-letter headers name when the target has as many partitions
	// as the topic it came from (and that partition), otherwise where Spec.Partitioner puts its
	// key; records without a key the partitioner hashes are spread (sticky batches).
	PartitionAuto = "auto"
	// PartitionOriginal writes each record to the partition it originally came from: the
	// dead-letter headers' original partition, or for a record that is not a dead letter the
	// partition it is read from.
	PartitionOriginal = "original"
	// PartitionKey places every keyed record by Spec.Partitioner, whatever partition it came
	// from (after partitions were added, say).
	PartitionKey = "key"
	// PartitionDefault is how runs journaled before PartitionAuto named PartitionKey with
	// murmur2: a resumed one places its records as it began.
	PartitionDefault = "default"
)

// ToPartitionModes are the values of --to-partition.
var ToPartitionModes = []string{PartitionAuto, PartitionOriginal, PartitionKey}

// Spec is everything that decides what a replay sends and where: the selection, the filters,
// the target and the loop guard. It is journaled as the run's selection (JSON), so that a
// resumed run selects, routes and guards exactly as the interrupted one did.
type Spec struct {
	// From is the topic read (a dead-letter topic, or any topic with To): --topic, journaled
	// as "topic" (as "from" by earlier versions, still read).
	From string `json:"topic"`
	// Selection narrows From: partitions, an inclusive offset range or a time window, as the
	// flags gave it (its fields are the spec's in JSON). With none the whole topic is read,
	// bounded by its end offsets when the plan is made. Validate checks it (its Check).
	kafka.Selection
	// Record is set when a single record was named (TOPIC/PARTITION/OFFSET); the selection is
	// then that one offset.
	Record string `json:"record,omitempty"`

	// FilterSpec is the dead-letter filters of `dlq list`, checked as dlq checks them; its
	// EventID selects the records carrying this event id (a bounded scan of the selection)
	// on any topic.
	dlq.FilterSpec
	// Statuses, when set, selects only the dead letters whose status for StatusConsumer is one
	// of these: the others are not selected at all. The status is the one `dlq list --status`
	// shows, told by the same code (dlq.StatusLookup; see dlq.Status for the definition), so
	// that the two never disagree. A replay selects by two of them:
	//   - pending: an event id, no marker of the consumer, and no journaled replay of this dead
	//     letter (one that sent a record since deleted with its topic does not count) — the
	//     dead letters still waiting for a replay;
	//   - replayed: a journaled replay sent this dead letter and the consumer still has no
	//     marker — its copy failed again, was skipped, or went where it was lost: a second
	//     replay is the operator's decision, never the default.
	// resolved and stale (the consumer processed the event: a replay would be a duplicate it
	// skips) and
	// unknown (no event id or no consumer: nothing tells that a replay is needed) are refused
	// by Validate; the other filters select such dead letters. A resumed run's records that it
	// journaled as sent are already-sent, whatever their status now.
	Statuses []dlq.Status `json:"statuses,omitempty"`
	// IncludeReplayed sends the selected dead letters that an earlier journaled run already
	// sent and whose status is settled (resolved, or stale: dlq.Status.Settled), which a
	// replay otherwise leaves out (OutcomeAlreadyReplayed, counted and named by run in the
	// plan: Report.ReplayedBefore). Their status is StatusConsumer's, as for Statuses.
	IncludeReplayed bool `json:"include_replayed,omitempty"`
	// StatusConsumer is the consumer whose markers Statuses look up; "" means each dead
	// letter's own consumer group, as `dlq list` without --consumer.
	StatusConsumer string `json:"status_consumer,omitempty"`
	// PendingFor is `--status pending --consumer C` in one field: Validate adds pending to
	// Statuses and sets StatusConsumer to C (it must not name another consumer), so that it
	// means dlq's pending, not merely "no marker". A run journaled with it before resumes
	// selecting that way.
	PendingFor string `json:"pending_for,omitempty"`
	// SkipProcessedFor, when set, selects as usual but skips (counts, does not send) records
	// whose event this consumer has a marker for (`--skip-processed --consumer C`).
	SkipProcessedFor string `json:"skip_processed_for,omitempty"`

	// To overrides the target topic; empty sends each record back to the original topic its
	// dead-letter headers name.
	To string `json:"to,omitempty"`
	// ToPartition is PartitionAuto, PartitionOriginal or PartitionKey.
	ToPartition string `json:"to_partition"`
	// Partitioner is the partitioner of the producer that wrote the records, the one keyed
	// records are placed by when they do not keep their original partition. "" infers it for
	// each target topic from the topic's own keyed records, murmur2 when they tell nothing
	// (PartitionerChoice, docs/design.md §3.3).
	Partitioner kafka.Partitioner `json:"partitioner,omitempty"`
	// MaxReplays is the loop guard: a record whose fw.replay.count has reached it is
	// quarantined. A bounded copy (fw.dlq.value_omitted) is never sent whatever it is: it is
	// incomplete (OutcomeIncomplete), which no field of the spec overrides.
	MaxReplays int `json:"max_replays"`

	// ForGroup is the one consumer group the replayed records are for, stamped as
	// fw.replay.for: every other group reading the target skips them without a marker
	// (docs/design.md §3.3). Without it each record is for the group its dead letter names
	// (so a replay of dead letters that all name one group is for that group), and a dead
	// letter that names none is for every group. AllGroups stamps no fw.replay.for at all.
	ForGroup  string `json:"for_group,omitempty"`
	AllGroups bool   `json:"all_groups,omitempty"`

	// Addresses and EventIDs select records named one by one (--from-file): the records of
	// From at these addresses (topic/partition/offset), or the dead letters of these event ids.
	Addresses []string `json:"addresses,omitempty"`
	EventIDs  []string `json:"event_ids,omitempty"`

	// Edit changes the one record named (Record) before it is sent: only the edited copy is
	// sent, marked fw.replay.edited.
	Edit *Edit `json:"edit,omitempty"`

	// Strict refuses an executed plan that the guards warn about (Guard): dead letters older
	// than their target's replay horizon, newer events of their aggregate already processed.
	Strict bool `json:"strict,omitempty"`
	// StopOnRedeadletter, when positive, stops a run once this many of its own records
	// (fw.replay.id) are dead-lettered again into the topic it reads (ExecOptions).
	StopOnRedeadletter int `json:"stop_on_redeadletter,omitempty"`

	// compiled is FilterSpec as Validate compiled it.
	compiled  dlq.Filter
	addresses map[dedup.SourceRef]bool
	eventIDs  map[string]bool
}

// Validate checks the spec without touching the network and fills the defaults. Every
// failure is a usage error (exit 2).
func (s *Spec) Validate() error {
	if s.From == "" {
		return fwerr.Usagef("nothing to read: name a topic with --topic TOPIC or a record TOPIC/PARTITION/OFFSET")
	}
	if p := kafka.TopicProblem(s.From); p != "" {
		return fwerr.Usagef("--topic %q: %s", s.From, p)
	}
	if p := kafka.TopicProblem(s.To); s.To != "" && p != "" {
		return fwerr.Usagef("--to %q: %s", s.To, p)
	}
	if s.To == s.From && s.To != "" {
		return fwerr.Usagef("refusing to write into %s, the topic being read: a replay into its own source would read its own output (choose another --to)", s.From)
	}
	if s.OriginalTopic != "" && s.To == "" && s.OriginalTopic == s.From {
		return fwerr.Usagef("--original-topic %s is the topic being read: refusing to write into it", s.From)
	}
	switch s.ToPartition {
	case "":
		s.ToPartition = PartitionAuto
	case PartitionDefault:
		s.ToPartition = PartitionKey
	case PartitionAuto, PartitionOriginal, PartitionKey:
	default:
		return fwerr.Usagef("--to-partition %q: want %s", s.ToPartition, strings.Join(ToPartitionModes, ", "))
	}
	if s.Partitioner != "" {
		// "": inferred per target topic from its keyed records (Plan.partitioners).
		p, err := kafka.ParsePartitioner(string(s.Partitioner))
		if err != nil {
			return fwerr.Usagef("--partitioner: %v", err)
		}
		s.Partitioner = p
	}
	if s.MaxReplays == 0 {
		s.MaxReplays = DefaultMaxReplays
	}
	if s.MaxReplays < 1 {
		return fwerr.Usagef("--max-replays %d: must be at least 1", s.MaxReplays)
	}
	if err := s.Selection.Check(); err != nil {
		return err
	}
	f, err := s.FilterSpec.Compile()
	if err != nil {
		return err
	}
	s.compiled = f
	if err := s.validateAims(); err != nil {
		return err
	}
	return s.validateStatuses()
}

// validateAims checks what the spec adds to a plain replay: the group it is for, the records
// named one by one, the edit, the stop rule.
func (s *Spec) validateAims() error {
	if s.ForGroup != "" {
		if s.AllGroups {
			return fwerr.Usagef("choose either --for-group %s or --all-groups, not both", s.ForGroup)
		}
		if err := dedup.ValidateConsumer(s.ForGroup); err != nil {
			return fwerr.Usagef("--for-group %q: %v", s.ForGroup, err)
		}
	}
	if s.StopOnRedeadletter < 0 {
		return fwerr.Usagef("--stop-on-redeadletter %d: must be positive (or 0: never stop)", s.StopOnRedeadletter)
	}
	s.addresses, s.eventIDs = nil, nil
	if len(s.Addresses) > 0 || len(s.EventIDs) > 0 {
		if s.Record != "" || s.Ranged() {
			return fwerr.Usagef("a file of records names its records: drop the record address, --partition, --start-offset and --end-offset")
		}
		s.addresses = make(map[dedup.SourceRef]bool, len(s.Addresses))
		for _, a := range s.Addresses {
			ra, err := kafka.ParseRecordAddress(a)
			if err != nil {
				return err
			}
			if ra.Topic != s.From {
				return fwerr.Usagef("%s is not in %s: a replay reads one topic (split the file by topic)", a, s.From)
			}
			s.addresses[dedup.SourceRef{Topic: ra.Topic, Partition: ra.Partition, Offset: ra.Offset}] = true
		}
		if len(s.EventIDs) > 0 {
			s.eventIDs = make(map[string]bool, len(s.EventIDs))
			for _, id := range s.EventIDs {
				s.eventIDs[id] = true
			}
		}
	}
	if s.Edit != nil {
		if s.Record == "" {
			return fwerr.Usagef("an edit changes one record: name it as TOPIC/PARTITION/OFFSET")
		}
		if err := s.Edit.validate(); err != nil {
			return err
		}
	}
	return nil
}

// ReplayStatuses are the statuses a replay can select by (Spec.Statuses).
var ReplayStatuses = []dlq.Status{dlq.StatusPending, dlq.StatusReplayed}

// validateStatuses adds PendingFor to Statuses and checks them (twice is once: a journaled
// spec is validated again when its run resumes).
func (s *Spec) validateStatuses() error {
	if s.PendingFor != "" {
		if s.StatusConsumer != "" && s.StatusConsumer != s.PendingFor {
			return fwerr.Usagef("pending for %s, statuses for %s: one consumer's statuses select a replay", s.PendingFor, s.StatusConsumer)
		}
		if !slices.Contains(s.Statuses, dlq.StatusPending) {
			s.Statuses = append(s.Statuses, dlq.StatusPending)
		}
		s.StatusConsumer = s.PendingFor
	}
	var kept []dlq.Status
	for _, st := range s.Statuses {
		switch {
		case slices.Contains(ReplayStatuses, st):
		case st.Settled():
			return fwerr.Usagef("--status %s: the consumer has processed these events; a replay would send duplicates it skips (a replay selects pending or replayed dead letters; --include-replayed sends settled dead letters an earlier run sent along with the rest)", st)
		case st == dlq.StatusUnknown:
			return fwerr.Usagef("--status unknown: these dead letters have no event id or no consumer to ask, so nothing tells that they need a replay (select them by the other filters; a replay selects pending or replayed dead letters)")
		default:
			return fwerr.Usagef("--status %q: a replay selects pending or replayed dead letters", st)
		}
		if !slices.Contains(kept, st) {
			kept = append(kept, st)
		}
	}
	s.Statuses = kept
	if s.StatusConsumer != "" {
		if len(s.Statuses) == 0 {
			return fwerr.Usagef("a status consumer (%s) without a status to select", s.StatusConsumer)
		}
		if err := dedup.ValidateConsumer(s.StatusConsumer); err != nil {
			return fwerr.Usagef("--consumer %q: %v", s.StatusConsumer, err)
		}
	}
	return nil
}

// NeedsStore reports whether planning needs the dedup store (marker and journal lookups).
func (s *Spec) NeedsStore() bool {
	return len(s.Statuses) > 0 || s.PendingFor != "" || s.SkipProcessedFor != ""
}

// readSelection is the selection a plan reads: the spec's, and for records named by address
// alone their partitions.
func (s *Spec) readSelection() kafka.Selection {
	sel := s.Selection
	if len(s.addresses) > 0 && len(s.eventIDs) == 0 {
		// Records named by address: only their partitions are read (Spec.narrow).
		for a := range s.addresses {
			if !slices.Contains(sel.Partitions, a.Partition) {
				sel.Partitions = append(sel.Partitions, a.Partition)
			}
		}
		slices.Sort(sel.Partitions)
	}
	return sel
}

// filter is the dlq.Filter of the spec's dead-letter filters, as Validate compiled them.
func (s *Spec) filter() dlq.Filter { return s.compiled }

// TargetLabel describes the target for the journal and the plan: the --to topic, or
// "original" (each record's dead-letter headers), with " partition original" when records keep
// their partition.
func (s *Spec) TargetLabel() string {
	t := s.To
	if t == "" {
		t = "original"
	}
	switch s.ToPartition {
	case PartitionOriginal:
		t += " (original partition)"
	case PartitionKey:
		if s.Partitioner == "" {
			t += " (partitioned by key)"
		} else {
			t += " (partitioned by " + string(s.Partitioner) + ")"
		}
	}
	return t
}

// MarshalSpec is the spec as the journal keeps it.
func (s *Spec) marshal() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("replay: marshal spec: %v", err)) // plain data: cannot fail
	}
	return string(b)
}

// UnmarshalJSON reads a journaled spec, also one journaled before the inclusive end of its
// offset range was named last_offset (end_offset then), or before the topic read was named
// topic (from then).
func (s *Spec) UnmarshalJSON(b []byte) error {
	type plain Spec
	var j struct {
		plain
		LegacyEndOffset *int64 `json:"end_offset"`
		LegacyFrom      string `json:"from"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Spec(j.plain)
	if s.EndOffset == nil {
		s.EndOffset = j.LegacyEndOffset
	}
	if s.From == "" {
		s.From = j.LegacyFrom
	}
	return nil
}

// unmarshalSpec reads a journaled selection back: the spec, validated, how the run executes
// (nil when it was journaled without: by an earlier version) and the partitioners its attempts
// chose. The spec is read apart: journaled embeds Spec, whose UnmarshalJSON would otherwise
// swallow the rest.
func unmarshalSpec(text string) (Spec, *Execution, []PartitionerChoice, error) {
	var spec Spec
	if err := json.Unmarshal([]byte(text), &spec); err != nil {
		return Spec{}, nil, nil, fmt.Errorf("the journaled selection is not a replay spec: %w", err)
	}
	var rest struct {
		Execution    *Execution          `json:"execution"`
		Partitioners []PartitionerChoice `json:"partitioners"`
	}
	if err := json.Unmarshal([]byte(text), &rest); err != nil {
		return Spec{}, nil, nil, fmt.Errorf("the journaled selection is not a replay spec: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, nil, nil, fmt.Errorf("the journaled selection: %w", err)
	}
	return spec, rest.Execution, rest.Partitioners, nil
}
