package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/printable"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Defaults of planning.
const (
	DefaultSample = 10
	// maxListed bounds the quarantined and incomplete records and the problems a report
	// lists; counts stay exact.
	maxListed = 1000
)

// Plan is a replay whose ranges are fixed: the end offsets were taken when it was made (or,
// for a resumed run, are the journaled ones), so a replay never chases records that arrive
// while it runs, its own output included.
type Plan struct {
	Spec Spec
	// Ranges are the half-open ranges to read.
	Ranges []kafka.PartitionRange
	// Resume is set when the plan continues a journaled run.
	Resume *Resume
	// LostOffsets counts offsets of a resumed run's remaining ranges that retention deleted
	// since it was interrupted.
	LostOffsets int64
	// SourceTopicID is the Kafka topic ID of Spec.From when the plan was made ("" when the
	// brokers give none): the run journals it, so that the journal knows which records it
	// sent, not only where (a topic recreated under the same name has another ID).
	SourceTopicID string
	// edit is the prepared edit's report (prepareEdit), set by Run.
	edit *EditReport
	// partitioners are the target topics' partitioners, decided once for the plan (without
	// --partitioner, inferred from each target's keyed records).
	partitioners inferences
}

// NewPlan validates spec and fixes its ranges. An unknown topic is an *kafka.UnknownTopicError
// (exit 1); offsets outside a partition, an inverted range or an unknown partition are usage
// errors naming the valid range.
func NewPlan(ctx context.Context, c *kafka.Cluster, spec Spec) (*Plan, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	ranges, err := c.Plan(ctx, spec.From, spec.readSelection())
	if err != nil {
		return nil, err
	}
	if ranges, err = spec.narrow(ranges); err != nil {
		return nil, err
	}
	if spec.Record != "" && (len(ranges) != 1 || ranges[0].Len() == 0) {
		return nil, fmt.Errorf("record %s is not readable (past the last stable offset of an open transaction?)", spec.Record)
	}
	id, err := c.TopicID(ctx, spec.From)
	if err != nil {
		return nil, err
	}
	return &Plan{Spec: spec, Ranges: ranges, SourceTopicID: id}, nil
}

// narrow cuts the ranges of a plan whose records are named by address alone (--from-file) to
// the offsets between each partition's first and last, and refuses an address that is not in
// its partition (a usage error naming the offsets there are).
func (s *Spec) narrow(ranges []kafka.PartitionRange) ([]kafka.PartitionRange, error) {
	if len(s.addresses) == 0 {
		return ranges, nil
	}
	type span struct{ lo, hi int64 }
	spans := map[int32]span{}
	for a := range s.addresses {
		sp, ok := spans[a.Partition]
		if !ok {
			sp = span{a.Offset, a.Offset}
		}
		spans[a.Partition] = span{min(sp.lo, a.Offset), max(sp.hi, a.Offset)}
	}
	for a := range s.addresses {
		i := slices.IndexFunc(ranges, func(r kafka.PartitionRange) bool { return r.Partition == a.Partition })
		if i < 0 {
			return nil, fwerr.NotFoundf("%s: %s has no partition %d", kafka.RecordAddress{Topic: a.Topic, Partition: a.Partition, Offset: a.Offset}, s.From, a.Partition)
		}
		if r := ranges[i]; a.Offset < r.Start || a.Offset >= r.End {
			return nil, fwerr.NotFoundf("%s is not in %s: partition %d holds offsets %d to %d", kafka.RecordAddress{Topic: a.Topic, Partition: a.Partition, Offset: a.Offset}, s.From, a.Partition, r.Start, r.End-1)
		}
	}
	if len(s.eventIDs) > 0 {
		// Event ids may be anywhere: every partition is read whole.
		return ranges, nil
	}
	out := ranges[:0]
	for _, r := range ranges {
		if sp, ok := spans[r.Partition]; ok {
			r.Start, r.End = sp.lo, sp.hi+1
			out = append(out, r)
		}
	}
	return out, nil
}

// TargetKnown reports whether every record the plan can send goes to one target known before
// anything is read: --to with the default partitioner. No record of such a plan can be
// unroutable (the problems Scan finds need a dead-letter header's topic or partition), and the
// partitioner only picks partitions that exist, so checking that the --to topic exists
// (CheckTarget) is all the plan-before-send check there is: it can be executed in one pass
// (ExecOptions.SinglePass) with "nothing is sent when a target is missing" intact. With
// --to-partition original, or without --to, the targets are in the records' headers, and only
// a scan of the whole range knows them all before the first send.
func (p *Plan) TargetKnown() bool {
	return p.Spec.To != "" && p.Spec.ToPartition != PartitionOriginal
}

