package schema_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/schema/schematest"
)

func fake(t *testing.T, opts ...srfake.Option) (*srfake.Registry, *sr.Client, schematest.Registered) {
	t.Helper()
	reg := srfake.New(opts...)
	t.Cleanup(reg.Close)
	cl, err := sr.NewClient(sr.URLs(reg.URL()), sr.BasicAuth("u", "p"))
	if err != nil {
		t.Fatal(err)
	}
	return reg, cl, schematest.Register(t, cl, "unit")
}

func decoder(t *testing.T, c schema.Config) *schema.Decoder {
	t.Helper()
	d, err := schema.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func avroEvent(t *testing.T, ids schematest.Registered) []byte {
	vs, _ := schematest.Serde(t, ids.AvroEvent, ids.AvroKey)
	note := "first"
	return vs.MustEncode(schematest.Event{EventID: "e-1", AggregateType: "task", AggregateID: "t-1", AggregateVersion: 3,
		Type: "task.created", Data: schematest.TaskData{Title: "write", Note: &note}})
}

func TestDetectWithoutRegistry(t *testing.T) {
	guidHeader := append([]byte{1}, []byte("0123456789abcdef")...)
	idHeader := binary.BigEndian.AppendUint32([]byte{0}, 77)
	for _, tc := range []struct {
		name    string
		headers []envelope.Header
		value   []byte
		key     bool
		want    string // Label, "" for not framed
	}{
		{"magic 0", nil, []byte{0, 0, 0, 0, 42, 2, 'x'}, false, "confluent:42"},
		{"too short", nil, []byte{0, 0, 0, 42}, false, ""},
		{"id 0 is no schema", nil, []byte{0, 0, 0, 0, 0, 1}, false, ""},
		{"highest id", nil, []byte{0, 0x7f, 0xff, 0xff, 0xff, 'x'}, false, "confluent:2147483647"},
		{"negative as a Java int: binary that begins with 0", nil, []byte("\x00\xff not json \x10"), false, ""},
		{"id header negative as a Java int", []envelope.Header{{Key: "__value_schema_id", Value: []byte{0, 0x80, 0, 0, 1}}}, []byte("raw"), false, ""},
		{"dataschema id beyond a Java int", []envelope.Header{{Key: "ce_dataschema", Value: []byte("http://sr:8081/schemas/ids/2147483648")}}, []byte("raw"), false, ""},
		{"json", nil, []byte(`{"event_id":"a"}`), false, ""},
		{"guid header", []envelope.Header{{Key: "__value_schema_id", Value: guidHeader}}, []byte("raw"), false,
			"confluent-header:30313233-3435-3637-3839-616263646566"},
		{"id header for the key only", []envelope.Header{{Key: "__key_schema_id", Value: idHeader}}, []byte("raw"), false, ""},
		{"id header for the key", []envelope.Header{{Key: "__key_schema_id", Value: idHeader}}, []byte("raw"), true, "confluent-header:77"},
		{"dataschema id", []envelope.Header{{Key: "ce_dataschema", Value: []byte("http://sr:8081/schemas/ids/9")}}, []byte("raw"), false, "cloudevents-dataschema:9"},
		{"dataschema subject", []envelope.Header{{Key: "ce_dataschema", Value: []byte("http://sr/subjects/orders-value/versions/2")}}, []byte("raw"), false,
			"cloudevents-dataschema:orders-value/2"},
		{"dataschema elsewhere", []envelope.Header{{Key: "ce_dataschema", Value: []byte("https://example.com/schema.json")}}, []byte("raw"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d *schema.Decoder
			p := d.Decode(context.Background(), tc.headers, tc.value, tc.key)
			if got := p.Label(); got != tc.want {
				t.Fatalf("label %q, want %q", got, tc.want)
			}
			if p != nil && p.Err().Problem != schema.ProblemNoRegistry {
				t.Fatalf("problem %v, want no_registry", p.Err())
			}
		})
	}
}

func TestDecodeThroughRegistry(t *testing.T) {
	reg, _, ids := fake(t, srfake.WithAuth("Basic dTpw"))
	d := decoder(t, schema.Config{URL: reg.URL(), Username: "u", Password: "p"})
	ctx := context.Background()

	p := d.Decode(ctx, nil, avroEvent(t, ids), false)
	if p.Err() != nil || p.Format != schema.FormatAvro {
		t.Fatalf("avro: %+v", p)
	}
	want := `{"aggregate_id":"t-1","aggregate_type":"task","aggregate_version":3,"data":{"note":"first","title":"write"},"event_id":"e-1","type":"task.created"}`
	if string(p.Decoded) != want {
		t.Fatalf("avro decoded\n got %s\nwant %s", p.Decoded, want)
	}

	for _, tc := range []struct {
		idx  []int
		doc  string
		msg  string
		want string
	}{
		{[]int{0}, `{"order_id":"o-1","total":{"currency":"EUR","units":"12"}}`, "fieldwork.orders.Order", `{"order_id":"o-1","total":{"currency":"EUR","units":"12"}}`},
		{[]int{0, 0}, `{"sku":"s-9","quantity":2}`, "fieldwork.orders.Order.Line", `{"sku":"s-9","quantity":2}`},
		{[]int{1}, `{"order_id":"o-1","reason":"late"}`, "fieldwork.orders.Refund", `{"order_id":"o-1","reason":"late"}`},
	} {
		b := schematest.ProtoFrame(t, ids.ProtoOrders, tc.doc, tc.idx...)
		p := d.Decode(ctx, nil, b, false)
		if p.Err() != nil || p.Message != tc.msg || string(p.Decoded) != tc.want {
			t.Fatalf("protobuf %v: %+v (decoded %s)", tc.idx, p, p.Decoded)
		}
	}

	p = d.Decode(ctx, nil, schematest.JSONFrame(ids.JSON, `{"shipment_id": "s-1", "weight_kg": 2.5}`), false)
	if p.Err() != nil || p.Format != schema.FormatJSON || string(p.Decoded) != `{"shipment_id":"s-1","weight_kg":2.5}` {
		t.Fatalf("json: %+v", p)
	}

	p = d.Decode(ctx, nil, schematest.JSONFrame(9999, `{}`), false)
	if e := p.Err(); e == nil || e.Problem != schema.ProblemUnknownSchema || !strings.Contains(e.Error(), "value schema id 9999: not found") {
		t.Fatalf("unknown id: %v", e)
	}
	bad := append(schematest.JSONFrame(ids.AvroEvent, ""), 0xff, 0xff)
	p = d.Decode(ctx, nil, bad, false)
	if e := p.Err(); e == nil || e.Problem != schema.ProblemMismatch || e.Registry() {
		t.Fatalf("mismatch: %v %s", e, p.Decoded)
	}
}

func TestEventFromAvro(t *testing.T) {
	reg, _, ids := fake(t)
	d := decoder(t, schema.Config{URL: reg.URL()})
	_, ks := schematest.Serde(t, ids.AvroEvent, ids.AvroKey)
	r := &kgo.Record{Topic: "t", Key: ks.MustEncode("t-1"), Value: avroEvent(t, ids)}
	ev, rec, err := d.Event(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "e-1" || ev.AggregateID != "t-1" || ev.Version != 3 || ev.Format != envelope.FormatPlainJSON {
		t.Fatalf("event %+v", ev)
	}
	if string(rec.Key.Decoded) != `"t-1"` || rec.Key.Format != schema.FormatAvro {
		t.Fatalf("key %+v", rec.Key)
	}
	// CloudEvents binary mode with an Avro data.
	r = &kgo.Record{Topic: "t", Value: avroEvent(t, ids), Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte("ce-1")}, {Key: "ce_type", Value: []byte("x")}}}
	ev, _, err = d.Event(context.Background(), r)
	if err != nil || ev.ID != "ce-1" || !json.Valid(ev.Data) || !strings.Contains(string(ev.Data), `"title":"write"`) {
		t.Fatalf("binary: %+v %v", ev, err)
	}
}

