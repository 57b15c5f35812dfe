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
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/printable"
)

// headerReader reads one record's headers into a DeadLetter: the route as the convention
// declares it (readRoute), the rest with the convention's read function.
type headerReader struct {
	d *DeadLetter
	// raw are the record's headers, which d.Headers copies unless ParseOptions.NoHeaders.
	raw []kgo.RecordHeader
	// headerIndex says where in raw each declared header is (firstAt, lastAt).
	*headerIndex
	// conv is the convention index found the record's, nil for none.
	conv *convention
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

// headerIndex is where a record's declared headers are: firstAt and lastAt are 1 + the index
// in raw of the first and last header of each hdr, 0 when absent. It lives in the parse state
// (pooled, or a Parser's own) and is cleared entry by entry (set lists the hdrs set), not as a whole: the arrays are
// a kilobyte, and a dead letter sets a dozen entries.
type headerIndex struct {
	firstAt, lastAt [maxHeaders]int32
	set             [maxHeaders]hdr
	n               int
}

// at records that the i-th header is a header id.
func (x *headerIndex) at(id hdr, i int) {
	if x.firstAt[id] == 0 {
		x.firstAt[id] = int32(i + 1)
		x.set[x.n] = id
		x.n++
	}
	x.lastAt[id] = int32(i + 1)
}

// clear resets the entries set.
func (x *headerIndex) clear() {
	for _, id := range x.set[:x.n] {
		x.firstAt[id], x.lastAt[id] = 0, 0
	}
	x.n = 0
}

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

// index sets d.Headers to the record's headers (the same slice, its capacity cut so that an
// append copies: a DeadLetter shares its record's memory), finds the headers Parse reads and
// decides the convention. Conventions that lose to a preferred one are listed as problems.
func (p *headerReader) index(headers []kgo.RecordHeader, copyHeaders bool) {
	if len(headers) == 0 {
		return
	}
	p.raw = headers
	if copyHeaders {
		p.d.Headers = headers[:len(headers):len(headers)]
	}
	var firstOf [len(conventions)]int // 1 + index of the convention's first header, 0: none
	for i, h := range headers {
		m := p.memo.meta(i, h.Key)
		if m.conv > 0 {
			if k := m.conv - 1; firstOf[k] == 0 {
				firstOf[k] = i + 1
			}
		}
		if m.id > 0 {
			p.at(hdr(m.id-1), i)
		}
	}
	for k, first := range firstOf {
		if first == 0 {
			continue
		}
		c := conventions[k].name
		if p.conv == nil {
			p.conv, p.d.Convention = conventions[k], c
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

func (p *headerReader) first(id hdr) ([]byte, bool) {
	if i := p.firstAt[id]; i > 0 {
		return p.raw[i-1].Value, true
	}
	return nil, false
}

func (p *headerReader) last(id hdr) ([]byte, bool) {
	if i := p.lastAt[id]; i > 0 {
		return p.raw[i-1].Value, true
	}
	return nil, false
}

// either is a when the record has that header, else b: the header a convention writes under
// two names (Spring's recoverer and retry topics, Karafka's current and older names).
func (p *headerReader) either(a, b hdr) hdr {
	if p.firstAt[a] > 0 {
		return a
	}
	return b
}

// key returns the key of the header id as it was written (the last one with that key).
func (p *headerReader) key(id hdr) string {
	if i := p.lastAt[id]; i > 0 {
		return p.raw[i-1].Key
	}
	return ""
}

func (p *headerReader) problemf(id hdr, format string, args ...any) {
	p.d.HeaderProblems = append(p.d.HeaderProblems, HeaderProblem{Header: p.key(id), Problem: fmt.Sprintf(format, args...)})
}

type lookup func(hdr) ([]byte, bool)

// text reads a UTF-8 header; "" when absent. Bytes that are not UTF-8 become U+FFFD and are
// listed as a problem.
func (p *headerReader) text(id hdr, get lookup) string {
	v, ok := get(id)
	if !ok {
		return ""
	}
	return p.textOf(id, v)
}

func (p *headerReader) textOf(id hdr, v []byte) string {
	if p.memo != nil && repeated[id] {
		// The text read last is kept only when it was valid UTF-8: equal bytes need no check.
		if s := p.memo.last[id]; s != "" && s == string(v) { // the comparison does not allocate
			return s
		}
	}
	if !utf8.Valid(v) {
		p.problemf(id, "%s: read with U+FFFD in its place", printable.InvalidUTF8(v))
		return strings.ToValidUTF8(string(v), "\uFFFD")
	}
	if !repeated[id] {
		return string(v)
	}
	var s string
	if p.strings != nil {
		s = p.strings.get(v)
	} else {
		s = string(v)
	}
	if p.memo != nil {
		// Remembered whichever made it: the next record's equal value is then a comparison,
		// not a hash and a lookup in the interner.
		p.memo.last[id] = s
	}
	return s
}

// topic reads a topic-name header; a name Kafka would not accept is kept and listed.
func (p *headerReader) topic(id hdr, get lookup) string {
	t := p.text(id, get)
	if _, present := get(id); present && !kafka.ValidTopic(t) {
		p.problemf(id, "%s is not a valid topic name", quote(t))
	}
	return t
}

// decimal reads a decimal integer that fits in bits bits (sign included), spaces around it
// allowed. A well-formed number allocates nothing.
func (p *headerReader) decimal(id hdr, v []byte, bits int) (int64, bool) {
	if n, ok := plainDecimal(v); ok && n < 1<<min(bits, 62) {
		return n, true
	}
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

// integer reads the number header id holds, of bits bits (sign included): 31 for a partition,
// 63 for an offset or a time; decimal text, or big-endian bytes when enc (the header's declared
// encoding) says so.
func (p *headerReader) integer(id hdr, get lookup, bits int, enc how) (int64, bool) {
	v, ok := get(id)
	if !ok {
		return 0, false
	}
	if enc == bigEndian {
		return p.bigEndian(id, v, (bits+1)/8)
	}
	return p.decimal(id, v, bits)
}

// plainDecimal reads the common case of a decimal header on its own: 1 to 18 ASCII digits,
// no sign and no spaces (what a writer writes), which cannot overflow an int64; ok is false
// for anything else, which decimal reads with its checks.
func plainDecimal(v []byte) (int64, bool) {
	if len(v) > 18 || !allDigits(v) {
		return 0, false
	}
	var n int64
	for _, c := range v {
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// partition checks a partition number read from a header.
func (p *headerReader) partition(id hdr, n int64) *int32 {
	if n < 0 || n > 1<<31-1 {
		p.problemf(id, "partition %d out of range", n)
		return nil
	}
	if p.memo != nil {
		return p.memo.partition(int32(n))
	}
	v := int32(n)
	return &v
}

// offset checks an offset read from a header.
func (p *headerReader) offset(id hdr, n int64) *int64 {
	if n < 0 {
		p.problemf(id, "negative offset %d", n)
		return nil
	}
	if p.memo != nil {
		return p.memo.offset(n)
	}
	v := n // only this path allocates
	return &v
}

// epochMillis turns a Spring timestamp into a time. -1 is Kafka's "no timestamp": nil, and
// not a problem.
func (p *headerReader) epochMillis(id hdr, ms int64) *time.Time {
	if ms == -1 {
		return nil
	}
	if ms < 0 {
		p.problemf(id, "negative timestamp %d", ms)
		return nil
	}
	return p.time(time.UnixMilli(ms).UTC())
}

// time is t where a dead letter can point at it: carved from the Parser's memo when there is
// one.
func (p *headerReader) time(t time.Time) *time.Time {
	if p.memo != nil {
		return p.memo.time(t)
	}
	pt := new(time.Time) // not &t: t would then be on the heap on both paths
	*pt = t
	return pt
}

// rfc3339 reads an RFC 3339 time header (fieldwork's), returned in UTC.
func (p *headerReader) rfc3339(id hdr, get lookup) *time.Time {
	if p.noTimes {
		return nil
	}
	v, ok := get(id)
	if !ok {
		return nil
	}
	if t, ok := utcRFC3339(v); ok {
		return p.time(t)
	}
	if len(v) > 0 && utf8.Valid(v) {
		// Parsed where it is, without a string of its own (a listing reads three times a
		// dead letter): its text is copied only for a problem, below.
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(unsafe.String(&v[0], len(v)))); err == nil {
			return p.time(t.UTC())
		}
	}
	s := strings.TrimSpace(p.textOf(id, v))
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		p.problemf(id, "not an RFC 3339 time: %s", quote(s))
		return nil
	}
	return p.time(t.UTC())
}

// utcRFC3339 reads v when it is an RFC 3339 time in UTC as fieldwork writes one,
// "2006-01-02T15:04:05Z" with up to nine digits of fraction, every field within its range: the
// time time.Parse(time.RFC3339Nano, …).UTC() reads, digit by digit (a listing reads three a
// dead letter). Anything else (another zone, spaces, a day the month lacks) is not ok, and
// left to time.Parse.
func utcRFC3339(v []byte) (time.Time, bool) {
	n := len(v)
	if n < 20 || n > 30 || v[n-1] != 'Z' || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' ||
		n > 20 && v[19] != '.' {
		return time.Time{}, false
	}
	// year, month, day, hour, minute, second: two digits each but the year's four.
	for _, at := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		if v[at]-'0' > 9 {
			return time.Time{}, false
		}
	}
	two := func(at int) int { return int(v[at]-'0')*10 + int(v[at+1]-'0') }
	y, mo, d, h, mi, sec := two(0)*100+two(2), two(5), two(8), two(11), two(14), two(17)
	var ns int64
	if n > 20 {
		digits := v[20 : n-1]
		var ok bool
		if ns, ok = plainDecimal(digits); !ok { // no digit after the point is not a fraction
			return time.Time{}, false
		}
		for range 9 - len(digits) {
			ns *= 10
		}
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Unix(unixDays(y, mo, d)*86400+int64(h*3600+mi*60+sec), ns).UTC(), true
}

// daysIn is how many days month mo of year y has.
func daysIn(mo, y int) int {
	if mo == 2 {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return 31 - (mo-1)%7%2
}

// bigEndian reads the width-byte (4 or 8) big-endian integer a Spring header holds. Some
// producers write other shapes; each is read, and listed as a problem: decimal text, a 4-byte
// int where 8 bytes are due and an 8-byte one where 4 are due. Any other length is a problem
// and not read.
//
// width bytes that are all ASCII digits are read as decimal text: as a big-endian int they
// would be at least 0x30303030 (808,464,432), beyond any real partition, offset or epoch
// millisecond.
func (p *headerReader) bigEndian(id hdr, v []byte, width int) (int64, bool) {
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
func (p *headerReader) bigEndianAnyWidth(id hdr, v []byte) (int64, bool) {
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

// endpointTopic reads a topic-name header that may be an endpoint URI (kafka://topic/NAME):
// the topic it names, a name Kafka would not accept kept and listed.
func (p *headerReader) endpointTopic(id hdr, get lookup) string {
	v, ok := get(id)
	if !ok {
		return ""
	}
	dest := p.textOf(id, v)
	t := endpointTopicName(dest)
	if !kafka.ValidTopic(t) {
		p.problemf(id, "%s names no valid topic", quote(dest))
	}
	return t
}

// endpointTopicName is the topic an endpoint URI names (kafka://topic/orders), or the value
// itself when it is no URI.
func endpointTopicName(dest string) string {
	if i := strings.Index(dest, "://"); i >= 0 {
		rest := strings.Trim(dest[i+3:], "/")
		if j := strings.LastIndexByte(rest, '/'); j >= 0 {
			return rest[j+1:]
		}
		return rest
	}
	return dest
}

// count reads the last header id as a count: a decimal integer, not negative.
func (p *headerReader) count(id hdr) (int64, bool) {
	v, ok := p.last(id)
	if !ok {
		return 0, false
	}
	n, ok := p.decimal(id, v, 31)
	if !ok {
		return 0, false
	}
	if n < 0 {
		p.problemf(id, "negative count %d", n)
		return 0, false
	}
	return n, true
}
