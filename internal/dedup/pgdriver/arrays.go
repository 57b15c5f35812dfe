package pgdriver

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerTextArrays gives conn's type map a text[] codec that writes a []string in the binary
// format in one pass: a claim, a lookup and a handler's batch send every id, topic and value of
// a batch as text[] parameters, and pgx's own array codec boxes each element, looks its type
// up by reflection and plans its encoding, which cost a quarter of a consumer's CPU. Everything
// else (other Go types, the text format, decoding) is pgx's codec, unchanged. It runs once per
// connection the pool opens (pgxpool's AfterConnect).
func registerTextArrays(_ context.Context, conn *pgx.Conn) error {
	m := conn.TypeMap()
	t, ok := m.TypeForOID(pgtype.TextArrayOID)
	if !ok {
		return nil
	}
	ac, ok := t.Codec.(*pgtype.ArrayCodec)
	if !ok {
		return nil
	}
	m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: &textArrayCodec{ArrayCodec: ac}})
	return nil
}

// textArrayCodec is pgx's text[] codec with encodeStrings for a []string in the binary format.
type textArrayCodec struct {
	*pgtype.ArrayCodec
}

func (c *textArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.([]string); ok && format == pgtype.BinaryFormatCode {
		return encodeStrings{}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

// encodeStrings writes a []string as PostgreSQL's binary text[], byte for byte what pgx's
// ArrayCodec writes for it: nil is NULL; otherwise one dimension of len(ss) elements from 1,
// no NULL element, each element its length and its bytes.
type encodeStrings struct{}

func (encodeStrings) Encode(value any, buf []byte) ([]byte, error) {
	ss := value.([]string)
	if ss == nil {
		return nil, nil
	}
	if len(ss) > math.MaxInt32 {
		return nil, fmt.Errorf("text[] of %d elements: more than PostgreSQL takes", len(ss))
	}
	n := 20 + 4*len(ss)
	for _, s := range ss {
		if len(s) > math.MaxInt32 {
			return nil, fmt.Errorf("text[] element of %d bytes: more than PostgreSQL takes", len(s))
		}
		n += len(s)
	}
	if cap(buf)-len(buf) < n {
		grown := make([]byte, len(buf), len(buf)+n)
		copy(grown, buf)
		buf = grown
	}
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL element
	buf = binary.BigEndian.AppendUint32(buf, pgtype.TextOID)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(ss)))
	buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	for _, s := range ss {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	return buf, nil
}
