package dlq

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Every header name the package reads or writes is named here, in one place.

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
	// fw.dlq.* header are the original's as usual. See internal/consume's documentation.
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

// Spring Kafka's DeadLetterPublishingRecoverer. Partition is a 4-byte big-endian int, offset
// and timestamp (epoch milliseconds) are 8-byte big-endian ints, the rest UTF-8 text. The key
// exception headers are written instead of the exception headers when the key failed to
// deserialize. The retry_topic-* headers come from Spring's non-blocking retries.
//
// Spring's retry topics (@RetryableTopic, RetryTopicConfigurationBuilder) write the same
// headers without "dlt-" (kafka_original-topic, kafka_exception-fqcn, …), with the same
// encodings, plus kafka_dlt-original-consumer-group; a record that passed through several
// retry topics carries one original-topic header per hop, the true original first.
const (
	SpringPrefix                = "kafka_dlt-"
	SpringOriginalTopic         = "kafka_dlt-original-topic"
	SpringOriginalPartition     = "kafka_dlt-original-partition"
	SpringOriginalOffset        = "kafka_dlt-original-offset"
	SpringOriginalTimestamp     = "kafka_dlt-original-timestamp"
	SpringOriginalTimestampType = "kafka_dlt-original-timestamp-type"
	SpringOriginalConsumerGroup = "kafka_dlt-original-consumer-group"
	SpringExceptionFQCN         = "kafka_dlt-exception-fqcn"
	SpringExceptionCauseFQCN    = "kafka_dlt-exception-cause-fqcn"
	SpringExceptionMessage      = "kafka_dlt-exception-message"
	SpringExceptionStacktrace   = "kafka_dlt-exception-stacktrace"
	SpringKeyExceptionFQCN      = "kafka_dlt-key-exception-fqcn"
	SpringKeyExceptionMessage   = "kafka_dlt-key-exception-message"
	SpringKeyExceptionStack     = "kafka_dlt-key-exception-stacktrace"
	SpringRetryPrefix           = "retry_topic-"
	SpringRetryAttempts         = "retry_topic-attempts"

	SpringRetryOriginalPrefix     = "kafka_original-"
	SpringRetryExceptionPrefix    = "kafka_exception-"
	SpringRetryKeyExceptionPrefix = "kafka_key-exception-"
	SpringRetryOriginalTopic      = "kafka_original-topic"
	SpringRetryOriginalPartition  = "kafka_original-partition"
	SpringRetryOriginalOffset     = "kafka_original-offset"
	SpringRetryOriginalTimestamp  = "kafka_original-timestamp"
	SpringRetryExceptionFQCN      = "kafka_exception-fqcn"
	SpringRetryExceptionCauseFQCN = "kafka_exception-cause-fqcn"
	SpringRetryExceptionMessage   = "kafka_exception-message"
	SpringRetryExceptionStack     = "kafka_exception-stacktrace"
	SpringRetryKeyExceptionFQCN   = "kafka_key-exception-fqcn"
	SpringRetryKeyExceptionMsg    = "kafka_key-exception-message"
	SpringRetryKeyExceptionStack  = "kafka_key-exception-stacktrace"
)

// Kafka Connect's dead-letter queue reporter (errors.deadletterqueue.context.headers.enable).
// All values are UTF-8 text.
const (
	ConnectPrefix              = "__connect.errors."
	ConnectTopic               = "__connect.errors.topic"
	ConnectPartition           = "__connect.errors.partition"
	ConnectOffset              = "__connect.errors.offset"
	ConnectConnectorName       = "__connect.errors.connector.name"
	ConnectTaskID              = "__connect.errors.task.id"
	ConnectStage               = "__connect.errors.stage"
	ConnectClassName           = "__connect.errors.class.name"
	ConnectExceptionClassName  = "__connect.errors.exception.class.name"
	ConnectExceptionMessage    = "__connect.errors.exception.message"
	ConnectExceptionStacktrace = "__connect.errors.exception.stacktrace"
)

