package pgdriver_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
)

// arrayCase is a Go slice the store sends as an array of sqlType.
type arrayCase struct {
	sqlType string
	oid     uint32
	value   any
}

// arrayCases are the slices the store's codecs write: for each, nil (NULL), empty and
// non-empty; text that is hostile, multi-byte, long and many; numbers at their limits; NULL
// elements; times before 1970 and 2000, with nanoseconds, in other zones.
func arrayCases() []arrayCase {
	var every strings.Builder
	for b := 1; b < 128; b++ { // every ASCII byte but NUL, which text cannot hold
		every.WriteByte(byte(b))
	}
	every.WriteString("\u00ff\u0100\u2028\U0001F600")
	many := make([]string, 2000)
	for i := range many {
		many[i] = fmt.Sprintf("event-%05d", i)
	}
	i64 := func(v int64) *int64 { return &v }
	east := time.FixedZone("east", 5*3600+30*60)
	at := func(t time.Time) *time.Time { return &t }
	var cases []arrayCase
	for _, v := range []any{[]string(nil), []string{}, []string{""}, []string{"a"}, []string{"", "b", ""},
		[]string{"täsk-ü", "‮evil", "{\"quoted\",\\}", "NULL", "with space", "a,b"},
		[]string{strings.Repeat("x", 70_000), "y"}, []string{every.String()}, many} {
		cases = append(cases, arrayCase{"text[]", pgtype.TextArrayOID, v})
	}
	for _, v := range []any{[]int64(nil), []int64{}, []int64{0, 1, -1, math.MaxInt64, math.MinInt64},
		[]*int64(nil), []*int64{}, []*int64{nil}, []*int64{i64(7), nil, i64(-9), i64(math.MinInt64)}, []*int64{i64(1), i64(2)}} {
		cases = append(cases, arrayCase{"int8[]", pgtype.Int8ArrayOID, v})
	}
	for _, v := range []any{[]int32(nil), []int32{}, []int32{0, -1, math.MaxInt32, math.MinInt32}} {
		cases = append(cases, arrayCase{"int4[]", pgtype.Int4ArrayOID, v})
	}
	for _, v := range []any{[]*time.Time(nil), []*time.Time{}, []*time.Time{nil},
		[]*time.Time{at(time.Date(2026, 12, 5, 16, 4, 5, 123456789, time.UTC)), nil, at(time.Date(1999, 12, 31, 23, 59, 59, 999999999, east)),
			at(time.Date(1969, 7, 20, 20, 17, 40, 1500, time.UTC)), at(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), at(time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC))}} {
		cases = append(cases, arrayCase{"timestamptz[]", pgtype.TimestamptzArrayOID, v})
	}
	return cases
}

