package dlq

import (
	"cmp"

	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Parse reads a dead-letter record of any known convention into one DeadLetter. It never
// fails and never panics: a header it cannot read is listed in HeaderProblems (with how it was
// read anyway, when it could be), and everything else is still read. A record with no
// dead-letter header is ConventionUnknown with its raw headers kept.
//
// When a record carries the headers of several conventions, the first in the order of
// conventions (conventions.go) is read and each other one is listed as a HeaderProblem. Header keys are matched ignoring ASCII case. Where a key repeats, the header
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
	// st is the Parser's own parse state (one parse at a time: no pool).
	st parseState
}

// NewParser returns a Parser with opts.
func NewParser(opts ParseOptions) *Parser { return &Parser{opts: opts} }

// Parse is ParseWith(r, opts).
func (p *Parser) Parse(r *kgo.Record) DeadLetter {
	p.ParseInto(r, &p.st.d) // a local would escape through the state
	d := p.st.d
	p.st.d = DeadLetter{}
	return d
}

// ParseInto is Parse writing into *d, which it overwrites whole: a caller that keeps its dead
// letters in an array of its own (a batch's) parses into it, with no copy of the dead letter.
func (p *Parser) ParseInto(r *kgo.Record, d *DeadLetter) {
	*d = DeadLetter{}
	if r == nil {
		d.Convention = ConventionUnknown
		return
	}
	p.st.parse(d, r, p.opts, &p.memo)
	p.st.done()
}

// parseMemo is what a Parser remembers from the records before.
type parseMemo struct {
	// keys[i] is the key of the previous record's i-th header and what it means.
	keys []memoKey
	// last holds, for each header that usually repeats, the text read last.
	last [maxHeaders]string
	// parts, offsets and times are carved into the original partitions, offsets and the
	// times the dead letters point at, never handed out twice: one allocation every
	// memoNumbers dead letters rather than two each, and three for the times.
	parts   []int32
	offsets []int64
	times   []time.Time
}

// memoNumbers is how many partitions (offsets) each array of a parseMemo holds.
const memoNumbers = 256

// partition returns a pointer to n that no other dead letter shares.
func (m *parseMemo) partition(n int32) *int32 {
	if len(m.parts) == cap(m.parts) {
		m.parts = make([]int32, 0, memoNumbers)
	}
	m.parts = append(m.parts, n)
	return &m.parts[len(m.parts)-1]
}

// offset returns a pointer to n that no other dead letter shares.
func (m *parseMemo) offset(n int64) *int64 {
	if len(m.offsets) == cap(m.offsets) {
		m.offsets = make([]int64, 0, memoNumbers)
	}
	m.offsets = append(m.offsets, n)
	return &m.offsets[len(m.offsets)-1]
}

// time returns a pointer to t that no other dead letter shares.
func (m *parseMemo) time(t time.Time) *time.Time {
	if len(m.times) == cap(m.times) {
		m.times = make([]time.Time, 0, memoNumbers)
	}
	m.times = append(m.times, t)
	return &m.times[len(m.times)-1]
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

// The headers Parse reads whatever the convention, which are no convention's: a replay keeps
// them.
var (
	hReplayCount     = declare("", ReplayHeaderCount, 0)
	hWatermillUUID   = declare("", WatermillMessageUUID, 0)
	hSpringMessageID = declare("", SpringMessageID, 0)
	hMessageID       = declare("", MessageIDHeader, 0)
)

// parseState is the memory one parse works in: the dead letter being read (a one-off parse's),
// its header reader and the reader's header index, a few hundred words. The conventions table
// calls each convention's reader through a function value, which makes the reader escape to
// the heap: the states of one-off parses are pooled, and a Parser has its own, so that a parse
// allocates nothing of its own.
type parseState struct {
	d  DeadLetter
	p  headerReader
	ix headerIndex
}

var parseStates = sync.Pool{New: func() any { return new(parseState) }}

func parseWith(r *kgo.Record, opts ParseOptions, memo *parseMemo) DeadLetter {
	if r == nil {
		return DeadLetter{Convention: ConventionUnknown}
	}
	st := parseStates.Get().(*parseState)
	st.parse(&st.d, r, opts, memo)
	d := st.d
	st.d = DeadLetter{}
	st.done()
	parseStates.Put(st)
	return d
}

// done forgets the parse: no reference to the record stays in the state, and the index is
// cleared where it was set.
func (st *parseState) done() {
	st.p = headerReader{}
	st.ix.clear()
}

// parse reads r into d, which is zero.
func (st *parseState) parse(d *DeadLetter, r *kgo.Record, opts ParseOptions, memo *parseMemo) {
	d.Convention = ConventionUnknown
	d.Topic, d.Partition, d.Offset = r.Topic, r.Partition, r.Offset
	if !r.Timestamp.IsZero() {
		d.Timestamp = r.Timestamp.UTC()
	}
	d.Key, d.Value = r.Key, r.Value
	st.p = headerReader{d: d, headerIndex: &st.ix, noTimes: opts.NoTimes, strings: opts.strings, memo: memo}
	p := &st.p
	p.index(r.Headers, !opts.NoHeaders)
	if c := p.conv; c != nil {
		p.readRoute(c)
		if c.read != nil {
			c.read(p)
		}
	} else {
		for _, c := range conventions {
			if c.fromKey != nil && c.fromKey(p, r.Key) {
				d.Convention = c.name
				break
			}
		}
	}
	p.causes()
	p.bounded()
	if n, ok := p.count(hReplayCount); ok {
		d.ReplayCount = int(n)
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
func (p *headerReader) bounded() {
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

// causes derives what every convention shares from the fields its reader set: the root cause
// from the stack trace, and the reason by class (classReason) when the convention's own rule
// left it open, else the convention's fallback.
func (p *headerReader) causes() {
	d := p.d
	if rc := rootCause(d.StackTrace); rc != "" && rc != d.ErrorMessage && rc != d.ErrorClass+": "+d.ErrorMessage {
		d.RootCause = rc
	}
	if d.Reason != "" || d.Convention == ConventionFieldwork || d.Convention == ConventionUnknown {
		return
	}
	d.Reason = cmp.Or(classReason(d.ErrorClass), classReason(rootCauseClass(d.RootCause)), p.fallbackReason)
}

// libraryEventID reads the event id a library puts on every message, for a record whose
// envelope has none: Watermill's message uuid, Spring's kafka_messageId, then the id header
// (Debezium's outbox event id, Spring's message id). A JSON string value (Spring's header
// mapper writes one) is read unquoted.
func (p *headerReader) libraryEventID() {
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
