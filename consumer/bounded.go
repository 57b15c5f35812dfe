package consumer

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

// batchOverhead is the size of a record batch holding no record, as franz-go counts it
// against its batch limit (the 61 bytes of Kafka's batch header and the 4 of its length in
// the request); the broker counts 61 against max.message.bytes, so the estimate errs by 4
// bytes on the safe side.
const batchOverhead = 65

// batchBytes is the size of a record batch holding r alone, before compression: what both
// franz-go's batch limit and the broker's max.message.bytes are compared with (the producer
// sends a batch uncompressed when compression does not make it smaller). Varints count at
// their largest where their value depends on the batch (timestamp and offset deltas).
func batchBytes(r *kgo.Record) int {
	body := 1 + 10 + 5 // attributes, timestamp delta, offset delta
	body += bytesField(r.Key) + bytesField(r.Value) + varintLen(len(r.Headers))
	for _, h := range r.Headers {
		body += varintLen(len(h.Key)) + len(h.Key) + bytesField(h.Value)
	}
	return batchOverhead + varintLen(body) + body
}

// bytesField is the encoded size of a nullable byte string: a varint length (-1 for nil),
// then the bytes.
func bytesField(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(len(b)) + len(b)
}

// varintLen is the length of n as a zig-zag varint, Kafka's encoding of record fields.
func varintLen(n int) int {
	u := uint64(n)<<1 ^ uint64(int64(n)>>63)
	l := 1
	for u >= 0x80 {
		u >>= 7
		l++
	}
	return l
}

// boundedCopy returns whole (a dead letter from dlq.NewDeadLetter) with the headers
// fw.dlq.value_omitted (why) and fw.dlq.value_bytes (the length of whole's value) added, and
// its value cut to the longest prefix with which the record fits limit bytes; with omit, or
// when no prefix fits, or when the whole value would fit (the failure then had nothing to do
// with size, so cutting would not help), the value is left out (nil). Key, headers and the
// other fw.dlq.* headers stay as they are: the copy still says which record failed, where
// and why. whole is not modified.
func boundedCopy(whole *kgo.Record, why string, limit int, omit bool) (rec *kgo.Record, kept int) {
	headers := make([]kgo.RecordHeader, 0, len(whole.Headers)+2)
	headers = append(headers, whole.Headers...)
	headers = append(headers,
		kgo.RecordHeader{Key: dlq.HeaderValueOmitted, Value: []byte(why)},
		kgo.RecordHeader{Key: dlq.HeaderValueBytes, Value: []byte(strconv.Itoa(len(whole.Value)))},
	)
	rec = &kgo.Record{Topic: whole.Topic, Key: whole.Key, Headers: headers, Timestamp: whole.Timestamp}
	if omit {
		return rec, 0
	}
	// With a value, its length varint grows from 1 byte (nil) to at most 5, and the record's
	// own length varint by at most 4.
	room := limit - batchBytes(rec) - 8
	if room <= 0 || room >= len(whole.Value) {
		return rec, 0
	}
	rec.Value = whole.Value[:room:room]
	return rec, room
}
