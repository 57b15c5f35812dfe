package replay

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

// Provenance is what a replay stamps on every record it sends (docs/design.md §3.3).
type Provenance struct {
	RunID  string
	Reason string
	// ForGroup and AllGroups are the spec's (Spec.ForGroup): the group fw.replay.for names,
	// or none.
	ForGroup  string
	AllGroups bool
	// Edit, when set, is applied to every record sent (a plan that edits sends one).
	Edit *Edit
	// id and reason are the values as bytes, shared by every record sent (the producer never
	// modifies header values); forGroup is ForGroup's.
	id, reason, forGroup []byte
}

// NewProvenance returns the provenance of run id with reason.
func NewProvenance(runID, reason string) Provenance {
	return Provenance{RunID: runID, Reason: reason, id: []byte(runID), reason: []byte(reason)}
}

// provenanceOf is the provenance of run id with reason under spec: NewProvenance and the
// spec's aim and edit.
func provenanceOf(runID, reason string, spec *Spec) Provenance {
	p := NewProvenance(runID, reason)
	p.ForGroup, p.AllGroups, p.Edit = spec.ForGroup, spec.AllGroups, spec.Edit
	if p.ForGroup != "" {
		p.forGroup = []byte(p.ForGroup)
	}
	return p
}

// aim is the fw.replay.for value of a record whose dead letter names group: the spec's group,
// else the dead letter's own (carved out of sl, like the other provenance values, and shared
// with the records before it that name the same group), none with AllGroups.
func (p Provenance) aim(sl *slab, group string) []byte {
	switch {
	case p.AllGroups:
		return nil
	case p.forGroup != nil:
		return p.forGroup
	case p.ForGroup != "":
		return []byte(p.ForGroup)
	case group != "":
		if sl != nil && sl.aim != nil && sl.group == group {
			return sl.aim
		}
		v := append(sl.bytes(len(group)), group...)
		if sl != nil {
			sl.group, sl.aim = group, v
		}
		return v
	}
	return nil
}

// outgoing builds the record a replay sends for src: the key and value as they were, the
// headers as they were minus the dead-letter headers of every convention and minus earlier
// fw.replay.* headers, then the provenance headers fw.replay.id, .source, .count (count+1),
// .at and .reason. at is fw.replay.at already formatted (RFC 3339, UTC), shared by the records
// of a batch. Header values share memory with src. The timestamp is left zero, so the
// producer stamps the time of the replay: a replay is a new delivery, and an old timestamp
// would age the record out of a time-retained target early.
func (p Provenance) outgoing(src *kgo.Record, count int, target string, partition int32, at []byte) *kgo.Record {
	return p.outgoingWith(nil, nil, src, count, target, partition, at)
}

// outgoingWith is outgoing with the header keys' verdicts cached in hs and the record, its
// headers and provenance values carved out of sl (either nil: no cache, allocate each).
func (p Provenance) outgoingWith(hs *headerStripper, sl *slab, src *kgo.Record, count int, target string, partition int32, at []byte) *kgo.Record {
	return p.build(hs, sl, src, count, target, partition, at, "")
}

// build is outgoingWith for a record whose dead letter names group: it adds fw.replay.for
// (Provenance.aim) and applies the edit, if any.
func (p Provenance) build(hs *headerStripper, sl *slab, src *kgo.Record, count int, target string, partition int32, at []byte, group string) *kgo.Record {
	if p.id == nil {
		p.id, p.reason = []byte(p.RunID), []byte(p.Reason)
	}
	aim := p.aim(sl, group)
	// Dead letters carry more dead-letter headers than headers of their own: count what is
	// kept first, so that the slice is the size it needs, remembering the verdicts of the
	// first 64 headers for the copy.
	n := 5
	if aim != nil {
		n++
	}
	var keep uint64 // bit i: the i-th header is kept
	for i, h := range src.Headers {
		if !hs.stripsAt(i, h.Key) {
			n++
			if i < 64 {
				keep |= 1 << i
			}
		}
	}
	kept := sl.headers(n)
	for i, h := range src.Headers {
		if i < 64 && keep&(1<<i) != 0 || i >= 64 && !hs.stripsAt(i, h.Key) {
			kept = append(kept, h)
		}
	}
	// fw.replay.source and fw.replay.count share one allocation.
	buf := sl.bytes(len(src.Topic) + 48)
	buf = append(buf, src.Topic...)
	buf = append(buf, '/')
	buf = strconv.AppendInt(buf, int64(src.Partition), 10)
	buf = append(buf, '/')
	buf = strconv.AppendInt(buf, src.Offset, 10)
	end := len(buf)
	buf = strconv.AppendInt(buf, int64(count)+1, 10)
	source, replays := buf[:end:end], buf[end:len(buf):len(buf)]
	kept = append(kept,
		kgo.RecordHeader{Key: dlq.ReplayHeaderID, Value: p.id},
		kgo.RecordHeader{Key: dlq.ReplayHeaderSource, Value: source},
		kgo.RecordHeader{Key: dlq.ReplayHeaderCount, Value: replays},
		kgo.RecordHeader{Key: dlq.ReplayHeaderAt, Value: at},
		kgo.RecordHeader{Key: dlq.ReplayHeaderReason, Value: p.reason},
	)
	if aim != nil {
		kept = append(kept, kgo.RecordHeader{Key: dlq.ReplayHeaderFor, Value: aim})
	}
	out := sl.record()
	*out = kgo.Record{Topic: target, Key: src.Key, Value: src.Value, Headers: kept}
	if partition >= 0 {
		out.Partition = partition
	}
	if p.Edit != nil {
		p.Edit.apply(out, addr(src))
	}
	return out
}

