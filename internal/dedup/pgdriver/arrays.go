package pgdriver

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerArrays gives conn's type map codecs for text[], int8[], int4[] and timestamptz[] that
// write the Go slices the store's and the handlers' batch statements send ([]string, []int64,
// []*int64, []int32, []*time.Time) in the binary format in one pass. A claim, a lookup and a
// handler's batch send every id, offset, version and value of a batch as array parameters, and
// pgx's own array codec boxes each element, looks its type up by reflection and plans its
// encoding, which cost a quarter of a consumer's CPU. Everything else (other Go types, the
// text format, decoding) is pgx's codec, unchanged. It runs once per connection the pool
// opens (pgxpool's AfterConnect).
func registerArrays(_ context.Context, conn *pgx.Conn) error {
	registerArraysOn(conn.TypeMap())
	return nil
}

// registerArraysOn registers the codecs of registerArrays on m.
func registerArraysOn(m *pgtype.Map) {
	for _, oid := range []uint32{pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.Int4ArrayOID, pgtype.TimestamptzArrayOID} {
		t, ok := m.TypeForOID(oid)
		if !ok {
			continue
		}
		if ac, ok := t.Codec.(*pgtype.ArrayCodec); ok {
			m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: &arrayCodec{ArrayCodec: ac}})
		}
	}
}

// arrayCodec is pgx's array codec with one-pass plans for the slices arrayPlan knows.
type arrayCodec struct {
	*pgtype.ArrayCodec
}

func (c *arrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		if p := arrayPlan(c.ElementType.OID, value); p != nil {
			return p
		}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

// arrayPlan is the one-pass plan of value as an array of elem, nil when there is none.
func arrayPlan(elem uint32, value any) pgtype.EncodePlan {
	switch value.(type) {
	case []string:
		if elem == pgtype.TextOID {
			return encodeStrings{}
		}
	case []int64:
		if elem == pgtype.Int8OID {
			return encodeInt64s{}
		}
	case []*int64:
		if elem == pgtype.Int8OID {
			return encodeInt64Ptrs{}
		}
	case []int32:
		if elem == pgtype.Int4OID {
			return encodeInt32s{}
		}
	case []*time.Time:
		if elem == pgtype.TimestamptzOID {
			return encodeTimePtrs{}
		}
	}
	return nil
}

// The plans below write byte for byte what pgx's ArrayCodec writes for the same slice: nil
// is NULL; otherwise one dimension of len(s) elements from 1, the header's flag set when an
// element is NULL, each element its length (-1: NULL) and its bytes.

// arrayStart grows buf for need bytes more at once and writes the header of an array of n elements
// of elem.
func arrayStart(buf []byte, n int, elem uint32, nulls bool, need int) ([]byte, error) {
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("array of %d elements: more than PostgreSQL takes", n)
	}
	// pgx writes a statement's parameters one after the other into one buffer it starts small
	// every statement: doubled (at least), the copies of what is already in it add up to its
	// final size once, and the next parameters have room (an exact fit had the next one copy
	// the whole buffer, append's growth of a quarter copied it again and again).
	if need += 20; cap(buf)-len(buf) < need {
		grown := make([]byte, len(buf), max(2*cap(buf), 2*(len(buf)+need)))
		copy(grown, buf)
		buf = grown
	}
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	flag := uint32(0)
	if nulls {
		flag = 1
	}
	buf = binary.BigEndian.AppendUint32(buf, flag)
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1), nil // lower bound
}

// null is the length of a NULL element.
const null = math.MaxUint32 // int32(-1)

type encodeStrings struct{}

func (encodeStrings) Encode(value any, buf []byte) ([]byte, error) {
	ss := value.([]string)
	if ss == nil {
		return nil, nil
	}
	need := 4 * len(ss)
	for _, s := range ss {
		if len(s) > math.MaxInt32 {
			return nil, fmt.Errorf("text[] element of %d bytes: more than PostgreSQL takes", len(s))
		}
		need += len(s)
	}
	buf, err := arrayStart(buf, len(ss), pgtype.TextOID, false, need)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	return buf, nil
}

// appendFixed writes vs, elements of elem of width bytes each, put writing one, NULL where
// isNull says so (nil: none is).
func appendFixed[T any](buf []byte, vs []T, elem uint32, width int, isNull func(T) bool, put func([]byte, T) []byte) ([]byte, error) {
	if vs == nil {
		return nil, nil
	}
	nulls := isNull != nil && slices.ContainsFunc(vs, isNull)
	buf, err := arrayStart(buf, len(vs), elem, nulls, (4+width)*len(vs))
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if nulls && isNull(v) {
			buf = binary.BigEndian.AppendUint32(buf, null)
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(width))
		buf = put(buf, v)
	}
	return buf, nil
}

func isNil[T any](p *T) bool { return p == nil }

func putInt64(buf []byte, v int64) []byte   { return binary.BigEndian.AppendUint64(buf, uint64(v)) }
func putInt64p(buf []byte, v *int64) []byte { return putInt64(buf, *v) }
func putInt32(buf []byte, v int32) []byte   { return binary.BigEndian.AppendUint32(buf, uint32(v)) }

// microsFromUnixToY2K is PostgreSQL's epoch, 2000-01-01 UTC, in microseconds from Unix's.
const microsFromUnixToY2K = 946_684_800 * 1_000_000

// putTime writes t as pgx does: the microseconds since 2000-01-01 UTC, the nanoseconds
// truncated.
func putTime(buf []byte, t *time.Time) []byte {
	return putInt64(buf, t.Unix()*1_000_000+int64(t.Nanosecond())/1_000-microsFromUnixToY2K)
}

type encodeInt64s struct{}

func (encodeInt64s) Encode(value any, buf []byte) ([]byte, error) {
	return appendFixed(buf, value.([]int64), pgtype.Int8OID, 8, nil, putInt64)
}

type encodeInt64Ptrs struct{}

func (encodeInt64Ptrs) Encode(value any, buf []byte) ([]byte, error) {
	return appendFixed(buf, value.([]*int64), pgtype.Int8OID, 8, isNil[int64], putInt64p)
}

type encodeInt32s struct{}

func (encodeInt32s) Encode(value any, buf []byte) ([]byte, error) {
	return appendFixed(buf, value.([]int32), pgtype.Int4OID, 4, nil, putInt32)
}

type encodeTimePtrs struct{}

func (encodeTimePtrs) Encode(value any, buf []byte) ([]byte, error) {
	return appendFixed(buf, value.([]*time.Time), pgtype.TimestamptzOID, 8, isNil[time.Time], putTime)
}
