package dlq

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// ReasonUnknown is the Filter.Reasons value that selects dead letters whose Reason is "".
const ReasonUnknown = "unknown"

// Filter selects dead letters, as `dlq list` flags do. A zero field does not filter; the set
// fields must all match.
type Filter struct {
	// Since and Until bound the dead letter's own timestamp: Since <= Timestamp < Until, the
	// same bounds kafka.Selection applies through the broker's time index.
	Since, Until time.Time
	// Reasons selects any of these reasons; ReasonUnknown selects the dead letters with none.
	Reasons []string
	// ErrorRegexp must match the error message, the error class or the root cause.
	ErrorRegexp *regexp.Regexp
	// OriginalTopic, Group and EventID must equal the dead letter's.
	OriginalTopic, Group, EventID string
	// Key must equal the record key byte for byte; nil does not filter (an empty non-nil Key
	// selects empty and absent keys).
	Key []byte
	// SchemaID must be the registry schema id of the value or the key (docs/design.md §3.6).
	SchemaID int
	// Fingerprint must equal the dead letter's failure cause (FingerprintOf(d).ID).
	Fingerprint string
}

// Selection is what a scan for f reads (ScanOptions.Selection): its window, through the
// broker's time index.
func (f *Filter) Selection() kafka.Selection {
	return kafka.Selection{Since: f.Since, Until: f.Until}
}

// Match reports whether d passes every set field of f.
func (f *Filter) Match(d *DeadLetter) bool {
	if !f.Since.IsZero() && d.Timestamp.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !d.Timestamp.Before(f.Until) {
		return false
	}
	if len(f.Reasons) > 0 && !f.matchReason(d.Reason) {
		return false
	}
	if f.ErrorRegexp != nil && !f.ErrorRegexp.MatchString(d.ErrorMessage) && !f.ErrorRegexp.MatchString(d.ErrorClass) &&
		!f.ErrorRegexp.MatchString(d.RootCause) {
		return false
	}
	if f.OriginalTopic != "" && d.OriginalTopic != f.OriginalTopic {
		return false
	}
	if f.Group != "" && d.Group != f.Group {
		return false
	}
	if f.EventID != "" && d.EventID != f.EventID {
		return false
	}
	if f.Key != nil && !bytes.Equal(d.Key, f.Key) {
		return false
	}
	if f.SchemaID != 0 && (d.ValueSchema == nil || d.ValueSchema.ID != f.SchemaID) && (d.KeySchema == nil || d.KeySchema.ID != f.SchemaID) {
		return false
	}
	if f.Fingerprint != "" && FingerprintOf(*d).ID != f.Fingerprint {
		return false
	}
	return true
}

func (f *Filter) matchReason(reason string) bool {
	for _, r := range f.Reasons {
		if r == reason || reason == "" && r == ReasonUnknown {
			return true
		}
	}
	return false
}

// FilterSpec is a dead-letter filter as an operator writes it: the filter flags of `dlq list`,
// `dlq stats`, `dlq show` and `replay` (cmdutil.DLQFilterFlags), and the selection a replay
// journals (replay.Spec embeds it, so these are also its JSON fields). Compile is the one
// check of it, so that every command refuses the same values with the same words.
type FilterSpec struct {
	// EventID selects the dead letters carrying this event id.
	EventID string `json:"event_id,omitempty"`
	// Reasons selects any of these reasons (Reasons, or ReasonUnknown).
	Reasons []string `json:"reasons,omitempty"`
	// Error is a regular expression on the error message, class or root cause.
	Error         string `json:"error,omitempty"`
	OriginalTopic string `json:"original_topic,omitempty"`
	Group         string `json:"group,omitempty"`
	// Key is the record key byte for byte (Filter.Key): nil does not filter, empty selects
	// empty and absent keys.
	Key []byte `json:"key,omitzero"`
	// SchemaID selects the dead letters whose value or key names this schema registry id;
	// 0 does not filter.
	SchemaID int `json:"schema_id,omitempty"`
	// Fingerprint selects the dead letters of one failure cause (FingerprintOf).
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Compile checks s and returns its Filter (without a time window: Since and Until are the
// caller's). A value no dead letter could have is a usage error naming its flag.
func (s FilterSpec) Compile() (Filter, error) {
	f := Filter{OriginalTopic: s.OriginalTopic, Group: s.Group, EventID: s.EventID, Key: s.Key, SchemaID: s.SchemaID, Fingerprint: s.Fingerprint}
	for _, r := range s.Reasons {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if r != ReasonUnknown && !slices.Contains(Reasons, r) {
			return Filter{}, fwerr.Usagef("--dlq-reason %q: want one of %s or %s", r, strings.Join(Reasons, ", "), ReasonUnknown)
		}
		f.Reasons = append(f.Reasons, r)
	}
	if s.Error != "" {
		re, err := regexp.Compile(s.Error)
		if err != nil {
			return Filter{}, fwerr.Usagef("--error %q is not a regular expression: %v", s.Error, err)
		}
		f.ErrorRegexp = re
	}
	if p := kafka.TopicProblem(s.OriginalTopic); s.OriginalTopic != "" && p != "" {
		return Filter{}, fwerr.Usagef("--original-topic %q: %s", s.OriginalTopic, p)
	}
	if s.SchemaID < 0 {
		return Filter{}, fwerr.Usagef("--schema-id %d: a schema registry id is 1 or more", s.SchemaID)
	}
	if s.Fingerprint != "" && !ValidFingerprint(s.Fingerprint) {
		return Filter{}, fwerr.Usagef("--fingerprint %q: a fingerprint is 12 hexadecimal digits, as dlq stats --by fingerprint shows them", s.Fingerprint)
	}
	return f, nil
}
