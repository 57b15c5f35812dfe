package dedupdriver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The versions of a packed batch (its first byte): the layout that follows.
const (
	// packedV1 has no source timestamps: batches journaled before record identity.
	packedV1 = 1
	// packedV2 adds each record's source timestamp.
	packedV2 = 2
)

// Pack encodes the per-record positions of b (source offsets, source timestamps, event ids,
// target partitions, target offsets) as one opaque value, which a driver stores in place of
// arrays: the database then keeps bytes it never parses, and the client builds them without a
// value per element. Layout: the version byte, the record count (uvarint), then per record the
// source offset and the target offset as varint differences from the previous record's (the
// first from 0), the target partition (varint), the event id (uvarint length, bytes) and, in
// version 2, the source timestamp as a varint difference from the previous record's. Offsets
// ascend and a partition's timestamps nearly do, so a difference is usually a byte: a record
// costs about five bytes beside its event id. A batch without source timestamps is written in
// version 1, the layout of before they were journaled.
func (b *SendBatch) Pack(dst []byte) []byte {
	timed := b.SourceTimestamps != nil
	if timed {
		dst = append(dst, packedV2)
	} else {
		dst = append(dst, packedV1)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.SourceOffsets)))
	var so, to, ts int64
	for i := range b.SourceOffsets {
		dst = binary.AppendVarint(dst, b.SourceOffsets[i]-so)
		dst = binary.AppendVarint(dst, b.TargetOffsets[i]-to)
		dst = binary.AppendVarint(dst, int64(b.TargetPartitions[i]))
		dst = binary.AppendUvarint(dst, uint64(len(b.EventIDs[i])))
		dst = append(dst, b.EventIDs[i]...)
		so, to = b.SourceOffsets[i], b.TargetOffsets[i]
		if timed {
			dst = binary.AppendVarint(dst, b.SourceTimestamps[i]-ts)
			ts = b.SourceTimestamps[i]
		}
	}
	return dst
}

// errPacked is what Unpack returns for bytes Pack did not write.
var errPacked = errors.New("malformed packed send batch")

// Unpack sets b's per-record slices from data written by Pack, in either version (version 1
// leaves SourceTimestamps nil). It refuses anything else (another version, a truncated or
// overlong value, a count the bytes cannot hold) rather than guess. Event ids are bytes, as
// Pack took them.
func (b *SendBatch) Unpack(data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty", errPacked)
	}
	version := data[0]
	if version != packedV1 && version != packedV2 {
		return fmt.Errorf("%w: version %d, want %d or %d", errPacked, version, packedV1, packedV2)
	}
	timed := version == packedV2
	// Every record takes at least four bytes, five with its timestamp.
	least := uint64(4)
	if timed {
		least = 5
	}
	p := data[1:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > uint64(len(p)-k)/least {
		return fmt.Errorf("%w: bad record count", errPacked)
	}
	p = p[k:]
	b.SourceOffsets, b.TargetOffsets = make([]int64, n), make([]int64, n)
	b.TargetPartitions, b.EventIDs = make([]int32, n), make([]string, n)
	b.SourceTimestamps = nil
	if timed {
		b.SourceTimestamps = make([]int64, n)
	}
	var so, to, ts int64
	varint := func() (int64, bool) {
		v, k := binary.Varint(p)
		if k <= 0 {
			return 0, false
		}
		p = p[k:]
		return v, true
	}
	for i := range n {
		ds, ok1 := varint()
		dt, ok2 := varint()
		tp, ok3 := varint()
		l, k := binary.Uvarint(p)
		if !ok1 || !ok2 || !ok3 || k <= 0 || l > uint64(len(p)-k) || tp < math.MinInt32 || tp > math.MaxInt32 {
			return fmt.Errorf("%w: record %d", errPacked, i)
		}
		id := p[k : k+int(l)]
		p = p[k+int(l):]
		so, to = so+ds, to+dt
		b.SourceOffsets[i], b.TargetOffsets[i], b.TargetPartitions[i], b.EventIDs[i] = so, to, int32(tp), string(id)
		if timed {
			d, ok := varint()
			if !ok {
				return fmt.Errorf("%w: record %d", errPacked, i)
			}
			ts += d
			b.SourceTimestamps[i] = ts
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", errPacked, len(p))
	}
	return nil
}
