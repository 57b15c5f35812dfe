package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Status says whether a dead letter still needs work. Its values are stable: they appear in
// JSON output and in --status.
//
// This is the one definition of a dead letter's status, for one consumer; StatusLookup applies
// it, and every command that selects or counts dead letters by status (dlq list and stats,
// replay --status) asks StatusLookup rather than looking at markers or the journal itself:
//
//   - unknown: the dead letter has no (usable) event id, or there is no consumer to ask;
//   - resolved: the consumer has a marker for its event, and the marker does not say it
//     ignored the event as stale;
//   - stale: the consumer has a marker for its event that says it ignored the event as stale
//     (dedup.OutcomeStale: older than what it already had, consumer.Stale): the event was
//     handled, and nothing it carried took effect. A marker table without the outcome column
//     (another library's, one not migrated) never says so: its markers mean resolved;
//   - replayed: no marker, and the replay journal sent THIS record: a journaled send at its
//     topic, partition and offset whose record is this one (same topic ID, event id and
//     timestamp, as far as both sides know them: dedupdriver.SendBatch.SentRecord), not merely a
//     record that was at those coordinates before the topic was recreated;
//   - pending: it has an event id, and neither holds.
//
// Whatever the status, StatusInfo.Replay is the latest journaled replay of the dead letter
// when there is one. Resolved and stale are settled (Status.Settled): the consumer has
// handled the event, and a replay again would change nothing.
type Status string

// The statuses of a dead letter, for one consumer.
const (
	// StatusPending: the consumer has no marker for the event and no journaled replay sent this
	// dead letter: it still needs work.
	StatusPending Status = "pending"
	// StatusResolved: the consumer has a marker for the event: it was processed since (after
	// a replay, or a redelivery). A dead-lettered event is never marked by the failure itself.
	StatusResolved Status = "resolved"
	// StatusStale: the consumer has a marker for the event that says it ignored the event as
	// stale (an older version than the one it has): handled, not applied.
	StatusStale Status = "stale"
	// StatusReplayed: a journaled replay has sent this dead letter back, and the consumer has no
	// marker yet: it is on its way, or failed again.
	StatusReplayed Status = "replayed"
	// StatusUnknown: the status cannot be told: the dead letter has no usable event id, or no
	// consumer is known to look it up for.
	StatusUnknown Status = "unknown"
)

// Statuses lists every Status in a stable order.
var Statuses = []Status{StatusPending, StatusReplayed, StatusResolved, StatusStale, StatusUnknown}

// Settled reports whether a dead letter of this status needs no replay: its consumer has
// handled the event (resolved, or ignored it as stale). A replay leaves settled dead letters
// out unless told otherwise (replay --include-replayed), and `replay --status` refuses them.
func (s Status) Settled() bool { return s == StatusResolved || s == StatusStale }