// Watermill's PoisonQueue middleware (metadata, which its Kafka marshaler writes as headers).
const (
	WatermillTopic      = "topic_poisoned"
	WatermillHandler    = "handler_poisoned"
	WatermillSubscriber = "subscriber_poisoned"
	WatermillReason     = "reason_poisoned"
)

// SmallRye Reactive Messaging's Kafka dead-letter-queue failure strategy (Quarkus). All values
// are UTF-8 text. The deserialization-failure-* headers come from its failure handler and
// ride along on dead letters of records that could not be deserialized.
const (
	SmallRyePrefix                = "dead-letter-"
	SmallRyeTopic                 = "dead-letter-topic"
	SmallRyePartition             = "dead-letter-partition"
	SmallRyeOffset                = "dead-letter-offset"
	SmallRyeReason                = "dead-letter-reason"
	SmallRyeCause                 = "dead-letter-cause"
	SmallRyeExceptionClassName    = "dead-letter-exception-class-name"
	SmallRyeCauseClassName        = "dead-letter-cause-class-name"
	SmallRyeDeserializationPrefix = "deserialization-failure-"
	SmallRyeDeserializationReason = "deserialization-failure-reason"
)

// Karafka's dead-letter queue (Ruby). All values are text: numbers decimal. Karafka writes the
// original partition as the dead letter's key and the original key in original_key (empty when
// the record had none). Karafka before 2.4 wrote the same headers named source_*.
const (
	KarafkaTopic         = "original_topic"
	KarafkaPartition     = "original_partition"
	KarafkaOffset        = "original_offset"
	KarafkaConsumerGroup = "original_consumer_group"
	KarafkaKey           = "original_key"
	KarafkaAttempts      = "original_attempts"
	KarafkaOldTopic      = "source_topic"
	KarafkaOldPartition  = "source_partition"
	KarafkaOldOffset     = "source_offset"
	KarafkaOldGroup      = "source_consumer_group"
	KarafkaOldKey        = "source_key"
	KarafkaOldAttempts   = "source_attempts"
)

// Wolverine's (.NET) dead letters on Kafka. All values are text; original-destination is the
// endpoint's URI (kafka://topic/NAME) or a topic name, failed-at an ISO 8601 time or epoch
// milliseconds.
const (
	WolverineExceptionType    = "exception-type"
	WolverineExceptionMessage = "exception-message"
	WolverineExceptionStack   = "exception-stack"
	WolverineDestination      = "original-destination"
	WolverinePartition        = "original-partition"
	WolverineOffset           = "original-offset"
	WolverineFailedAt         = "failed-at"
)

// Confluent's data-contract rules (the DLQ rule action of the schema registry clients): a
// record a rule refused, written by the serializer (mode WRITE, the record never reached its
// topic) or the deserializer (READ). All values are UTF-8 text.
const (
	RulePrefix    = "__rule."
	RuleName      = "__rule.name"
	RuleMode      = "__rule.mode"
	RuleSubject   = "__rule.subject"
	RuleTopic     = "__rule.topic"
	RuleException = "__rule.exception"
)

// Ids that libraries put on every message, read as the event id when neither fieldwork's
// header nor the envelope has one (docs/design.md §3.2). They are the message's own headers,
// not dead-letter headers: a replay keeps them.
const (
	WatermillMessageUUID = "_watermill_message_uuid" // Watermill's message UUID
	SpringMessageID      = "kafka_messageId"         // Spring's message id
	MessageIDHeader      = "id"                      // Debezium's outbox event id; Spring's MessageHeaders id
)

// IsDeadLetterHeader reports whether key is a dead-letter header of any convention the package
// knows (the conventions table: fw.dlq.*, Spring's kafka_dlt-*, kafka_original-*,
// kafka_exception-*, kafka_key-exception-* and retry_topic-*, Kafka Connect's
// __connect.errors.*, Watermill's *_poisoned, SmallRye's dead-letter-* and
// deserialization-failure-*, Karafka's original_* and source_*, Wolverine's exception-* and
// original-*, the data-contract __rule.*). Keys compare ignoring ASCII case. Replay provenance
// headers (fw.replay.*) are not dead-letter headers, nor is anything else the original
// producer wrote.
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
