package dlq

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// StatsKey is a field Stats can group dead letters by. Its values are the JSON field names.
type StatsKey string

// The fields Stats groups by.
const (
	ByTopic         StatsKey = "topic"          // the dead-letter topic
	ByOriginalTopic StatsKey = "original_topic" // the topic the record failed on
	ByReason        StatsKey = "reason"
	ByErrorClass    StatsKey = "error_class"
	ByGroup         StatsKey = "group"
	// BySchema is the value's (else the key's) schema-registry format and schema id, as
	// DeadLetter.SchemaLabel gives it ("avro:42"); "" for payloads not framed.
	BySchema StatsKey = "schema"
	// ByFingerprint groups by failure cause (FingerprintOf): each group then also says its
	// cause, the original topics it occurred on and one dead letter's address.
	ByFingerprint StatsKey = "fingerprint"
)

// StatsKeys lists every StatsKey in a stable order.
var StatsKeys = []StatsKey{ByTopic, ByOriginalTopic, ByReason, ByErrorClass, ByGroup, BySchema, ByFingerprint}

// ParseStatsKeys reads a comma-separated list of StatsKey names ("topic,reason"), as
// `--group-by` takes it. An unknown or repeated name is a usage error; "" is none.
func ParseStatsKeys(s string) ([]StatsKey, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []StatsKey
	for name := range strings.SplitSeq(s, ",") {
		out = append(out, StatsKey(strings.TrimSpace(name)))
	}
	return out, checkStatsKeys(out)
}

// checkStatsKeys refuses a grouping with a key that is not a StatsKey, or a key twice.
func checkStatsKeys(by []StatsKey) error {
	for i, k := range by {
		if !slices.Contains(StatsKeys, k) {
			return fwerr.Usagef("cannot group by %q: want some of %s", k, joinKeys(StatsKeys))
		}
		if slices.Contains(by[:i], k) {
			return fwerr.Usagef("%q is named twice in the grouping", k)
		}
	}
	return nil
}

// StatsKeyNames lists the names of every StatsKey, comma-separated, for help and messages.
func StatsKeyNames() string { return joinKeys(StatsKeys) }

