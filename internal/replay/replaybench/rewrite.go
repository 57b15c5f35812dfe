package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

// rewriter writes, for each dead letter, the record a replay sends, with no more work than
// that takes: to the topic and partition its fieldwork dead-letter headers name, its headers
// without the dead-letter ones (the bench's dead letters carry no other convention's), and the
// five provenance headers (fw.replay.id, .source, .count, .at, .reason) plus fw.replay.for, as
// long as the replay's, in arrays carved a few hundred records at a time. No dead letter is
// parsed beyond its route, nothing is filtered, looked up, tracked or journaled: it is the
// floor of the replay's own output, what any replay that keeps the provenance contract
// (docs/design.md §3.3) hands the producer.
type rewriter struct {
	id, reason, at, aim []byte
	topic               string // the last original topic read
	// ids: read each dead letter's event id (fw.dlq.event_id) into eventID, for the journal.
	ids     bool
	eventID string
	recs    []kgo.Record
	hdrs    []kgo.RecordHeader
	buf     []byte
}

func newRewriter() *rewriter {
	return &rewriter{id: []byte("bench-floor"), reason: []byte("benchmark"), at: replayAtNow(), aim: []byte("bench")}
}

// rewrite returns the record a replay sends for r; ok is false when r names no route.
func (w *rewriter) rewrite(r *kgo.Record) (*kgo.Record, bool) {
	const slab = 256
	if len(w.recs) == cap(w.recs) {
		w.recs = make([]kgo.Record, 0, slab)
	}
	if cap(w.hdrs)-len(w.hdrs) < len(r.Headers)+6 {
		w.hdrs = make([]kgo.RecordHeader, 0, slab*(len(r.Headers)+6))
	}
	if cap(w.buf)-len(w.buf) < len(r.Topic)+48 {
		w.buf = make([]byte, 0, slab*(len(r.Topic)+48))
	}
	var topic string
	partition := int32(-1)
	start := len(w.hdrs)
	for _, h := range r.Headers {
		if !strings.HasPrefix(h.Key, dlq.HeaderPrefix) {
			w.hdrs = append(w.hdrs, h)
			continue
		}
		switch h.Key {
		case dlq.HeaderTopic:
			// The dead letters name a few topics: the last one's string is shared, as the
			// replay's parse shares it.
			if string(h.Value) != w.topic {
				w.topic = string(h.Value)
			}
			topic = w.topic
		case dlq.HeaderEventID:
			if w.ids {
				w.eventID = string(h.Value)
			}
		case dlq.HeaderPartition:
			n := 0
			for _, c := range h.Value {
				n = n*10 + int(c-'0')
			}
			partition = int32(n)
		}
	}
	if topic == "" || partition < 0 {
		return nil, false
	}
	b0 := len(w.buf)
	w.buf = append(w.buf, r.Topic...)
	w.buf = append(w.buf, '/')
	w.buf = strconv.AppendInt(w.buf, int64(r.Partition), 10)
	w.buf = append(w.buf, '/')
	w.buf = strconv.AppendInt(w.buf, r.Offset, 10)
	b1 := len(w.buf)
	w.buf = append(w.buf, '1')
	w.hdrs = append(w.hdrs,
		kgo.RecordHeader{Key: dlq.ReplayHeaderID, Value: w.id},
		kgo.RecordHeader{Key: dlq.ReplayHeaderSource, Value: w.buf[b0:b1:b1]},
		kgo.RecordHeader{Key: dlq.ReplayHeaderCount, Value: w.buf[b1:len(w.buf):len(w.buf)]},
		kgo.RecordHeader{Key: dlq.ReplayHeaderAt, Value: w.at},
		kgo.RecordHeader{Key: dlq.ReplayHeaderReason, Value: w.reason},
		kgo.RecordHeader{Key: dlq.ReplayHeaderFor, Value: w.aim},
	)
	w.recs = append(w.recs, kgo.Record{Topic: topic, Partition: partition, Key: r.Key, Value: r.Value,
		Headers: w.hdrs[start:len(w.hdrs):len(w.hdrs)]})
	return &w.recs[len(w.recs)-1], true
}

// replayAtNow is fw.replay.at as the replay writes it (RFC 3339 with nanoseconds, UTC).
func replayAtNow() []byte { return time.Now().UTC().AppendFormat(nil, time.RFC3339Nano) }
