package kafka

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// MaxTopicLength is the longest topic name Kafka accepts.
const MaxTopicLength = 249

// RecordAddress is where a record is: its topic, partition and offset. fieldwork spells it
// one way in every message, report and argument: topic/partition/offset (tasks/0/14), the
// form `inspect record`, `dlq show` and `replay` take and the fw.replay.source header holds.
type RecordAddress struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// TopicPartition is one partition of a topic, spelled topic/partition (the address of a
// record without its offset).
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// String writes topic/partition.
func (tp TopicPartition) String() string { return tp.Topic + "/" + strconv.Itoa(int(tp.Partition)) }

// Less orders by topic, then partition.
func (tp TopicPartition) Less(o TopicPartition) bool {
	if tp.Topic != o.Topic {
		return tp.Topic < o.Topic
	}
	return tp.Partition < o.Partition
}

// AddressOf is the address of rec.
func AddressOf(rec *kgo.Record) RecordAddress {
	return RecordAddress{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
}

// String writes the address as topic/partition/offset.
func (a RecordAddress) String() string { return string(a.Append(nil)) }

// Append appends the address as topic/partition/offset to b, for a caller that writes many
// (a header per replayed record) without a string each.
func (a RecordAddress) Append(b []byte) []byte {
	b = append(b, a.Topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(a.Partition), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, a.Offset, 10)
}

// addressHint ends every address error: the one accepted form.
const addressHint = "want TOPIC/PARTITION/OFFSET, e.g. tasks/0/14"

// ParseRecordAddress reads topic/partition/offset (tasks/0/14): a legal topic name (see
// CheckTopic; it cannot hold a slash, so the address splits on exactly two), a partition
// from 0 and an offset from 0, in decimal. Surrounding spaces are ignored. topic/partition@
// offset, the form fieldwork's messages used before, is read too, since dead letters written
// then still carry it in their error headers; it is never written. Anything else is a usage
// error that says which part is wrong.
func ParseRecordAddress(s string) (RecordAddress, error) {
	in := s
	s = strings.TrimSpace(s)
	bad := func(format string, args ...any) error {
		return fwerr.Usagef("record address %q: %s (%s)", in, fmt.Sprintf(format, args...), addressHint)
	}
	if s == "" {
		return RecordAddress{}, bad("empty")
	}
	parts := strings.Split(s, "/")
	if len(parts) == 2 {
		if i := strings.LastIndexByte(parts[1], '@'); i >= 0 {
			parts = []string{parts[0], parts[1][:i], parts[1][i+1:]}
		}
	}
	switch {
	case len(parts) == 1:
		return RecordAddress{}, bad("no partition and offset")
	case len(parts) == 2:
		return RecordAddress{}, bad("no offset")
	case len(parts) > 3:
		return RecordAddress{}, bad("too many slashes: a topic name cannot contain one")
	}
	topic, part, off := parts[0], parts[1], parts[2]
	if err := TopicProblem(topic); err != "" {
		return RecordAddress{}, bad("%s", err)
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 || !decimal(part) {
		if part == "" {
			return RecordAddress{}, bad("no partition")
		}
		return RecordAddress{}, bad("partition %q is not a number from 0 to %d", part, int32(1<<31-1))
	}
	o, err := strconv.ParseInt(off, 10, 64)
	if err != nil || o < 0 || !decimal(off) {
		if off == "" {
			return RecordAddress{}, bad("no offset")
		}
		return RecordAddress{}, bad("offset %q is not a number from 0", off)
	}
	return RecordAddress{Topic: topic, Partition: int32(p), Offset: o}, nil
}

// decimal reports whether s is digits alone: ParseInt also takes a sign.
func decimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ValidTopic reports whether name is a legal Kafka topic name: 1 to 249 characters of
// [a-zA-Z0-9._-], and neither "." nor "..".
func ValidTopic(name string) bool { return TopicProblem(name) == "" }

// CheckTopic is ValidTopic as a usage error that says what is wrong with name; nil when it
// is legal.
func CheckTopic(name string) error {
	if p := TopicProblem(name); p != "" {
		return fwerr.Usagef("topic %q: %s", name, p)
	}
	return nil
}

// TopicProblem says what makes name an illegal topic name, "" when nothing does: the one
// rule of ValidTopic, CheckTopic and every topic flag.
func TopicProblem(name string) string {
	switch {
	case name == "":
		return "no topic name"
	case len(name) > MaxTopicLength:
		return fmt.Sprintf("a topic name is at most %d characters, this one has %d", MaxTopicLength, len(name))
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a topic name", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			r, _ := utf8.DecodeRuneInString(name[i:])
			return fmt.Sprintf("a topic name holds only ASCII letters, digits, '.', '_' and '-', not %q", r)
		}
	}
	return ""
}