// StatusNames is "pending, replayed, resolved, stale, unknown": every Status, for messages and
// help.
func StatusNames() string {
	names := make([]string, len(Statuses))
	for i, s := range Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ParseStatuses reads --status values (each may be comma-separated). An unknown name is a
// usage error; none is nil.
func ParseStatuses(values []string) ([]Status, error) {
	var out []Status
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			st := Status(strings.TrimSpace(name))
			if st == "" {
				continue
			}
			known := false
			for _, k := range Statuses {
				known = known || k == st
			}
			if !known {
				return nil, fwerr.Usagef("--status %q: want some of %s", st, StatusNames())
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// StatusInfo is a dead letter's status and what it was told from. The zero StatusInfo (no
// Status) means the status was not looked up.
type StatusInfo struct {
	Status Status `json:"status"`
	// Consumer is the consumer whose markers were looked up.
	Consumer string `json:"consumer,omitempty"`
	// Marker is the consumer's marker when the status is resolved or stale.
	Marker *dedup.MarkerRow `json:"marker,omitempty"`
	// Replay is the latest journaled replay of the dead letter, whatever its status (nil when
	// no journaled run sent it, or the store has no journal).
	Replay *ReplayRef `json:"replay,omitempty"`
	// Why says why the status is unknown.
	Why string `json:"why,omitempty"`
}

// ReplayRef is the latest journaled replay of a dead letter: the run, when the broker
// acknowledged the copy, and where the copy was written.
type ReplayRef struct {
	RunID           string    `json:"run_id"`
	At              time.Time `json:"at"`
	TargetTopic     string    `json:"target_topic"`
	TargetPartition int32     `json:"target_partition"`
	TargetOffset    int64     `json:"target_offset"`
}

// StatusLookup tells dead letters' statuses from the dedup store.
type StatusLookup struct {
	Store *dedup.Store
	// Consumer is the consumer whose markers count. "" means each dead letter's own group
	// (fw.dlq.group, Spring's consumer group): fieldwork's consumer names its markers after its
	// group unless told otherwise.
	Consumer string
	// TopicID, when set, tells the Kafka topic ID a dead-letter topic has now
	// (kafka.Cluster.TopicID). A send journaled by a run that read the topic under another ID
	// sent a record of the topic before it was deleted and recreated: it does not make a dead
	// letter of today's topic replayed. Without it the dead letter's own event id and
	// timestamp still tell it apart from the record the journal sent, unless both are the same
	// (a sandbox seeded again at the same time). It is asked once per topic and Resolve, and
	// once per topic by a StatusBatcher; a topic it says does not exist has no ID to compare.
	TopicID func(ctx context.Context, topic string) (string, error)
	// NoJournal, when set, is called (once per Resolve at most) when the store has no replay
	// journal (a marker table not migrated by fieldwork 002, or someone else's table): no dead
	// letter can then be told replayed, and the ones a replay sent show as pending.
	NoJournal func(error)
	// ReplayedOnly leaves out the dead letters no journaled run sent: only those an earlier
	// run sent get a status (and their Replay), the others' StatusInfo is zero. One who asks
	// which dead letters were replayed, and how they stand, is spared the marker lookups of
	// all the others (a replay that does not select by status).
	ReplayedOnly bool
}

// Enabled reports whether there is a store to look statuses up in.
func (l StatusLookup) Enabled() bool { return l.Store != nil }

// Resolve returns the status of each of ds, in order, with one marker lookup per consumer.
// Without a store every StatusInfo is zero. A store error is returned as it is.
func (l StatusLookup) Resolve(ctx context.Context, ds []DeadLetter) ([]StatusInfo, error) {
	if l.ReplayedOnly && l.Store != nil {
		return l.resolveReplayed(ctx, ds, map[string]string{})
	}
	return l.resolve(ctx, ds, map[string]string{}, nil)
}

// resolveReplayed is Resolve with ReplayedOnly: the journal is asked first, and only the dead
// letters it holds a send of are resolved in full.
func (l StatusLookup) resolveReplayed(ctx context.Context, ds []DeadLetter, ids map[string]string) ([]StatusInfo, error) {
	out := make([]StatusInfo, len(ds))
	recs := map[string][]dedup.SourceRecord{} // dead-letter topic → its dead letters
	for _, d := range ds {
		recs[d.Topic] = append(recs[d.Topic], dedup.SourceRecord{SourceRef: sourceRef(d), EventID: d.EventID, Timestamp: d.Timestamp})
	}
	replayed, err := l.replays(ctx, recs, ids)
	if errors.Is(err, dedup.ErrNotMigrated) || err == nil && len(replayed) == 0 {
		return out, nil // no journal, or none of them sent
	}
	if err != nil {
		return nil, err
	}
	var (
		sent []DeadLetter
		at   []int
	)
	for i, d := range ds {
		if _, ok := replayed[sourceRef(d)]; ok {
			sent, at = append(sent, d), append(at, i)
		}
	}
	infos, err := l.resolve(ctx, sent, ids, replayed)
	if err != nil {
		return nil, err
	}
	for k, info := range infos {
		out[at[k]] = info
	}
	return out, nil
}

// topicID is the ID of topic now, from ids when it was asked before ("" when unknown).
func (l StatusLookup) topicID(ctx context.Context, topic string, ids map[string]string) (string, error) {
	if l.TopicID == nil {
		return "", nil
	}
	if id, ok := ids[topic]; ok {
		return id, nil
	}
	id, err := l.TopicID(ctx, topic)
	if errors.Is(err, kafka.ErrUnknownTopic) {
		id, err = "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the topic ID of %s, which tells its dead letters from records the journal sent before it was recreated: %w", topic, err)
	}
	ids[topic] = id
	return id, nil
}

// resolve is Resolve with the topic IDs known so far (it adds those it asks for) and, when not
// nil, the journal's replays of ds already looked up (resolveReplayed), which it does not ask again.
func (l StatusLookup) resolve(ctx context.Context, ds []DeadLetter, ids map[string]string, replayed map[dedup.SourceRef]dedup.ReplayRef) ([]StatusInfo, error) {
	out := make([]StatusInfo, len(ds))
	if l.Store == nil {
		return out, nil
	}
	byConsumer, noID := l.classify(ds, out)
	if err := l.markers(ctx, ds, byConsumer, out); err != nil {
		return nil, err
	}
	if replayed == nil {
		var err error
		if replayed, err = l.journaled(ctx, ds, noID, ids, out); err != nil {
			return nil, err
		}
	}
	for i, d := range ds {
		r, ok := replayed[sourceRef(d)]
		if !ok || d.EventID == "" {
			continue
		}
		out[i].Replay = replayRefOf(r)
		if out[i].Status == StatusPending {
			out[i].Status = StatusReplayed
		}
	}
	if err := l.resolveWithoutID(ctx, ds, noID, replayed, out); err != nil {
		return nil, err
	}
	return out, nil
}

// sourceRef is where the dead letter d is.
func sourceRef(d DeadLetter) dedup.SourceRef {
	return dedup.SourceRef{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset}
}

// classify sets each dead letter's consumer in out, and the status unknown where the store
// cannot be asked (no event id, no consumer, one the store cannot hold). It returns the event
// ids to look up per consumer, and the dead letters without an event id: a replay may have
// sent them, perhaps as an edited copy with one.
func (l StatusLookup) classify(ds []DeadLetter, out []StatusInfo) (byConsumer map[string][]string, noID []int) {
	byConsumer = map[string][]string{}
	for i, d := range ds {
		consumer := l.Consumer
		if consumer == "" {
			consumer = d.Group
		}
		out[i].Consumer = consumer
		switch {
		case d.EventID == "":
			out[i].Status, out[i].Why = StatusUnknown, "no event id"
			noID = append(noID, i)
		case consumer == "":
			out[i].Status, out[i].Why = StatusUnknown, "no consumer group in the dead letter: pass --consumer"
		case dedup.ValidateEventID(d.EventID) != nil:
			out[i].Status, out[i].Why = StatusUnknown, fmt.Sprintf("event id unusable: %v", dedup.ValidateEventID(d.EventID))
		case dedup.ValidateConsumer(consumer) != nil:
			out[i].Status, out[i].Why = StatusUnknown, fmt.Sprintf("consumer unusable: %v", dedup.ValidateConsumer(consumer))
		default:
			byConsumer[consumer] = append(byConsumer[consumer], d.EventID)
		}
	}
	return byConsumer, noID
}

// markers looks the event ids up in the store, per consumer, and sets the status of every dead
// letter classify left open: its marker's, else pending.
func (l StatusLookup) markers(ctx context.Context, ds []DeadLetter, byConsumer map[string][]string, out []StatusInfo) error {
	found := make(map[string]map[string]dedup.MarkerRow, len(byConsumer))
	stale := make(map[string]map[string]string, len(byConsumer)) // consumer → event id → outcome
	for consumer, ids := range byConsumer {
		m, err := l.Store.Lookup(ctx, consumer, ids)
		if err != nil {
			return err
		}
		found[consumer] = m
		if stale[consumer], err = l.outcomes(ctx, consumer, m); err != nil {
			return err
		}
	}
	for i, d := range ds {
		if d.EventID == "" || out[i].Status != "" {
			continue
		}
		if row, ok := found[out[i].Consumer][d.EventID]; ok {
			out[i].Status, out[i].Marker = markedStatus(stale[out[i].Consumer][d.EventID]), &row
			continue
		}
		out[i].Status = StatusPending
	}
	return nil
}

// journaled finds the replays the journal holds of the dead letters: of those with an event id,
// and of those without one (noID), sent as they were or as an edited copy. Without a
// journal none is replayed; NoJournal is told when a pending dead letter may have been.
func (l StatusLookup) journaled(ctx context.Context, ds []DeadLetter, noID []int, ids map[string]string, out []StatusInfo) (map[dedup.SourceRef]dedup.ReplayRef, error) {
	journaled := map[string][]dedup.SourceRecord{} // dead-letter topic → dead letters with an event id
	pending := false
	for i, d := range ds {
		if d.EventID == "" {
			continue
		}
		journaled[d.Topic] = append(journaled[d.Topic], dedup.SourceRecord{SourceRef: sourceRef(d), EventID: d.EventID, Timestamp: d.Timestamp})
		pending = pending || out[i].Status == StatusPending
	}
	replayed, err := l.replays(ctx, journaled, ids)
	if errors.Is(err, dedup.ErrNotMigrated) {
		// Without a journal no dead letter can be told replayed: say so when one may be.
		if pending && l.NoJournal != nil {
			l.NoJournal(err)
		}
		replayed, err = map[dedup.SourceRef]dedup.ReplayRef{}, nil
	}
	if err != nil {
		return nil, err
	}
	if len(noID) > 0 {
		// Their status is unknown without a journal anyway: no warning about it for them.
		edits := map[string][]dedup.SourceRecord{}
		for _, i := range noID {
			d := ds[i]
			edits[d.Topic] = append(edits[d.Topic], dedup.SourceRecord{SourceRef: sourceRef(d), Timestamp: d.Timestamp})
		}
		m, err := l.replays(ctx, edits, ids)
		if err != nil && !errors.Is(err, dedup.ErrNotMigrated) {
			return nil, err
		}
		maps.Copy(replayed, m)
	}
	return replayed, nil
}

// outcomes are the outcomes consumer's markers in m record, by event id (dedup.Store.Outcomes):
// none on a table that records none.
func (l StatusLookup) outcomes(ctx context.Context, consumer string, m map[string]dedup.MarkerRow) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	return l.Store.Outcomes(ctx, consumer, ids)
}

// markedStatus is the status of a dead letter whose consumer has a marker with outcome.
func markedStatus(outcome string) Status {
	if outcome == dedup.OutcomeStale {
		return StatusStale
	}
	return StatusResolved
}

// replays looks up the journaled replays of the records per dead-letter topic; an error
// matching dedup.ErrNotMigrated means the store has no journal.
func (l StatusLookup) replays(ctx context.Context, byTopic map[string][]dedup.SourceRecord, ids map[string]string) (map[dedup.SourceRef]dedup.ReplayRef, error) {
	var replayed map[dedup.SourceRef]dedup.ReplayRef
	for topic, recs := range byTopic {
		id, err := l.topicID(ctx, topic, ids)
		if err != nil {
			return nil, err
		}
		for i := range recs {
			recs[i].TopicID = id
		}
		m, err := l.Store.ReplayedSources(ctx, topic, recs)
		if err != nil {
			// dedup.ErrNotMigrated: the store has no journal (the caller decides what to say).
			return nil, err
		}
		if replayed == nil {
			replayed = m // one topic, as the dead letters mostly are: its map is the answer
			continue
		}
		maps.Copy(replayed, m)
	}
	if replayed == nil {
		replayed = map[dedup.SourceRef]dedup.ReplayRef{}
	}
	return replayed, nil
}

func replayRefOf(r dedup.ReplayRef) *ReplayRef {
	return &ReplayRef{RunID: r.RunID, At: r.At, TargetTopic: r.TargetTopic, TargetPartition: r.TargetPartition, TargetOffset: r.TargetOffset}
}

// resolveWithoutID sets the latest replay of each dead letter without an event id (noID, indexes
// of ds) that a replay sent: its status stays unknown, unless the replay sent an edited copy
// with an event id. The copy is then the event, so the consumer's marker for its id resolves
// the dead letter, and without it the dead letter is replayed (docs/design.md §3.2). The
// copy's id is the edit's, journaled with the run's selection.
func (l StatusLookup) resolveWithoutID(ctx context.Context, ds []DeadLetter, noID []int, replayed map[dedup.SourceRef]dedup.ReplayRef, out []StatusInfo) error {
	edited := map[string]string{} // run id → the event id of its edited copy ("": none)
	for _, i := range noID {
		d := ds[i]
		r, ok := replayed[sourceRef(d)]
		if !ok {
			continue
		}
		out[i].Replay = replayRefOf(r)
		if c := out[i].Consumer; c == "" || dedup.ValidateConsumer(c) != nil {
			continue
		}
		id, known := edited[r.RunID]
		if !known {
			run, _, err := l.Store.ReplayRun(ctx, r.RunID)
			if err != nil {
				return err
			}
			id = EditedEventID(string(run.Selection))
			edited[r.RunID] = id
		}
		if id == "" || dedup.ValidateEventID(id) != nil {
			continue
		}
		m, err := l.Store.Lookup(ctx, out[i].Consumer, []string{id})
		if err != nil {
			return err
		}
		outcomes, err := l.outcomes(ctx, out[i].Consumer, m)
		if err != nil {
			return err
		}
		out[i].Why = ""
		if row, ok := m[id]; ok {
			out[i].Status, out[i].Marker = markedStatus(outcomes[id]), &row
		} else {
			out[i].Status = StatusReplayed
		}
	}
	return nil
}

// EditedEventID is the event id of the edited copy a replay run sent, as its journaled
// selection holds it ({"edit":{"event_id":…}}, docs/design.md §3.3); "" when the run edited
// nothing or the copy had no event id.
func EditedEventID(selection string) string {
	var sel struct {
		Edit *struct {
			EventID string `json:"event_id"`
		} `json:"edit"`
	}
	if json.Unmarshal([]byte(selection), &sel) != nil || sel.Edit == nil {
		return ""
	}
	return sel.Edit.EventID
}

// DefaultStatusBatch is how many dead letters a StatusBatcher looks up together. Each batch
// costs a few round trips (the markers, their outcomes, the journal's spans and batches),
// made while the read waits: at 500, a listing of 1,000,000 dead letters with statuses took
// 7.1–8.0 s and 2.3–2.6 s of PostgreSQL's CPU; at 2,000, 6.4–6.6 s and 1.5 s, the same peak RSS
// (107–112 MiB, gcpace.StatusFloor).
const DefaultStatusBatch = 2000

// StatusBatcher looks statuses up while a scan streams: it holds up to a batch of dead
// letters, resolves them with one lookup per consumer, and hands each to emit with its
// status, in the order they came. Memory is bounded by the batch.
type StatusBatcher struct {
	lookup  StatusLookup
	size    int
	emit    func(DeadLetter, StatusInfo) error
	pending []DeadLetter
	ids     map[string]string // topic IDs asked for so far
}

// NewStatusBatcher returns a batcher of size dead letters (DefaultStatusBatch when size <=
// 0). Without a store in lookup, Add hands every dead letter to emit at once, with a zero
// StatusInfo.
func NewStatusBatcher(lookup StatusLookup, size int, emit func(DeadLetter, StatusInfo) error) *StatusBatcher {
	if size <= 0 {
		size = DefaultStatusBatch
	}
	return &StatusBatcher{lookup: lookup, size: size, emit: emit, ids: map[string]string{}}
}

// Add queues d, and resolves and emits the batch when it is full. An error from emit
// (ErrStop included) is returned as it is; the dead letters after it in the batch are
// dropped.
func (b *StatusBatcher) Add(ctx context.Context, d DeadLetter) error {
	if !b.lookup.Enabled() {
		return b.emit(d, StatusInfo{})
	}
	b.pending = append(b.pending, d)
	if len(b.pending) >= b.size {
		return b.Flush(ctx)
	}
	return nil
}

// Flush resolves and emits what is queued.
func (b *StatusBatcher) Flush(ctx context.Context) error {
	if len(b.pending) == 0 {
		return nil
	}
	batch := b.pending
	b.pending = b.pending[:0:0]
	infos, err := b.lookup.resolve(ctx, batch, b.ids, nil)
	if err != nil {
		return err
	}
	for i, d := range batch {
		if err := b.emit(d, infos[i]); err != nil {
			return err
		}
	}
	return nil
}
