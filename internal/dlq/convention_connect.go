package dlq

import "strings"

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

var connectConvention = convention{
	name: ConventionConnect, prefixes: []string{ConnectPrefix}, read: (*headerReader).connect,
	doc: conventionDoc{
		title:  "Kafka Connect",
		writer: "Kafka Connect's dead-letter queue reporter",
		errors: "`.exception.class.name`, `.exception.message`, `.exception.stacktrace`",
		reason: "converter stage: malformed; retriable: exhausted; else rejected",
		other:  "connector (handler), stage",
	},
}

var (
	hConnectTopic            = declare(ConventionConnect, ConnectTopic, routeTopic|repeats)
	hConnectPartition        = declare(ConventionConnect, ConnectPartition, routePartition)
	hConnectOffset           = declare(ConventionConnect, ConnectOffset, routeOffset)
	hConnectConnector        = declare(ConventionConnect, ConnectConnectorName, repeats)
	hConnectStage            = declare(ConventionConnect, ConnectStage, repeats)
	hConnectExceptionClass   = declare(ConventionConnect, ConnectExceptionClassName, repeats)
	hConnectExceptionMessage = declare(ConventionConnect, ConnectExceptionMessage, repeats)
	hConnectExceptionStack   = declare(ConventionConnect, ConnectExceptionStacktrace, 0)
)

// The Kafka Connect stages whose failures mean the record could not be read.
var connectConverterStages = map[string]bool{"KEY_CONVERTER": true, "VALUE_CONVERTER": true, "HEADER_CONVERTER": true}

// connect reads Kafka Connect's dead letters beyond the route. Reason: a converter stage is
// malformed; a retriable exception (Connect retried it for errors.retry.timeout) exhausted; any
// other failure (a transformation, the sink task) rejected.
func (p *headerReader) connect() {
	d := p.d
	d.Handler = p.text(hConnectConnector, p.last)
	d.ErrorClass = p.text(hConnectExceptionClass, p.last)
	d.ErrorMessage = p.text(hConnectExceptionMessage, p.last)
	d.StackTrace = p.text(hConnectExceptionStack, p.last)
	switch {
	case connectConverterStages[p.text(hConnectStage, p.last)]:
		d.Reason = ReasonMalformed
	case strings.HasSuffix(d.ErrorClass, "RetriableException"):
		d.Reason = ReasonExhausted
	}
	p.fallbackReason = ReasonRejected
}
