package processed

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// Defaults of Check.
const (
	// DefaultLookupBatch is how many records are held before their ids are looked up in one
	// query: memory stays bounded by it, whatever the size of the range.
	DefaultLookupBatch = 1000
	// DefaultMaxMissing is how many missing records a report lists.
	DefaultMaxMissing = 100
	// MaxMalformedExamples bounds the malformed records a report lists (all are counted).
	MaxMalformedExamples = 20
	// DefaultMaxMalformedShare is the largest share of a range's records that may be malformed
	// for the check to speak for the topic (CheckReport.Unreadable): more than half unreadable,
	// and "missing 0" would say nothing about most of it.
	DefaultMaxMalformedShare = 0.5
	// NoMalformed as CheckOptions.MaxMalformedShare accepts no malformed record at all.
	NoMalformed = -1.0
	// maxMalformedReasons bounds the distinct reasons counted for the dominant one: reasons
	// first met after that many others are counted in Malformed only.
	maxMalformedReasons = 1000
)

// CheckOptions configure Check.
type CheckOptions struct {
	// Topic and Consumer say whose records and whose markers; both are required.
	Topic    string
	Consumer string
	// Selection chooses the records (partitions, offsets or times; all by default).
	Selection kafka.Selection
	// MaxMissing is how many missing records the report lists (0: none; all are counted).
	// Ignored when OnMissing is set.
	MaxMissing int
	// OnMissing, when set, receives every missing record as it is found, in the order of the
	// read, and the report lists none: for a command that streams them (jsonl, csv).
	OnMissing func(MissingRecord) error
	// AfterBatch, when set, is called after each batch of lookups (to flush a stream).
	AfterBatch func() error
	// Progress, when set, is called after each record with the records read and the
	// offsets planned.
	Progress func(done, total int64)
	// LookupBatch is the ids per lookup (DefaultLookupBatch when 0).
	LookupBatch int
	// MaxMalformedShare is the largest share (0 to 1) of the records read that may be
	// malformed; more, or no event at all among records, makes the report Unreadable. 0 is
	// DefaultMaxMalformedShare; NoMalformed (any negative value) accepts none.
	MaxMalformedShare float64
	// Schemas decodes registry-framed values before their envelope is read, as every reader
	// that judges records does (schema.Decoder.ReadEvent); nil detects framing only, so a
	// framed value is malformed, naming its schema id.
	Schemas *schema.Decoder
}

// MissingRecord is one record whose event has no marker.
type MissingRecord struct {
	Topic       string    `json:"topic"`
	Partition   int32     `json:"partition"`
	Offset      int64     `json:"offset"`
	Timestamp   time.Time `json:"timestamp"`
	EventID     string    `json:"event_id"`
	Type        string    `json:"type,omitempty"`
	AggregateID string    `json:"aggregate_id,omitempty"`
}

