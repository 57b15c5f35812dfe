package sample

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// cloudEvent is the structured-mode JSON value. Field order is the order of the JSON object.
type cloudEvent struct {
	SpecVersion      string `json:"specversion"`
	ID               string `json:"id,omitempty"` // empty only in a missing-id poison record
	Type             string `json:"type"`
	Source           string `json:"source"`
	Subject          string `json:"subject"`
	Time             string `json:"time"`
	DataContentType  string `json:"datacontenttype"`
	AggregateType    string `json:"aggregatetype"`
	AggregateID      string `json:"aggregateid"`
	AggregateVersion any    `json:"aggregateversion"` // int64; the string "abc" in a bad-version poison record
	Data             Task   `json:"data"`
}

// item is one record of the stream while it is being built.
type item struct {
	at    time.Time // record timestamp
	seq   int       // creation order: breaks timestamp ties deterministically
	index int       // position once sorted
	kind  Kind
	ce    cloudEvent
	value []byte
	orig  *item   // the first send, for a duplicate or a stale re-emit
	bad   *Poison // for poison
}

type generator struct {
	o    Options
	r    *rand.Rand
	base time.Time
	seq  int
}

func newGenerator(o Options) *generator {
	base := o.BaseTime
	if base.IsZero() {
		base = DefaultBaseTime
	}
	return &generator{o: o, r: newRand(o.Seed), base: base.UTC().Truncate(time.Millisecond)}
}

func (g *generator) item(kind Kind, at time.Time) *item {
	g.seq++
	return &item{kind: kind, at: at, seq: g.seq}
}

// ms returns a random duration in [lo, hi) milliseconds.
func (g *generator) ms(lo, hi int64) time.Duration {
	return time.Duration(lo+g.r.Int64N(hi-lo)) * time.Millisecond
}