func joinKeys(keys []StatsKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// groupKey holds a dead letter's value of each StatsKey, indexed as StatsKeys; a key not
// grouped by stays "".
type groupKey [7]string

// Stats aggregates dead letters as they stream past, grouped by chosen StatsKeys. It keeps
// one GroupStats per distinct group and nothing per record, so its memory is bounded by the
// number of groups whatever the number of records. It is not safe for concurrent use.
type Stats struct {
	by     []StatsKey
	index  []int // index in StatsKeys of each of by
	since  time.Time
	window time.Duration
	groups map[groupKey]*GroupStats
	// withStatus is set once AddStatus has counted a status.
	withStatus bool
	// byFingerprint: the groups also keep their cause, original topics and an example.
	byFingerprint bool
	// last is the group the last dead letter counted went to, and lastKey its key: dead
	// letters of one partition run in groups, and comparing keys costs less than hashing them.
	last    *GroupStats
	lastKey groupKey
}

// NewStats returns an empty aggregator grouping by the keys in by (none: one group of
// everything). The rate counts dead letters whose timestamp is at or after now-window
// (later ones included: clocks drift); a window of 0 computes no rate. A key that is not a
// StatsKey, or repeated, is a usage error.
func NewStats(by []StatsKey, window time.Duration, now time.Time) (*Stats, error) {
	if err := checkStatsKeys(by); err != nil {
		return nil, err
	}
	s := &Stats{by: slices.Clone(by), window: window, groups: map[groupKey]*GroupStats{}}
	for _, k := range by {
		s.index = append(s.index, slices.Index(StatsKeys, k))
		s.byFingerprint = s.byFingerprint || k == ByFingerprint
	}
	if window < 0 {
		return nil, fwerr.Usagef("the rate window %s is negative", window)
	}
	if window > 0 {
		s.since = now.Add(-window)
	}
	return s, nil
}

// Add counts one dead letter. A zero timestamp counts toward Count only.
func (s *Stats) Add(d *DeadLetter) { s.add(d) }

// AddStatus counts one dead letter, as Add does, and its status in the group's Statuses.
// Once AddStatus has been called, every group reports Statuses (zero counts included).
func (s *Stats) AddStatus(d *DeadLetter, st Status) {
	g := s.add(d)
	s.withStatus = true
	if g.Statuses == nil {
		g.Statuses = &StatusCounts{}
	}
	g.Statuses.Add(st)
}

func (s *Stats) add(d *DeadLetter) *GroupStats {
	var k groupKey
	var fp Fingerprint
	if s.byFingerprint {
		fp = FingerprintOf(*d)
	}
	for _, j := range s.index {
		if StatsKeys[j] == ByFingerprint {
			k[j] = fp.ID
			continue
		}
		k[j] = keyValue(d, StatsKeys[j])
	}
	g := s.last
	if g == nil || k != s.lastKey {
		g = s.groups[k]
	}
	if g == nil {
		g = &GroupStats{by: s.by, Topic: k[0], OriginalTopic: k[1], Reason: k[2], ErrorClass: k[3], Group: k[4], Schema: k[5], Fingerprint: k[6]}
		if s.byFingerprint {
			g.Cause, g.Example = fp.Cause, d.Address()
		}
		s.groups[k] = g
	}
	if g != s.last {
		// Only when it changed: the key is seven strings, and writing them into the heap
		// while the collector runs costs a barrier for each, every record.
		s.last, s.lastKey = g, k
	}
	if s.byFingerprint && d.OriginalTopic != "" && !slices.Contains(g.Topics, d.OriginalTopic) && len(g.Topics) < maxCauseTopics {
		g.Topics = append(g.Topics, d.OriginalTopic)
		slices.Sort(g.Topics)
	}
	g.Count++
	t := d.Timestamp
	if t.IsZero() {
		return g
	}
	if g.Oldest.IsZero() || t.Before(g.Oldest) {
		g.Oldest = t
	}
	if g.Newest.IsZero() || t.After(g.Newest) {
		g.Newest = t
	}
	if s.window > 0 && !t.Before(s.since) {
		g.InWindow++
	}
	return g
}

// keyValue is d's value of key k (ByFingerprint is computed once per record by add).
func keyValue(d *DeadLetter, k StatsKey) string {
	switch k {
	case ByTopic:
		return d.Topic
	case ByOriginalTopic:
		return d.OriginalTopic
	case ByReason:
		return d.Reason
	case ByErrorClass:
		return d.ErrorClass
	case ByGroup:
		return d.Group
	case BySchema:
		return d.SchemaLabel()
	}
	return ""
}

// maxCauseTopics bounds the original topics a fingerprint's group lists.
const maxCauseTopics = 100

// Groups is the number of groups so far.
func (s *Stats) Groups() int { return len(s.groups) }

// Result returns a copy of every group, the largest count first, then by the grouped values
// in the order of the grouping.
func (s *Stats) Result() []GroupStats {
	out := make([]GroupStats, 0, len(s.groups))
	for _, g := range s.groups {
		r := *g
		if s.window > 0 {
			r.RatePerHour = float64(r.InWindow) / s.window.Hours()
		}
		r.Topics = slices.Clone(r.Topics)
		if r.Statuses != nil {
			c := *r.Statuses
			r.Statuses = &c
		} else if s.withStatus {
			r.Statuses = &StatusCounts{}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b GroupStats) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		for _, k := range s.by {
			if c := strings.Compare(a.Value(k), b.Value(k)); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// GroupStats is one group's aggregate. Only the grouped-by fields are meaningful among Topic,
// OriginalTopic, Reason, ErrorClass, Group and Fingerprint; the others are "".
type GroupStats struct {
	Topic, OriginalTopic, Reason, ErrorClass, Group, Fingerprint string
	// Schema is the group's BySchema value.
	Schema string
	// Cause, Topics and Example are set when grouped by fingerprint: the error class and
	// normalised message, the original topics the cause occurred on (sorted, at most 100),
	// and the address of the group's first dead letter (in JSON as fields, topic, partition
	// and offset, as every record is given).
	Cause   string
	Topics  []string
	Example kafka.RecordAddress
	// Count is the number of dead letters in the group.
	Count int64
	// Oldest and Newest are the earliest and latest dead-letter timestamps (zero when no
	// record had one).
	Oldest, Newest time.Time
	// InWindow counts the dead letters in the rate window, and RatePerHour is InWindow over
	// the window's length in hours; both 0 without a window.
	InWindow    int64
	RatePerHour float64
	// Statuses counts the group's dead letters by status when they were added with
	// AddStatus; nil otherwise.
	Statuses *StatusCounts

	by []StatsKey
}

// By returns the keys the group was made by.
func (g GroupStats) By() []StatsKey { return slices.Clone(g.by) }

// Value returns the group's value of k.
func (g GroupStats) Value(k StatsKey) string {
	switch k {
	case ByTopic:
		return g.Topic
	case ByOriginalTopic:
		return g.OriginalTopic
	case ByReason:
		return g.Reason
	case ByErrorClass:
		return g.ErrorClass
	case ByGroup:
		return g.Group
	case BySchema:
		return g.Schema
	case ByFingerprint:
		return g.Fingerprint
	}
	return ""
}

// MarshalJSON writes the grouped-by fields in the order of the grouping (fingerprint followed
// by cause, topics and example), then count, oldest,
// newest (null when unknown), in_window and rate_per_hour, then status when Statuses is set.
func (g GroupStats) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(name string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		name2, _ := json.Marshal(name)
		b.Write(name2)
		b.WriteByte(':')
		b.Write(enc)
		return nil
	}
	timeOrNil := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	for _, k := range g.by {
		if err := field(string(k), g.Value(k)); err != nil {
			return nil, err
		}
		if k != ByFingerprint {
			continue
		}
		topics := g.Topics
		if topics == nil {
			topics = []string{}
		}
		for _, f := range []struct {
			name string
			v    any
		}{{"cause", g.Cause}, {"topics", topics}, {"example", g.Example}} {
			if err := field(f.name, f.v); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range []struct {
		name string
		v    any
	}{
		{"count", g.Count},
		{"oldest", timeOrNil(g.Oldest)},
		{"newest", timeOrNil(g.Newest)},
		{"in_window", g.InWindow},
		{"rate_per_hour", g.RatePerHour},
		{"status", g.Statuses},
	} {
		if f.name == "status" && g.Statuses == nil {
			continue
		}
		if err := field(f.name, f.v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// StatusCounts counts dead letters by status.
type StatusCounts struct {
	Pending  int64 `json:"pending"`
	Replayed int64 `json:"replayed"`
	Resolved int64 `json:"resolved"`
	Stale    int64 `json:"stale"`
	Unknown  int64 `json:"unknown"`
}

// Of is the count of st (a status that is not one of Statuses: Unknown).
func (c StatusCounts) Of(st Status) int64 {
	switch st {
	case StatusPending:
		return c.Pending
	case StatusReplayed:
		return c.Replayed
	case StatusResolved:
		return c.Resolved
	case StatusStale:
		return c.Stale
	}
	return c.Unknown
}

// Add counts one status; a status that is not one of Statuses counts as unknown.
func (c *StatusCounts) Add(st Status) {
	switch st {
	case StatusPending:
		c.Pending++
	case StatusReplayed:
		c.Replayed++
	case StatusResolved:
		c.Resolved++
	case StatusStale:
		c.Stale++
	default:
		c.Unknown++
	}
}