// Address is where the record is: topic/partition/offset.
func (r MissingRecord) Address() kafka.RecordAddress {
	return kafka.RecordAddress{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
}

// MalformedRecord is a record without a recognisable event (schema.MalformedRecord, as
// inspect gives it).
type MalformedRecord = schema.MalformedRecord

// CheckReport is what `processed check` prints.
type CheckReport struct {
	Topic      string                 `json:"topic"`
	Consumer   string                 `json:"consumer"`
	Table      string                 `json:"table"`
	Ranges     []kafka.PartitionRange `json:"ranges"`
	Records    int64                  `json:"records_read"`
	Events     int64                  `json:"events"`
	WithMarker int64                  `json:"with_marker"`
	Missing    int64                  `json:"missing"`
	// Malformed counts the records with no recognisable event: a consumer dead-letters them
	// and never marks them, so they are not missing.
	Malformed int64 `json:"malformed"`
	// MissingRecords are the first MaxMissing missing records by partition and offset (whatever
	// order the partitions' reads interleave in), in that order; empty when streamed.
	MissingRecords   []MissingRecord `json:"missing_records"`
	MissingTruncated bool            `json:"missing_truncated"`
	// MalformedExamples are the first MaxMalformedExamples malformed records by partition and
	// offset (whatever order the partitions' reads interleave in), in that order.
	MalformedExamples []MalformedRecord `json:"malformed_examples"`
	// MaxMalformedShare is the share of malformed records the check accepted (0 to 1).
	MaxMalformedShare float64 `json:"max_malformed_share"`
	// DominantMalformed is the most common reason among the malformed records, with how many
	// records gave it; nil when none is malformed.
	DominantMalformed *MalformedReason `json:"dominant_malformed"`
	// Unreadable: the check cannot speak for the range (Unreadable).
	Unreadable bool `json:"unreadable"`

	reasons map[malformedKey]int64
}

// MalformedReason is one reason records are malformed and how many gave it.
type MalformedReason struct {
	Format  string `json:"format,omitempty"`
	Field   string `json:"field,omitempty"`
	Reason  string `json:"problem"`
	Records int64  `json:"records"`
}

// Text is the reason on one line: the reason, then the field and format it is about.
func (m MalformedReason) Text() string {
	var about []string
	if m.Field != "" {
		about = append(about, "field "+m.Field)
	}
	if m.Format != "" {
		about = append(about, "format "+m.Format)
	}
	if len(about) == 0 {
		return m.Reason
	}
	return m.Reason + " (" + strings.Join(about, ", ") + ")"
}

type malformedKey struct{ format, field, reason string }

// unreadable is the one rule of a range the check cannot speak for: it has records, and none
// of them, or more than share of them, could be read as an event.
func unreadable(records, events, malformed int64, share float64) bool {
	return records > 0 && (events == 0 || float64(malformed) > share*float64(records))
}

// Result is the check's verdict as an error: a check error (exit 3) when the range is
// unreadable (naming the dominant reason) or when events have no marker (naming how many),
// nil when neither.
func (r *CheckReport) Result() error {
	var unread string
	if r.Unreadable {
		if r.Events == 0 {
			unread = fmt.Sprintf("no record of %s could be read as an event (%s)", r.Topic, wording.Plural(r.Malformed, "malformed record"))
		} else {
			unread = fmt.Sprintf("%d of %d records of %s could not be read as events, more than --max-malformed-share %s allows",
				r.Malformed, r.Records, r.Topic, strconv.FormatFloat(r.MaxMalformedShare, 'f', -1, 64))
		}
		if d := r.DominantMalformed; d != nil {
			unread += fmt.Sprintf("; most common reason (%s): %s", wording.Plural(d.Records, "record"), d.Text())
		}
	}
	switch {
	case unread != "" && r.Missing > 0:
		return fwerr.Checkf("%s; and %d of %d events have no marker for consumer %s", unread, r.Missing, r.Events, r.Consumer)
	case unread != "":
		return fwerr.Checkf("%s", unread)
	case r.Missing > 0:
		return fwerr.Checkf("%d of %d events in %s have no marker for consumer %s", r.Missing, r.Events, r.Topic, r.Consumer)
	}
	return nil
}

// Summary is the result on one line, for stderr when the missing records are streamed.
func (r *CheckReport) Summary() string {
	return fmt.Sprintf("checked %d records of %s (%s) for consumer %s: %d with a marker, %d missing, %d malformed",
		r.Records, r.Topic, kafka.RangesText(r.Ranges), r.Consumer, r.WithMarker, r.Missing, r.Malformed)
}

// Check reads the records o selects from o.Topic and finds, for o.Consumer, the events
// without a marker. Counts are of records: an event written twice counts twice. The store is
// probed first, so that a missing table fails before the range is planned and read. Memory
// holds four lookup batches, about a thousand records read ahead (schema.Ahead), the listed
// missing records, the malformed examples and the counts of at most 1,000 distinct malformed
// reasons, whatever the size of the range. On error the report is nil.
func Check(ctx context.Context, c *kafka.Cluster, st *dedup.Store, o CheckOptions) (*CheckReport, error) {
	if o.Topic == "" || o.Consumer == "" {
		return nil, fwerr.Usagef("a check needs a topic and a consumer")
	}
	// One primary-key probe: a missing table fails now, not after the range was partly read.
	if _, err := st.Get(ctx, "fieldwork-check-probe", o.Consumer); err != nil {
		return nil, err
	}
	ranges, err := c.Plan(ctx, o.Topic, o.Selection)
	if err != nil {
		return nil, err
	}
	share := o.MaxMalformedShare
	switch {
	case share == 0:
		share = DefaultMaxMalformedShare
	case share < 0:
		share = 0
	}
	rep := &CheckReport{Topic: o.Topic, Consumer: o.Consumer, Table: st.TableLabel(), Ranges: ranges,
		MissingRecords: []MissingRecord{}, MalformedExamples: []MalformedRecord{}, MaxMalformedShare: share}
	g := &gapFinder{
		lookup: func(ctx context.Context, ids []string) ([]bool, error) {
			return st.Marked(ctx, o.Consumer, ids)
		},
		onMissing:  o.OnMissing,
		afterBatch: o.AfterBatch,
		maxMissing: o.MaxMissing,
		batchSize:  o.LookupBatch,
		rep:        rep,
	}
	if g.batchSize <= 0 {
		g.batchSize = DefaultLookupBatch
	}
	total := kafka.Total(ranges)
	lctx, stopLookups := context.WithCancelCause(ctx)
	defer stopLookups(nil)
	g.start(lctx, stopLookups)
	// The envelopes are read on a goroutine of their own, ahead of the counting and batching,
	// which take the records in the order of the read.
	ahead := o.Schemas.Ahead(lctx, func(r schema.Read) error {
		if err := g.add(lctx, r); err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress(rep.Records, total)
		}
		return nil
	})
	defer ahead.Stop()
	err = c.Read(lctx, ranges, ahead.Add)
	if err == nil {
		err = ahead.Finish()
	}
	if err == nil {
		err = g.flush(lctx)
	}
	if werr := g.wait(); werr != nil {
		err = werr // the lookup's failure is the cause; the read saw only its cancellation
	}
	if err != nil {
		return nil, err
	}
	rep.finish()
	return rep, nil
}