func (g *generator) run() ([]Record, Manifest, error) {
	perAgg, originals := g.firstSends()
	items := slices.Clone(originals)
	items = append(items, g.duplicates(originals)...)
	items = append(items, g.stale(perAgg)...)
	poison, err := g.poison(originals)
	if err != nil {
		return nil, Manifest{}, err
	}
	items = append(items, poison...)

	slices.SortStableFunc(items, func(a, b *item) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	for i, it := range items {
		it.index = i
	}
	return g.assemble(items, perAgg)
}

// firstSends are the events themselves: each task is created within the first couple of
// hours, then changes every few minutes; the record reaches Kafka a few milliseconds after the
// event happened. It returns them by aggregate and in the order they were made.
func (g *generator) firstSends() (perAgg [][]*item, originals []*item) {
	o := g.o
	perAgg = make([][]*item, o.Aggregates)
	createSpread := min(time.Duration(max(o.Aggregates, 1))*5*time.Minute, 2*time.Hour)
	for a := range o.Aggregates {
		id := AggregateID(a + 1)
		at := g.base.Add(g.ms(0, createSpread.Milliseconds()+1))
		task := newTask(g.r, id, at)
		typ := TypeCreated
		for v := int64(1); v <= int64(o.EventsPerAggregate); v++ {
			if v > 1 {
				at = at.Add(g.ms(2*60_000, 25*60_000))
				typ, task = next(g.r, task, at)
			}
			it := g.item(KindEvent, at.Add(g.ms(3, 250)))
			it.ce = cloudEvent{
				SpecVersion: SpecVersion, ID: newID(g.r), Type: typ, Source: Source, Subject: id,
				Time: formatTime(at), DataContentType: DataContentType,
				AggregateType: AggregateType, AggregateID: id, AggregateVersion: v, Data: task,
			}
			perAgg[a] = append(perAgg[a], it)
			originals = append(originals, it)
		}
	}
	return perAgg, originals
}

// duplicates: a producer that timed out waiting for an ack sends the same bytes again.
func (g *generator) duplicates(originals []*item) []*item {
	nDup := int(math.Round(g.o.DuplicateFraction * float64(len(originals))))
	var items []*item
	for _, i := range g.r.Perm(len(originals))[:nDup] {
		orig := originals[i]
		it := g.item(KindDuplicate, orig.at.Add(g.ms(100, 3000)))
		it.orig, it.ce = orig, orig.ce
		items = append(items, it)
	}
	return items
}

// stale versions: an older version of a task published again (an outbox relay re-running,
// a restored snapshot) after a newer one, under a new event id.
func (g *generator) stale(perAgg [][]*item) []*item {
	var items []*item
	for range g.o.Stale {
		evs := perAgg[g.r.IntN(len(perAgg))]
		k := g.r.IntN(len(evs) - 1) // version k+1, with k+2 already sent
		after, last := evs[k+1].at, evs[len(evs)-1].at
		window := last.Sub(after) + 30*time.Minute
		it := g.item(KindStale, after.Add(time.Second).Add(g.ms(0, window.Milliseconds())))
		it.orig, it.ce = evs[k], evs[k].ce
		it.ce.ID = newID(g.r)
		items = append(items, it)
	}
	return items
}

// poison records, spread over the stream of originals and keyed like real events.
func (g *generator) poison(originals []*item) ([]*item, error) {
	first, last := g.base, g.base.Add(time.Hour)
	if len(originals) > 0 {
		first, last = originals[0].at, originals[0].at
		for _, it := range originals {
			first, last = minTime(first, it.at), maxTime(last, it.at)
		}
	}
	var items []*item
	for p := range g.o.Poison {
		kind := PoisonKinds[p%len(PoisonKinds)]
		var ce cloudEvent
		if len(originals) > 0 {
			ce = originals[g.r.IntN(len(originals))].ce
		} else {
			id := AggregateID(1)
			ce = cloudEvent{SpecVersion: SpecVersion, Type: TypeCreated, Source: Source, Subject: id,
				Time: formatTime(first), DataContentType: DataContentType, AggregateType: AggregateType,
				AggregateID: id, AggregateVersion: int64(1), Data: newTask(g.r, id, first)}
		}
		it := g.item(KindPoison, first.Add(g.ms(0, last.Sub(first).Milliseconds()+1)))
		at := it.at.Add(-g.ms(3, 250)) // the (broken) event happened just before it was produced
		ce.Time, ce.Data.UpdatedAt = formatTime(at), formatTime(at)
		it.bad = &Poison{Key: ce.AggregateID, Kind: kind}
		if err := g.spoil(it, &ce, kind); err != nil {
			return nil, err
		}
		it.ce = ce
		items = append(items, it)
	}
	return items, nil
}

// spoil breaks ce the way kind says and records why on it.bad.
func (g *generator) spoil(it *item, ce *cloudEvent, kind PoisonKind) error {
	switch kind {
	case PoisonInvalidJSON:
		ce.ID = newID(g.r)
		full, err := marshal(*ce)
		if err != nil {
			return err
		}
		cut := len(full)/3 + g.r.IntN(len(full)/3)
		it.value = full[:cut]
		it.bad.Reason = fmt.Sprintf("value is not valid JSON: cut off after %d of %d bytes", cut, len(full))
	case PoisonMissingID:
		ce.ID = ""
		it.bad.Field, it.bad.Reason = "id", "no id attribute"
	case PoisonBadVersion:
		ce.ID = newID(g.r)
		ce.AggregateVersion = "abc"
		it.bad.EventID = ce.ID
		it.bad.Field, it.bad.Reason = "aggregateversion", `aggregateversion is the string "abc", not an integer`
	}
	return nil
}

// assemble encodes the sorted items and writes the manifest.
func (g *generator) assemble(items []*item, perAgg [][]*item) ([]Record, Manifest, error) {
	m := Manifest{
		Seed: g.o.Seed, Records: len(items),
		Aggregates: []Aggregate{}, Duplicates: []Duplicate{}, Stale: []Stale{}, Poison: []Poison{},
		Kinds: make([]Kind, len(items)), EventIDs: make([]string, len(items)),
	}
	for _, evs := range perAgg {
		a := Aggregate{ID: AggregateID(len(m.Aggregates) + 1), Events: len(evs)}
		if len(evs) > 0 {
			lastCE := evs[len(evs)-1].ce
			a.LastVersion, a.LastType = lastCE.AggregateVersion.(int64), lastCE.Type
		}
		m.Aggregates = append(m.Aggregates, a)
	}
	latest := map[string]int64{} // newest version sent so far, per aggregate
	recs := make([]Record, len(items))
	for i, it := range items {
		switch {
		case it.value != nil:
		case it.kind == KindDuplicate:
			it.value = bytes.Clone(it.orig.value) // the original sorts first, so it is encoded
		default:
			v, err := marshal(it.ce)
			if err != nil {
				return nil, Manifest{}, err
			}
			it.value = v
		}
		recs[i] = Record{
			Key:       []byte(it.ce.AggregateID),
			Value:     it.value,
			Headers:   []Header{{Key: HeaderContentType, Value: []byte(ContentType)}},
			Timestamp: it.at,
		}
		m.Kinds[i] = it.kind
		if it.kind != KindPoison || it.bad.EventID != "" {
			m.EventIDs[i] = it.ce.ID
		}
		switch it.kind {
		case KindEvent:
			m.Events++
			latest[it.ce.AggregateID] = max(latest[it.ce.AggregateID], it.ce.AggregateVersion.(int64))
		case KindDuplicate:
			m.Duplicates = append(m.Duplicates, Duplicate{Index: i, OriginalIndex: it.orig.index,
				EventID: it.ce.ID, AggregateID: it.ce.AggregateID, Version: it.ce.AggregateVersion.(int64)})
		case KindStale:
			m.Stale = append(m.Stale, Stale{Index: i, EventID: it.ce.ID, AggregateID: it.ce.AggregateID,
				Version: it.ce.AggregateVersion.(int64), LatestVersion: latest[it.ce.AggregateID],
				OriginalIndex: it.orig.index, OriginalEventID: it.orig.ce.ID})
		case KindPoison:
			p := *it.bad
			p.Index = i
			m.Poison = append(m.Poison, p)
		}
	}
	if len(recs) > 0 {
		m.First, m.Last = recs[0].Timestamp, recs[len(recs)-1].Timestamp
	}
	return recs, m, nil
}

func marshal(ce cloudEvent) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ce); err != nil {
		return nil, fmt.Errorf("encode sample event: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
