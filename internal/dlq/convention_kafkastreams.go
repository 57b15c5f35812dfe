package dlq

// Kafka Streams' dead-letter queue (KIP-1034, errors.dead.letter.queue.topic.name): the
// record its exception handlers give up on, with these headers. All values are UTF-8 text,
// numbers decimal; exception is the exception's toString() ("class: message").
const (
	StreamsPrefix     = "__streams.errors."
	StreamsException  = "__streams.errors.exception"
	StreamsMessage    = "__streams.errors.message"
	StreamsStacktrace = "__streams.errors.stacktrace"
	StreamsTopic      = "__streams.errors.topic"
	StreamsPartition  = "__streams.errors.partition"
	StreamsOffset     = "__streams.errors.offset"
)

var kafkaStreamsConvention = convention{
	name: ConventionKafkaStreams, prefixes: []string{StreamsPrefix}, read: (*headerReader).kafkaStreams,
	doc: conventionDoc{
		title:  "Kafka Streams",
		writer: "Kafka Streams' exception handlers (KIP-1034)",
		errors: "the class of `__streams.errors.exception` (`class: message`), `__streams.errors.message`, `__streams.errors.stacktrace`",
		reason: "deserialization: malformed; else rejected",
	},
}

var (
	hStreamsTopic      = declare(ConventionKafkaStreams, StreamsTopic, routeTopic|repeats)
	hStreamsPartition  = declare(ConventionKafkaStreams, StreamsPartition, routePartition)
	hStreamsOffset     = declare(ConventionKafkaStreams, StreamsOffset, routeOffset)
	hStreamsException  = declare(ConventionKafkaStreams, StreamsException, repeats)
	hStreamsMessage    = declare(ConventionKafkaStreams, StreamsMessage, repeats)
	hStreamsStacktrace = declare(ConventionKafkaStreams, StreamsStacktrace, 0)
)

// kafkaStreams reads Kafka Streams' dead letters beyond the route. Reason: a class rule (a
// deserialization exception), else rejected: the handler gave up on the record without retrying
// it.
func (p *headerReader) kafkaStreams() {
	d := p.d
	d.ErrorClass = rootCauseClass(p.text(hStreamsException, p.last))
	d.ErrorMessage = p.text(hStreamsMessage, p.last)
	d.StackTrace = p.text(hStreamsStacktrace, p.last)
	p.fallbackReason = ReasonRejected
}
