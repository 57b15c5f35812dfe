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
func dedupeMarkers(events []Marker) ([]keyedMarker, []Marker, error) {
	seen := make(map[string]struct{}, len(events))
	order := make([]keyedMarker, 0, len(events))
	sorted := make([]Marker, 0, len(events))
	for i, m := range events {
		if err := checkText("event id", i, m.EventID, 0); err != nil {
			return nil, nil, err
		}
		key := EventKey(m.EventID)
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		order = append(order, keyedMarker{id: m.EventID, key: key, index: i})
		m.EventID = key
		if !m.ProcessedAt.IsZero() {
			m.ProcessedAt = m.ProcessedAt.UTC()
		}
		sorted = append(sorted, m)
	}
	slices.SortFunc(sorted, func(a, b Marker) int { return strings.Compare(a.EventID, b.EventID) })
	return order, sorted, nil
}

// keyedIDs are the distinct storage keys of a batch of event ids, in first-seen order, and
// which ids were given for each (ids): the key itself for an id short enough to be stored as
// it is, and the long ids whose hash it is (EventKey).
type keyedIDs struct {
	keys []string
	// given holds every key: true when the key was given as an id itself.
	given map[string]bool
	// long are the long ids given for a key; nil when there are none.
	long map[string][]string
}

// ids calls fn with every id given for key (none for a key not in the batch).
func (k keyedIDs) ids(key string, fn func(id string)) {
	if k.given[key] {
		fn(key)
	}
	for _, id := range k.long[key] {
		fn(id)
	}
}

// keysOf validates ids and returns their distinct keys and the ids given for each. A batch of
// short ids, the common case, costs one set entry an id, and no allocation of its own
// (BenchmarkKeysOf).
func keysOf(ids []string) (keyedIDs, error) {
	k := keyedIDs{keys: make([]string, 0, len(ids)), given: make(map[string]bool, len(ids))}
	for i, id := range ids {
		if err := checkText("event id", i, id, 0); err != nil {
			return keyedIDs{}, err
		}
		key := EventKey(id)
		inline := key == id
		if was, ok := k.given[key]; !ok {
			k.keys = append(k.keys, key)
			k.given[key] = inline
		} else if inline && !was {
			k.given[key] = true // a short id that reads as a long one's key ("fw-sha256:…")
		}
		if !inline && !slices.Contains(k.long[key], id) {
			if k.long == nil {
				k.long = map[string][]string{}
			}
			k.long[key] = append(k.long[key], id)
		}
	}
	return k, nil
}
