package dlq

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/fieldwork/fieldwork/internal/printable"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// appendJSON is DeadLetter.AppendJSON written out by hand: the bytes encoding/json writes for
// deadLetterJSON (json.Marshal, HTML escaped), field by field in its order, without reflection.
// A dead letter's JSON is what `dlq list -o jsonl` writes a million times; the reflective
// encoder is kept as the reference (marshalReflect) that the tests hold this one to.
func (d *DeadLetter) appendJSON(b []byte) ([]byte, error) {
	b, err := d.appendJSONOrigin(b)
	if err != nil {
		return nil, err
	}
	if b, err = d.appendJSONFailure(b); err != nil {
		return nil, err
	}
	return d.appendJSONRecord(b)
}

// appendJSONOrigin writes the fields from "topic" to "original_timestamp": where the dead letter
// is and where its original record was.
func (d *DeadLetter) appendJSONOrigin(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"topic":`...)
	b = appendJSONString(b, d.Topic)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(d.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, d.Offset, 10)
	b = append(b, `,"timestamp":`...)
	if b, err = appendJSONTime(b, d.Timestamp); err != nil {
		return nil, err
	}
	b = append(b, `,"convention":`...)
	b = appendJSONString(b, string(d.Convention))
	b = append(b, `,"original_topic":`...)
	b = appendJSONString(b, d.OriginalTopic)
	b = append(b, `,"original_partition":`...)
	if d.OriginalPartition == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*d.OriginalPartition), 10)
	}
	b = append(b, `,"original_offset":`...)
	if d.OriginalOffset == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *d.OriginalOffset, 10)
	}
	b = append(b, `,"original_timestamp":`...)
	return appendJSONTimePtr(b, d.OriginalTimestamp)
}

// appendJSONFailure writes the fields from "group" to "replay_count": what failed, why and how
// often.
func (d *DeadLetter) appendJSONFailure(b []byte) ([]byte, error) {
	var err error
	for _, f := range [...]struct{ name, v string }{
		{`,"group":`, d.Group}, {`,"handler":`, d.Handler}, {`,"reason":`, d.Reason},
		{`,"error_class":`, d.ErrorClass}, {`,"error_message":`, d.ErrorMessage}, {`,"stack_trace":`, d.StackTrace},
	} {
		b = append(b, f.name...)
		b = appendJSONString(b, f.v)
	}
	b = appendJSONOmitEmpty(b, `,"root_cause":`, d.RootCause)
	b = appendJSONOmitEmpty(b, `,"expected_schema":`, d.ExpectedSchema)
	if len(d.RetryTopics) > 0 {
		b = append(b, `,"retry_topics":[`...)
		for i, t := range d.RetryTopics {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t)
		}
		b = append(b, ']')
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(d.Attempts), 10)
	b = append(b, `,"first_failed_at":`...)
	if b, err = appendJSONTimePtr(b, d.FirstFailedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"failed_at":`...)
	if b, err = appendJSONTimePtr(b, d.FailedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"event_id":`...)
	b = appendJSONString(b, d.EventID)
	b = appendJSONOmitEmpty(b, `,"event_id_source":`, d.EventIDSource)
	b = appendJSONOmitEmpty(b, `,"value_omitted":`, d.ValueOmitted)
	if d.ValueBytes != 0 {
		b = append(b, `,"value_bytes":`...)
		b = strconv.AppendInt(b, d.ValueBytes, 10)
	}
	b = append(b, `,"replay_count":`...)
	return strconv.AppendInt(b, int64(d.ReplayCount), 10), nil
}

// appendJSONOmitEmpty writes the field name (with its leading comma and colon) and the string
// v, unless v is empty (omitempty).
func appendJSONOmitEmpty(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendJSONString(append(b, name...), v)
}

// appendJSONRecord writes the fields from "key_schema" to the end: the record's schemas, key,
// value, headers and header problems.
func (d *DeadLetter) appendJSONRecord(b []byte) ([]byte, error) {
	for _, p := range []struct {
		name string
		p    *schema.Payload
	}{{`,"key_schema":`, d.KeySchema}, {`,"value_schema":`, d.ValueSchema}} {
		if p.p == nil {
			continue
		}
		m, err := json.Marshal(p.p)
		if err != nil {
			return nil, err
		}
		b = append(append(b, p.name...), m...)
	}
	b = append(b, `,"key":`...)
	b = appendJSONBytes(b, d.Key, "key")
	if d.HasOriginalKey {
		b = append(b, `,"has_original_key":true`...)
		if d.OriginalKey != nil {
			b = append(b, `,"original_key":`...)
			b = appendJSONBytes(b, d.OriginalKey, "original_key")
		}
	}
	b = append(b, `,"value":`...)
	b = appendJSONBytes(b, d.Value, "value")
	b = append(b, `,"headers":[`...)
	for i, h := range d.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendJSONBytes(b, unsafeBytes(h.Key), "key")
		b = append(b, `,"value":`...)
		b = appendJSONBytes(b, h.Value, "value")
		b = append(b, '}')
	}
	b = append(b, `],"header_problems":[`...)
	for i, p := range d.HeaderProblems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"header":`...)
		b = appendJSONString(b, p.Header)
		b = append(b, `,"problem":`...)
		b = appendJSONString(b, p.Problem)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// appendJSONBytes writes bytes as printable.Text gives them, the value of the field name: text
// (null when nil), and when they are not printable the field name_base64 after it with the
// exact bytes (standard base64, as encoding/json writes a []byte).
func appendJSONBytes(b, v []byte, name string) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if out, ok := appendPrintable(b, v); ok {
		return out
	}
	b = appendJSONString(b, strings.ToValidUTF8(string(v), "\uFFFD"))
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `_base64":"`...)
	b = base64Std.AppendEncode(b, v)
	return append(b, '"')
}

