package dlq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/printable"
)

// hdr identifies a header Parse reads.
type hdr int

const (
	hFwTopic hdr = iota
	hFwPartition
	hFwOffset
	hFwTimestamp
	hFwGroup
	hFwHandler
	hFwEventID
	hFwReason
	hFwError
	hFwErrorClass
	hFwSchema
	hFwAttempts
	hFwFirstFailedAt
	hFwFailedAt
	hFwValueOmitted
	hFwValueBytes
	hReplayCount
	hSpringTopic
	hSpringPartition
	hSpringOffset
	hSpringTimestamp
	hSpringGroup
	hSpringFQCN
	hSpringCauseFQCN
	hSpringMessage
	hSpringStacktrace
	hSpringKeyFQCN
	hSpringKeyMessage
	hSpringKeyStacktrace
	hSpringRetryAttempts
	hConnectTopic
	hConnectPartition
	hConnectOffset
	hConnectConnector
	hConnectStage
	hConnectExceptionClass
	hConnectExceptionMessage
	hConnectExceptionStack
	hWatermillTopic
	hWatermillHandler
	hWatermillSubscriber
	hWatermillReason
	hSmallRyeTopic
	hSmallRyePartition
	hSmallRyeOffset
	hSmallRyeReason
	hSmallRyeCause
	hSmallRyeExceptionClass
	hSmallRyeCauseClass
	hSmallRyeDeserializationReason
	hSpringRetryTopic
	hSpringRetryPartition
	hSpringRetryOffset
	hSpringRetryTimestamp
	hSpringRetryFQCN
	hSpringRetryCauseFQCN
	hSpringRetryMessage
	hSpringRetryStacktrace
	hSpringRetryKeyFQCN
	hSpringRetryKeyMessage
	hSpringRetryKeyStacktrace
	hKarafkaTopic
	hKarafkaPartition
	hKarafkaOffset
	hKarafkaGroup
	hKarafkaKey
	hKarafkaAttempts
	hKarafkaOldTopic
	hKarafkaOldPartition
	hKarafkaOldOffset
	hKarafkaOldGroup
	hKarafkaOldKey
	hKarafkaOldAttempts
	hWolverineType
	hWolverineMessage
	hWolverineStack
	hWolverineDestination
	hWolverinePartition
	hWolverineOffset
	hWolverineFailedAt
	hRuleName
	hRuleMode
	hRuleSubject
	hRuleTopic
	hRuleException
	hWatermillUUID
	hSpringMessageID
	hMessageID
	numHdr
)