// slab hands out the records a replay sends, their headers and their provenance values from
// arrays allocated a few hundred records at a time: three allocations a record were a tenth
// of a replay's CPU, most of it the garbage collector's. Nothing handed out is ever handed
// out again; an array is freed when the producer has let go of all its records. The nil
// *slab allocates each.
type slab struct {
	recs []sent
	hdrs []kgo.RecordHeader
	buf  []byte
	// group and aim are the last fw.replay.for value carved out of buf and the group it was
	// made from: the dead letters of a topic name the same few groups, and the producer never
	// modifies header values, so the records share it.
	group string
	aim   []byte
}

// sent is a record of the slab with what its acknowledgement journals: the record's Context
// is the sent itself (pass.send), so that one promise serves every record (pass.acked) and no
// closure is allocated per record. Its Context is the one the record is produced under.
type sent struct {
	context.Context
	rec     kgo.Record
	tk      ticket
	src     source
	eventID string
}

// source is where a record sent was read, as its acknowledgement journals it: copied, not the
// record read, which the Kafka client allocates with every other record of its fetched batch
// (one pointer to it would keep the whole batch's records, headers and header keys alive until
// the last of them is acknowledged, for the collector to mark again and again).
type source struct {
	topic     string
	partition int32
	offset    int64
	timestamp time.Time
}

// slabRecords is how many records' worth each array holds.
const slabRecords = 256

// record returns a zero record.
func (s *slab) record() *kgo.Record {
	if s == nil {
		return new(kgo.Record)
	}
	if len(s.recs) == cap(s.recs) {
		s.recs = make([]sent, 0, slabRecords)
	}
	s.recs = s.recs[:len(s.recs)+1]
	return &s.recs[len(s.recs)-1].rec
}

// last is the sent of the record record handed out last.
func (s *slab) last() *sent { return &s.recs[len(s.recs)-1] }

// headers returns an empty slice with capacity n, which appending to never grows past.
func (s *slab) headers(n int) []kgo.RecordHeader {
	if s == nil {
		return make([]kgo.RecordHeader, 0, n)
	}
	if cap(s.hdrs)-len(s.hdrs) < n {
		s.hdrs = make([]kgo.RecordHeader, 0, max(n, slabRecords*8))
	}
	l := len(s.hdrs)
	s.hdrs = s.hdrs[:l+n]
	return s.hdrs[l : l : l+n]
}

// bytes returns an empty slice with capacity n, which appending to never grows past.
func (s *slab) bytes(n int) []byte {
	if s == nil {
		return make([]byte, 0, n)
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]byte, 0, max(n, slabRecords*64))
	}
	l := len(s.buf)
	s.buf = s.buf[:l+n]
	return s.buf[l : l : l+n]
}

// replayAt formats t as fw.replay.at: RFC 3339 with nanoseconds, in UTC.
func replayAt(t time.Time) []byte { return t.UTC().AppendFormat(nil, time.RFC3339Nano) }

// isReplayHeader reports a provenance header of an earlier replay (ASCII case ignored), which
// the new provenance replaces.
func isReplayHeader(key string) bool {
	return len(key) >= len(dlq.ReplayHeaderPrefix) && strings.EqualFold(key[:len(dlq.ReplayHeaderPrefix)], dlq.ReplayHeaderPrefix)
}

// headerStripper remembers, per header key, whether outgoing drops it (a dead-letter header of
// any convention, or an earlier fw.replay.* header): dead letters repeat the same few keys,
// and deciding anew lower-cases every key of every record. It holds at most
// maxStripperKeys keys (past that it decides without remembering). Not safe for concurrent
// use; the nil *headerStripper decides without a cache.
type headerStripper struct {
	m map[string]bool
	// prev are the previous record's keys and verdicts, position by position: consecutive
	// dead letters usually carry the same keys in the same order, and comparing strings is
	// cheaper than hashing them.
	prev  []string
	prevV []bool
}

const maxStripperKeys = 512

func stripHeader(key string) bool { return dlq.IsDeadLetterHeader(key) || isReplayHeader(key) }

// stripsAt is strips for the i-th header of a record.
func (hs *headerStripper) stripsAt(i int, key string) bool {
	if hs == nil {
		return stripHeader(key)
	}
	if i < len(hs.prev) && hs.prev[i] == key {
		return hs.prevV[i]
	}
	v := hs.strips(key)
	if i < len(hs.prev) {
		hs.prev[i], hs.prevV[i] = key, v
	} else if i == len(hs.prev) && i < maxStripperKeys {
		hs.prev, hs.prevV = append(hs.prev, key), append(hs.prevV, v)
	}
	return v
}

func (hs *headerStripper) strips(key string) bool {
	if hs == nil {
		return stripHeader(key)
	}
	if v, ok := hs.m[key]; ok {
		return v
	}
	v := stripHeader(key)
	if hs.m == nil {
		hs.m = make(map[string]bool)
	}
	if len(hs.m) < maxStripperKeys {
		hs.m[key] = v
	}
	return v
}
