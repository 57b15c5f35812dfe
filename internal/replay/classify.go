package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Outcome is what a replay does with one record it reads.
type Outcome int

const (
	// OutcomeFiltered: not selected (a filter, --status, --event-id).
	OutcomeFiltered Outcome = iota
	// OutcomeSend: selected and sent.
	OutcomeSend
	// OutcomeQuarantined: selected, but its fw.replay.count reached --max-replays.
	OutcomeQuarantined
	// OutcomeSkipped: selected, but the consumer of --skip-processed has handled its event.
	OutcomeSkipped
	// OutcomeAlreadySent: a resumed run's record that the interrupted run sent and journaled.
	OutcomeAlreadySent
	// OutcomeProblem: selected, but it cannot be routed (not a dead letter without --to, its
	// original topic is the one being read, no original partition with --to-partition
	// original). A plan with problems is refused.
	OutcomeProblem
	// OutcomeIncomplete: selected, but a bounded copy (dlq.DeadLetter.ValueOmitted): the
	// consumer could not write the whole dead letter, so its value is cut or empty. It is
	// never sent (the dead-letter headers are stripped on the way out, so the cut value would
	// arrive as the event itself); counted and listed, and an executed run then exits 3, as
	// for quarantine.
	OutcomeIncomplete
	// OutcomeAlreadyReplayed: selected, but an earlier journaled run sent this very dead
	// letter and its status is settled (dlq.Status.Settled: resolved, or stale): the consumer
	// has handled the event, and sending it again would change nothing for fieldwork's
	// consumer and apply it twice for one that does not deduplicate. Left out (counted, never
	// sent) unless Spec.IncludeReplayed.
	OutcomeAlreadyReplayed
)

func (o Outcome) String() string {
	return [...]string{"filtered", "send", "quarantined", "skipped", "already-sent", "problem", "incomplete", "already-replayed"}[o]
}

// decision is a record and what to do with it.
type decision struct {
	rec     *kgo.Record
	eventID string
	// group is the consumer group the dead letter names ("" when none).
	group   string
	count   int // fw.replay.count as read
	reason  string
	errMsg  string
	outcome Outcome
	// target and partition (-1: placed by targetCache.place) for OutcomeSend; rule says why
	// that partition (Rule*, or the partitioner's name) once placed.
	target    string
	partition int32
	rule      string
	// origTopic and origPart are the original topic and partition the dead-letter headers
	// name (origPart -1: none), which PartitionAuto keeps when the target's partitions allow.
	origTopic string
	origPart  int32
	problem   string
	// omitted and valueBytes are a bounded copy's dlq.DeadLetter.ValueOmitted and ValueBytes.
	omitted    string
	valueBytes int64
	// key is the original key when the dead letter's convention moved it out of the record's
	// own key (keySet: dlq.DeadLetter.HasOriginalKey); the replay sends it instead.
	key    []byte
	keySet bool
	// original is the original record read from its coordinates, for a dead letter that holds
	// only them (dlq.DeadLetter.CoordinatesOnly): the replay sends its key, value and headers.
	// gone says why it could not be read (the record is gone: the dead letter is incomplete).
	original *kgo.Record
	gone     string
	// status is the dead letter's status (dlq.StatusLookup) and replay the latest journaled
	// run that sent it (nil: none, or no store), for the records a run has not sent itself.
	status dlq.Status
	replay *dlq.ReplayRef
}

// sendKey is the key the replay sends: the original record's key for a dead letter that
// holds only coordinates, the original key a convention moved out of the dead letter's own
// key, else the dead letter's key.
func (d *decision) sendKey() []byte {
	switch {
	case d.original != nil:
		return d.original.Key
	case d.keySet:
		return d.key
	}
	return d.rec.Key
}

