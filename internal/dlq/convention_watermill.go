package dlq

import "cmp"

// Watermill's PoisonQueue middleware (metadata, which its Kafka marshaler writes as headers).
const (
	WatermillTopic      = "topic_poisoned"
	WatermillHandler    = "handler_poisoned"
	WatermillSubscriber = "subscriber_poisoned"
	WatermillReason     = "reason_poisoned"
)

var watermillConvention = convention{
	name: ConventionWatermill, read: (*headerReader).watermill,
	doc: conventionDoc{
		title:  "Watermill",
		writer: "Watermill's `PoisonQueue` middleware",
		errors: "`reason_poisoned` (the message)",
		reason: "unknown (free text), unless a class rule says otherwise",
		other:  "handler (else subscriber); event id `_watermill_message_uuid`",
	},
}

var (
	hWatermillTopic      = declare(ConventionWatermill, WatermillTopic, routeTopic|repeats)
	hWatermillHandler    = declare(ConventionWatermill, WatermillHandler, repeats)
	hWatermillSubscriber = declare(ConventionWatermill, WatermillSubscriber, repeats)
	hWatermillReason     = declare(ConventionWatermill, WatermillReason, repeats)
)

// watermill reads Watermill's poison queue beyond the route. Its reason is the handler's error
// as free text, which names no class: the reason is unknown unless a class rule says otherwise.
func (p *headerReader) watermill() {
	d := p.d
	d.Handler = cmp.Or(p.text(hWatermillHandler, p.last), p.text(hWatermillSubscriber, p.last))
	d.ErrorMessage = p.text(hWatermillReason, p.last)
}
