package inspect

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Continuity of an aggregate's event relative to the events before it.
const (
	// ContinuityOK: the first event seen, or exactly one version above the highest so far.
	ContinuityOK = "ok"
	// ContinuityGap: the version jumped by more than one; GapFrom and GapTo say from where.
	ContinuityGap = "gap"
	// ContinuityDuplicate: a version seen before, from the same event id (SamePayload says
	// whether it is a redelivery, ordinary under at-least-once, or a conflict), or from another
	// event at the highest version so far.
	ContinuityDuplicate = "duplicate"
	// ContinuityRegression: another event with a version lower than the highest seen (whether
	// or not that version was seen before), as validate's version_regression.
	ContinuityRegression = "regression"
	// ContinuityUnversioned: the event carries no aggregate version.
	ContinuityUnversioned = "unversioned"
)

// DefaultMaxAggregateEvents bounds how many events Aggregate keeps in memory.
const DefaultMaxAggregateEvents = 10000

// maxAggregateMalformed bounds how many malformed records with the aggregate's key are listed.
const maxAggregateMalformed = 50

// AggregateOptions tune Aggregate.
type AggregateOptions struct {
	// MaxEvents bounds the events kept (DefaultMaxAggregateEvents when 0); beyond it the scan
	// still counts but Truncated is set.
	MaxEvents int
	Progress  ProgressFunc
	// Schemas decodes registry-framed values before the envelope is read (docs/design.md
	// §3.6); nil detects their framing only.
	Schemas *schema.Decoder
}

// AggregateReport is what `inspect aggregate` shows.
type AggregateReport struct {
	Topic          string `json:"topic"`
	AggregateID    string `json:"aggregate_id"`
	RecordsScanned int64  `json:"records_read"`
	// Partitions are the partitions the aggregate's events were found in; more than one means
	// its records were not keyed by the aggregate id.
	Partitions []int32          `json:"partitions"`
	Events     []AggregateEvent `json:"events"`
	Counts     ContinuityCounts `json:"counts"`
	// MalformedSkipped counts every malformed record of the scan: none can be matched on its
	// aggregate id. MalformedWithKey lists those whose Kafka key is the aggregate id.
	MalformedSkipped int64             `json:"malformed_skipped"`
	MalformedWithKey []MalformedRecord `json:"malformed_with_key"`
	Truncated        bool              `json:"truncated"`
}

// ContinuityCounts counts the events of each continuity.
type ContinuityCounts struct {
	OK         int `json:"ok"`
	Gaps       int `json:"gaps"`
	Duplicates int `json:"duplicates"`
	// ConflictingDuplicates counts the duplicates that are not redeliveries: another event
	// claims the version, or the same event id comes with a different payload.
	ConflictingDuplicates int `json:"conflicting_duplicates"`
	Regressions           int `json:"regressions"`
	Unversioned           int `json:"unversioned"`
}

// Problems is the number of events that are out of order: gaps, regressions, and conflicting
// duplicates. Redeliveries of the same event are not problems.
func (c ContinuityCounts) Problems() int { return c.Gaps + c.Regressions + c.ConflictingDuplicates }

// AggregateEvent is one event of the aggregate and its continuity.
type AggregateEvent struct {
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
	EventID   string    `json:"event_id"`
	Type      string    `json:"type"`
	Version   *int64    `json:"aggregate_version"`
	Time      time.Time `json:"time,omitzero"`
	// MatchedBy is "aggregate_id" when the envelope names the aggregate, "key" when only the
	// Kafka key does (the envelope names another aggregate, or none).
	MatchedBy  string `json:"matched_by"`
	Continuity string `json:"continuity"`
	// GapFrom and GapTo are set for a gap: the highest version before, and this one.
	GapFrom *int64 `json:"gap_from,omitempty"`
	GapTo   *int64 `json:"gap_to,omitempty"`
	// SameEventID and SamePayload are set for a duplicate; both true is a redelivery.
	SameEventID *bool `json:"same_event_id,omitempty"`
	SamePayload *bool `json:"same_payload,omitempty"`
	// DuplicateOf is set for a duplicate: where the version was first seen.
	DuplicateOf *Position `json:"duplicate_of,omitempty"`
	Note        string    `json:"note,omitempty"`

	payload uint64 // payloadHash of the event, to tell a redelivery from a changed payload
}

