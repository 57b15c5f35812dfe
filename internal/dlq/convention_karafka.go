package dlq

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

var karafkaConvention = convention{
	name: ConventionKarafka, read: (*headerReader).karafka,
	doc: conventionDoc{
		title:  "Karafka",
		writer: "Karafka's dead-letter queue (`source_*` before Karafka 2.4)",
		errors: "—",
		reason: "exhausted",
		other:  "group, attempts, original key (`original_key`, empty: no key; the dead letter's key is the partition)",
	},
}

var (
	hKarafkaTopic        = declare(ConventionKarafka, KarafkaTopic, routeTopic|repeats)
	hKarafkaOldTopic     = declare(ConventionKarafka, KarafkaOldTopic, routeTopic|repeats)
	hKarafkaPartition    = declare(ConventionKarafka, KarafkaPartition, routePartition)
	hKarafkaOldPartition = declare(ConventionKarafka, KarafkaOldPartition, routePartition)
	hKarafkaOffset       = declare(ConventionKarafka, KarafkaOffset, routeOffset)
	hKarafkaOldOffset    = declare(ConventionKarafka, KarafkaOldOffset, routeOffset)
	hKarafkaGroup        = declare(ConventionKarafka, KarafkaConsumerGroup, repeats)
	hKarafkaOldGroup     = declare(ConventionKarafka, KarafkaOldGroup, repeats)
	hKarafkaKey          = declare(ConventionKarafka, KarafkaKey, 0)
	hKarafkaOldKey       = declare(ConventionKarafka, KarafkaOldKey, 0)
	hKarafkaAttempts     = declare(ConventionKarafka, KarafkaAttempts, 0)
	hKarafkaOldAttempts  = declare(ConventionKarafka, KarafkaOldAttempts, 0)
)

// karafka reads Karafka's dead letters beyond the route (original_*, or source_* before
// Karafka 2.4). Its key is the original partition; the original key is original_key. Karafka
// dispatches a record once its retries are used up: exhausted.
func (p *headerReader) karafka() {
	d := p.d
	d.Group = p.text(p.either(hKarafkaGroup, hKarafkaOldGroup), p.last)
	id := p.either(hKarafkaAttempts, hKarafkaOldAttempts)
	if v, ok := p.last(id); ok {
		if n, ok := p.decimal(id, v, 31); ok && n >= 0 {
			d.Attempts = int(n)
		}
	}
	if v, ok := p.last(p.either(hKarafkaKey, hKarafkaOldKey)); ok {
		// Karafka writes a missing key as "" (Ruby's nil.to_s): read as no key.
		d.HasOriginalKey = true
		if len(v) > 0 {
			d.OriginalKey = v
		}
	}
	d.Reason = ReasonExhausted
}
