package dedup

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// MaxInlineEventIDBytes is the longest event id stored as it is. A btree
// index entry in PostgreSQL cannot exceed about 2.7 KB, so a longer id is
// stored under its EventKey instead, on both drivers alike.
const MaxInlineEventIDBytes = 1024

// MaxConsumerBytes is the longest consumer name accepted.
const MaxConsumerBytes = 256

// eventKeyPrefix marks a hashed key. A real event id that starts with it and
// is short is stored as it is; a collision would need a SHA-256 preimage.
const eventKeyPrefix = "fw-sha256:"

// EventKey returns the value stored in the event_id column for id: id itself
// when it is at most MaxInlineEventIDBytes long, otherwise "fw-sha256:"
// followed by the hex SHA-256 of id. Every method of Store applies it, so
// callers pass and receive original ids; only rows read back (Get, List,
// Forget, MarkerRow.EventID) show the key of a long id.
func EventKey(id string) string {
	if len(id) <= MaxInlineEventIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return eventKeyPrefix + hex.EncodeToString(sum[:])
}

// ValidateEventID returns an *InvalidInputError when id cannot be claimed:
// empty, not valid UTF-8, or holding a NUL byte. A consumer can call it while
// decoding, to dead-letter such an event instead of failing its batch.
func ValidateEventID(id string) error { return checkText("event id", -1, id, 0) }

// ValidateConsumer returns an *InvalidInputError when name is not a usable
// consumer name.
func ValidateConsumer(name string) error {
	return checkText("consumer", -1, name, MaxConsumerBytes)
}

// keyedMarker is a validated marker and its storage key.
type keyedMarker struct {
	id  string
	key string
	// index is the marker's place in the batch as given.
	index int
}

// dedupeMarkers validates the batch, drops repeated event ids (the first
// occurrence wins) and returns the keyed markers in input order together
// with a copy of the markers, keyed and sorted by key. Sorting makes every
// claimer take the row locks in the same order, so that two transactions
// claiming overlapping batches wait for each other instead of deadlocking.
// The keys are keysOf's: sorted once as indexes, the repeats found as
// neighbours, no map an id and no marker moved by the sort (a batch's
// dedupe and sort were a tenth of a consumer's CPU, BenchmarkDedupeMarkers).
func dedupeMarkers(events []Marker) ([]keyedMarker, []Marker, error) {
	ids := make([]string, len(events))
	for i := range events {
		ids[i] = events[i].EventID
	}
	k, err := keysOf(ids)
	if err != nil {
		return nil, nil, err
	}
	order := make([]keyedMarker, 0, len(k.keys))
	sorted := make([]Marker, len(k.keys))
	taken := make([]bool, len(k.keys))
	for i := range events {
		at := k.of[i]
		if taken[at] {
			continue
		}
		taken[at] = true
		m := &sorted[at]
		*m = events[i]
		order = append(order, keyedMarker{id: m.EventID, key: k.keys[at], index: i})
		m.EventID = k.keys[at]
		if !m.ProcessedAt.IsZero() {
			m.ProcessedAt = m.ProcessedAt.UTC()
		}
	}
	return order, sorted, nil
}

// keyedIDs are the distinct storage keys (EventKey) of a batch of event ids, sorted as the
// index orders them (fieldwork's tables compare event ids byte by byte, as Go does), and the key
// of each id given: a short id is its own key, a long id its hash's, and a short id that reads
// as a long id's key ("fw-sha256:…") shares it with that long id.
type keyedIDs struct {
	keys []string
	// of holds, for the i-th id given, the index of its key in keys.
	of []int32
}

// keyOf is the key of the i-th id given.
func (k keyedIDs) keyOf(i int) string { return k.keys[k.of[i]] }

// keysOf validates ids and returns their distinct keys, sorted, and each id's key. Sorted:
// the probes of a lookup then read the index in its order, each the pages the one before it
// has just read (over 1,000 ids of a topic, PostgreSQL spent 10–20% less CPU on them than in
// the order read). And sorted rather than gathered in a set: the repeated keys are neighbours,
// and the answers go back to the ids by place, with no map an id (BenchmarkKeysOf).
func keysOf(ids []string) (keyedIDs, error) {
	all := make([]string, len(ids))
	order := make([]int32, len(ids))
	for i, id := range ids {
		if err := checkText("event id", i, id, 0); err != nil {
			return keyedIDs{}, err
		}
		all[i], order[i] = EventKey(id), int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(all[a], all[b]) })
	k := keyedIDs{keys: make([]string, 0, len(ids)), of: make([]int32, len(ids))}
	for _, i := range order {
		if n := len(k.keys); n == 0 || k.keys[n-1] != all[i] {
			k.keys = append(k.keys, all[i])
		}
		k.of[i] = int32(len(k.keys) - 1)
	}
	return k, nil
}
