package dlq

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The header names of fieldwork's own dead letters and of a replay, and the ids libraries put
// on every message. Every other convention's keys are named in its declaration
// (convention_*.go).

// fieldwork's own dead-letter headers (docs/design.md §3.2). All values are UTF-8 text; times are
// RFC 3339 in UTC with up to nanosecond precision, numbers are decimal.
const (
	HeaderPrefix        = "fw.dlq."
	HeaderTopic         = "fw.dlq.topic"           // the original record's topic
	HeaderPartition     = "fw.dlq.partition"       // its partition
	HeaderOffset        = "fw.dlq.offset"          // its offset
	HeaderTimestamp     = "fw.dlq.timestamp"       // its timestamp
	HeaderGroup         = "fw.dlq.group"           // the consumer group that gave up on it
	HeaderHandler       = "fw.dlq.handler"         // the handler that failed
	HeaderEventID       = "fw.dlq.event_id"        // the event id, when readable
	HeaderReason        = "fw.dlq.reason"          // one of the Reason* values
	HeaderError         = "fw.dlq.error"           // the error message
	HeaderErrorClass    = "fw.dlq.error_class"     // the failure's class, e.g. http_422 (a handler's word)
	HeaderSchema        = "fw.dlq.schema"          // the registry schema the value was read with when that failed, e.g. "id 42"
	HeaderAttempts      = "fw.dlq.attempts"        // how many times the handler was tried
	HeaderFirstFailedAt = "fw.dlq.first_failed_at" // when the first attempt failed
	HeaderFailedAt      = "fw.dlq.failed_at"       // when the last attempt failed

	// A bounded copy: written by the consumer when the whole dead letter could not be
	// produced (larger than the dead-letter topic's max.message.bytes, or refused). Its value
	// is then the original value's first bytes, possibly none; key, headers and every other
	// fw.dlq.* header are the original's as usual. See package consumer's documentation.
	HeaderValueOmitted = "fw.dlq.value_omitted" // why the value is not whole: the limit or the producer's error
	HeaderValueBytes   = "fw.dlq.value_bytes"   // the original value's length in bytes, decimal
)

// The values of fw.dlq.reason.
const (
	// ReasonMalformed: the record is not a recognisable event (envelope.MalformedError).
	ReasonMalformed = "malformed"
	// ReasonUnsupported: a well-formed event the handler has no code for (unknown type or
	// schema version).
	ReasonUnsupported = "unsupported"
	// ReasonRejected: the handler refused the event permanently.
	ReasonRejected = "rejected"
	// ReasonExhausted: a temporary failure outlasted its retries.
	ReasonExhausted = "exhausted"
	// ReasonParked: an operator moved a stuck consumer group past the record (`groups skip`);
	// fw.dlq.error holds the operator's reason, fw.dlq.group the group.
	ReasonParked = "parked"
)

// Reasons lists the fw.dlq.reason values in a stable order.
var Reasons = []string{ReasonMalformed, ReasonUnsupported, ReasonRejected, ReasonExhausted, ReasonParked}

// Replay provenance headers (docs/design.md §3.3), written by the replay package on every replayed
// record. They are not dead-letter headers: a replay keeps them.
const (
	ReplayHeaderPrefix = "fw.replay."
	ReplayHeaderID     = "fw.replay.id"     // the replay run
	ReplayHeaderSource = "fw.replay.source" // topic/partition/offset the record was read from
	ReplayHeaderCount  = "fw.replay.count"  // previous count + 1, decimal
	ReplayHeaderAt     = "fw.replay.at"     // when it was replayed, RFC 3339
	ReplayHeaderReason = "fw.replay.reason" // why, as the operator said
	// ReplayHeaderFor names the one consumer group a replayed record is for: every other
	// group skips it without a marker (docs/design.md §3.3).
	ReplayHeaderFor = "fw.replay.for"
	// ReplayHeaderEdited is set on a record whose value or headers the operator edited
	// before the replay: the topic/partition/offset of the dead letter it was edited from.
	ReplayHeaderEdited = "fw.replay.edited"
)

// WrittenByReplay reports whether r is a record a replay wrote: it carries fw.replay.id (ASCII
// case ignored). Such a record was placed by the replay's rule (its original partition, or
// the partitioner the replay chose), not by its topic's producers.
func WrittenByReplay(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Key, ReplayHeaderID) {
			return true
		}
	}
	return false
}

// ReplayedFor is the group a record's fw.replay.for names, "" when it names none (the record
// is for every group). The last such header wins, as everywhere headers are read.
func ReplayedFor(h []kgo.RecordHeader) string {
	for i := len(h) - 1; i >= 0; i-- {
		if strings.EqualFold(h[i].Key, ReplayHeaderFor) {
			return string(h[i].Value)
		}
	}
	return ""
}

// Ids that libraries put on every message, read as the event id when neither fieldwork's
// header nor the envelope has one (docs/design.md §3.2). They are the message's own headers,
// not dead-letter headers: a replay keeps them.
const (
	WatermillMessageUUID = "_watermill_message_uuid" // Watermill's message UUID
	SpringMessageID      = "kafka_messageId"         // Spring's message id
	MessageIDHeader      = "id"                      // Debezium's outbox event id; Spring's MessageHeaders id
)

// IsDeadLetterHeader reports whether key is a dead-letter header of any convention the package
// knows: a key a convention declares, or one that starts with a convention's prefix (the
// conventions table in docs/design.md §3.2 lists them). Keys compare ignoring ASCII case.
// Replay provenance headers (fw.replay.*) are not dead-letter headers, nor is anything else the
// original producer wrote.
func IsDeadLetterHeader(key string) bool {
	return conventionOfHeader(asciiLower(key)) != ""
}

// StripDeadLetterHeaders returns the headers that are not dead-letter headers, in their order,
// sharing their values with h. It returns a new slice; h is not modified. The result is nil
// when nothing is left.
func StripDeadLetterHeaders(h []kgo.RecordHeader) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for _, hd := range h {
		if !IsDeadLetterHeader(hd.Key) {
			out = append(out, hd)
		}
	}
	return out
}