// sendSource is the record whose value and headers the replay sends, as read from where the
// dead letter is (fw.replay.source names it): the dead letter, or for one that holds only
// coordinates, the original record's key, value and headers.
func (d *decision) sendSource() *kgo.Record {
	if d.original == nil {
		return d.rec
	}
	src := *d.rec
	src.Key, src.Value, src.Headers = d.original.Key, d.original.Value, d.original.Headers
	return &src
}

// classifier decides the outcome of records, in batches so that marker and journal lookups
// take a query or two per batch.
type classifier struct {
	spec   *Spec
	filter dlq.Filter
	store  *dedup.Store
	// sent are the source records a resumed run must not send again.
	sent map[dedup.SourceRef]bool
	// parser reads the dead letters; the headers stay in the record (no copy) and the failure
	// times are never used here.
	parser *dlq.Parser
	// statuses tells the status of the selected dead letters, and which earlier run sent
	// each: dlq's rule, the one `dlq list --status` applies, asked with the plan's source
	// topic ID. Spec.Statuses selects by it; a settled dead letter an earlier run sent is left
	// out (OutcomeAlreadyReplayed). Without a store nothing is looked up.
	statuses dlq.StatusLookup
	// spans are, per topic read, the offsets earlier runs sent from (replayedSpans): a dead
	// letter outside them was never replayed, and its status is not looked up unless the
	// spec selects by status. nil: every selected dead letter's status is looked up.
	spans map[string]map[int32]dedup.OffsetSpan
	// cluster reads the original records of the dead letters that hold only coordinates.
	cluster *kafka.Cluster
	// out is reused from batch to batch: the decisions of a batch are handled before the next
	// one is classified; so are dls and at, the dead letters whose status is looked up and the
	// index of their decision, and parsed, the batch's dead letters.
	out    []decision
	dls    []dlq.DeadLetter
	at     []int
	parsed []dlq.DeadLetter
}

// newClassifier classifies the records of p (st is needed when p's spec looks statuses or
// markers up; spans, from replayedSpans, spare the lookups of dead letters never replayed).
func newClassifier(cl *kafka.Cluster, p *Plan, st *dedup.Store, spans map[string]map[int32]dedup.OffsetSpan) *classifier {
	c := &classifier{spec: &p.Spec, filter: p.Spec.filter(), store: st, cluster: cl, spans: spans,
		parser: dlq.NewParser(dlq.ParseOptions{NoHeaders: true, NoTimes: true})}
	if p.Resume != nil {
		c.sent = p.Resume.Sent
	}
	from, topicID := p.Spec.From, p.SourceTopicID
	// Without a selection by status only the dead letters an earlier run sent need theirs.
	c.statuses = dlq.StatusLookup{Store: st, Consumer: p.Spec.StatusConsumer, ReplayedOnly: len(p.Spec.Statuses) == 0,
		TopicID: func(_ context.Context, topic string) (string, error) {
			if topic != from {
				return "", nil
			}
			return topicID, nil
		}}
	return c
}

// classify decides every record of batch, in order. The decisions are valid until the next
// call.
func (c *classifier) classify(ctx context.Context, batch []*kgo.Record) ([]decision, error) {
	if cap(c.out) < len(batch) {
		c.out = make([]decision, len(batch))
	}
	out := c.out[:len(batch)]
	clear(out)
	c.dls, c.at = c.dls[:0], c.at[:0]
	c.parsed = slices.Grow(c.parsed[:0], len(batch))[:len(batch)]
	for i, r := range batch {
		// Parsed in place: a dead letter is some 500 bytes, never copied.
		dl := &c.parsed[i]
		c.parser.ParseInto(r, dl)
		if c.filter.SchemaID != 0 {
			dl.DecodePayloads(ctx, nil, r, true) // the framing names the id: no registry needed
		}
		d := &out[i]
		d.rec, d.eventID, d.count, d.reason, d.errMsg, d.group = r, dl.EventID, dl.ReplayCount, dl.Reason, dl.ErrorMessage, dl.Group
		d.omitted, d.valueBytes = dl.ValueOmitted, dl.ValueBytes
		d.key, d.keySet = dl.OriginalKey, dl.HasOriginalKey
		if !c.filter.Match(dl) || c.spec.addresses != nil && !c.spec.addresses[sourceRef(r)] && !c.spec.eventIDs[dl.EventID] {
			d.outcome = OutcomeFiltered
			continue
		}
		d.outcome = OutcomeSend
		c.route(d, dl)
	}
	if err := c.originals(ctx, out); err != nil {
		return nil, err
	}
	processed, err := c.lookUp(ctx, out)
	if err != nil {
		return nil, err
	}
	c.decide(out, processed)
	return out, nil
}

