package schema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/schema/schematest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestApicurio decodes Avro, Protobuf (a reference, a nested message) and JSON Schema payloads
// through the real registry, and names a schema id it does not know.
func TestApicurio(t *testing.T) {
	url, user, pw := testenv.SchemaRegistry(t)
	ids := schematest.Register(t, testenv.RegistryClient(t), testenv.Name(t, "schema"))
	d := decoder(t, schema.Config{URL: url, Username: user, Password: pw})
	ctx := context.Background()

	p := d.Decode(ctx, nil, avroEvent(t, ids), false)
	if p.Err() != nil || !strings.Contains(string(p.Decoded), `"event_id":"e-1"`) {
		t.Fatalf("avro: %+v %v", p, p.Err())
	}
	_, ks := schematest.Serde(t, ids.AvroEvent, ids.AvroKey)
	if k := d.Decode(ctx, nil, ks.MustEncode("t-1"), true); k.Err() != nil || string(k.Decoded) != `"t-1"` {
		t.Fatalf("avro key: %+v", k)
	}
	b := schematest.ProtoFrame(t, ids.ProtoOrders, `{"sku":"s-9","quantity":2}`, 0, 0)
	if p := d.Decode(ctx, nil, b, false); p.Err() != nil || p.Message != "fieldwork.orders.Order.Line" || string(p.Decoded) != `{"sku":"s-9","quantity":2}` {
		t.Fatalf("protobuf nested: %+v %v", p, p.Err())
	}
	b = schematest.ProtoFrame(t, ids.ProtoOrders, `{"order_id":"o-1","total":{"currency":"EUR","units":"12"}}`, 0)
	if p := d.Decode(ctx, nil, b, false); p.Err() != nil || !strings.Contains(string(p.Decoded), `"currency":"EUR"`) {
		t.Fatalf("protobuf with a reference: %+v %v", p, p.Err())
	}
	if p := d.Decode(ctx, nil, schematest.JSONFrame(ids.JSON, `{"shipment_id":"s-1"}`), false); p.Err() != nil || p.Format != schema.FormatJSON {
		t.Fatalf("json: %+v %v", p, p.Err())
	}
	e := d.Decode(ctx, nil, schematest.JSONFrame(987654, `{}`), false).Err()
	if e == nil || e.Problem != schema.ProblemUnknownSchema {
		t.Fatalf("unknown id: %v", e)
	}
	bad := decoder(t, schema.Config{URL: url, Username: user, Password: "not-the-password"})
	e = bad.Decode(ctx, nil, avroEvent(t, ids), false).Err()
	if e == nil || e.Problem != schema.ProblemDenied || strings.Contains(e.Error(), "not-the-password") {
		t.Fatalf("wrong password: %v", e)
	}
}