// Aggregate scans the records sel selects (bounded by the plan) and returns the events of
// aggregate id in offset order: partition by partition, each in offset order. A record
// matches when its decoded aggregate id is id or its Kafka key is id. Malformed records are
// skipped and counted.
func Aggregate(ctx context.Context, c *kafka.Cluster, topic, id string, sel kafka.Selection, opts AggregateOptions) (*AggregateReport, error) {
	ranges, err := c.Plan(ctx, topic, sel)
	if err != nil {
		return nil, err
	}
	limit := opts.MaxEvents
	if limit <= 0 {
		limit = DefaultMaxAggregateEvents
	}
	rep := &AggregateReport{Topic: topic, AggregateID: id, Partitions: []int32{}, Events: []AggregateEvent{}, MalformedWithKey: []MalformedRecord{}}
	parts := map[int32]bool{}
	var compact bytes.Buffer // payloadHash's
	err = scan(ctx, c, ranges, opts.Progress, func(rec *kgo.Record) error {
		rep.RecordsScanned++
		keyMatch := rec.Key != nil && string(rec.Key) == id
		ev, err, fatal := opts.Schemas.ReadEvent(ctx, rec)
		if fatal != nil {
			return fatal
		}
		if err != nil {
			rep.MalformedSkipped++
			if keyMatch && len(rep.MalformedWithKey) < maxAggregateMalformed {
				rep.MalformedWithKey = append(rep.MalformedWithKey, schema.MalformedRecordOf(rec, err))
			}
			return nil
		}
		var by string
		switch {
		case ev.AggregateID == id:
			by = "aggregate_id"
		case keyMatch:
			by = "key"
		default:
			return nil
		}
		if len(rep.Events) >= limit {
			rep.Truncated = true
			return nil
		}
		parts[rec.Partition] = true
		ae := AggregateEvent{Partition: rec.Partition, Offset: rec.Offset, Timestamp: recordTime(rec),
			EventID: ev.ID, Type: ev.Type, Time: ev.Time.UTC(), MatchedBy: by, payload: payloadHash(ev, &compact)}
		if ev.HasVersion {
			v := ev.Version
			ae.Version = &v
		}
		rep.Events = append(rep.Events, ae)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p := range parts {
		rep.Partitions = append(rep.Partitions, p)
	}
	sort.Slice(rep.Partitions, func(i, j int) bool { return rep.Partitions[i] < rep.Partitions[j] })
	sort.SliceStable(rep.Events, func(i, j int) bool {
		a, b := rep.Events[i], rep.Events[j]
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Offset < b.Offset
	})
	rep.Counts = annotateContinuity(topic, rep.Events)
	return rep, nil
}

// annotateContinuity sets each event's continuity from the events before it in the slice;
// topic is theirs, for the addresses its notes give.
func annotateContinuity(topic string, events []AggregateEvent) ContinuityCounts {
	var counts ContinuityCounts
	type first struct {
		id      string
		payload uint64
		pos     Position
	}
	seen := map[int64]first{}
	var highest int64
	have := false
	for i := range events {
		e := &events[i]
		pos := Position{Partition: e.Partition, Offset: e.Offset}
		if e.Version == nil {
			e.Continuity = ContinuityUnversioned
			e.Note = "no aggregate version"
			counts.Unversioned++
			continue
		}
		v := *e.Version
		f, dup := seen[v]
		switch {
		case dup && (f.id == e.EventID || v >= highest):
			same, samePayload := f.id == e.EventID, f.payload == e.payload
			at := f.pos
			e.Continuity, e.SameEventID, e.SamePayload, e.DuplicateOf = ContinuityDuplicate, &same, &samePayload, &at
			switch {
			case same && samePayload:
				e.Note = fmt.Sprintf("version %d again: redelivery of the event at %s", v, at.In(topic))
			case same:
				e.Note = fmt.Sprintf("version %d again: same event id as at %s but a different payload", v, at.In(topic))
				counts.ConflictingDuplicates++
			default:
				e.Note = fmt.Sprintf("version %d again with a different event id (first: %s at %s)", v, f.id, at.In(topic))
				counts.ConflictingDuplicates++
			}
			counts.Duplicates++
			continue
		case dup:
			e.Continuity = ContinuityRegression
			e.Note = fmt.Sprintf("version %d after version %d (version %d was %s at %s)", v, highest, v, f.id, f.pos.In(topic))
			counts.Regressions++
			continue
		}
		seen[v] = first{id: e.EventID, payload: e.payload, pos: pos}
		switch {
		case !have || v == highest+1:
			e.Continuity = ContinuityOK
			counts.OK++
		case v > highest+1:
			from, to := highest, v
			e.Continuity, e.GapFrom, e.GapTo = ContinuityGap, &from, &to
			if to-from == 2 {
				e.Note = fmt.Sprintf("version %d missing", from+1)
			} else {
				e.Note = fmt.Sprintf("versions %d..%d missing", from+1, to-1)
			}
			counts.Gaps++
		default:
			e.Continuity = ContinuityRegression
			e.Note = fmt.Sprintf("version %d after version %d", v, highest)
			counts.Regressions++
		}
		if !have || v > highest {
			highest, have = v, true
		}
	}
	return counts
}
