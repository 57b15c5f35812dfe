package dlq

import (
	"fmt"
	"strings"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// dlqProgress is the progress line of a scan of dead-letter topics, labelled with the topics.
func dlqProgress(s *output.Streams, verb string, topics []string) *output.Progress {
	label := verb + " " + strings.Join(topics, ", ")
	if len(topics) > 3 {
		label = fmt.Sprintf("%s %d dead-letter topics", verb, len(topics))
	}
	return output.NewProgress(s, output.ProgressOptions{Label: label})
}

// dlqScanProgress is dlqProgress as a scan's callback and the function that ends the line.
func dlqScanProgress(s *output.Streams, verb string, topics []string) (func(done, total int64), func()) {
	p := dlqProgress(s, verb, topics)
	return p.Update, p.Stop
}

// dlqOriginal writes a dead letter's original position as a record address; an incomplete
// one (its headers do not say everything) is shown with "?" for what is not known, a
// display only: no command takes it as an address.
func dlqOriginal(d dlq.DeadLetter) string {
	if d.OriginalTopic == "" && d.OriginalPartition == nil && d.OriginalOffset == nil {
		return "-"
	}
	if d.OriginalTopic != "" && d.OriginalPartition != nil && d.OriginalOffset != nil {
		return kafka.RecordAddress{Topic: d.OriginalTopic, Partition: *d.OriginalPartition, Offset: *d.OriginalOffset}.String()
	}
	topic, part, off := d.OriginalTopic, "?", "?"
	if topic == "" {
		topic = "?"
	}
	if d.OriginalPartition != nil {
		part = fmt.Sprint(*d.OriginalPartition)
	}
	if d.OriginalOffset != nil {
		off = fmt.Sprint(*d.OriginalOffset)
	}
	return topic + "/" + part + "/" + off
}

// dlqOneLine folds whitespace (newlines of a message or stack trace) into single spaces, for
// a table cell.
func dlqOneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