// hdrByKey maps the lower-case key of every header Parse reads to its hdr.
var hdrByKey = map[string]hdr{
	HeaderTopic:                   hFwTopic,
	HeaderPartition:               hFwPartition,
	HeaderOffset:                  hFwOffset,
	HeaderTimestamp:               hFwTimestamp,
	HeaderGroup:                   hFwGroup,
	HeaderHandler:                 hFwHandler,
	HeaderEventID:                 hFwEventID,
	HeaderReason:                  hFwReason,
	HeaderError:                   hFwError,
	HeaderErrorClass:              hFwErrorClass,
	HeaderSchema:                  hFwSchema,
	HeaderAttempts:                hFwAttempts,
	HeaderFirstFailedAt:           hFwFirstFailedAt,
	HeaderFailedAt:                hFwFailedAt,
	HeaderValueOmitted:            hFwValueOmitted,
	HeaderValueBytes:              hFwValueBytes,
	ReplayHeaderCount:             hReplayCount,
	SpringOriginalTopic:           hSpringTopic,
	SpringOriginalPartition:       hSpringPartition,
	SpringOriginalOffset:          hSpringOffset,
	SpringOriginalTimestamp:       hSpringTimestamp,
	SpringOriginalConsumerGroup:   hSpringGroup,
	SpringExceptionFQCN:           hSpringFQCN,
	SpringExceptionCauseFQCN:      hSpringCauseFQCN,
	SpringExceptionMessage:        hSpringMessage,
	SpringExceptionStacktrace:     hSpringStacktrace,
	SpringKeyExceptionFQCN:        hSpringKeyFQCN,
	SpringKeyExceptionMessage:     hSpringKeyMessage,
	SpringKeyExceptionStack:       hSpringKeyStacktrace,
	SpringRetryAttempts:           hSpringRetryAttempts,
	ConnectTopic:                  hConnectTopic,
	ConnectPartition:              hConnectPartition,
	ConnectOffset:                 hConnectOffset,
	ConnectConnectorName:          hConnectConnector,
	ConnectStage:                  hConnectStage,
	ConnectExceptionClassName:     hConnectExceptionClass,
	ConnectExceptionMessage:       hConnectExceptionMessage,
	ConnectExceptionStacktrace:    hConnectExceptionStack,
	WatermillTopic:                hWatermillTopic,
	WatermillHandler:              hWatermillHandler,
	WatermillSubscriber:           hWatermillSubscriber,
	WatermillReason:               hWatermillReason,
	SmallRyeTopic:                 hSmallRyeTopic,
	SmallRyePartition:             hSmallRyePartition,
	SmallRyeOffset:                hSmallRyeOffset,
	SmallRyeReason:                hSmallRyeReason,
	SmallRyeCause:                 hSmallRyeCause,
	SmallRyeExceptionClassName:    hSmallRyeExceptionClass,
	SmallRyeCauseClassName:        hSmallRyeCauseClass,
	SmallRyeDeserializationReason: hSmallRyeDeserializationReason,
	SpringRetryOriginalTopic:      hSpringRetryTopic,
	SpringRetryOriginalPartition:  hSpringRetryPartition,
	SpringRetryOriginalOffset:     hSpringRetryOffset,
	SpringRetryOriginalTimestamp:  hSpringRetryTimestamp,
	SpringRetryExceptionFQCN:      hSpringRetryFQCN,
	SpringRetryExceptionCauseFQCN: hSpringRetryCauseFQCN,
	SpringRetryExceptionMessage:   hSpringRetryMessage,
	SpringRetryExceptionStack:     hSpringRetryStacktrace,
	SpringRetryKeyExceptionFQCN:   hSpringRetryKeyFQCN,
	SpringRetryKeyExceptionMsg:    hSpringRetryKeyMessage,
	SpringRetryKeyExceptionStack:  hSpringRetryKeyStacktrace,
	KarafkaTopic:                  hKarafkaTopic,
	KarafkaPartition:              hKarafkaPartition,
	KarafkaOffset:                 hKarafkaOffset,
	KarafkaConsumerGroup:          hKarafkaGroup,
	KarafkaKey:                    hKarafkaKey,
	KarafkaAttempts:               hKarafkaAttempts,
	KarafkaOldTopic:               hKarafkaOldTopic,
	KarafkaOldPartition:           hKarafkaOldPartition,
	KarafkaOldOffset:              hKarafkaOldOffset,
	KarafkaOldGroup:               hKarafkaOldGroup,
	KarafkaOldKey:                 hKarafkaOldKey,
	KarafkaOldAttempts:            hKarafkaOldAttempts,
	WolverineExceptionType:        hWolverineType,
	WolverineExceptionMessage:     hWolverineMessage,
	WolverineExceptionStack:       hWolverineStack,
	WolverineDestination:          hWolverineDestination,
	WolverinePartition:            hWolverinePartition,
	WolverineOffset:               hWolverineOffset,
	WolverineFailedAt:             hWolverineFailedAt,
	RuleName:                      hRuleName,
	RuleMode:                      hRuleMode,
	RuleSubject:                   hRuleSubject,
	RuleTopic:                     hRuleTopic,
	RuleException:                 hRuleException,
	WatermillMessageUUID:          hWatermillUUID,
	"kafka_messageid":             hSpringMessageID, // SpringMessageID, lower-cased
	MessageIDHeader:               hMessageID,
}

