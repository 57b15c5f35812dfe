package dlq

import (
	"errors"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Parse reads a dead-letter record of any known convention into one DeadLetter. It never
// fails and never panics: a header it cannot read is listed in HeaderProblems (with how it was
// read anyway, when it could be), and everything else is still read. A record with no
// dead-letter header is ConventionUnknown with its raw headers kept.
//
// When a record carries the headers of several conventions, the first in the order fieldwork,
// Spring, Kafka Connect, Watermill, SmallRye is read and each other one is listed as a
// HeaderProblem. Header keys are matched ignoring ASCII case. Where a key repeats, the header
// the convention's writer means is read: Spring appends its original-* headers when a record
// passes through several retry topics, so the first is the true original; SmallRye writes its
// own headers before it copies the failed record's, so the first is its own; otherwise the
// last.
//
// A nil record gives the zero DeadLetter with ConventionUnknown.
func Parse(r *kgo.Record) DeadLetter { return ParseWith(r, ParseOptions{}) }

// ParseOptions trim the work Parse does for callers that need less than the whole view.
type ParseOptions struct {
	// NoEnvelope skips decoding the record's envelope: EventID is then only what a dead-letter
	// header says (fw.dlq.event_id), "" for the other conventions. Decoding the value is most
	// of Parse's cost for a dead letter without an event-id header, and summaries that never
	// look at event ids do not need it.
	NoEnvelope bool
	// NoHeaders leaves DeadLetter.Headers nil instead of copying every header: the
	// normalised fields are still read from them.
	NoHeaders bool
	// NoTimes skips the times the headers carry (OriginalTimestamp, FirstFailedAt, FailedAt
	// stay nil, and their problems unreported); the dead letter's own Timestamp is kept.
	NoTimes bool

	// strings, set by Scan, shares the text of headers that repeat from record to record
	// (topics, groups, reasons, error classes and messages) instead of allocating it anew.
	strings *interner
}

// ParseWith is Parse with options; ParseWith(r, ParseOptions{}) is Parse(r).
func ParseWith(r *kgo.Record, opts ParseOptions) DeadLetter { return parseWith(r, opts, nil) }

// Parser parses dead letters one after another with the same options, sharing work between
// consecutive records: dead letters from one writer carry the same header keys in the same
// order, and many header values (topics, groups, handlers, reasons, errors) repeat. What each
// key means is remembered by position, and a repeated value reuses the previous record's
// string. p.Parse(r) is ParseWith(r, opts) field for field. Not safe for concurrent use.
type Parser struct {
	opts ParseOptions
	memo parseMemo
}

// NewParser returns a Parser with opts.
func NewParser(opts ParseOptions) *Parser { return &Parser{opts: opts} }

// Parse is ParseWith(r, opts).
func (p *Parser) Parse(r *kgo.Record) DeadLetter { return parseWith(r, p.opts, &p.memo) }

// parseMemo is what a Parser remembers from the records before.
type parseMemo struct {
	// keys[i] is the key of the previous record's i-th header and what it means.
	keys []memoKey
	// last holds, for each header that usually repeats, the text read last.
	last [numHdr]string
}

// keyMeta is what a header key means to Parse: conv is 1 + the rank of the convention it
// belongs to (0: none); id is 1 + the hdr it is (0: a header Parse does not read).
type keyMeta struct {
	conv int8
	id   int16
}

type memoKey struct {
	key  string
	meta keyMeta
}

// maxMemoKeys bounds the header positions a Parser remembers.
const maxMemoKeys = 64

func metaOf(key string) keyMeta {
	lower := asciiLower(key)
	var m keyMeta
	if c := conventionOfHeader(lower); c != "" {
		m.conv = int8(conventionRank(c) + 1)
	}
	if id, ok := hdrByKey[lower]; ok {
		m.id = int16(id + 1)
	}
	return m
}

// meta is metaOf(key) for the i-th header, remembered by position; m may be nil.
func (m *parseMemo) meta(i int, key string) keyMeta {
	if m == nil {
		return metaOf(key)
	}
	if i < len(m.keys) && m.keys[i].key == key {
		return m.keys[i].meta
	}
	v := metaOf(key)
	switch {
	case i < len(m.keys):
		m.keys[i] = memoKey{key, v}
	case i == len(m.keys) && i < maxMemoKeys:
		m.keys = append(m.keys, memoKey{key, v})
	}
	return v
}

func parseWith(r *kgo.Record, opts ParseOptions, memo *parseMemo) DeadLetter {
	d := DeadLetter{Convention: ConventionUnknown}
	if r == nil {
		return d
	}
	d.Topic, d.Partition, d.Offset = r.Topic, r.Partition, r.Offset
	if !r.Timestamp.IsZero() {
		d.Timestamp = r.Timestamp.UTC()
	}
	d.Key, d.Value = r.Key, r.Value
	p := parser{d: &d, noTimes: opts.NoTimes, strings: opts.strings, memo: memo}
	p.index(r.Headers, !opts.NoHeaders)
	switch d.Convention {
	case ConventionFieldwork:
		p.fieldwork()
	case ConventionSpring:
		p.spring()
	case ConventionConnect:
		p.connect()
	case ConventionWatermill:
		p.watermill()
	case ConventionSmallRye:
		p.smallRye()
	}
	p.bounded()
	if v, ok := p.last(hReplayCount); ok {
		if n, ok := p.decimal(hReplayCount, v, 31); ok {
			if n < 0 {
				p.problemf(hReplayCount, "negative count %d", n)
			} else {
				d.ReplayCount = int(n)
			}
		}
	}
	if d.EventID == "" && !opts.NoEnvelope {
		headers := d.Headers
		if opts.NoHeaders {
			headers = toEnvelopeHeaders(r.Headers)
		}
		d.EventID = decodedEventID(headers, d.Value)
	}
	return d
}

// omittedUnsaid is ValueOmitted for a bounded copy whose fw.dlq.value_omitted is empty: the
// header alone says the value is not whole.
const omittedUnsaid = "(no reason given)"

// bounded reads the headers of a bounded copy (fw.dlq.value_omitted, fw.dlq.value_bytes),
// whatever the convention: a record that carries them is not the whole dead letter, and a
// replay must know it even when other dead-letter headers take precedence.
func (p *parser) bounded() {
	d := p.d
	if v, ok := p.last(hFwValueOmitted); ok {
		d.ValueOmitted = p.textOf(hFwValueOmitted, v)
		if strings.TrimSpace(d.ValueOmitted) == "" {
			d.ValueOmitted = omittedUnsaid
		}
	}
	if v, ok := p.last(hFwValueBytes); ok {
		if n, ok := p.decimal(hFwValueBytes, v, 63); ok {
			if n < 0 {
				p.problemf(hFwValueBytes, "negative length %d", n)
			} else {
				d.ValueBytes = n
			}
		}
	}
}

// decodedEventID is the event id envelope.Decode reads from the record, also from a record it
// finds malformed when the id itself was readable.
func decodedEventID(headers []envelope.Header, value []byte) string {
	ev, err := envelope.Decode(headers, value)
	if err == nil {
		return ev.ID
	}
	if merr, ok := errors.AsType[*envelope.MalformedError](err); ok {
		return merr.EventID
	}
	return ""
}

func (p *parser) fieldwork() {
	d := p.d
	d.OriginalTopic = p.topic(hFwTopic, p.last)
	d.OriginalPartition = p.decimalPartition(hFwPartition, p.last)
	d.OriginalOffset = p.decimalOffset(hFwOffset, p.last)
	d.OriginalTimestamp = p.rfc3339(hFwTimestamp)
	d.Group = p.text(hFwGroup, p.last)
	d.Handler = p.text(hFwHandler, p.last)
	d.EventID = p.text(hFwEventID, p.last)
	if v, ok := p.last(hFwReason); ok {
		d.Reason = p.textOf(hFwReason, v)
		if !knownReason(d.Reason) {
			p.problemf(hFwReason, "unknown reason %s (want one of malformed, unsupported, rejected, exhausted)", quote(d.Reason))
		}
	}
	d.ErrorMessage = p.text(hFwError, p.last)
	d.ErrorClass = p.text(hFwErrorClass, p.last)
	if v, ok := p.last(hFwAttempts); ok {
		if n, ok := p.decimal(hFwAttempts, v, 31); ok {
			if n < 0 {
				p.problemf(hFwAttempts, "negative count %d", n)
			} else {
				d.Attempts = int(n)
			}
		}
	}
	d.FirstFailedAt = p.rfc3339(hFwFirstFailedAt)
	d.FailedAt = p.rfc3339(hFwFailedAt)
}

func (p *parser) spring() {
	d := p.d
	d.OriginalTopic = p.topic(hSpringTopic, p.first)
	if v, ok := p.first(hSpringPartition); ok {
		if n, ok := p.bigEndian(hSpringPartition, v, 4); ok {
			d.OriginalPartition = p.partition(hSpringPartition, n)
		}
	}
	if v, ok := p.first(hSpringOffset); ok {
		if n, ok := p.bigEndian(hSpringOffset, v, 8); ok {
			d.OriginalOffset = p.offset(hSpringOffset, n)
		}
	}
	if v, ok := p.first(hSpringTimestamp); ok && !p.noTimes {
		if ms, ok := p.bigEndian(hSpringTimestamp, v, 8); ok {
			d.OriginalTimestamp = p.epochMillis(hSpringTimestamp, ms)
		}
	}
	d.Group = p.text(hSpringGroup, p.first)
	class := p.text(hSpringFQCN, p.last)
	if cause := p.text(hSpringCauseFQCN, p.last); cause != "" {
		class = cause
	}
	keyClass := p.text(hSpringKeyFQCN, p.last)
	d.ErrorClass = firstNonEmpty(class, keyClass)
	d.ErrorMessage = firstNonEmpty(p.text(hSpringMessage, p.last), p.text(hSpringKeyMessage, p.last))
	d.StackTrace = firstNonEmpty(p.text(hSpringStacktrace, p.last), p.text(hSpringKeyStacktrace, p.last))
	if keyClass != "" || isDeserializationClass(class) {
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
}

// The Kafka Connect stages whose failures mean the record could not be read.
var connectConverterStages = map[string]bool{"KEY_CONVERTER": true, "VALUE_CONVERTER": true, "HEADER_CONVERTER": true}

func (p *parser) connect() {
	d := p.d
	d.OriginalTopic = p.topic(hConnectTopic, p.last)
	d.OriginalPartition = p.decimalPartition(hConnectPartition, p.last)
	d.OriginalOffset = p.decimalOffset(hConnectOffset, p.last)
	d.Handler = p.text(hConnectConnector, p.last)
	d.ErrorClass = p.text(hConnectExceptionClass, p.last)
	d.ErrorMessage = p.text(hConnectExceptionMessage, p.last)
	d.StackTrace = p.text(hConnectExceptionStack, p.last)
	if connectConverterStages[p.text(hConnectStage, p.last)] {
		d.Reason = ReasonMalformed
	}
}

func (p *parser) watermill() {
	d := p.d
	d.OriginalTopic = p.topic(hWatermillTopic, p.last)
	d.Handler = firstNonEmpty(p.text(hWatermillHandler, p.last), p.text(hWatermillSubscriber, p.last))
	d.ErrorMessage = p.text(hWatermillReason, p.last)
}

func (p *parser) smallRye() {
	d := p.d
	d.OriginalTopic = p.topic(hSmallRyeTopic, p.first)
	d.OriginalPartition = p.decimalPartition(hSmallRyePartition, p.first)
	d.OriginalOffset = p.decimalOffset(hSmallRyeOffset, p.first)
	d.ErrorClass = p.text(hSmallRyeExceptionClass, p.first)
	d.ErrorMessage = p.text(hSmallRyeReason, p.first)
	if cause := p.text(hSmallRyeCause, p.first); cause != "" && cause != d.ErrorMessage {
		if d.ErrorMessage == "" {
			d.ErrorMessage = cause
		} else {
			d.ErrorMessage += "; caused by: " + cause
		}
	}
	_, deserialization := p.last(hSmallRyeDeserializationReason)
	if deserialization || isDeserializationClass(d.ErrorClass) || isDeserializationClass(p.text(hSmallRyeCauseClass, p.first)) {
		d.Reason = ReasonMalformed
	}
}

func knownReason(r string) bool {
	for _, k := range Reasons {
		if r == k {
			return true
		}
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// deserializationClasses are the simple names of JVM exceptions that mean a record's bytes
// could not be turned into a message: Kafka's and Spring's serialization exceptions and
// Jackson's parse errors.
var deserializationClasses = []string{
	"SerializationException", "DeserializationException", "RecordDeserializationException",
	"MessageConversionException", "ConversionException", "JsonParseException",
	"MismatchedInputException", "InvalidFormatException", "JsonEOFException",
}

// isDeserializationClass reports whether a fully qualified class name (or a simple one) is one
// of deserializationClasses.
func isDeserializationClass(fqcn string) bool {
	if fqcn == "" {
		return false
	}
	simple := fqcn
	for i := len(fqcn) - 1; i >= 0; i-- {
		if fqcn[i] == '.' || fqcn[i] == '$' {
			simple = fqcn[i+1:]
			break
		}
	}
	for _, c := range deserializationClasses {
		if simple == c {
			return true
		}
	}
	return false
}

// quote renders a header value for a problem message: quoted, cut short when long.
func quote(s string) string {
	const maxShown = 64
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
