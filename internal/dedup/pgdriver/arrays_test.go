package pgdriver_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
)

// textArrayCases are []string values the store sends as text[]: nil (NULL), empty, one empty
// string, hostile and multi-byte text, a long value and many elements.
func textArrayCases() [][]string {
	var every strings.Builder
	for b := 1; b < 128; b++ { // every ASCII byte but NUL, which text cannot hold
		every.WriteByte(byte(b))
	}
	every.WriteString("\u00ff\u0100\u2028\U0001F600")
	many := make([]string, 2000)
	for i := range many {
		many[i] = fmt.Sprintf("event-%05d", i)
	}
	return [][]string{
		nil, {}, {""}, {"a"}, {"", "b", ""},
		{"täsk-ü", "‮evil", "{\"quoted\",\\}", "NULL", "with space", "a,b"},
		{strings.Repeat("x", 70_000), "y"},
		{every.String()},
		many,
	}
}

// TestEncodeStringsAsPgx holds the store's text[] encoding to pgx's own, byte for byte, after
// bytes already in the buffer and into a buffer too small for it.
func TestEncodeStringsAsPgx(t *testing.T) {
	m := pgtype.NewMap()
	for i, ss := range textArrayCases() {
		for _, prefix := range [][]byte{nil, []byte("earlier parameter")} {
			want, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, ss, slices.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgdriver.EncodeStrings.Encode(ss, slices.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("case %d, prefix %q: encoded\n%x\nwant (pgx)\n%x", i, prefix, head(got), head(want))
			}
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

// TestTextArraysRoundTrip sends every case through a connection with the store's codec and
// reads it back from PostgreSQL, and checks that the store's pool has the codec and uses it.
func TestTextArraysRoundTrip(t *testing.T) {
	dsn := testDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := admin(t, dsn)
	defer conn.Close(ctx)
	if err := pgdriver.RegisterTextArrays(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if plan := conn.TypeMap().PlanEncode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, []string{"a"}); plan != pgdriver.EncodeStrings {
		t.Fatalf("a []string as text[] is planned as %T, not by the store's codec", plan)
	}
	for i, ss := range textArrayCases() {
		var back []string
		var null bool
		var n int
		if err := conn.QueryRow(ctx, `SELECT $1::text[], $1::text[] IS NULL, coalesce(cardinality($1::text[]), -1)`, ss).Scan(&back, &null, &n); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if null != (ss == nil) || (ss != nil && n != len(ss)) || !slices.Equal(back, ss) {
			t.Errorf("case %d: read back %d elements (NULL %v), want %d (NULL %v)", i, n, null, len(ss), ss == nil)
		}
	}
	// The text format and other Go types stay pgx's.
	var joined string
	if err := conn.QueryRow(ctx, `SELECT array_to_string($1::text[], ',')`, [][]byte{[]byte("a"), []byte("b")}).Scan(&joined); err != nil || joined != "a,b" {
		t.Errorf("[][]byte as text[]: %q, %v", joined, err)
	}
	if err := conn.QueryRow(ctx, `SELECT array_to_string($1::text[], ',')`, pgx.QueryExecModeSimpleProtocol, []string{"c", "d"}).Scan(&joined); err != nil || joined != "c,d" {
		t.Errorf("[]string as text[] in the text format: %q, %v", joined, err)
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