// parser reads one record's headers into a DeadLetter.
type parser struct {
	d *DeadLetter
	// raw are the record's headers, which d.Headers copies unless ParseOptions.NoHeaders.
	raw []kgo.RecordHeader
	// firstAt and lastAt are 1 + the index in raw of the first and last header of each hdr,
	// 0 when absent.
	firstAt, lastAt [numHdr]int
	// noTimes skips the time headers (ParseOptions.NoTimes).
	noTimes bool
	// strings shares repeated header text (ParseOptions.strings); nil allocates each.
	strings *interner
	// memo is the state a Parser keeps between records; nil for a one-off parse.
	memo *parseMemo
	// fallbackReason is the reason the convention's rule gives when neither its headers nor
	// the failure's class decide (docs/design.md §3.2); "" leaves it unknown.
	fallbackReason string
}

// repeats marks the headers whose text is usually the same from one dead letter to the next:
// interned when a scan keeps a string table. Ids, offsets and stack traces are not.
var repeats = func() (r [numHdr]bool) {
	for _, id := range []hdr{
		hFwTopic, hFwGroup, hFwHandler, hFwReason, hFwError, hFwErrorClass,
		hSpringTopic, hSpringGroup, hSpringFQCN, hSpringCauseFQCN, hSpringMessage, hSpringKeyFQCN, hSpringKeyMessage,
		hConnectTopic, hConnectConnector, hConnectStage, hConnectExceptionClass, hConnectExceptionMessage,
		hWatermillTopic, hWatermillHandler, hWatermillSubscriber, hWatermillReason,
		hSmallRyeTopic, hSmallRyeReason, hSmallRyeCause, hSmallRyeExceptionClass, hSmallRyeCauseClass,
		hSpringRetryTopic, hSpringRetryFQCN, hSpringRetryCauseFQCN, hSpringRetryMessage, hSpringRetryKeyFQCN, hSpringRetryKeyMessage,
		hKarafkaTopic, hKarafkaGroup, hKarafkaOldTopic, hKarafkaOldGroup,
		hWolverineType, hWolverineMessage, hWolverineDestination,
		hRuleName, hRuleMode, hRuleSubject, hRuleTopic, hRuleException,
	} {
		r[id] = true
	}
	return r
}()

// interner hands out one string for equal header values, bounded in entries and bytes: once
// full it allocates as if it were not there. It is not safe for concurrent use.
type interner struct {
	m     map[string]string
	bytes int
}

const (
	internMaxEntries = 4096
	internMaxBytes   = 1 << 20
)

func newInterner() *interner { return &interner{m: make(map[string]string)} }

func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok { // the lookup does not allocate
		return s
	}
	s := string(b)
	if len(in.m) < internMaxEntries && in.bytes+len(s) <= internMaxBytes {
		in.m[s] = s
		in.bytes += len(s)
	}
	return s
}

// asciiLower lower-cases ASCII letters only, so that keys compare ignoring ASCII case while
// every other byte (including invalid UTF-8) stays as it is. It allocates only when s has an
// upper-case letter.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// index copies the headers into d.Headers, finds the headers Parse reads and decides the
// convention. Conventions that lose to a preferred one are listed as problems.
func (p *parser) index(headers []kgo.RecordHeader, copyHeaders bool) {
	if len(headers) == 0 {
		return
	}
	p.raw = headers
	if copyHeaders {
		p.d.Headers = make([]envelope.Header, len(headers))
	}
	var firstOf [len(conventions)]int // 1 + index of the convention's first header, 0: none
	for i, h := range headers {
		if copyHeaders {
			p.d.Headers[i] = envelope.Header{Key: h.Key, Value: h.Value}
		}
		m := p.memo.meta(i, h.Key)
		if m.conv > 0 {
			if k := m.conv - 1; firstOf[k] == 0 {
				firstOf[k] = i + 1
			}
		}
		if m.id > 0 {
			id := hdr(m.id - 1)
			if p.firstAt[id] == 0 {
				p.firstAt[id] = i + 1
			}
			p.lastAt[id] = i + 1
		}
	}
	for k := range conventions {
		c := conventions[k].name
		if firstOf[k] == 0 {
			continue
		}
		if p.d.Convention == ConventionUnknown {
			p.d.Convention = c
			continue
		}
		// Only a prefix matched this key, so it may not be UTF-8: the problem names it readably
		// (Headers keeps the exact bytes), so that it survives JSON.
		p.d.HeaderProblems = append(p.d.HeaderProblems, HeaderProblem{
			Header:  strings.ToValidUTF8(p.raw[firstOf[k]-1].Key, "\uFFFD"),
			Problem: fmt.Sprintf("not read: the record also has %s dead-letter headers, which take precedence over %s ones", p.d.Convention, c),
		})
	}
}