// lookUp looks up, for the selected records of out, their statuses (those not selected by
// Spec.Statuses are filtered out) and, with --skip-processed, the markers of their events.
func (c *classifier) lookUp(ctx context.Context, out []decision) (map[string]dedup.MarkerRow, error) {
	var ids []string
	for i := range out {
		d := &out[i]
		if d.outcome == OutcomeFiltered {
			continue
		}
		if c.statuses.Enabled() && !c.sent[sourceRef(d.rec)] && c.mayBeReplayed(d.rec) {
			c.dls, c.at = append(c.dls, c.parsed[i]), append(c.at, i)
		}
		if d.eventID != "" && c.spec.SkipProcessedFor != "" {
			ids = append(ids, d.eventID)
		}
	}
	if len(c.dls) > 0 {
		infos, err := c.statuses.Resolve(ctx, c.dls)
		if err != nil {
			return nil, err
		}
		for k, info := range infos {
			d := &out[c.at[k]]
			if len(c.spec.Statuses) > 0 && !slices.Contains(c.spec.Statuses, info.Status) {
				d.outcome = OutcomeFiltered
				continue
			}
			d.status, d.replay = info.Status, info.Replay
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return c.store.Lookup(ctx, c.spec.SkipProcessedFor, ids)
}

// mayBeReplayed reports whether an earlier run may have sent r: it is within the offsets one
// sent from in its partition, or the spans are not known.
func (c *classifier) mayBeReplayed(r *kgo.Record) bool {
	if c.spans == nil {
		return true
	}
	s, ok := c.spans[r.Topic][r.Partition]
	return ok && s.Holds(r.Offset)
}

// replayedSpans reads, once before a pass over p's ranges, the offsets earlier runs sent from
// in each topic read (dedup.Store.ReplayedSpans): nil when every selected dead letter's status
// is needed (the spec selects by status) or there is no store; none at all without a journal.
func replayedSpans(ctx context.Context, st *dedup.Store, p *Plan) (map[string]map[int32]dedup.OffsetSpan, error) {
	if st == nil || len(p.Spec.Statuses) > 0 {
		return nil, nil
	}
	out := map[string]map[int32]dedup.OffsetSpan{}
	for _, r := range p.Ranges {
		if _, ok := out[r.Topic]; ok {
			continue
		}
		spans, err := st.ReplayedSpans(ctx, r.Topic)
		if errors.Is(err, dedup.ErrNotMigrated) {
			spans, err = nil, nil // no journal: nothing was replayed that can be told
		}
		if err != nil {
			return nil, err
		}
		out[r.Topic] = spans
	}
	return out, nil
}

// decide settles the outcome of each selected record of out, in order of precedence.
func (c *classifier) decide(out []decision, processed map[string]dedup.MarkerRow) {
	for i := range out {
		d := &out[i]
		if d.outcome == OutcomeFiltered {
			continue
		}
		switch {
		case c.sent[sourceRef(d.rec)]:
			d.outcome = OutcomeAlreadySent
		case d.replay != nil && d.status.Settled() && !c.spec.IncludeReplayed:
			d.outcome = OutcomeAlreadyReplayed
		case d.eventID != "" && processed != nil && hasKey(processed, d.eventID):
			d.outcome = OutcomeSkipped
		case d.omitted != "" || d.gone != "":
			// Before the loop guard: no --max-replays makes a cut value whole, or brings a
			// record back.
			d.outcome = OutcomeIncomplete
		case d.count >= c.spec.MaxReplays:
			d.outcome = OutcomeQuarantined
		case d.problem != "":
			d.outcome = OutcomeProblem
		}
	}
}

// originals reads, for the selected dead letters of the batch that hold only coordinates
// (dlq.DeadLetter.CoordinatesOnly), their original records (dlq.Originals, one read for the
// batch), which the replay sends byte for byte: the event id and fw.replay.count are then the
// original's. One whose original is gone is refused (decision.gone, OutcomeIncomplete), with
// the reason dlq's rule gives: expired, compacted, recreated, deleted.
func (c *classifier) originals(ctx context.Context, out []decision) error {
	var (
		want []dlq.DeadLetter
		at   []int
	)
	for i := range out {
		if out[i].outcome != OutcomeFiltered && c.parsed[i].CoordinatesOnly() && !c.sent[sourceRef(out[i].rec)] {
			want, at = append(want, c.parsed[i]), append(at, i)
		}
	}
	if len(want) == 0 {
		return nil
	}
	os, err := dlq.Originals(ctx, c.cluster, want)
	if err != nil {
		return fmt.Errorf("read the original records of dead letters that hold only coordinates: %w", err)
	}
	for k, o := range os {
		d := &out[at[k]]
		if !o.Found() {
			d.gone = fmt.Sprintf("the dead letter holds only coordinates and the original record is gone: %s: %s", o.State, o.Detail)
			continue
		}
		orig := dlq.ParseWith(o.Record, dlq.ParseOptions{NoHeaders: true, NoTimes: true})
		d.original, d.eventID, d.count = o.Record, orig.EventID, orig.ReplayCount
		c.parsed[at[k]].EventID = orig.EventID
	}
	return nil
}

func hasKey(m map[string]dedup.MarkerRow, k string) bool { _, ok := m[k]; return ok }

// sourceRef is where r was read.
func sourceRef(r *kgo.Record) dedup.SourceRef {
	return dedup.SourceRef{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
}

// route sets the target of a selected record, or a problem.
func (c *classifier) route(d *decision, dl *dlq.DeadLetter) {
	r := d.rec
	d.partition = -1
	origTopic, origPart, isDL := dl.Route()
	d.origTopic, d.origPart = origTopic, -1
	if isDL && c.spec.ToPartition == PartitionAuto {
		d.origPart = origPart
	}
	if c.spec.To != "" {
		d.target = c.spec.To
		if c.spec.ToPartition == PartitionOriginal {
			switch {
			case isDL && origPart >= 0:
				d.partition = origPart
			case isDL:
				d.problem = fmt.Sprintf("%s: its dead-letter headers (%s) name no original partition, which --to-partition original needs", addr(r), dl.Convention)
			default:
				d.partition = r.Partition
			}
		}
		return
	}
	if !isDL {
		d.problem = fmt.Sprintf("%s is not a dead letter: no dead-letter header names its original topic; pass --to TOPIC to choose where it goes", addr(r))
		return
	}
	if origTopic == r.Topic {
		d.problem = fmt.Sprintf("%s: its original topic %s is the topic being read; refusing to write into it", addr(r), origTopic)
		return
	}
	d.target = origTopic
	if c.spec.ToPartition == PartitionOriginal {
		if origPart < 0 {
			d.problem = fmt.Sprintf("%s: its dead-letter headers (%s) name no original partition, which --to-partition original needs", addr(r), dl.Convention)
			return
		}
		d.partition = origPart
	}
}

// addr is a record's position as fieldwork writes it: topic/partition/offset.
func addr(r *kgo.Record) string { return kafka.AddressOf(r).String() }
