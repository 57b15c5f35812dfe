package schema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

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

// TestApicurioSerializedProtobuf: a Protobuf schema registered as a base64 serialized
// FileDescriptorProto (the form Confluent's serializers register, json_name left out as
// Python's descriptors leave it) decodes as its .proto text does, in every mix of forms of a
// schema and its reference: text importing a descriptor, a descriptor importing text, a
// descriptor importing a descriptor.
func TestApicurioSerializedProtobuf(t *testing.T) {
	url, user, pw := testenv.SchemaRegistry(t)
	cl := testenv.RegistryClient(t)
	prefix := testenv.Name(t, "schema")
	ids := schematest.Register(t, cl, prefix)
	ctx := context.Background()
	files := map[string]string{"orders.proto": schematest.ProtoOrders, schematest.ProtoCommonName: schematest.ProtoCommon}
	commonB64 := schematest.ProtoDescriptor(t, schematest.ProtoCommonName, files)
	ordersB64 := schematest.ProtoDescriptor(t, "orders.proto", files)
	reg := func(subject, text string, ref sr.SchemaReference) int {
		t.Helper()
		ss, err := cl.CreateSchema(ctx, prefix+"-"+subject, sr.Schema{Schema: text, Type: sr.TypeProtobuf, References: []sr.SchemaReference{ref}})
		if err != nil {
			t.Fatalf("register %s: %v", subject, err)
		}
		return ss.ID
	}
	if _, err := cl.CreateSchema(ctx, prefix+"-common-b64", sr.Schema{Schema: commonB64, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	b64Ref := sr.SchemaReference{Name: schematest.ProtoCommonName, Subject: prefix + "-common-b64", Version: 1}
	textRef := sr.SchemaReference{Name: schematest.ProtoCommonName, Subject: ids.ProtoCommonSubject, Version: 1}
	d := decoder(t, schema.Config{URL: url, Username: user, Password: pw})
	for name, id := range map[string]int{
		"text importing a descriptor":         reg("text-b64", schematest.ProtoOrders, b64Ref),
		"a descriptor importing text":         reg("b64-text", ordersB64, textRef),
		"a descriptor importing a descriptor": reg("b64-b64", ordersB64, b64Ref),
	} {
		b := schematest.ProtoFrame(t, id, `{"order_id":"o-1","total":{"currency":"EUR","units":"12"}}`, 0)
		if p := d.Decode(ctx, nil, b, false); p.Err() != nil || p.Message != "fieldwork.orders.Order" ||
			string(p.Decoded) != `{"order_id":"o-1","total":{"currency":"EUR","units":"12"}}` {
			t.Errorf("%s: %+v %v", name, p, p.Err())
		}
		b = schematest.ProtoFrame(t, id, `{"order_id":"o-1","reason":"late"}`, 1)
		if p := d.Decode(ctx, nil, b, false); p.Err() != nil || p.Message != "fieldwork.orders.Refund" || p.Indexes[0] != 1 {
			t.Errorf("%s, index [1]: %+v %v", name, p, p.Err())
		}
	}
}
