package sample

import "time"

// Kind says what a record of the stream is.
type Kind string

// The kinds of record a stream holds.
const (
	// KindEvent is an event sent for the first time.
	KindEvent Kind = "event"
	// KindDuplicate is an event sent again byte for byte (a producer retry).
	KindDuplicate Kind = "duplicate"
	// KindStale is an older version of a task re-emitted with a new event id.
	KindStale Kind = "stale"
	// KindPoison is a record no consumer can handle.
	KindPoison Kind = "poison"
)

// PoisonKind is the way a poison record is broken.
type PoisonKind string

// The poison records Generate injects, in the order it cycles through them.
const (
	// PoisonInvalidJSON is a value cut off in the middle: not JSON at all.
	PoisonInvalidJSON PoisonKind = "invalid-json"
	// PoisonMissingID is a well-formed CloudEvent with no id attribute.
	PoisonMissingID PoisonKind = "missing-id"
	// PoisonBadVersion is a CloudEvent whose aggregateversion is the string "abc".
	PoisonBadVersion PoisonKind = "bad-version"
)

// PoisonKinds lists the poison kinds in the order Generate cycles through them.
var PoisonKinds = []PoisonKind{PoisonInvalidJSON, PoisonMissingID, PoisonBadVersion}

// Manifest describes a generated stream: what each record is and where the faults are.
// Every Index is a position in the slice Generate returned. JSON names are snake_case.
type Manifest struct {
	Seed uint64 `json:"seed"`
	// Records is the length of the stream, faults included.
	Records int `json:"records"`
	// Events is the number of events sent for the first time (KindEvent): Aggregates ×
	// EventsPerAggregate.
	Events int `json:"events"`
	// First and Last are the smallest and largest record timestamps (zero for an empty stream).
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"`

	Aggregates []Aggregate `json:"aggregates"`
	Duplicates []Duplicate `json:"duplicates"`
	Stale      []Stale     `json:"stale"`
	Poison     []Poison    `json:"poison"`

	// Kinds holds the kind of every record, by index.
	Kinds []Kind `json:"-"`
	// EventIDs holds the event id of every record by index ("" where the record has none a
	// decoder could read: invalid JSON, a missing id).
	EventIDs []string `json:"-"`
}

// Aggregate summarises one task's events (first sends only).
type Aggregate struct {
	ID          string `json:"id"`
	Events      int    `json:"events"`
	LastVersion int64  `json:"last_version"`
	LastType    string `json:"last_type"`
}

// Duplicate is a record that repeats an earlier one byte for byte.
type Duplicate struct {
	Index         int    `json:"index"`
	OriginalIndex int    `json:"original_index"`
	EventID       string `json:"event_id"`
	AggregateID   string `json:"aggregate_id"`
	Version       int64  `json:"version"`
}

// Stale is an older version of a task re-emitted after a newer one, under a new event id.
type Stale struct {
	Index       int    `json:"index"`
	EventID     string `json:"event_id"`
	AggregateID string `json:"aggregate_id"`
	Version     int64  `json:"version"`
	// LatestVersion is the newest version of the task sent before this record (> Version).
	LatestVersion int64 `json:"latest_version"`
	// OriginalIndex and OriginalEventID name the first send of this version.
	OriginalIndex   int    `json:"original_index"`
	OriginalEventID string `json:"original_event_id"`
}

// Poison is a record no consumer can handle.
type Poison struct {
	Index int        `json:"index"`
	Key   string     `json:"key"`
	Kind  PoisonKind `json:"kind"`
	// EventID is the id the record carries, when a decoder can read one (bad-version only).
	EventID string `json:"event_id,omitempty"`
	// Field is the attribute at fault ("" for invalid JSON).
	Field string `json:"field,omitempty"`
	// Reason says what is wrong, for dead-letter messages and test failures (JSON: problem,
	// as a malformed record's).
	Reason string `json:"problem"`
}

// Counts is the number of records of each kind.
type Counts struct {
	Records    int `json:"records"`
	Events     int `json:"events"`
	Duplicates int `json:"duplicates"`
	Stale      int `json:"stale"`
	Poison     int `json:"poison"`
}

// Counts returns the number of records of each kind.
func (m Manifest) Counts() Counts {
	return Counts{Records: m.Records, Events: m.Events, Duplicates: len(m.Duplicates), Stale: len(m.Stale), Poison: len(m.Poison)}
}

// UniqueEventIDs is the number of distinct event ids a consumer should claim: first sends
// and stale re-emits (each has its own id); duplicates repeat an id and poison has none usable.
func (m Manifest) UniqueEventIDs() int { return m.Events + len(m.Stale) }

// Kind returns the kind of record i.
func (m Manifest) Kind(i int) Kind { return m.Kinds[i] }
