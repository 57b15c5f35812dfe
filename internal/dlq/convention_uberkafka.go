package dlq

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// uber-go/kafka-client's dead letters carry no header: the key says it all (uberKafka).
var uberKafkaConvention = convention{
	name: ConventionUberKafka, fromKey: (*headerReader).uberKafka,
	doc: conventionDoc{
		title:  "uber-go/kafka-client",
		writer: "uber-go/kafka-client",
		route:  "the `DLQMetadata` protobuf in the key (`retry_count` 1, `topic` 2, `partition` 3, `offset` 4, `timestamp_ns` 5, `data` 6), read only from a record with no dead-letter header whose key is exactly such a message naming a valid topic",
		errors: "—",
		reason: "exhausted",
		other:  "retry count, original timestamp, original key (`data`)",
	},
}

// uberKafka reads uber-go/kafka-client's dead letters: no headers, the record key a protobuf
// DLQMetadata {retry_count int64 = 1, topic string = 2, partition int32 = 3, offset int64 = 4,
// timestamp_ns int64 = 5, data bytes = 6}, data holding the original key. A key is taken for
// one only when it is a well-formed message of exactly these fields that names a valid topic.
// The library sends a message there once its retries are used up: exhausted.
func (p *headerReader) uberKafka(key []byte) bool {
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