func TestRegistryFailures(t *testing.T) {
	reg, _, ids := fake(t, srfake.WithAuth("Basic dTpw"))
	ctx := context.Background()
	d := decoder(t, schema.Config{URL: reg.URL(), Username: "u", Password: "wrong-secret"})
	p := d.Decode(ctx, nil, avroEvent(t, ids), false)
	e := p.Err()
	if e == nil || e.Problem != schema.ProblemDenied || !e.Registry() || strings.Contains(e.Error(), "wrong-secret") {
		t.Fatalf("denied: %v", e)
	}
	// Down: the first failure is remembered, the registry is not asked again.
	down := srfake.New()
	url := down.URL()
	down.Close()
	d = decoder(t, schema.Config{URL: url})
	for range 3 {
		e := d.Decode(ctx, nil, avroEvent(t, ids), false).Err()
		if e == nil || e.Problem != schema.ProblemUnavailable || !strings.Contains(e.Error(), "did not answer") {
			t.Fatalf("down: %v", e)
		}
	}
}

// TestAvroUnionsPlain: union values are given as themselves, not wrapped in their type name.
func TestAvroUnionsPlain(t *testing.T) {
	reg, cl, _ := fake(t)
	const s = `{"type":"record","name":"U","fields":[{"name":"labels","type":["null",{"type":"array","items":"string"}]},
 {"name":"ref","type":["null",{"type":"record","name":"Ref","fields":[{"name":"id","type":"string"}]}]},
 {"name":"n","type":["null","long"]},{"name":"raw","type":"bytes"}]}`
	ss, err := cl.CreateSchema(context.Background(), "unions-value", sr.Schema{Schema: s, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte{2, 4, 2, 'a', 2, 'b', 0, 2, 2, 'x', 0, 4, 'h', 'i'} // labels [a b], ref {id x}, n null, raw "hi"
	b := append(schematest.JSONFrame(ss.ID, ""), payload...)
	p := decoder(t, schema.Config{URL: reg.URL()}).Decode(context.Background(), nil, b, false)
	if want := `{"labels":["a","b"],"n":null,"raw":"hi","ref":{"id":"x"}}`; p.Err() != nil || string(p.Decoded) != want {
		t.Fatalf("decoded %s (%v), want %s", p.Decoded, p.Err(), want)
	}
}

// TestSchemaIDHeaders: the newer Confluent clients' framing, the schema named by GUID in the
// __value_schema_id header (magic byte 1) and the record's bytes the payload alone; for
// Protobuf the message indexes follow the GUID.
func TestSchemaIDHeaders(t *testing.T) {
	reg, cl, ids := fake(t)
	d := decoder(t, schema.Config{URL: reg.URL()})
	guidOf := func(id int) []byte {
		t.Helper()
		ss, err := cl.SchemaByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		subjects, err := cl.SubjectsByID(context.Background(), id)
		if err != nil || len(subjects) == 0 {
			t.Fatalf("subjects of %d: %v %v", id, subjects, err)
		}
		got, err := cl.LookupSchema(context.Background(), subjects[0], ss)
		if err != nil || got.GUID == "" {
			t.Fatalf("guid of %d: %+v %v", id, got, err)
		}
		b, err := hex.DecodeString(strings.ReplaceAll(got.GUID, "-", ""))
		if err != nil || len(b) != 16 {
			t.Fatalf("guid %q: %v", got.GUID, err)
		}
		return append([]byte{1}, b...)
	}
	framed := avroEvent(t, ids)
	h := []envelope.Header{{Key: schema.ValueSchemaIDHeader, Value: guidOf(ids.AvroEvent)}}
	p := d.Decode(context.Background(), h, framed[5:], false)
	if p.Err() != nil || p.Framing != schema.FramingHeader || p.GUID == "" || !strings.Contains(string(p.Decoded), `"event_id":"e-1"`) {
		t.Fatalf("avro by guid: %+v %v", p, p.Err())
	}
	pb := schematest.ProtoFrame(t, ids.ProtoOrders, `{"sku":"s-1","quantity":3}`, 0, 0)
	h = []envelope.Header{{Key: schema.ValueSchemaIDHeader, Value: append(guidOf(ids.ProtoOrders), pb[5:8]...)}} // the index list [0, 0]
	p = d.Decode(context.Background(), h, pb[8:], false)
	if p.Err() != nil || p.Message != "fieldwork.orders.Order.Line" || string(p.Decoded) != `{"sku":"s-1","quantity":3}` {
		t.Fatalf("protobuf by guid: %+v %v", p, p.Err())
	}
}

// TestProtobufBase64ThatIsNoDescriptor: a Protobuf schema that is base64 but not a serialized
// FileDescriptorProto is an invalid schema that says so, not text that fails to parse.
func TestProtobufBase64ThatIsNoDescriptor(t *testing.T) {
	reg, cl, _ := fake(t)
	ss, err := cl.CreateSchema(context.Background(), "bad-value", sr.Schema{Schema: "AAAA", Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	d := decoder(t, schema.Config{URL: reg.URL(), Username: "u", Password: "p"})
	p := d.Decode(context.Background(), nil, []byte{0, 0, 0, 0, byte(ss.ID), 0, 0x0a, 0}, false)
	if e := p.Err(); e == nil || e.Problem != schema.ProblemInvalidSchema || !strings.Contains(e.Error(), "base64 that is not a serialized FileDescriptorProto") {
		t.Fatalf("%+v %v", p, e)
	}
}