// TestArraysAsPgx holds the store's array encodings to pgx's own, byte for byte, after bytes
// already in the buffer and into a buffer too small for them.
func TestArraysAsPgx(t *testing.T) {
	pgxMap, ours := pgtype.NewMap(), pgtype.NewMap()
	pgdriver.RegisterArraysOn(ours)
	for i, c := range arrayCases() {
		if plan := ours.PlanEncode(c.oid, pgtype.BinaryFormatCode, c.value); plan == nil || fmt.Sprintf("%T", plan) == fmt.Sprintf("%T", pgxMap.PlanEncode(c.oid, pgtype.BinaryFormatCode, c.value)) {
			t.Errorf("case %d (%T as %s): planned as %T, not by the store's codec", i, c.value, c.sqlType, plan)
		}
		for _, prefix := range [][]byte{nil, []byte("earlier parameter")} {
			want, err := pgxMap.Encode(c.oid, pgtype.BinaryFormatCode, c.value, slices.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ours.Encode(c.oid, pgtype.BinaryFormatCode, c.value, slices.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("case %d (%T as %s), prefix %q: encoded\n%x\nwant (pgx)\n%x", i, c.value, c.sqlType, prefix, head(got), head(want))
			}
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

// TestArraysRoundTrip sends every case through a connection with the store's codecs and reads
// it back from PostgreSQL, and checks that the store's pool has the codecs.
func TestArraysRoundTrip(t *testing.T) {
	dsn := testDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := admin(t, dsn)
	defer conn.Close(ctx)
	if err := pgdriver.RegisterArrays(ctx, conn); err != nil {
		t.Fatal(err)
	}
	plain := admin(t, dsn) // pgx's codecs alone
	defer plain.Close(ctx)
	for i, c := range arrayCases() {
		var text *string
		var n int
		// PostgreSQL's own text of the array it received, against pgx's encoding of the same
		// value through a connection without the codecs.
		if err := conn.QueryRow(ctx, `SELECT $1::`+c.sqlType+`::text, coalesce(cardinality($1::`+c.sqlType+`), -1)`, c.value).Scan(&text, &n); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var want *string
		if err := plain.QueryRow(ctx, `SELECT $1::`+c.sqlType+`::text`, c.value).Scan(&want); err != nil {
			t.Fatalf("case %d without the codecs: %v", i, err)
		}
		if (text == nil) != (want == nil) || (text != nil && *text != *want) {
			t.Errorf("case %d (%T as %s): PostgreSQL read %v, with pgx's codec %v", i, c.value, c.sqlType, show(text), show(want))
		}
	}
	// The text format and other Go types stay pgx's.
	var joined string
	if err := conn.QueryRow(ctx, `SELECT array_to_string($1::text[], ',')`, [][]byte{[]byte("a"), []byte("b")}).Scan(&joined); err != nil || joined != "a,b" {
		t.Errorf("[][]byte as text[]: %q, %v", joined, err)
	}
	if err := conn.QueryRow(ctx, `SELECT array_to_string($1::int8[], ',')`, pgx.QueryExecModeSimpleProtocol, []int64{3, 4}).Scan(&joined); err != nil || joined != "3,4" {
		t.Errorf("[]int64 as int8[] in the text format: %q, %v", joined, err)
	}

	d, err := pgdriver.Open(ctx, dedupdriver.Config{DSN: dsn, ConnectTimeout: 5 * time.Second,
		Names: dedupdriver.Names{Schema: "public", Table: "processed_events", Columns: dedupdriver.DefaultColumns}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if plan := pgdriver.PoolTypeMap(t, d).PlanEncode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, []string{"a"}); plan != pgdriver.EncodeStrings {
		t.Errorf("the store's pool plans a []string as text[] with %T, not the store's codec", plan)
	}
}

func show(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%.80q", *s)
}

// BenchmarkArrays encodes a batch's arrays of 1,000 elements with pgx's codecs and with the
// store's.
func BenchmarkArrays(b *testing.B) {
	ids, offsets, versions, times := make([]string, 1000), make([]int64, 1000), make([]*int64, 1000), make([]*time.Time, 1000)
	now := time.Now()
	for i := range ids {
		ids[i], offsets[i] = fmt.Sprintf("0b0f6c3e-%04d-4c55-9d2b-7f3a1e2d9c%02d", i, i%100), int64(i)
		versions[i], times[i] = &offsets[i], &now
	}
	ours := pgtype.NewMap()
	pgdriver.RegisterArraysOn(ours)
	for _, m := range []struct {
		name string
		m    *pgtype.Map
	}{{"pgx", pgtype.NewMap()}, {"store", ours}} {
		b.Run(m.name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf = buf[:0]
				for _, v := range []struct {
					oid uint32
					v   any
				}{{pgtype.TextArrayOID, ids}, {pgtype.Int8ArrayOID, offsets}, {pgtype.Int8ArrayOID, versions}, {pgtype.TimestamptzArrayOID, times}} {
					var err error
					if buf, err = m.m.Encode(v.oid, pgtype.BinaryFormatCode, v.v, buf); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