func (p *parser) first(id hdr) ([]byte, bool) {
	if i := p.firstAt[id]; i > 0 {
		return p.raw[i-1].Value, true
	}
	return nil, false
}

func (p *parser) last(id hdr) ([]byte, bool) {
	if i := p.lastAt[id]; i > 0 {
		return p.raw[i-1].Value, true
	}
	return nil, false
}

// either is a when the record has that header, else b: the header a convention writes under
// two names (Spring's recoverer and retry topics, Karafka's current and older names).
func (p *parser) either(a, b hdr) hdr {
	if p.firstAt[a] > 0 {
		return a
	}
	return b
}

// key returns the key of the header id as it was written (the last one with that key).
func (p *parser) key(id hdr) string {
	if i := p.lastAt[id]; i > 0 {
		return p.raw[i-1].Key
	}
	return ""
}

func (p *parser) problemf(id hdr, format string, args ...any) {
	p.d.HeaderProblems = append(p.d.HeaderProblems, HeaderProblem{Header: p.key(id), Problem: fmt.Sprintf(format, args...)})
}

type lookup func(hdr) ([]byte, bool)

// text reads a UTF-8 header; "" when absent. Bytes that are not UTF-8 become U+FFFD and are
// listed as a problem.
func (p *parser) text(id hdr, get lookup) string {
	v, ok := get(id)
	if !ok {
		return ""
	}
	return p.textOf(id, v)
}

func (p *parser) textOf(id hdr, v []byte) string {
	if p.memo != nil && repeats[id] {
		// The text read last is kept only when it was valid UTF-8: equal bytes need no check.
		if s := p.memo.last[id]; s != "" && s == string(v) { // the comparison does not allocate
			return s
		}
	}
	if !utf8.Valid(v) {
		p.problemf(id, "%s: read with U+FFFD in its place", printable.InvalidUTF8(v))
		return strings.ToValidUTF8(string(v), "\uFFFD")
	}
	if p.strings != nil && repeats[id] {
		return p.strings.get(v)
	}
	if p.memo != nil && repeats[id] {
		s := string(v)
		p.memo.last[id] = s
		return s
	}
	return string(v)
}

// topic reads a topic-name header; a name Kafka would not accept is kept and listed.
func (p *parser) topic(id hdr, get lookup) string {
	t := p.text(id, get)
	if _, present := get(id); present && !kafka.ValidTopic(t) {
		p.problemf(id, "%s is not a valid topic name", quote(t))
	}
	return t
}

// decimal reads a decimal integer that fits in bits bits (sign included), spaces around it
// allowed. A well-formed number allocates nothing.
func (p *parser) decimal(id hdr, v []byte, bits int) (int64, bool) {
	if !utf8.Valid(v) {
		_ = p.textOf(id, v) // lists the problem
	}
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		p.problemf(id, "empty: want a decimal integer")
		return 0, false
	}
	n, err := strconv.ParseInt(string(t), 10, bits+1)
	if err != nil {
		s := strings.ToValidUTF8(string(t), "\uFFFD")
		if errors.Is(err, strconv.ErrRange) {
			p.problemf(id, "integer out of range: %s", quote(s))
		} else {
			p.problemf(id, "not an integer: %s", quote(s))
		}
		return 0, false
	}
	return n, true
}

func (p *parser) decimalPartition(id hdr, get lookup) *int32 {
	v, ok := get(id)
	if !ok {
		return nil
	}
	n, ok := p.decimal(id, v, 31)
	if !ok {
		return nil
	}
	return p.partition(id, n)
}

func (p *parser) decimalOffset(id hdr, get lookup) *int64 {
	v, ok := get(id)
	if !ok {
		return nil
	}
	n, ok := p.decimal(id, v, 63)
	if !ok {
		return nil
	}
	return p.offset(id, n)
}

