package dlq

import (
	"bytes"
	"regexp"
	"time"
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

// Match reports whether d passes every set field of f.
func (f Filter) Match(d DeadLetter) bool {
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
	if f.Fingerprint != "" && FingerprintOf(d).ID != f.Fingerprint {
		return false
	}
	return true
}

func (f Filter) matchReason(reason string) bool {
	for _, r := range f.Reasons {
		if r == reason || reason == "" && r == ReasonUnknown {
			return true
		}
	}
	return false
}
