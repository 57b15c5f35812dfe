package dlq

import "cmp"

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

var dataContractConvention = convention{
	name: ConventionDataContract, prefixes: []string{RulePrefix}, read: (*headerReader).dataContract,
	doc: conventionDoc{
		title:  "Confluent's data-contract rules",
		writer: "Confluent's data-contract rules, DLQ action",
		errors: "the rule as handler and class (`rule NAME (MODE) on SUBJECT`), `__rule.exception` as message",
		reason: "rejected, unless the exception names a deserialization failure",
		other:  "the schema expected (`__rule.subject`)",
	},
}

var (
	hRuleTopic     = declare(ConventionDataContract, RuleTopic, routeTopic|repeats)
	hRuleName      = declare(ConventionDataContract, RuleName, repeats)
	hRuleMode      = declare(ConventionDataContract, RuleMode, repeats)
	hRuleSubject   = declare(ConventionDataContract, RuleSubject, repeats)
	hRuleException = declare(ConventionDataContract, RuleException, repeats)
)

// dataContract reads the dead letters of Confluent's data-contract DLQ rule action beyond the
// route: a record a rule refused. The topic is the one it was written to or read from; no
// partition or offset (a refused write never had one). Reason: rejected, unless the exception
// names a deserialization failure.
func (p *headerReader) dataContract() {
	d := p.d
	name, mode := p.text(hRuleName, p.last), p.text(hRuleMode, p.last)
	d.Handler = name
	d.ErrorClass = "rule " + cmp.Or(name, "?")
	if mode != "" {
		d.ErrorClass += " (" + mode + ")"
	}
	d.ErrorMessage = p.text(hRuleException, p.last)
	if subject := p.text(hRuleSubject, p.last); subject != "" {
		d.ErrorClass += " on " + subject
		d.ExpectedSchema = "subject " + subject
	}
	p.fallbackReason = ReasonRejected
}
