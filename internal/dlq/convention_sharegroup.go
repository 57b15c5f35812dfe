package dlq

import (
	"strings"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Kafka share groups' dead letters (KIP-1191, Apache Kafka 4.4 at share.version=2): the broker
// itself writes one to the group's errors.deadletterqueue.topic.name when a member rejects a
// record or the record's delivery count reaches share.delivery.count.limit. Every header is
// UTF-8 text, numbers decimal. With errors.deadletterqueue.copy.record.enable off (the default)
// its key and value are null: the dead letter is the original record's coordinates only
// (DeadLetter.CoordinatesOnly), and the record itself is read from the source topic
// (OriginalOf). With copy on, key and value are copied; the original headers and timestamp
// are not. A dead letter goes to the DLQ partition original partition modulo the DLQ's
// partition count.
// The header names are internal/kafka's (the broker's contract, named once there).
const (
	SharePrefix        = "__dlq.errors."
	ShareTopic         = kafka.ShareDLQHeaderTopic
	SharePartition     = kafka.ShareDLQHeaderPartition
	ShareOffset        = kafka.ShareDLQHeaderOffset
	ShareGroup         = kafka.ShareDLQHeaderGroup
	ShareDeliveryCount = kafka.ShareDLQHeaderDeliveryCount
	ShareMessage       = kafka.ShareDLQHeaderMessage
)

// The two messages the broker writes in __dlq.errors.message.
const (
	ShareMessageRejected  = kafka.ShareDLQMessageRejected
	ShareMessageExhausted = kafka.ShareDLQMessageExhausted
)

var shareGroupConvention = convention{
	name: ConventionShareGroup, prefixes: []string{SharePrefix}, read: (*headerReader).shareGroup,
	doc: conventionDoc{
		title:  "Kafka share groups (the broker's dead-letter queue)",
		writer: "the Kafka broker for a share group (KIP-1191, `errors.deadletterqueue.topic.name`)",
		errors: "`__dlq.errors.message` (no class: the broker names none)",
		reason: "`Offset rejected by client.`: rejected; `Offset delivery count exceeded the threshold.`: exhausted",
		other:  "group `__dlq.errors.group`; attempts `__dlq.errors.delivery.count`; with copy off, key and value null: the original record is read from its coordinates",
	},
}

var (
	hShareTopic     = declare(ConventionShareGroup, ShareTopic, routeTopic|repeats)
	hSharePartition = declare(ConventionShareGroup, SharePartition, routePartition)
	hShareOffset    = declare(ConventionShareGroup, ShareOffset, routeOffset)
	hShareGroup     = declare(ConventionShareGroup, ShareGroup, repeats)
	hShareCount     = declare(ConventionShareGroup, ShareDeliveryCount, 0)
	hShareMessage   = declare(ConventionShareGroup, ShareMessage, repeats)
)

// shareGroup reads a share group's dead letters beyond the route: the group, the delivery
// count as the attempts, the broker's message. Reason: a record a member rejected is
// rejected; one whose deliveries reached the limit (released or timed out every time) is
// exhausted. The broker writes no other message; any other one leaves the reason unknown,
// unless it names the rejection or the delivery count in other words.
func (p *headerReader) shareGroup() {
	d := p.d
	d.Group = p.text(hShareGroup, p.last)
	if n, ok := p.count(hShareCount); ok {
		d.Attempts = int(n)
	}
	d.ErrorMessage = p.text(hShareMessage, p.last)
	d.Reason = shareReason(d.ErrorMessage)
}

// shareReason maps the broker's __dlq.errors.message to a reason, "" when it names neither.
func shareReason(msg string) string {
	switch m := strings.ToLower(strings.TrimSpace(msg)); {
	case msg == ShareMessageRejected, strings.Contains(m, "rejected"):
		return ReasonRejected
	case msg == ShareMessageExhausted, strings.Contains(m, "delivery count"):
		return ReasonExhausted
	}
	return ""
}

// CoordinatesOnly reports whether d is a share group's dead letter written without a copy of
// the record (errors.deadletterqueue.copy.record.enable off): null key and value, the original
// record's coordinates only. Show and replay read the record from its coordinates (OriginalOf).
// A copied record whose key and value were both null reads the same, and its original is
// that very record.
func (d *DeadLetter) CoordinatesOnly() bool {
	return d.Convention == ConventionShareGroup && d.Key == nil && d.Value == nil
}
