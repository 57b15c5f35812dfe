package dlq

import (
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// convention is one row of the conventions table: who writes such dead letters, which headers
// are theirs, and how they are read (docs/design.md §3.2). Every question about a convention —
// is this header a dead-letter header (a replay strips it), which convention wrote this record,
// how its original coordinates, error, root cause and reason are read — is answered from this
// one table.
type convention struct {
	name Convention
	// prefixes and keys are the lower-case header keys that belong to the convention: every
	// key that starts with one of prefixes, and each of keys.
	prefixes []string
	keys     []string
	// parse reads the convention's headers into p.d, reason included (the rule per convention
	// is in docs/design.md §3.2).
	parse func(p *parser)
	// fromKey, for a convention that writes no header of its own, reads the dead letter from
	// its key and reports whether the key is one; Parse asks it only of a record with no
	// dead-letter header.
	fromKey func(p *parser, key []byte) bool
}

// conventions is the table, in the order Parse prefers them when a record carries the headers
// of more than one. An array, so that its length is a constant.
var conventions = [...]convention{
	{name: ConventionFieldwork, prefixes: []string{HeaderPrefix}, parse: (*parser).fieldwork},
	{name: ConventionSpring, prefixes: []string{SpringPrefix, SpringRetryPrefix, SpringRetryOriginalPrefix,
		SpringRetryExceptionPrefix, SpringRetryKeyExceptionPrefix}, parse: (*parser).spring},
	{name: ConventionConnect, prefixes: []string{ConnectPrefix}, parse: (*parser).connect},
	{name: ConventionWatermill, keys: []string{WatermillTopic, WatermillHandler, WatermillSubscriber, WatermillReason},
		parse: (*parser).watermill},
	{name: ConventionSmallRye, prefixes: []string{SmallRyePrefix, SmallRyeDeserializationPrefix}, parse: (*parser).smallRye},
	{name: ConventionKarafka, keys: []string{KarafkaTopic, KarafkaPartition, KarafkaOffset, KarafkaConsumerGroup,
		KarafkaKey, KarafkaAttempts, KarafkaOldTopic, KarafkaOldPartition, KarafkaOldOffset, KarafkaOldGroup,
		KarafkaOldKey, KarafkaOldAttempts}, parse: (*parser).karafka},
	{name: ConventionWolverine, keys: []string{WolverineExceptionType, WolverineExceptionMessage, WolverineExceptionStack,
		WolverineDestination, WolverinePartition, WolverineOffset, WolverineFailedAt}, parse: (*parser).wolverine},
	{name: ConventionDataContract, prefixes: []string{RulePrefix}, parse: (*parser).dataContract},
	{name: ConventionUberKafka, fromKey: (*parser).uberKafka},
}

// conventionIndex is the index in conventions of the convention a lower-case header key
// belongs to, -1 for none.
func conventionIndex(lower string) int {
	for i := range conventions {
		c := &conventions[i]
		for _, pre := range c.prefixes {
			if strings.HasPrefix(lower, pre) {
				return i
			}
		}
		for _, k := range c.keys {
			if lower == k {
				return i
			}
		}
	}
	return -1
}

// conventionOfHeader names the convention a lower-case header key belongs to, "" for none.
func conventionOfHeader(lower string) Convention {
	if i := conventionIndex(lower); i >= 0 {
		return conventions[i].name
	}
	return ""
}

// conventionAt is the table row of c; nil for ConventionUnknown.
func conventionAt(c Convention) *convention {
	for i := range conventions {
		if conventions[i].name == c {
			return &conventions[i]
		}
	}
	return nil
}

// rootCause is the innermost cause a stack trace names, as "class: message" (the message's
// first line): the last Java "Caused by:" line, else the last .NET inner exception
// (" ---> class: message"). "" when the trace names no cause beyond the exception itself.
func rootCause(trace string) string {
	if trace == "" {
		return ""
	}
	cause := ""
	for line := range strings.Lines(trace) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "Caused by: "); ok {
			cause = rest
		}
	}
	if cause == "" {
		if i := strings.LastIndex(trace, " ---> "); i >= 0 {
			cause, _, _ = strings.Cut(trace[i+len(" ---> "):], "\n")
			cause = strings.TrimSpace(cause)
		}
	}
	return strings.TrimSuffix(strings.TrimSpace(cause), ":")
}

// rootCauseClass is the class of a root cause rootCause returned: what comes before ": ", when
// it looks like a class name.
func rootCauseClass(cause string) string {
	class, _, _ := strings.Cut(cause, ": ")
	if class == "" || strings.ContainsAny(class, " \t") {
		return ""
	}
	return class
}

// uberKafka reads uber-go/kafka-client's dead letters: no headers, the record key a protobuf
// DLQMetadata {retry_count int64 = 1, topic string = 2, partition int32 = 3, offset int64 = 4,
// timestamp_ns int64 = 5, data bytes = 6}, data holding the original key. A key is taken for
// one only when it is a well-formed message of exactly these fields that names a valid topic.
// The library sends a message there once its retries are used up: exhausted.
func (p *parser) uberKafka(key []byte) bool {
	m, ok := decodeDLQMetadata(key)
	if !ok {
		return false
	}
	d := p.d
	d.OriginalTopic = m.topic
	d.OriginalPartition = &m.partition
	d.OriginalOffset = &m.offset
	if m.timestampNs > 0 && !p.noTimes {
		t := time.Unix(0, m.timestampNs).UTC()
		d.OriginalTimestamp = &t
	}
	if m.retryCount > 0 && m.retryCount < 1<<31 {
		d.Attempts = int(m.retryCount)
	}
	d.HasOriginalKey, d.OriginalKey = true, m.data
	d.Reason = ReasonExhausted
	return true
}

// dlqMetadata is uber-go/kafka-client's DLQMetadata.
type dlqMetadata struct {
	retryCount  int64
	topic       string
	partition   int32
	offset      int64
	timestampNs int64
	data        []byte
}

// decodeDLQMetadata decodes b as a DLQMetadata: every field of its number and wire type, no
// other field, a valid topic name, a partition and an offset that are not negative.
func decodeDLQMetadata(b []byte) (dlqMetadata, bool) {
	var m dlqMetadata
	if len(b) == 0 {
		return m, false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return m, false
		}
		b = b[n:]
		switch {
		case num >= 1 && num <= 5 && num != 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return m, false
			}
			b = b[n:]
			switch num {
			case 1:
				m.retryCount = int64(v)
			case 3:
				if v > 1<<31-1 { // a negative int32 is a ten-byte varint
					return m, false
				}
				m.partition = int32(v)
			case 4:
				m.offset = int64(v)
			case 5:
				m.timestampNs = int64(v)
			}
		case (num == 2 || num == 6) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return m, false
			}
			b = b[n:]
			if num == 2 {
				m.topic = string(v)
			} else {
				m.data = v
			}
		default:
			return m, false
		}
	}
	if !kafka.ValidTopic(m.topic) || m.partition < 0 || m.offset < 0 {
		return m, false
	}
	return m, true
}
