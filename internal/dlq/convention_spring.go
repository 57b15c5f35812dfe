package dlq

import (
	"cmp"
	"strings"
)

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

var springConvention = convention{
	name: ConventionSpring, routeFirst: true, read: (*headerReader).spring,
	prefixes: []string{SpringPrefix, SpringRetryPrefix, SpringRetryOriginalPrefix, SpringRetryExceptionPrefix,
		SpringRetryKeyExceptionPrefix},
	doc: conventionDoc{
		title:  "Spring Kafka and its retry topics",
		writer: "Spring Kafka's `DeadLetterPublishingRecoverer` and retry topics (`@RetryableTopic`)",
		errors: "`-exception-cause-fqcn` (over Spring's `ListenerExecutionFailedException` wrapper), else `-exception-fqcn`, else the key exception's; `-message`, `-stacktrace`; the retry topics' without `dlt-`",
		reason: "key or deserialization exception: malformed; Spring's not-retryable classes; else exhausted",
		other:  "`kafka_dlt-original-consumer-group`; the retry chain (`retry_topics`: the later original-topic headers); `retry_topic-attempts`",
	},
}

var (
	hSpringTopic              = declare(ConventionSpring, SpringOriginalTopic, routeTopic|repeats)
	hSpringRetryTopic         = declare(ConventionSpring, SpringRetryOriginalTopic, routeTopic|repeats)
	hSpringPartition          = declare(ConventionSpring, SpringOriginalPartition, routePartition|bigEndian)
	hSpringRetryPartition     = declare(ConventionSpring, SpringRetryOriginalPartition, routePartition|bigEndian)
	hSpringOffset             = declare(ConventionSpring, SpringOriginalOffset, routeOffset|bigEndian)
	hSpringRetryOffset        = declare(ConventionSpring, SpringRetryOriginalOffset, routeOffset|bigEndian)
	hSpringTimestamp          = declare(ConventionSpring, SpringOriginalTimestamp, routeTimestamp|bigEndian)
	hSpringRetryTimestamp     = declare(ConventionSpring, SpringRetryOriginalTimestamp, routeTimestamp|bigEndian)
	hSpringGroup              = declare(ConventionSpring, SpringOriginalConsumerGroup, repeats)
	hSpringFQCN               = declare(ConventionSpring, SpringExceptionFQCN, repeats)
	hSpringCauseFQCN          = declare(ConventionSpring, SpringExceptionCauseFQCN, repeats)
	hSpringMessage            = declare(ConventionSpring, SpringExceptionMessage, repeats)
	hSpringStacktrace         = declare(ConventionSpring, SpringExceptionStacktrace, 0)
	hSpringKeyFQCN            = declare(ConventionSpring, SpringKeyExceptionFQCN, repeats)
	hSpringKeyMessage         = declare(ConventionSpring, SpringKeyExceptionMessage, repeats)
	hSpringKeyStacktrace      = declare(ConventionSpring, SpringKeyExceptionStack, 0)
	hSpringRetryAttempts      = declare(ConventionSpring, SpringRetryAttempts, 0)
	hSpringRetryFQCN          = declare(ConventionSpring, SpringRetryExceptionFQCN, repeats)
	hSpringRetryCauseFQCN     = declare(ConventionSpring, SpringRetryExceptionCauseFQCN, repeats)
	hSpringRetryMessage       = declare(ConventionSpring, SpringRetryExceptionMessage, repeats)
	hSpringRetryStacktrace    = declare(ConventionSpring, SpringRetryExceptionStack, 0)
	hSpringRetryKeyFQCN       = declare(ConventionSpring, SpringRetryKeyExceptionFQCN, repeats)
	hSpringRetryKeyMessage    = declare(ConventionSpring, SpringRetryKeyExceptionMsg, repeats)
	hSpringRetryKeyStacktrace = declare(ConventionSpring, SpringRetryKeyExceptionStack, 0)
)

// spring reads Spring Kafka's dead letters beyond the route: the recoverer's kafka_dlt-*
// headers, else the retry topics' kafka_original-* and kafka_exception-* (the same encodings).
// Reason: a key that failed to deserialize, or a class of Spring's default not-retryable
// exceptions, names it (classReason); anything else Spring retried until its back-off ran
// out: exhausted.
func (p *headerReader) spring() {
	d := p.d
	d.RetryTopics = p.retryChain(p.either(hSpringTopic, hSpringRetryTopic))
	d.Group = p.text(hSpringGroup, p.first)
	class := cmp.Or(p.text(hSpringFQCN, p.last), p.text(hSpringRetryFQCN, p.last))
	if cause := cmp.Or(p.text(hSpringCauseFQCN, p.last), p.text(hSpringRetryCauseFQCN, p.last)); cause != "" {
		class = cause
	}
	keyClass := cmp.Or(p.text(hSpringKeyFQCN, p.last), p.text(hSpringRetryKeyFQCN, p.last))
	d.ErrorClass = cmp.Or(class, keyClass)
	d.ErrorMessage = cmp.Or(p.text(hSpringMessage, p.last), p.text(hSpringRetryMessage, p.last),
		p.text(hSpringKeyMessage, p.last), p.text(hSpringRetryKeyMessage, p.last))
	d.StackTrace = cmp.Or(p.text(hSpringStacktrace, p.last), p.text(hSpringRetryStacktrace, p.last),
		p.text(hSpringKeyStacktrace, p.last), p.text(hSpringRetryKeyStacktrace, p.last))
	if keyClass != "" {
		d.Reason = ReasonMalformed
	}
	if v, ok := p.last(hSpringRetryAttempts); ok {
		// Spring has written the attempts both as a 4-byte int and as a BigInteger's minimal
		// big-endian two's complement bytes; both are big-endian.
		if n, ok := p.bigEndianAnyWidth(hSpringRetryAttempts, v); ok {
			if n < 0 || n > 1<<31-1 {
				p.problemf(hSpringRetryAttempts, "attempts %d out of range", n)
			} else {
				d.Attempts = int(n)
			}
		}
	}
	p.fallbackReason = ReasonExhausted
}

// retryChain lists the topics a Spring dead letter passed through after its original one: the
// values of the original-topic headers (id's key) after the first, in order; nil when there is
// one or none.
func (p *headerReader) retryChain(id hdr) []string {
	if p.firstAt[id] == 0 || p.firstAt[id] == p.lastAt[id] {
		return nil
	}
	key := asciiLower(p.raw[p.firstAt[id]-1].Key)
	var chain []string
	for _, h := range p.raw[p.firstAt[id]:] {
		if asciiLower(h.Key) == key {
			chain = append(chain, strings.ToValidUTF8(string(h.Value), "\uFFFD"))
		}
	}
	return chain
}