// finish names the dominant malformed reason (of equal counts, the first in the order of the
// key's text) and applies the unreadable rule.
func (r *CheckReport) finish() {
	for k, n := range r.reasons {
		d := r.DominantMalformed
		if d == nil || n > d.Records || (n == d.Records && k.less(malformedKey{d.Format, d.Field, d.Reason})) {
			r.DominantMalformed = &MalformedReason{Format: k.format, Field: k.field, Reason: k.reason, Records: n}
		}
	}
	r.reasons = nil
	r.Unreadable = unreadable(r.Records, r.Events, r.Malformed, r.MaxMalformedShare)
	slices.SortFunc(r.MalformedExamples, compareMalformed)
	slices.SortFunc(r.MissingRecords, compareMissing)
}

// lowest keeps, in a slice of at most n, the n lowest by compare of the values it is given:
// a check's reads of the partitions interleave as the fetches come, so the first records read
// are not the same from one check of the same records to the next, and the lists are the
// records first by partition and offset instead (sorted once the check is done). A value is
// compared with the highest kept alone; that one is searched for again only after it is
// replaced, which, each partition being read in offset order, happens at most n times a
// partition. The zero value is ready to use.
type lowest[T any] struct {
	top int // 1 + the index of the highest kept, once n are; 0: to be searched for
}

// keep adds v to s when it is among the n lowest so far, and returns where it put it (-1:
// not kept).
func (l *lowest[T]) keep(s []T, n int, v T, compare func(a, b T) int) ([]T, int) {
	if len(s) < n {
		return append(s, v), len(s)
	}
	if n <= 0 {
		return s, -1
	}
	if l.top == 0 {
		top := 0
		for i := range s {
			if compare(s[i], s[top]) > 0 {
				top = i
			}
		}
		l.top = top + 1
	}
	i := l.top - 1
	if compare(v, s[i]) >= 0 {
		return s, -1
	}
	s[i], l.top = v, 0
	return s, i
}

// compareMissing orders missing records by partition, then offset.
func compareMissing(a, b MissingRecord) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

// compareMalformed orders malformed records by partition, then offset.
func compareMalformed(a, b MalformedRecord) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

func (k malformedKey) less(o malformedKey) bool {
	if k.reason != o.reason {
		return k.reason < o.reason
	}
	if k.field != o.field {
		return k.field < o.field
	}
	return k.format < o.format
}

// gapFinder counts the records of a range and finds the events without a marker, looking
// them up batchSize at a time. Each batch's lookup starts as the reader hands the batch over,
// on a goroutine of its own, and a resolving goroutine takes the answers in the order of the
// range: the check waits on the store only when the store is slower than the read, and up to
// four lookups run at once (waitingLookups), so that a store's round trips overlap and its
// answers' unevenness does not stall the read. At most five batches are held (the one filling,
// one being handed over, two waiting, one being resolved). The reader owns the report's record
// counts, the resolving goroutine its marker counts and missing records.
type gapFinder struct {
	// lookup says of each id whether it has a marker, in the order given.
	lookup     func(ctx context.Context, ids []string) ([]bool, error)
	onMissing  func(MissingRecord) error
	afterBatch func() error
	maxMissing int
	batchSize  int

	rep   *CheckReport
	batch []MissingRecord
	// missing and malformed keep the report's lists: the first records by partition and offset.
	missing   lowest[MissingRecord]
	malformed lowest[MalformedRecord]

	batches chan lookedUp        // to the resolving goroutine
	free    chan []MissingRecord // its emptied batches back, for reuse
	done    chan error           // its end: nil, or why it stopped
}

// waitingLookups is how many handed-over batches wait for the resolving goroutine while their
// lookups run: with the one being handed over and the one being resolved, four lookups at
// once, as many as a store's pool holds connections on two cores (pgxpool's least). With one,
// three at once, a check of 1,000,000 dead letters took 2.49–2.88 s (median 2.64) against
// 2.42–3.49 (2.48) with two, in turns on this machine.
const waitingLookups = 2