// CheckTarget checks that the target of a plan whose target is known (TargetKnown) exists: a
// *MissingTargetError (nothing was sent) when it does not.
func CheckTarget(ctx context.Context, c *kafka.Cluster, p *Plan) error {
	if !p.TargetKnown() {
		return fmt.Errorf("replay: the targets of a replay without --to, or with --to-partition original, are known only by a scan")
	}
	t := newTargetCache(c, kafka.OpWrite, p)
	n, err := t.lookup(ctx, p.Spec.To)
	if err != nil {
		return err
	}
	if n == 0 {
		m := []TargetCount{{Topic: p.Spec.To, Partition: -1}}
		return &MissingTargetError{Targets: m, text: p.Spec.To}
	}
	return nil
}

// Total is the number of offsets the plan reads.
func (p *Plan) Total() int64 { return kafka.Total(p.Ranges) }

// RangeReport is one partition of a plan, offsets inclusive: Start is its first offset, Last
// its last (Start-1 when the range is empty, Offsets 0).
type RangeReport struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start_offset"`
	Last      int64  `json:"last_offset"`
	Offsets   int64  `json:"offsets"`
}

// TargetCount is how many records go to one target partition by one rule; Partition -1 means
// the producer spreads them (records without a key its partitioner hashes).
type TargetCount struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Rule is why that partition: RuleOriginal, the partitioner's name (murmur2, crc32,
	// fnv1a: placed by the key), or RuleSpread.
	Rule    string `json:"rule,omitempty"`
	Records int64  `json:"records"`
}

// The placement rules of a send besides a partitioner's name (TargetCount.Rule).
const (
	// RuleOriginal: the original partition the dead letter names.
	RuleOriginal = "original"
	// RuleSpread: no key the partitioner hashes; the producer spreads such records.
	RuleSpread = "spread"
)

// place names the target: its topic, or "TOPIC partition N" for a fixed partition.
func (tc TargetCount) place() string {
	if tc.Partition < 0 {
		return tc.Topic
	}
	return fmt.Sprintf("%s partition %d", tc.Topic, tc.Partition)
}

// RecordRef is a record named in a report: its address as fields (topic, partition,
// offset), as every command's JSON gives a record.
type RecordRef struct {
	kafka.RecordAddress
	EventID     string `json:"event_id,omitempty"`
	ReplayCount int    `json:"replay_count"`
	Target      string `json:"target,omitempty"`
	// ValueOmitted and ValueBytes are set for an incomplete record (a bounded copy): why its
	// value is not whole, and the original value's length (0: not said).
	ValueOmitted string `json:"value_omitted,omitempty"`
	ValueBytes   int64  `json:"value_bytes,omitempty"`
	// OriginalGone is set for an incomplete dead letter that holds only its record's
	// coordinates (a share group's, copy off) whose original record is gone: why (expired,
	// compacted, recreated, deleted; dlq.Originals).
	OriginalGone string `json:"original_gone,omitempty"`
}

// refOf names d in a report.
func refOf(d *decision) RecordRef {
	r := RecordRef{RecordAddress: kafka.AddressOf(d.rec), EventID: d.eventID, ReplayCount: d.count, Target: d.target}
	if d.outcome == OutcomeIncomplete {
		r.ValueOmitted, r.ValueBytes, r.OriginalGone = d.omitted, d.valueBytes, d.gone
	}
	return r
}