// appendPrintable is appendJSONString(b, v) when v is printable (printable.Is, as
// printable.Text decides), in the same pass that checks it; otherwise it returns b as it was
// and false.
func appendPrintable(b, v []byte) ([]byte, bool) {
	n := len(b)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(v); {
		for i+8 <= len(v) {
			m := plainWord(binary.LittleEndian.Uint64(v[i : i+8]))
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(v) && plainJSON[v[i]] {
			i++
		}
		if i == len(v) {
			break
		}
		c := v[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				return b[:n], false
			}
			b = appendEscapedASCII(append(b, v[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(v[i:])
		if r == utf8.RuneError && size == 1 || printable.Unprintable(r) {
			return b[:n], false
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, v[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			start = i + size
		}
		i += size
	}
	b = append(b, v[start:]...)
	return append(b, '"'), true
}

// plainRun is how many bytes s begins with that plainJSON holds as they are, eight at a time
// (plainWord) and then one at a time.
func plainRun(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if m := plainWord(binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && plainJSON[s[i]] {
		i++
	}
	return i
}

// plainWord marks, with its high bit, each byte of the eight in x (little endian) that is not
// plain: 0x80 or more, below 0x20, 0x7f, " or & (0x22 and 0x26 are both 0x26 with bit 2
// set), \, or < or > (0x3c and 0x3e are both 0x3e with bit 1 set). A borrow or carry runs
// only out of such a byte, so the lowest byte it marks is the first that is not plain; it is
// 0 when all eight are.
func plainWord(x uint64) uint64 {
	const ones = 0x0101010101010101
	return (x | (x - ones*0x20) | (x + ones) | ((x | ones*0x04) ^ ones*0x26 - ones) |
		(x ^ ones*0x5c - ones) | ((x | ones*0x02) ^ ones*0x3e - ones)) & (ones * 0x80)
}

// plainJSON marks the ASCII bytes a JSON string with HTML escaping holds as they are.
// It has 256 entries, false from utf8.RuneSelf on, so that any byte indexes it.
var plainJSON = func() (t [256]bool) {
	for c := byte(0x20); c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

func appendJSONTimePtr(b []byte, t *time.Time) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	return appendJSONTime(b, *t)
}

// appendJSONTime writes t as fieldwork's JSON gives every time: RFC 3339 in UTC with three
// digits of fraction (timespec.TimeLayout, docs/json.md), and fails where
// time.Time.MarshalJSON fails (a year outside 0-9999, a zone offset of a day or more).
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	if _, off := t.Zone(); off > -24*3600 && off < 24*3600 {
		// A year in UTC of 1 to 9998 is one of 0 to 9999 in any such zone; at the ends of
		// that range the zone's year is asked too.
		if sec := t.Unix(); sec >= year0Unix+366*86400 && sec < year10000Unix-366*86400 ||
			sec >= year0Unix && sec < year10000Unix && (off == 0 || t.Year() >= 0 && t.Year() <= 9999) {
			return appendUTCMillis(b, sec, t.Nanosecond()), nil
		}
	}
	j, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendUTCMillis appends the instant sec seconds and nsec nanoseconds after 1970-01-01 UTC
// (in a year 0 to 9999) quoted in timespec.TimeLayout, "2006-01-02T15:04:05.000Z", digit by
// digit: what u.AppendFormat(b, timespec.TimeLayout) writes for it in UTC, without reading
// the layout or working out the calendar more than once (a listing writes four a dead letter).
func appendUTCMillis(b []byte, sec int64, nsec int) []byte {
	days, s := sec/86400, int(sec%86400)
	if s < 0 {
		days, s = days-1, s+86400
	}
	y, mo, d := civil(days)
	h, mi := s/3600, s/60%60
	s %= 60
	ms := nsec / 1e6
	return append(b, '"',
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}

var base64Std = base64.StdEncoding

// unsafeBytes is s as bytes, never nil (a header's key is text, "" included), without a copy:
// only read.
func unsafeBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

const hexDigits = "0123456789abcdef"

// appendEscapedASCII writes the ASCII byte c, one that plainJSON does not hold as it is, as
// encoding/json escapes it: \" and \\, \b \f \n \r \t, the rest (other controls, <, >, &) as
// \u00XX.
func appendEscapedASCII(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// appendJSONString writes s as encoding/json writes a string with HTML escaping (json.Marshal):
// ", \ and control characters escaped (\b \f \n \r \t short), <, > and & as \u003c \u003e
// \u0026, U+2028 and U+2029 escaped, and each invalid UTF-8 byte as \ufffd.
func appendJSONString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i += plainRun(string(s[i:])); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				i++
				continue
			}
			b = appendEscapedASCII(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
