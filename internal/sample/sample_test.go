package sample

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"
	"time"
)

func generate(t *testing.T, o Options) ([]Record, Manifest) {
	t.Helper()
	recs, m, err := Generate(o)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", o, err)
	}
	return recs, m
}

func TestDeterministic(t *testing.T) {
	o := DefaultOptions(42)
	a, ma := generate(t, o)
	b, mb := generate(t, o)
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ma, mb) {
		t.Fatal("two runs with the same options differ")
	}
	c, _ := generate(t, DefaultOptions(43))
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 give the same stream")
	}
}

// BaseTime shifts timestamps only: ids, payload data and order stay the same.
func TestBaseTimeOnlyShifts(t *testing.T) {
	o := DefaultOptions(7)
	a, ma := generate(t, o)
	o.BaseTime = DefaultBaseTime.Add(100 * 24 * time.Hour)
	b, mb := generate(t, o)
	if len(a) != len(b) {
		t.Fatalf("lengths differ: %d, %d", len(a), len(b))
	}
	if !reflect.DeepEqual(ma.EventIDs, mb.EventIDs) || !reflect.DeepEqual(ma.Kinds, mb.Kinds) {
		t.Fatal("event ids or kinds depend on BaseTime")
	}
	for i := range a {
		if d := b[i].Timestamp.Sub(a[i].Timestamp); d != 100*24*time.Hour {
			t.Fatalf("record %d shifted by %v", i, d)
		}
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// structured is what a reader of the CloudEvents JSON format sees.
type structured struct {
	SpecVersion      *string          `json:"specversion"`
	ID               *string          `json:"id"`
	Type             string           `json:"type"`
	Source           string           `json:"source"`
	Subject          string           `json:"subject"`
	Time             string           `json:"time"`
	DataContentType  string           `json:"datacontenttype"`
	AggregateType    string           `json:"aggregatetype"`
	AggregateID      string           `json:"aggregateid"`
	AggregateVersion json.RawMessage  `json:"aggregateversion"`
	Data             *json.RawMessage `json:"data"`
}

func TestEveryNonPoisonRecordIsStructuredCloudEvent(t *testing.T) {
	recs, m := generate(t, DefaultOptions(1))
	types := map[string]bool{TypeCreated: true, TypeAssigned: true, TypeStarted: true, TypeCompleted: true, TypeReopened: true}
	for i, r := range recs {
		if len(r.Headers) != 1 || r.Headers[0].Key != "content-type" || string(r.Headers[0].Value) != "application/cloudevents+json" {
			t.Errorf("record %d: headers %v", i, r.Headers)
		}
		if m.Kind(i) == KindPoison {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(r.Value))
		dec.UseNumber()
		var ev structured
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("record %d (%s): %v\n%s", i, m.Kind(i), err, r.Value)
		}
		if ev.SpecVersion == nil || *ev.SpecVersion != "1.0" {
			t.Errorf("record %d: specversion %v", i, ev.SpecVersion)
		}
		if ev.ID == nil || !uuidRE.MatchString(*ev.ID) || *ev.ID != m.EventIDs[i] {
			t.Errorf("record %d: id %v, manifest %q", i, ev.ID, m.EventIDs[i])
		}
		if !types[ev.Type] || ev.Source != "/tasks-service" || ev.AggregateType != "task" || ev.DataContentType != "application/json" {
			t.Errorf("record %d: attributes %+v", i, ev)
		}
		if ev.AggregateID != string(r.Key) || ev.Subject != ev.AggregateID {
			t.Errorf("record %d: key %q, aggregateid %q, subject %q", i, r.Key, ev.AggregateID, ev.Subject)
		}
		var v int64
		if err := json.Unmarshal(ev.AggregateVersion, &v); err != nil || v < 1 {
			t.Errorf("record %d: aggregateversion %s is not a positive integer", i, ev.AggregateVersion)
		}
		if _, err := time.Parse(time.RFC3339Nano, ev.Time); err != nil {
			t.Errorf("record %d: time %q: %v", i, ev.Time, err)
		}
		var task Task
		if ev.Data == nil || json.Unmarshal(*ev.Data, &task) != nil || task.ID != ev.AggregateID || task.Status == "" {
			t.Errorf("record %d: data %s", i, r.Value)
		}
	}
}

func TestManifestIsAccurate(t *testing.T) {
	o := Options{Seed: 9, Aggregates: 10, EventsPerAggregate: 6, DuplicateFraction: 0.1, Stale: 3, Poison: 5}
	recs, m := generate(t, o)

	want := Counts{Records: 60 + 6 + 3 + 5, Events: 60, Duplicates: 6, Stale: 3, Poison: 5}
	if got := m.Counts(); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if len(recs) != m.Records || len(m.Kinds) != m.Records || len(m.EventIDs) != m.Records {
		t.Fatalf("%d records, manifest says %d", len(recs), m.Records)
	}
	if m.UniqueEventIDs() != 63 {
		t.Errorf("UniqueEventIDs = %d", m.UniqueEventIDs())
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Timestamp.Before(recs[i-1].Timestamp) {
			t.Fatalf("record %d is older than record %d", i, i-1)
		}
	}
	if !m.First.Equal(recs[0].Timestamp) || !m.Last.Equal(recs[len(recs)-1].Timestamp) {
		t.Error("First/Last do not match the records")
	}

	// Every id of a first send or a stale re-emit is unique; a duplicate repeats an earlier one.
	seen := map[string]int{}
	kinds := map[Kind]int{}
	for i, k := range m.Kinds {
		kinds[k]++
		id := m.EventIDs[i]
		switch k {
		case KindEvent, KindStale:
			if _, dup := seen[id]; dup || id == "" {
				t.Errorf("record %d (%s): id %q not fresh", i, k, id)
			}
			seen[id] = i
		case KindDuplicate:
			if _, ok := seen[id]; !ok {
				t.Errorf("duplicate %d: id %q not sent before", i, id)
			}
		}
	}
	if kinds[KindEvent] != 60 || kinds[KindDuplicate] != 6 || kinds[KindStale] != 3 || kinds[KindPoison] != 5 {
		t.Errorf("kinds %v", kinds)
	}

	for _, d := range m.Duplicates {
		orig, dup := recs[d.OriginalIndex], recs[d.Index]
		if d.OriginalIndex >= d.Index || m.Kind(d.OriginalIndex) != KindEvent {
			t.Errorf("duplicate %+v: original is not an earlier first send", d)
		}
		if !bytes.Equal(orig.Key, dup.Key) || !bytes.Equal(orig.Value, dup.Value) || !reflect.DeepEqual(orig.Headers, dup.Headers) {
			t.Errorf("duplicate %d is not byte for byte record %d", d.Index, d.OriginalIndex)
		}
		if m.EventIDs[d.OriginalIndex] != d.EventID || string(dup.Key) != d.AggregateID {
			t.Errorf("duplicate %+v: ids do not match", d)
		}
	}

	for _, s := range m.Stale {
		if s.Version >= s.LatestVersion || s.OriginalIndex >= s.Index || m.EventIDs[s.OriginalIndex] != s.OriginalEventID || s.EventID == s.OriginalEventID {
			t.Errorf("stale %+v is not stale", s)
		}
		// A newer version of the aggregate really was sent before it.
		newer := false
		for i := range s.Index {
			if m.Kind(i) == KindEvent && string(recs[i].Key) == s.AggregateID && versionOf(t, recs[i]) > s.Version {
				newer = true
			}
		}
		if !newer {
			t.Errorf("stale %+v: no newer version sent before it", s)
		}
		if v := versionOf(t, recs[s.Index]); v != s.Version {
			t.Errorf("stale %+v: record has version %d", s, v)
		}
	}

	poisonKinds := map[PoisonKind]int{}
	for _, p := range m.Poison {
		poisonKinds[p.Kind]++
		if m.Kind(p.Index) != KindPoison || string(recs[p.Index].Key) != p.Key {
			t.Errorf("poison %+v", p)
		}
		v := recs[p.Index].Value
		var obj map[string]json.RawMessage
		err := json.Unmarshal(v, &obj)
		if err == nil {
			var at time.Time
			if json.Unmarshal(obj["time"], &at) != nil || at.After(recs[p.Index].Timestamp) {
				t.Errorf("poison %d: time %s is after its record timestamp %v", p.Index, obj["time"], recs[p.Index].Timestamp)
			}
		}
		switch p.Kind {
		case PoisonInvalidJSON:
			if err == nil {
				t.Errorf("poison %d parses as JSON: %s", p.Index, v)
			}
		case PoisonMissingID:
			if _, ok := obj["id"]; err != nil || ok {
				t.Errorf("poison %d: %s", p.Index, v)
			}
		case PoisonBadVersion:
			if err != nil || string(obj["aggregateversion"]) != `"abc"` || p.EventID == "" {
				t.Errorf("poison %d: %s", p.Index, v)
			}
		}
	}

	// Five poison records cycle through the three kinds.
	if want := map[PoisonKind]int{PoisonInvalidJSON: 2, PoisonMissingID: 2, PoisonBadVersion: 1}; !reflect.DeepEqual(poisonKinds, want) {
		t.Errorf("poison kinds %v, want %v", poisonKinds, want)
	}

	for _, a := range m.Aggregates {
		if a.Events != 6 || a.LastVersion != 6 || a.LastType == "" {
			t.Errorf("aggregate %+v", a)
		}
	}
}

func versionOf(t *testing.T, r Record) int64 {
	t.Helper()
	var ev struct {
		V int64 `json:"aggregateversion"`
	}
	if err := json.Unmarshal(r.Value, &ev); err != nil {
		t.Fatalf("version of %s: %v", r.Value, err)
	}
	return ev.V
}

// Within an aggregate, first sends carry versions 1..N in stream order, and types follow the
// task lifecycle.
func TestVersionsAreMonotonicPerAggregate(t *testing.T) {
	recs, m := generate(t, DefaultOptions(3))
	last := map[string]int64{}
	for i, r := range recs {
		if m.Kind(i) != KindEvent {
			continue
		}
		v := versionOf(t, r)
		if v != last[string(r.Key)]+1 {
			t.Errorf("record %d: %s version %d after %d", i, r.Key, v, last[string(r.Key)])
		}
		last[string(r.Key)] = v
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Aggregates: -1},
		{Aggregates: 2, EventsPerAggregate: -1},
		{Aggregates: 2, EventsPerAggregate: 2, DuplicateFraction: 1.5},
		{Aggregates: 2, EventsPerAggregate: 1, Stale: 1},
		{Poison: -1},
	} {
		if _, _, err := Generate(o); err == nil {
			t.Errorf("Generate(%+v) accepted", o)
		}
	}
	recs, m := generate(t, Options{Poison: 2})
	if len(recs) != 2 || len(m.Poison) != 2 {
		t.Errorf("poison only: %d records, manifest %+v", len(recs), m)
	}
	recs, _ = generate(t, Options{})
	if len(recs) != 0 {
		t.Errorf("zero options: %d records", len(recs))
	}
}

func TestKgoRecord(t *testing.T) {
	recs, _ := generate(t, Options{Seed: 1, Aggregates: 1, EventsPerAggregate: 1})
	kr := recs[0].KgoRecord("tasks")
	if kr.Topic != "tasks" || string(kr.Key) != "task-0001" || len(kr.Headers) != 1 || kr.Headers[0].Key != "content-type" || !kr.Timestamp.Equal(recs[0].Timestamp) {
		t.Errorf("%+v", kr)
	}
}

func BenchmarkGenerate(b *testing.B) {
	o := Options{Seed: 1, Aggregates: 1000, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 50, Poison: 10}
	for b.Loop() {
		if _, _, err := Generate(o); err != nil {
			b.Fatal(err)
		}
	}
}