// partition checks a partition number read from a header.
func (p *parser) partition(id hdr, n int64) *int32 {
	if n < 0 || n > 1<<31-1 {
		p.problemf(id, "partition %d out of range", n)
		return nil
	}
	v := int32(n)
	return &v
}

// offset checks an offset read from a header.
func (p *parser) offset(id hdr, n int64) *int64 {
	if n < 0 {
		p.problemf(id, "negative offset %d", n)
		return nil
	}
	return &n
}

// epochMillis turns a Spring timestamp into a time. -1 is Kafka's "no timestamp": nil, and
// not a problem.
func (p *parser) epochMillis(id hdr, ms int64) *time.Time {
	if ms == -1 {
		return nil
	}
	if ms < 0 {
		p.problemf(id, "negative timestamp %d", ms)
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// rfc3339 reads an RFC 3339 time header (fieldwork's), returned in UTC.
func (p *parser) rfc3339(id hdr) *time.Time {
	v, ok := p.last(id)
	if !ok || p.noTimes {
		return nil
	}
	s := strings.TrimSpace(p.textOf(id, v))
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		p.problemf(id, "not an RFC 3339 time: %s", quote(s))
		return nil
	}
	t = t.UTC()
	return &t
}

// bigEndian reads the width-byte (4 or 8) big-endian integer a Spring header holds. Some
// producers write other shapes; each is read, and listed as a problem: decimal text, a 4-byte
// int where 8 bytes are due and an 8-byte one where 4 are due. Any other length is a problem
// and not read.
//
// width bytes that are all ASCII digits are read as decimal text: as a big-endian int they
// would be at least 0x30303030 (808,464,432), beyond any real partition, offset or epoch
// millisecond.
func (p *parser) bigEndian(id hdr, v []byte, width int) (int64, bool) {
	if len(v) == width && !allDigits(v) {
		if width == 4 {
			return int64(int32(binary.BigEndian.Uint32(v))), true
		}
		return int64(binary.BigEndian.Uint64(v)), true
	}
	if s := bytes.TrimSpace(v); len(s) > 0 && isDecimal(s) {
		n, err := strconv.ParseInt(string(s), 10, width*8)
		if err != nil {
			p.problemf(id, "want %d big-endian bytes, got decimal text %s, out of range", width, quote(string(s)))
			return 0, false
		}
		p.problemf(id, "want %d big-endian bytes, got decimal text %s: read as %d", width, quote(string(s)), n)
		return n, true
	}
	switch {
	case width == 4 && len(v) == 8:
		n := int64(binary.BigEndian.Uint64(v))
		if n < -1<<31 || n > 1<<31-1 {
			p.problemf(id, "want 4 bytes, got 8 holding %d, out of range", n)
			return 0, false
		}
		p.problemf(id, "want 4 bytes, got 8: read as a big-endian int64, %d", n)
		return n, true
	case width == 8 && len(v) == 4:
		n := int64(int32(binary.BigEndian.Uint32(v)))
		p.problemf(id, "want 8 bytes, got 4: read as a big-endian int32, %d", n)
		return n, true
	}
	p.problemf(id, "want %d bytes, got %d", width, len(v))
	return 0, false
}

// bigEndianAnyWidth reads a 1- to 8-byte big-endian two's complement integer (Java's
// BigInteger.toByteArray), or decimal text (listed as a problem).
func (p *parser) bigEndianAnyWidth(id hdr, v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 8 {
		if s := bytes.TrimSpace(v); len(s) > 0 && isDecimal(s) {
			return p.bigEndian(id, v, 8)
		}
		p.problemf(id, "want 1 to 8 big-endian bytes, got %d", len(v))
		return 0, false
	}
	var n int64
	if v[0]&0x80 != 0 {
		n = -1
	}
	for _, b := range v {
		n = n<<8 | int64(b)
	}
	return n, true
}

func allDigits(v []byte) bool {
	for _, b := range v {
		if b < '0' || b > '9' {
			return false
		}
	}
	return len(v) > 0
}

// isDecimal reports whether s is an optional '-' followed by ASCII digits.
func isDecimal(s []byte) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return allDigits(s)
}
