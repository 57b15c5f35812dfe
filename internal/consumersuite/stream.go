package consumersuite

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// kindRejected is a record of the suite's own: a well-formed event, with an id, that the
// handler refuses (an unknown type, or data that is not the task's state).
const kindRejected sample.Kind = "rejected"

// TypeUnknown is the event type of the rejected events a handler has no code for.
const TypeUnknown = "task.archived"

// entry is what the suite knows of one record of the stream it produces.
type entry struct {
	kind      sample.Kind
	eventID   string // "" when no decoder can read one
	aggregate string
	version   int64
	reason    string // the dead letter's fw.dlq.reason, for poison and rejected records
	rec       *kgo.Record
}

// stream is the sample stream plus the rejected events, in the order produced.
type stream struct {
	man     sample.Manifest
	entries []entry
	stale   map[string]int64 // aggregate → stale re-emits
	// distinct[n] is the number of distinct good event ids among the first n records
	// (reachable).
	distinct []int
}

// newStream generates o's sample stream for topic and inserts rejects rejected events (half
// of an unknown type, half whose data is not a JSON object), each after its task's last first
// send, at version last+1, so none of them orders before an event that must be applied.
func newStream(topic string, o sample.Options, rejects int) (*stream, error) {
	recs, man, err := sample.Generate(o)
	if err != nil {
		return nil, err
	}
	s := &stream{man: man, stale: map[string]int64{}}
	poison := map[int]sample.Poison{}
	for _, p := range man.Poison {
		poison[p.Index] = p
	}
	for _, st := range man.Stale {
		s.stale[st.AggregateID]++
	}
	lastAt := map[string]int{} // aggregate → index of its last first send
	for i, r := range recs {
		e := entry{kind: man.Kinds[i], eventID: man.EventIDs[i], aggregate: string(r.Key), rec: r.KgoRecord(topic)}
		if e.kind == sample.KindPoison {
			e.reason = dlq.ReasonMalformed
		}
		if e.kind == sample.KindEvent {
			lastAt[e.aggregate] = i
		}
		s.entries = append(s.entries, e)
	}
	if rejects == 0 {
		return s, nil
	}
	rng := rand.New(rand.NewPCG(o.Seed, 29))
	aggs := slices.Clone(man.Aggregates)
	rng.Shuffle(len(aggs), func(i, j int) { aggs[i], aggs[j] = aggs[j], aggs[i] })
	type insert struct {
		at int
		e  entry
	}
	var ins []insert
	for n := range min(rejects, len(aggs)) {
		a := aggs[n]
		last := lastAt[a.ID]
		e, err := rejected(recs[last], topic, a, n%2 == 0, rng)
		if err != nil {
			return nil, err
		}
		ins = append(ins, insert{at: last + 1 + rng.IntN(len(recs)-last), e: e})
	}
	// Insert from the back, so that earlier positions stay valid.
	slices.SortStableFunc(ins, func(a, b insert) int { return b.at - a.at })
	for _, in := range ins {
		s.entries = slices.Insert(s.entries, in.at, in.e)
	}
	return s, nil
}

// rejected derives a rejected event from the task's last first send: a new id, version
// last+1, and either an unknown type (dead-lettered as unsupported) or data that is a string
// (dead-lettered as rejected).
func rejected(last sample.Record, topic string, a sample.Aggregate, unknownType bool, rng *rand.Rand) (entry, error) {
	var ce map[string]json.RawMessage
	if err := json.Unmarshal(last.Value, &ce); err != nil {
		return entry{}, err
	}
	id := fmt.Sprintf("rejected-%s-%08x", a.ID, rng.Uint32())
	ce["id"], _ = json.Marshal(id)
	ce["aggregateversion"], _ = json.Marshal(a.LastVersion + 1)
	e := entry{kind: kindRejected, eventID: id, aggregate: a.ID, version: a.LastVersion + 1}
	if unknownType {
		ce["type"], _ = json.Marshal(TypeUnknown)
		e.reason = dlq.ReasonUnsupported
	} else {
		ce["data"] = json.RawMessage(`"oops"`)
		e.reason = dlq.ReasonRejected
	}
	v, err := json.Marshal(ce)
	if err != nil {
		return entry{}, err
	}
	r := last
	r.Value = v
	e.rec = r.KgoRecord(topic)
	return e, nil
}

// fixed is the operator's fix of a rejected event whose data was not an object: the same
// event (id, version) with the task's state as data, of the task's last type.
func fixed(e entry, lastValue []byte) ([]byte, error) {
	var good, bad map[string]json.RawMessage
	if err := json.Unmarshal(lastValue, &good); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(e.rec.Value, &bad); err != nil {
		return nil, err
	}
	bad["data"] = good["data"]
	return json.Marshal(bad)
}

// records returns the records in order.
func (s *stream) records() []*kgo.Record {
	out := make([]*kgo.Record, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.rec
	}
	return out
}

// good returns the event ids that must each have one marker: first sends and stale re-emits.
func (s *stream) good() map[string]sample.Kind {
	ids := map[string]sample.Kind{}
	for _, e := range s.entries {
		if e.kind == sample.KindEvent || e.kind == sample.KindStale {
			ids[e.eventID] = e.kind
		}
	}
	return ids
}

// reachable counts the distinct good event ids among the first n records.
func (s *stream) reachable(n int) int {
	if s.distinct == nil {
		seen := map[string]bool{}
		s.distinct = make([]int, len(s.entries)+1)
		for i, e := range s.entries {
			if (e.kind == sample.KindEvent || e.kind == sample.KindStale) && !seen[e.eventID] {
				seen[e.eventID] = true
			}
			s.distinct[i+1] = len(seen)
		}
	}
	return s.distinct[n]
}

// poison returns the records that must be dead-lettered, by address (invariant.Addr), with
// their entries; valid once the records were produced.
func (s *stream) poison() map[string]entry {
	at := map[string]entry{}
	for _, e := range s.entries {
		if e.reason != "" {
			at[addr(e.rec)] = e
		}
	}
	return at
}

// lastValue returns the value of aggregate's last first send.
func (s *stream) lastValue(aggregate string) []byte {
	var v []byte
	for _, e := range s.entries {
		if e.kind == sample.KindEvent && e.aggregate == aggregate {
			v = e.rec.Value
		}
	}
	return v
}
