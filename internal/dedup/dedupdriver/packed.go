package dedupdriver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// packedVersion is the first byte of a packed batch: the layout that follows.
const packedVersion = 1

// Pack encodes the per-record positions of b (source offsets, event ids, target partitions,
// target offsets) as one opaque value, which a driver stores in place of four arrays: the
// database then keeps bytes it never parses, and the client builds them without a value per
// element. Layout: the version byte, the record count (uvarint), then per record the source
// offset and the target offset as varint differences from the previous record's (the first
// from 0), the target partition (varint) and the event id (uvarint length, bytes). Offsets
// ascend, so a difference is usually 1: a record costs about four bytes beside its event id.
func (b *SendBatch) Pack(dst []byte) []byte {
	dst = append(dst, packedVersion)
	dst = binary.AppendUvarint(dst, uint64(len(b.SourceOffsets)))
	var so, to int64
	for i := range b.SourceOffsets {
		dst = binary.AppendVarint(dst, b.SourceOffsets[i]-so)
		dst = binary.AppendVarint(dst, b.TargetOffsets[i]-to)
		dst = binary.AppendVarint(dst, int64(b.TargetPartitions[i]))
		dst = binary.AppendUvarint(dst, uint64(len(b.EventIDs[i])))
		dst = append(dst, b.EventIDs[i]...)
		so, to = b.SourceOffsets[i], b.TargetOffsets[i]
	}
	return dst
}

// errPacked is what Unpack returns for bytes Pack did not write.
var errPacked = errors.New("malformed packed send batch")

// Unpack sets b's per-record slices from data written by Pack. It refuses anything else
// (another version, a truncated or overlong value, a count the bytes cannot hold) rather than
// guess. Event ids are bytes, as Pack took them.
func (b *SendBatch) Unpack(data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty", errPacked)
	}
	if data[0] != packedVersion {
		return fmt.Errorf("%w: version %d, want %d", errPacked, data[0], packedVersion)
	}
	p := data[1:]
	n, k := binary.Uvarint(p)
	// Every record takes at least four bytes.
	if k <= 0 || n == 0 || n > uint64(len(p)-k)/4 {
		return fmt.Errorf("%w: bad record count", errPacked)
	}
	p = p[k:]
	b.SourceOffsets, b.TargetOffsets = make([]int64, n), make([]int64, n)
	b.TargetPartitions, b.EventIDs = make([]int32, n), make([]string, n)
	var so, to int64
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
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", errPacked, len(p))
	}
	return nil
}