// lookedUp is a batch handed over and its lookup's answer, when it comes.
type lookedUp struct {
	batch  []MissingRecord
	answer chan lookupAnswer
}

type lookupAnswer struct {
	found []bool // of each record of the batch
	err   error
}

// start starts the resolving goroutine; a lookup that fails cancels ctx with its error
// (stop), which ends the read.
func (g *gapFinder) start(ctx context.Context, stop context.CancelCauseFunc) {
	g.batches, g.free, g.done = make(chan lookedUp, waitingLookups), make(chan []MissingRecord, waitingLookups+1), make(chan error, 1)
	go func() {
		for l := range g.batches {
			a := <-l.answer
			err := a.err
			if err == nil {
				err = g.resolve(l.batch, a.found)
			}
			if err != nil {
				stop(err)
				for l := range g.batches { // let the reader's hand-overs return
					<-l.answer
				}
				g.done <- err
				return
			}
			select {
			case g.free <- l.batch[:0]:
			default:
			}
		}
		g.done <- nil
	}()
}

// wait ends the hand-overs and waits for the lookups to finish; its error is the first
// lookup's that failed.
func (g *gapFinder) wait() error {
	close(g.batches)
	return <-g.done
}

// add counts one record whose envelope was read (a registry failure ends the read before it
// comes here: the record is unread, not malformed).
func (g *gapFinder) add(ctx context.Context, r schema.Read) error {
	g.rep.Records++
	rec, ev, err := r.Record, r.Event, r.Err
	if err != nil {
		g.rep.Malformed++
		m := schema.MalformedRecordOf(rec, err)
		g.rep.MalformedExamples, _ = g.malformed.keep(g.rep.MalformedExamples, MaxMalformedExamples, m, compareMalformed)
		k := malformedKey{m.Format, m.Field, m.Reason}
		if g.rep.reasons == nil {
			g.rep.reasons = map[malformedKey]int64{}
		}
		if _, ok := g.rep.reasons[k]; ok || len(g.rep.reasons) < maxMalformedReasons {
			g.rep.reasons[k]++
		}
		return nil
	}
	g.rep.Events++
	g.batch = append(g.batch, MissingRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UTC(),
		EventID: ev.ID, Type: ev.Type, AggregateID: ev.AggregateID})
	if len(g.batch) >= g.batchSize {
		return g.flush(ctx)
	}
	return nil
}

// flush starts the batch's lookup, hands the batch to the resolving goroutine and starts a new
// batch.
func (g *gapFinder) flush(ctx context.Context) error {
	if len(g.batch) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	ids := make([]string, len(g.batch))
	for i, r := range g.batch {
		ids[i] = r.EventID
	}
	l := lookedUp{batch: g.batch, answer: make(chan lookupAnswer, 1)}
	go func() {
		found, err := g.lookup(ctx, ids)
		l.answer <- lookupAnswer{found, err}
	}()
	select {
	case g.batches <- l:
	case <-ctx.Done():
		<-l.answer
		return context.Cause(ctx)
	}
	select {
	case g.batch = <-g.free:
	default:
		g.batch = make([]MissingRecord, 0, g.batchSize)
	}
	return nil
}

// owned is r with a copy of its text, which was a view of its record (schema.Read): a missing
// record kept or passed on.
func (r MissingRecord) owned() MissingRecord {
	r.EventID, r.Type, r.AggregateID = strings.Clone(r.EventID), strings.Clone(r.Type), strings.Clone(r.AggregateID)
	return r
}

// resolve counts each record of a batch with or without its marker (found, in the batch's
// order), in order.
func (g *gapFinder) resolve(batch []MissingRecord, found []bool) error {
	if len(found) != len(batch) {
		return fmt.Errorf("the store answered for %d of %d events", len(found), len(batch))
	}
	for i, r := range batch {
		if found[i] {
			g.rep.WithMarker++
			continue
		}
		g.rep.Missing++
		switch {
		case g.onMissing != nil:
			if err := g.onMissing(r.owned()); err != nil {
				return err
			}
		default:
			// A record listed is a copy (owned); one that is not is left as it is.
			if len(g.rep.MissingRecords) >= g.maxMissing {
				g.rep.MissingTruncated = true
			}
			var at int
			if g.rep.MissingRecords, at = g.missing.keep(g.rep.MissingRecords, g.maxMissing, r, compareMissing); at >= 0 {
				g.rep.MissingRecords[at] = r.owned()
			}
		}
	}
	// Clear the batch's strings so that the backing array holds no record's data.
	clear(batch)
	if g.afterBatch != nil {
		return g.afterBatch()
	}
	return nil
}