// SampleRecord is one selected record of the plan's sample.
type SampleRecord struct {
	kafka.RecordAddress
	Outcome         string `json:"outcome"`
	TargetTopic     string `json:"target_topic,omitempty"`
	TargetPartition *int32 `json:"target_partition,omitempty"`
	// Rule is how the target partition was chosen (TargetCount.Rule).
	Rule string `json:"rule,omitempty"`
	// Key is the record's key as text ("" when null); when it is not printable text (by
	// printable.Text, the rule for record bytes in JSON), KeyBase64 holds its exact bytes.
	Key          string `json:"key"`
	KeyBase64    []byte `json:"key_base64,omitempty"`
	EventID      string `json:"event_id,omitempty"`
	Reason       string `json:"dlq_reason,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	ReplayCount  int    `json:"replay_count"`
	// KeySchema and ValueSchema are the key and value decoded through the schema registry when
	// they are framed for one (docs/design.md §3.6), for the operator to see what would be
	// sent; the replay sends the original bytes.
	KeySchema   *schema.Payload `json:"key_schema,omitempty"`
	ValueSchema *schema.Payload `json:"value_schema,omitempty"`
}

// Counts are a report's record counts. Selected = ToSend + Quarantined + Incomplete + Skipped
// + AlreadySent + AlreadyReplayed (+ Problems).
type Counts struct {
	Read        int64 `json:"read"`
	Selected    int64 `json:"selected"`
	ToSend      int64 `json:"to_send"`
	Quarantined int64 `json:"quarantined"`
	// Incomplete counts the bounded copies selected (OutcomeIncomplete), and the dead letters
	// that hold only coordinates whose original record is gone: never sent. OriginalGone
	// counts the latter.
	Incomplete   int64 `json:"incomplete"`
	OriginalGone int64 `json:"original_gone"`
	Skipped      int64 `json:"skipped"`
	// AlreadySent counts a resumed run's records that the run itself sent before it stopped.
	AlreadySent int64 `json:"already_sent"`
	// AlreadyReplayed counts the settled dead letters an earlier run sent, left out
	// (OutcomeAlreadyReplayed; Report.ReplayedBefore says which runs).
	AlreadyReplayed int64 `json:"already_replayed"`
	Problems        int64 `json:"problems"`
	// MalformedToSend counts the records to send that were dead-lettered as malformed: the
	// same bytes fail the same way again, whatever was fixed downstream.
	MalformedToSend int64 `json:"malformed_to_send"`
}

// Report is what a dry run prints: what it selects and every filter it applies, where the
// records would go, what the loop guard holds back, the bounded copies it would not send
// (Incomplete: listed like Quarantined, at most 1,000, Counts.Incomplete exact), and a
// sample. Neither fails the plan (Err): an executed run sends the rest and exits 3.
type Report struct {
	Source string `json:"topic"`
	Target string `json:"target"`
	// ToPartition and Partitioner are how records are placed (Spec.ToPartition, .Partitioner);
	// each target's Rule says which rule placed its records. Partitioner is --partitioner, or
	// without it the one chosen for every target topic that records are placed in by key
	// (null when they differ, or none is); PartitionerChoices says, per topic, which and why
	// (inferred from the target's keyed records, or the default).
	ToPartition        string              `json:"to_partition"`
	Partitioner        *string             `json:"partitioner"`
	PartitionerChoices []PartitionerChoice `json:"partitioner_choices"`
	MaxReplays         int                 `json:"max_replays"`
	RunID              string              `json:"resumes_run,omitempty"`
	// Reason is why the replay is asked for (--reason, a resumed run's own): journaled and
	// sent as fw.replay.reason when executed; nil without one.
	Reason      *string         `json:"reason"`
	Selection   SelectionReport `json:"selection"`
	Filters     Filters         `json:"filters"`
	Ranges      []RangeReport   `json:"ranges"`
	LostOffsets int64           `json:"lost_offsets,omitempty"`
	Counts      Counts          `json:"counts"`
	Targets     []TargetCount   `json:"targets"`
	Missing     []TargetCount   `json:"missing_targets"`
	Quarantined []RecordRef     `json:"quarantined"`
	Incomplete  []RecordRef     `json:"incomplete"`
	Problems    []string        `json:"problems"`
	Sample      []SampleRecord  `json:"sample"`
	// ForGroup is the group the records are for (fw.replay.for): --for-group, or, when every
	// selected dead letter names one group, that one (ForGroupDefault). "" with Groups: each
	// record is for the group its dead letter names; with AllGroups, for every group.
	ForGroup        string   `json:"for_group,omitempty"`
	ForGroupDefault bool     `json:"for_group_default,omitempty"`
	AllGroups       bool     `json:"all_groups,omitempty"`
	Groups          []string `json:"groups"`
	// Edit is the edit of the one record a plan edits: the value's diff, the headers set.
	Edit *EditReport `json:"edit,omitempty"`
	// Guards are the guards' warnings (Spec.Strict refuses to execute when there are any).
	Guards []Notice `json:"guards"`
	// ReplayedBefore are the selected dead letters that earlier journaled runs sent, by run.
	ReplayedBefore ReplayedBefore `json:"replayed_before"`
	// Execution is how the plan executes (its rate, its batching) and where each setting came
	// from: a resumed run's own, journaled with it, unless given again. Set by the flow (Run).
	Execution *ExecutionReport `json:"execution"`
}

// ReplayedBefore counts the selected dead letters that earlier journaled runs already sent
// (the latest run that sent each, dlq.StatusInfo.Replay), with their status now; the settled
// ones (dlq.Status.Settled) are left out unless Spec.IncludeReplayed. A resumed run's own
// sends are Counts.AlreadySent, not these. Without a store nothing is known: all zero.
type ReplayedBefore struct {
	// Records is how many selected dead letters an earlier run sent; LeftOut how many of them
	// the plan leaves out (Counts.AlreadyReplayed).
	Records int64 `json:"records"`
	LeftOut int64 `json:"left_out"`
	// Runs are the runs that sent them, latest first (at most 100; the counts are exact).
	Runs []PriorRun `json:"runs"`
}

// PriorRun is one earlier run that sent selected dead letters.
type PriorRun struct {
	RunID string `json:"run_id"`
	// At is when the broker acknowledged the latest of its copies among them.
	At      time.Time `json:"at"`
	Records int64     `json:"records"`
	LeftOut int64     `json:"left_out"`
	// Statuses are their statuses now.
	Statuses dlq.StatusCounts `json:"statuses"`
}

// add counts d, selected, whose dead letter an earlier run sent (d.replay).
func (rb *ReplayedBefore) add(d *decision) {
	rb.Records++
	left := d.outcome == OutcomeAlreadyReplayed
	if left {
		rb.LeftOut++
	}
	i := slices.IndexFunc(rb.Runs, func(r PriorRun) bool { return r.RunID == d.replay.RunID })
	if i < 0 {
		if len(rb.Runs) >= maxGroups {
			return
		}
		rb.Runs = append(rb.Runs, PriorRun{RunID: d.replay.RunID, At: d.replay.At})
		i = len(rb.Runs) - 1
	}
	r := &rb.Runs[i]
	r.Records++
	if left {
		r.LeftOut++
	}
	if d.replay.At.After(r.At) {
		r.At = d.replay.At
	}
	r.Statuses.Add(d.status)
}

// sort orders the runs latest first.
func (rb *ReplayedBefore) sort() {
	sort.SliceStable(rb.Runs, func(i, j int) bool { return rb.Runs[i].At.After(rb.Runs[j].At) })
}

// maxGroups bounds the groups a report names.
const maxGroups = 100

// ProgressFunc is told how many of the plan's offsets have been read.
type ProgressFunc func(read, total int64)

// ScanOptions tune Scan.
type ScanOptions struct {
	// Sample is how many selected records the report shows (default DefaultSample; negative:
	// none).
	Sample   int
	Progress ProgressFunc
	// Schemas decodes the sample's registry-framed keys and values; nil detects only.
	Schemas *schema.Decoder
}

// Scan reads the plan's ranges once and reports what a replay would do, sending nothing.
// st is needed when the spec looks up statuses or markers (--status, --skip-processed). The
// report's Missing lists target topics (or, with --to-partition original, partitions) that
// do not exist; Problems the records that cannot be routed. Err tells whether the plan can
// be executed.
func Scan(ctx context.Context, c *kafka.Cluster, st *dedup.Store, p *Plan, opts ScanOptions) (*Report, error) {
	if opts.Sample == 0 {
		opts.Sample = DefaultSample
	}
	sc := &scan{rep: newReport(p), opts: opts, guard: newGuard(c, st, &p.Spec), targets: newTargetCache(c, kafka.OpDescribe, p),
		byTarget: map[targetKey]int64{}, total: p.Total()}
	spans, err := replayedSpans(ctx, st, p)
	if err != nil {
		return nil, err
	}
	err = readBatches(ctx, c, p.Ranges, func() *classifier { return newClassifier(c, p, st, spans) }, func(d *decision) error { return sc.add(ctx, d) })
	if err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress(sc.rep.Counts.Read, sc.total)
	}
	return sc.finish(ctx, p), nil
}

// newReport is the report of p before anything is read: what it selects and how it places,
// its ranges, every list empty.
func newReport(p *Plan) *Report {
	rep := &Report{
		Source: p.Spec.From, Target: p.Spec.TargetLabel(), MaxReplays: p.Spec.MaxReplays, LostOffsets: p.LostOffsets,
		ToPartition: p.Spec.ToPartition, Selection: p.Spec.SelectionReport(), Filters: p.Spec.Filters(),
		Targets: []TargetCount{}, Missing: []TargetCount{}, Quarantined: []RecordRef{}, Incomplete: []RecordRef{}, Problems: []string{}, Sample: []SampleRecord{},
		Groups: []string{}, Guards: []Notice{}, Edit: p.edit, ForGroup: p.Spec.ForGroup, AllGroups: p.Spec.AllGroups,
		ReplayedBefore: ReplayedBefore{Runs: []PriorRun{}},
	}
	if p.Resume != nil {
		rep.RunID = p.Resume.Run.ID
	}
	for _, r := range p.Ranges {
		rep.Ranges = append(rep.Ranges, RangeReport{Topic: r.Topic, Partition: r.Partition, Start: r.Start, Last: r.End - 1, Offsets: r.Len()})
	}
	return rep
}

// targetKey is one target partition and the rule that placed records in it.
type targetKey struct {
	topic string
	part  int32
	rule  string
}

// scan is one Scan: the report it fills record by record, the guards the records to send
// pass, and where they go.
type scan struct {
	rep      *Report
	opts     ScanOptions
	guard    *guard
	targets  *targetCache
	byTarget map[targetKey]int64
	// groupless: a record to send names no group.
	groupless bool
	total     int64
}

// add counts one record the classifier decided on, and shows it in the sample while there is
// room.
func (sc *scan) add(ctx context.Context, d *decision) error {
	rep := sc.rep
	rep.Counts.Read++
	if sc.opts.Progress != nil && rep.Counts.Read%progressEvery == 0 {
		sc.opts.Progress(rep.Counts.Read, sc.total)
	}
	if d.outcome == OutcomeFiltered {
		return nil
	}
	rep.Counts.Selected++
	if d.replay != nil && d.outcome != OutcomeAlreadySent {
		rep.ReplayedBefore.add(d)
	}
	if err := sc.count(ctx, d); err != nil {
		return err
	}
	if sc.opts.Sample > 0 && len(rep.Sample) < sc.opts.Sample {
		rep.Sample = append(rep.Sample, sc.sample(ctx, d))
	}
	return nil
}

// count counts a selected record by its outcome, listing the quarantined, incomplete and
// unroutable ones (at most maxListed each); a record to send passes the guards and is counted
// by its group and its target.
func (sc *scan) count(ctx context.Context, d *decision) error {
	rep := sc.rep
	switch d.outcome {
	case OutcomeQuarantined:
		rep.Counts.Quarantined++
		if len(rep.Quarantined) < maxListed {
			rep.Quarantined = append(rep.Quarantined, refOf(d))
		}
	case OutcomeIncomplete:
		rep.Counts.Incomplete++
		if d.gone != "" {
			rep.Counts.OriginalGone++
		}
		if len(rep.Incomplete) < maxListed {
			rep.Incomplete = append(rep.Incomplete, refOf(d))
		}
	case OutcomeSkipped:
		rep.Counts.Skipped++
	case OutcomeAlreadySent:
		rep.Counts.AlreadySent++
	case OutcomeAlreadyReplayed:
		rep.Counts.AlreadyReplayed++
	case OutcomeProblem:
		rep.Counts.Problems++
		if len(rep.Problems) < maxListed {
			rep.Problems = append(rep.Problems, d.problem)
		}
	case OutcomeSend:
		rep.Counts.ToSend++
		if d.reason == dlq.ReasonMalformed {
			rep.Counts.MalformedToSend++
		}
		if err := sc.guard.add(ctx, d); err != nil {
			return err
		}
		switch {
		case d.group == "":
			sc.groupless = true
		case !slices.Contains(rep.Groups, d.group) && len(rep.Groups) < maxGroups:
			rep.Groups = append(rep.Groups, d.group)
		}
		part, rule, err := sc.targets.place(ctx, d)
		if err != nil {
			return err
		}
		sc.byTarget[targetKey{d.target, part, rule}]++
	}
	return nil
}

// sample is a selected record as the plan's sample shows it: its key, its payloads decoded
// through the registry, and where it would go.
func (sc *scan) sample(ctx context.Context, d *decision) SampleRecord {
	s := SampleRecord{RecordAddress: kafka.AddressOf(d.rec), Outcome: d.outcome.String(), EventID: d.eventID,
		Reason: d.reason, ErrorMessage: d.errMsg, ReplayCount: d.count}
	src := d.sendSource()
	payloads := sc.opts.Schemas.Record(ctx, envelope.RecordHeaders(src.Headers), src.Key, src.Value)
	s.KeySchema, s.ValueSchema = payloads.Key, payloads.Value
	if key, exact := printable.Text(d.sendKey()); key != nil {
		s.Key, s.KeyBase64 = *key, exact
	}
	if d.outcome == OutcomeSend || d.outcome == OutcomeQuarantined || d.outcome == OutcomeIncomplete {
		s.TargetTopic = d.target
		if part, rule, _ := sc.targets.place(ctx, d); part >= 0 {
			s.TargetPartition, s.Rule = &part, rule
		} else {
			s.Rule = rule
		}
	}
	return s
}

// finish completes the report once every record is read: the targets and the missing ones,
// the runs that replayed before, the partitioners, the group the records are for, the guards'
// warnings.
func (sc *scan) finish(ctx context.Context, p *Plan) *Report {
	rep := sc.rep
	for k, n := range sc.byTarget {
		tc := TargetCount{Topic: k.topic, Partition: k.part, Rule: k.rule, Records: n}
		if !sc.targets.exists(k.topic, k.part) {
			rep.Missing = append(rep.Missing, tc)
		}
		rep.Targets = append(rep.Targets, tc)
	}
	sortTargets(rep.Targets)
	sortTargets(rep.Missing)
	rep.ReplayedBefore.sort()
	rep.PartitionerChoices = p.partitioners.choices()
	rep.Partitioner = p.partitioner(rep.PartitionerChoices)
	slices.Sort(rep.Groups)
	if rep.ForGroup == "" && !rep.AllGroups && len(rep.Groups) == 1 && !sc.groupless {
		rep.ForGroup, rep.ForGroupDefault = rep.Groups[0], true
	}
	if rep.Guards = sc.guard.notices(ctx); rep.Guards == nil {
		rep.Guards = []Notice{}
	}
	return rep
}

// partitioner is the one partitioner of the plan: --partitioner, or the one chosen for every
// target topic of choices; nil when they differ or none was chosen.
func (p *Plan) partitioner(choices []PartitionerChoice) *string {
	if p.Spec.Partitioner != "" {
		s := string(p.Spec.Partitioner)
		return &s
	}
	var one *string
	for _, ch := range choices {
		if one != nil && *one != ch.Partitioner {
			return nil
		}
		one = &ch.Partitioner
	}
	return one
}

func sortTargets(ts []TargetCount) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Topic != ts[j].Topic {
			return ts[i].Topic < ts[j].Topic
		}
		if ts[i].Partition != ts[j].Partition {
			return ts[i].Partition < ts[j].Partition
		}
		return ts[i].Rule < ts[j].Rule
	})
}

// Err is nil when the plan can be executed: a usage error (exit 2) when records cannot be
// routed, an error (exit 1) when a target topic or partition does not exist. Nothing has been
// sent when it says so.
func (r *Report) Err() error {
	if r.Counts.Problems > 0 {
		more := ""
		if r.Counts.Problems > 1 {
			more = fmt.Sprintf(" (and %d more records)", r.Counts.Problems-1)
		}
		return fwerr.Usagef("%s%s", r.Problems[0], more)
	}
	if len(r.Missing) > 0 {
		var parts []string
		for _, m := range r.Missing {
			parts = append(parts, fmt.Sprintf("%s (%d records)", m.place(), m.Records))
		}
		return &MissingTargetError{Targets: r.Missing, text: strings.Join(parts, ", ")}
	}
	return nil
}

// MissingTargetError means a target topic (or partition) does not exist. Nothing was sent,
// unless Stopped: a single pass (ExecOptions.SinglePass) read it after it had sent records,
// and stopped there.
type MissingTargetError struct {
	Targets []TargetCount
	text    string
	stopped bool
}

// ErrorKind says a missing target is not found (exit 9), as every missing thing is.
func (e *MissingTargetError) ErrorKind() fwerr.Kind { return fwerr.KindNotFound }

// Stopped reports a run that sent records before it met the missing target.
func (e *MissingTargetError) Stopped() bool { return e.stopped }

func (e *MissingTargetError) Error() string {
	if e.stopped {
		return "target does not exist: " + e.text + "; the replay stopped there: the records before it were sent and journaled (create it and resume the run)"
	}
	return "target does not exist: " + e.text + "; nothing was sent (create it, or choose another target with --to)"
}

// targetCache knows the target topics' partition counts, asking the cluster once per topic;
// with limits, it reads each existing topic's record size limit at the same time (Execute).
type targetCache struct {
	c     *kafka.Cluster
	parts map[string]int // 0: the topic does not exist
	// origins are the partition counts of original topics that are not targets (count).
	origins map[string]int
	// plan gives the partitioner of each target topic (Plan.partitioners).
	plan   *Plan
	limits *targetLimits
	// op is what the caller needs on a target, named when the ACLs hide one: DESCRIBE to plan,
	// WRITE to send (which grants DESCRIBE).
	op string
}

func newTargetCache(c *kafka.Cluster, op string, p *Plan) *targetCache {
	return &targetCache{c: c, parts: map[string]int{}, origins: map[string]int{}, plan: p, op: op}
}

// exists reports whether a looked-up topic exists and, for part >= 0, has that partition.
func (t *targetCache) exists(topic string, part int32) bool {
	n := t.parts[topic]
	return n > 0 && (part < 0 || int(part) < n)
}

func (t *targetCache) lookup(ctx context.Context, topic string) (int, error) {
	if n, ok := t.parts[topic]; ok {
		return n, nil
	}
	details, err := t.c.Admin.ListTopics(ctx, topic)
	if err != nil {
		return 0, kafka.Denied(fmt.Errorf("describe target topic %s: %w", topic, err), t.op, kafka.ResourceTopic, topic)
	}
	n := 0
	if d, ok := details[topic]; ok {
		switch {
		case d.Err == nil:
			n = len(d.Partitions)
		case errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		default:
			return 0, kafka.Denied(fmt.Errorf("describe target topic %s: %w", topic, d.Err), t.op, kafka.ResourceTopic, topic)
		}
	}
	if t.limits != nil && n > 0 {
		if err := t.limits.read(ctx, topic); err != nil {
			return 0, err
		}
	}
	t.parts[topic] = n
	return n, nil
}

// count is the partition count of a topic a record came from, asked once per topic; 0 when it
// does not exist or cannot be described (the original topic of a --to replay may be one the
// operator may not see): its partitions then do not match the target's.
func (t *targetCache) count(ctx context.Context, topic string) int {
	if n, ok := t.parts[topic]; ok {
		return n
	}
	if n, ok := t.origins[topic]; ok {
		return n
	}
	n := 0
	if details, err := t.c.Admin.ListTopics(ctx, topic); err == nil {
		if d, ok := details[topic]; ok && d.Err == nil {
			n = len(d.Partitions)
		}
	}
	t.origins[topic] = n
	return n
}

// place is the partition a send goes to and the rule that chose it (docs/design.md §3.3): the
// fixed one (--to-partition original); with PartitionAuto the original partition the dead
// letter names when the target has as many partitions as the topic it came from; otherwise
// where the target's partitioner puts the key (--partitioner, or inferred from the target's
// keyed records: Plan.partitioners), or -1 (RuleSpread) for a record without a key it hashes. A target that does not exist is -1 and no rule.
func (t *targetCache) place(ctx context.Context, d *decision) (int32, string, error) {
	n, err := t.lookup(ctx, d.target)
	if err != nil {
		return -1, "", err
	}
	if d.partition >= 0 {
		return d.partition, RuleOriginal, nil
	}
	if n == 0 {
		return -1, "", nil
	}
	if d.origPart >= 0 && int(d.origPart) < n && (d.origTopic == d.target || t.count(ctx, d.origTopic) == n) {
		return d.origPart, RuleOriginal, nil
	}
	if d.sendKey() == nil {
		return -1, RuleSpread, nil
	}
	ch, err := t.plan.partitioners.choose(ctx, t.c, d.target, t.plan.Spec.Partitioner)
	if err != nil {
		return -1, "", err
	}
	pt := kafka.Partitioner(ch.Partitioner)
	if p, ok := pt.KeyPartition(d.sendKey(), n); ok {
		return p, string(pt), nil
	}
	return -1, RuleSpread, nil
}

// progressEvery is how often (in records) a scan reports progress.
const progressEvery = 1024
