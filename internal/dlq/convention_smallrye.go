package dlq

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

var smallRyeConvention = convention{
	name: ConventionSmallRye, routeFirst: true, read: (*headerReader).smallRye,
	prefixes: []string{SmallRyePrefix, SmallRyeDeserializationPrefix},
	doc: conventionDoc{
		title:  "SmallRye",
		writer: "SmallRye Reactive Messaging's (Quarkus) dead-letter-queue strategy",
		errors: "`dead-letter-exception-class-name`, `dead-letter-reason`, `dead-letter-cause` (the root cause)",
		reason: "deserialization: malformed; else rejected",
	},
}

var (
	hSmallRyeTopic                 = declare(ConventionSmallRye, SmallRyeTopic, routeTopic|repeats)
	hSmallRyePartition             = declare(ConventionSmallRye, SmallRyePartition, routePartition)
	hSmallRyeOffset                = declare(ConventionSmallRye, SmallRyeOffset, routeOffset)
	hSmallRyeReason                = declare(ConventionSmallRye, SmallRyeReason, repeats)
	hSmallRyeCause                 = declare(ConventionSmallRye, SmallRyeCause, repeats)
	hSmallRyeExceptionClass        = declare(ConventionSmallRye, SmallRyeExceptionClassName, repeats)
	hSmallRyeCauseClass            = declare(ConventionSmallRye, SmallRyeCauseClassName, repeats)
	hSmallRyeDeserializationReason = declare(ConventionSmallRye, SmallRyeDeserializationReason, 0)
)

// smallRye reads SmallRye's dead-letter-queue strategy beyond the route. Reason: a
// deserialization failure is malformed; anything else the application nacked: rejected.
func (p *headerReader) smallRye() {
	d := p.d
	d.ErrorClass = p.text(hSmallRyeExceptionClass, p.first)
	d.ErrorMessage = p.text(hSmallRyeReason, p.first)
	if cause := p.text(hSmallRyeCause, p.first); cause != "" && cause != d.ErrorMessage {
		if d.ErrorMessage == "" {
			d.ErrorMessage = cause
		} else {
			d.ErrorMessage += "; caused by: " + cause
		}
		if d.RootCause == "" {
			d.RootCause = cause
		}
	}
	_, deserialization := p.last(hSmallRyeDeserializationReason)
	if deserialization || isDeserializationClass(p.text(hSmallRyeCauseClass, p.first)) {
		d.Reason = ReasonMalformed
	}
	p.fallbackReason = ReasonRejected
}
