package dlq

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
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
	// NoEnvelope skips decoding the record's envelope (and the library id headers read when
	// it has no id): EventID is then only what a dead-letter header says (fw.dlq.event_id), ""
	// for the other conventions. Decoding the value is most
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
	m.conv = int8(conventionIndex(lower) + 1)
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

// parseState is the memory one parse works in: the dead letter being read and the parser,
// whose header index is a few hundred words. The conventions table calls each convention's
// reader through a function value, which makes the parser escape to the heap: the states are
// pooled, so that a parse allocates nothing of its own.
type parseState struct {
	d DeadLetter
	p parser
}

var parseStates = sync.Pool{New: func() any { return new(parseState) }}

func parseWith(r *kgo.Record, opts ParseOptions, memo *parseMemo) DeadLetter {
	if r == nil {
		return DeadLetter{Convention: ConventionUnknown}
	}
	st := parseStates.Get().(*parseState)
	st.parse(r, opts, memo)
	d := st.d
	*st = parseState{} // no reference to the record stays in the pool
	parseStates.Put(st)
	return d
}

// parse reads r into st.d.
func (st *parseState) parse(r *kgo.Record, opts ParseOptions, memo *parseMemo) {
	d := &st.d
	d.Convention = ConventionUnknown
	d.Topic, d.Partition, d.Offset = r.Topic, r.Partition, r.Offset
	if !r.Timestamp.IsZero() {
		d.Timestamp = r.Timestamp.UTC()
	}
	d.Key, d.Value = r.Key, r.Value
	st.p = parser{d: d, noTimes: opts.NoTimes, strings: opts.strings, memo: memo}
	p := &st.p
	p.index(r.Headers, !opts.NoHeaders)
	if c := conventionAt(d.Convention); c != nil && c.parse != nil {
		c.parse(p)
	} else if c == nil {
		for i := range conventions {
			if c := &conventions[i]; c.fromKey != nil && c.fromKey(p, r.Key) {
				d.Convention = c.name
				break
			}
		}
	}
	p.causes()
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
	if d.EventID != "" {
		d.EventIDSource = HeaderEventID
	}
	if d.EventID == "" && !opts.NoEnvelope {
		headers := d.Headers
		if opts.NoHeaders {
			headers = envelope.RecordHeaders(r.Headers)
		}
		if d.EventID = decodedEventID(headers, d.Value); d.EventID != "" {
			d.EventIDSource = EventIDFromEnvelope
		} else {
			p.libraryEventID()
		}
	}
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
	d.ExpectedSchema = p.text(hFwSchema, p.last)
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

// spring reads Spring Kafka's dead letters: the recoverer's kafka_dlt-* headers, else the
// retry topics' kafka_original-* and kafka_exception-* (the same encodings). Reason: a key that
// failed to deserialize, or a class of Spring's default not-retryable exceptions, names it
// (classReason); anything else Spring retried until its back-off ran out: exhausted.
func (p *parser) spring() {
	d := p.d
	topic := p.either(hSpringTopic, hSpringRetryTopic)
	d.OriginalTopic = p.topic(topic, p.first)
	id := p.either(hSpringPartition, hSpringRetryPartition)
	if v, ok := p.first(id); ok {
		if n, ok := p.bigEndian(id, v, 4); ok {
			d.OriginalPartition = p.partition(id, n)
		}
	}
	id = p.either(hSpringOffset, hSpringRetryOffset)
	if v, ok := p.first(id); ok {
		if n, ok := p.bigEndian(id, v, 8); ok {
			d.OriginalOffset = p.offset(id, n)
		}
	}
	if id := p.either(hSpringTimestamp, hSpringRetryTimestamp); !p.noTimes {
		if v, ok := p.first(id); ok {
			if ms, ok := p.bigEndian(id, v, 8); ok {
				d.OriginalTimestamp = p.epochMillis(id, ms)
			}
		}
	}
	d.RetryTopics = p.retryChain(topic)
	d.Group = p.text(hSpringGroup, p.first)
	class := firstNonEmpty(p.text(hSpringFQCN, p.last), p.text(hSpringRetryFQCN, p.last))
	if cause := firstNonEmpty(p.text(hSpringCauseFQCN, p.last), p.text(hSpringRetryCauseFQCN, p.last)); cause != "" {
		class = cause
	}
	keyClass := firstNonEmpty(p.text(hSpringKeyFQCN, p.last), p.text(hSpringRetryKeyFQCN, p.last))
	d.ErrorClass = firstNonEmpty(class, keyClass)
	d.ErrorMessage = firstNonEmpty(p.text(hSpringMessage, p.last), p.text(hSpringRetryMessage, p.last),
		p.text(hSpringKeyMessage, p.last), p.text(hSpringRetryKeyMessage, p.last))
	d.StackTrace = firstNonEmpty(p.text(hSpringStacktrace, p.last), p.text(hSpringRetryStacktrace, p.last),
		p.text(hSpringKeyStacktrace, p.last), p.text(hSpringRetryKeyStacktrace, p.last))
	if keyClass != "" {
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
	p.fallbackReason = ReasonExhausted
}

// retryChain lists the topics a Spring dead letter passed through after its original one: the
// values of the original-topic headers (id's key) after the first, in order; nil when there is
// one or none.
func (p *parser) retryChain(id hdr) []string {
	if p.firstAt[id] == 0 || p.firstAt[id] == p.lastAt[id] {
		return nil
	}
	key := asciiLower(p.raw[p.firstAt[id]-1].Key)
	var chain []string
	for _, h := range p.raw[p.firstAt[id]:] {
		if asciiLower(h.Key) == key {
			chain = append(chain, strings.ToValidUTF8(string(h.Value), "\uFFFD"))
		}
	}
	return chain
}

// The Kafka Connect stages whose failures mean the record could not be read.
var connectConverterStages = map[string]bool{"KEY_CONVERTER": true, "VALUE_CONVERTER": true, "HEADER_CONVERTER": true}

// connect reads Kafka Connect's dead letters. Reason: a converter stage is malformed; a
// retriable exception (Connect retried it for errors.retry.timeout) exhausted; any other
// failure (a transformation, the sink task) rejected.
func (p *parser) connect() {
	d := p.d
	d.OriginalTopic = p.topic(hConnectTopic, p.last)
	d.OriginalPartition = p.decimalPartition(hConnectPartition, p.last)
	d.OriginalOffset = p.decimalOffset(hConnectOffset, p.last)
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

// watermill reads Watermill's poison queue. Its reason is the handler's error as free text,
// which names no class: the reason is unknown unless a class rule says otherwise.
func (p *parser) watermill() {
	d := p.d
	d.OriginalTopic = p.topic(hWatermillTopic, p.last)
	d.Handler = firstNonEmpty(p.text(hWatermillHandler, p.last), p.text(hWatermillSubscriber, p.last))
	d.ErrorMessage = p.text(hWatermillReason, p.last)
}

// smallRye reads SmallRye's dead-letter-queue strategy. Reason: a deserialization failure is
// malformed; anything else the application nacked: rejected.
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

// karafka reads Karafka's dead letters (original_*, or source_* before Karafka 2.4). Its key
// is the original partition; the original key is original_key. Karafka dispatches a record
// once its retries are used up: exhausted.
func (p *parser) karafka() {
	d := p.d
	d.OriginalTopic = p.topic(p.either(hKarafkaTopic, hKarafkaOldTopic), p.last)
	d.OriginalPartition = p.decimalPartition(p.either(hKarafkaPartition, hKarafkaOldPartition), p.last)
	d.OriginalOffset = p.decimalOffset(p.either(hKarafkaOffset, hKarafkaOldOffset), p.last)
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

// wolverine reads Wolverine's dead letters. Reason: a class rule (a serializer's exception,
// no handler for the message type), else exhausted: Wolverine moves a message to its dead
// letters when its error policy gives up.
func (p *parser) wolverine() {
	d := p.d
	if v, ok := p.last(hWolverineDestination); ok {
		dest := p.textOf(hWolverineDestination, v)
		d.OriginalTopic = wolverineTopic(dest)
		if !kafka.ValidTopic(d.OriginalTopic) {
			p.problemf(hWolverineDestination, "%s names no valid topic", quote(dest))
		}
	}
	d.OriginalPartition = p.decimalPartition(hWolverinePartition, p.last)
	d.OriginalOffset = p.decimalOffset(hWolverineOffset, p.last)
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

// wolverineTopic is the topic a Wolverine endpoint URI names (kafka://topic/orders), or the
// value itself when it is no URI.
func wolverineTopic(dest string) string {
	if i := strings.Index(dest, "://"); i >= 0 {
		rest := strings.Trim(dest[i+3:], "/")
		if j := strings.LastIndexByte(rest, '/'); j >= 0 {
			return rest[j+1:]
		}
		return rest
	}
	return dest
}

// dataContract reads the dead letters of Confluent's data-contract DLQ rule action: a record a
// rule refused. The topic is the one it was written to or read from; no partition or offset
// (a refused write never had one). Reason: rejected, unless the exception names a
// deserialization failure.
func (p *parser) dataContract() {
	d := p.d
	d.OriginalTopic = p.topic(hRuleTopic, p.last)
	name, mode := p.text(hRuleName, p.last), p.text(hRuleMode, p.last)
	d.Handler = name
	d.ErrorClass = "rule " + firstNonEmpty(name, "?")
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

// causes derives what every convention shares from the fields its reader set: the root cause
// from the stack trace, and the reason by class (classReason) when the convention's own rule
// left it open, else the convention's fallback.
func (p *parser) causes() {
	d := p.d
	if rc := rootCause(d.StackTrace); rc != "" && rc != d.ErrorMessage && rc != d.ErrorClass+": "+d.ErrorMessage {
		d.RootCause = rc
	}
	if d.Reason != "" || d.Convention == ConventionFieldwork || d.Convention == ConventionUnknown {
		return
	}
	d.Reason = firstNonEmpty(classReason(d.ErrorClass), classReason(rootCauseClass(d.RootCause)), p.fallbackReason)
}

// libraryEventID reads the event id a library puts on every message, for a record whose
// envelope has none: Watermill's message uuid, Spring's kafka_messageId, then the id header
// (Debezium's outbox event id, Spring's message id). A JSON string value (Spring's header
// mapper writes one) is read unquoted.
func (p *parser) libraryEventID() {
	for _, id := range [...]hdr{hWatermillUUID, hSpringMessageID, hMessageID} {
		v, ok := p.last(id)
		if !ok {
			continue
		}
		s := strings.TrimSpace(string(v))
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			if u, err := strconv.Unquote(s); err == nil {
				s = u
			}
		}
		if s == "" || !utf8.ValidString(s) {
			continue
		}
		p.d.EventID, p.d.EventIDSource = s, p.key(id)
		return
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

// EventIDFromEnvelope is DeadLetter.EventIDSource for an id the envelope decoder read.
const EventIDFromEnvelope = "envelope"

// classReason is the reason a failure's class says, whatever the convention: a class that
// means the bytes could not be read (deserializationClasses) is malformed, one that means no
// code handles the message (unsupportedClasses) unsupported; "" when the class says neither.
func classReason(fqcn string) string {
	switch {
	case isDeserializationClass(fqcn):
		return ReasonMalformed
	case simpleNameIn(fqcn, unsupportedClasses):
		return ReasonUnsupported
	}
	return ""
}

// unsupportedClasses are the simple names of exceptions that mean a well-formed message has no
// handler: Spring's not-retryable NoSuchMethodException and MethodArgumentResolutionException,
// Wolverine's missing handler and unknown message type.
var unsupportedClasses = []string{
	"NoSuchMethodException", "MethodArgumentResolutionException",
	"NoHandlerForEndpointException", "UnknownMessageTypeNameException", "NoRoutesException",
}

// deserializationClasses are the simple names of JVM exceptions that mean a record's bytes
// could not be turned into a message: Kafka's and Spring's serialization exceptions and
// Jackson's parse errors.
var deserializationClasses = []string{
	"SerializationException", "DeserializationException", "RecordDeserializationException",
	"MessageConversionException", "ConversionException", "JsonParseException",
	"MismatchedInputException", "InvalidFormatException", "JsonEOFException", "ClassCastException",
	"JsonException", "JsonReaderException", "JsonSerializationException", "InvalidProtocolBufferException",
	"AvroTypeException",
}

// isDeserializationClass reports whether a fully qualified class name (or a simple one) is one
// of deserializationClasses.
func isDeserializationClass(fqcn string) bool { return simpleNameIn(fqcn, deserializationClasses) }

// simpleNameIn reports whether the simple name of a fully qualified class name (or a simple
// one) is one of names.
func simpleNameIn(fqcn string, names []string) bool {
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
	for _, c := range names {
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
