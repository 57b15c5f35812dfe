package dlq

import (
	"strconv"
	"strings"
	"time"
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

var wolverineConvention = convention{
	name: ConventionWolverine, read: (*headerReader).wolverine,
	doc: conventionDoc{
		title:  "Wolverine",
		writer: "Wolverine (.NET)",
		errors: "`exception-type`, `exception-message`, `exception-stack`",
		reason: "serializer: malformed; no handler: unsupported; else exhausted",
		other:  "failed at (`failed-at`, ISO 8601 or epoch ms); event id `id`",
	},
}

var (
	hWolverineDestination = declare(ConventionWolverine, WolverineDestination, routeTopic|endpointURI|repeats)
	hWolverinePartition   = declare(ConventionWolverine, WolverinePartition, routePartition)
	hWolverineOffset      = declare(ConventionWolverine, WolverineOffset, routeOffset)
	hWolverineType        = declare(ConventionWolverine, WolverineExceptionType, repeats)
	hWolverineMessage     = declare(ConventionWolverine, WolverineExceptionMessage, repeats)
	hWolverineStack       = declare(ConventionWolverine, WolverineExceptionStack, 0)
	hWolverineFailedAt    = declare(ConventionWolverine, WolverineFailedAt, 0)
)

// wolverine reads Wolverine's dead letters beyond the route. Reason: a class rule (a
// serializer's exception, no handler for the message type), else exhausted: Wolverine moves a
// message to its dead letters when its error policy gives up.
func (p *headerReader) wolverine() {
	d := p.d
	d.ErrorClass = p.text(hWolverineType, p.last)
	d.ErrorMessage = p.text(hWolverineMessage, p.last)
	d.StackTrace = p.text(hWolverineStack, p.last)
	if v, ok := p.last(hWolverineFailedAt); ok && !p.noTimes {
		s := strings.TrimSpace(p.textOf(hWolverineFailedAt, v))
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			t = t.UTC()
			d.FailedAt = &t
		} else if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			d.FailedAt = p.epochMillis(hWolverineFailedAt, n)
		} else {
			p.problemf(hWolverineFailedAt, "not an ISO 8601 time nor epoch milliseconds: %s", quote(s))
		}
	}
	p.fallbackReason = ReasonExhausted
}
