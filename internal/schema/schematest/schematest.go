// Package schematest holds the schemas and encoders the schema-registry tests share: an Avro
// event schema, a Protobuf schema with a reference and a nested message, a JSON Schema, and
// payloads of each in the Confluent wire format made with franz-go's sr.Serde.
package schematest

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// AvroEvent is an Avro schema of fieldwork's plain event: event_id, aggregate_type,
// aggregate_id, aggregate_version, type and a nested data record.
const AvroEvent = `{"type":"record","name":"TaskEvent","namespace":"fieldwork.sample","fields":[
 {"name":"event_id","type":"string"},
 {"name":"aggregate_type","type":"string"},
 {"name":"aggregate_id","type":"string"},
 {"name":"aggregate_version","type":"long"},
 {"name":"type","type":"string"},
 {"name":"data","type":{"type":"record","name":"TaskData","fields":[
   {"name":"title","type":"string"},
   {"name":"note","type":["null","string"],"default":null}]}}]}`

// AvroKey is an Avro schema of a string key.
const AvroKey = `"string"`

// ProtoCommon is the file the Protobuf schema imports (a registry reference).
const ProtoCommon = `syntax = "proto3";
package fieldwork.common;
message Money {
  string currency = 1;
  int64 units = 2;
}
`

// ProtoCommonName is the import name of ProtoCommon.
const ProtoCommonName = "fieldwork/common.proto"

// ProtoOrders has two top-level messages and a nested one: Order is index [0], Order.Line
// [0, 0], Refund [1].
const ProtoOrders = `syntax = "proto3";
package fieldwork.orders;
import "fieldwork/common.proto";
message Order {
  string order_id = 1;
  fieldwork.common.Money total = 2;
  message Line {
    string sku = 1;
    int32 quantity = 2;
  }
  repeated Line lines = 3;
}
message Refund {
  string order_id = 1;
  string reason = 2;
}
`

// JSONSchema is a JSON Schema of a small object.
const JSONSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Shipment","type":"object",
 "properties":{"shipment_id":{"type":"string"},"weight_kg":{"type":"number"}},"required":["shipment_id"]}`

// Registered are the ids of the schemas Register put in a registry.
type Registered struct {
	AvroEvent, AvroKey, ProtoCommon, ProtoOrders, JSON int
	// ProtoCommonSubject is the subject the Protobuf reference lives under.
	ProtoCommonSubject string
}

// Register registers the schemas under subjects that start with prefix (a test's own), through
// the registry client cl, and returns their ids.
func Register(t testing.TB, cl *sr.Client, prefix string) Registered {
	t.Helper()
	ctx := context.Background()
	reg := func(subject string, s sr.Schema) int {
		t.Helper()
		ss, err := cl.CreateSchema(ctx, subject, s)
		if err != nil {
			t.Fatalf("register %s: %v", subject, err)
		}
		return ss.ID
	}
	var r Registered
	r.ProtoCommonSubject = prefix + "-common"
	r.AvroEvent = reg(prefix+"-value", sr.Schema{Schema: AvroEvent, Type: sr.TypeAvro})
	r.AvroKey = reg(prefix+"-key", sr.Schema{Schema: AvroKey, Type: sr.TypeAvro})
	r.ProtoCommon = reg(r.ProtoCommonSubject, sr.Schema{Schema: ProtoCommon, Type: sr.TypeProtobuf})
	r.ProtoOrders = reg(prefix+"-orders-value", sr.Schema{Schema: ProtoOrders, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: ProtoCommonName, Subject: r.ProtoCommonSubject, Version: 1}}})
	r.JSON = reg(prefix+"-shipments-value", sr.Schema{Schema: JSONSchema, Type: sr.TypeJSON})
	return r
}

// Event is the Go shape of AvroEvent.
type Event struct {
	EventID          string   `avro:"event_id"`
	AggregateType    string   `avro:"aggregate_type"`
	AggregateID      string   `avro:"aggregate_id"`
	AggregateVersion int64    `avro:"aggregate_version"`
	Type             string   `avro:"type"`
	Data             TaskData `avro:"data"`
}

// TaskData is the Go shape of AvroEvent's data.
type TaskData struct {
	Title string  `avro:"title"`
	Note  *string `avro:"note"`
}

// Serde is an sr.Serde that encodes Event and string keys with the given ids, in the Confluent
// wire format, as a registry-aware producer does.
func Serde(t testing.TB, eventID, keyID int) (*sr.Serde, *sr.Serde) {
	t.Helper()
	ev := avro.MustParse(AvroEvent)
	key := avro.MustParse(AvroKey)
	vs := sr.NewSerde()
	vs.Register(eventID, Event{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(ev, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(ev, b, v) }))
	ks := sr.NewSerde()
	ks.Register(keyID, "", sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(key, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(key, b, v) }))
	return vs, ks
}

// Proto compiles ProtoOrders (with ProtoCommon) and returns the message at the index path.
func Proto(t testing.TB, indexes ...int) protoreflect.MessageDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"orders.proto": ProtoOrders, ProtoCommonName: ProtoCommon}),
	})}
	fs, err := c.Compile(context.Background(), "orders.proto")
	if err != nil {
		t.Fatal(err)
	}
	msgs := fs[0].Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range indexes {
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md
}

// ProtoDescriptor compiles the .proto text of file (its imports among files) and returns it in
// the other form a registry holds: a serialized FileDescriptorProto in standard base64, as
// Confluent's serializers register it; like the descriptors of Python's generated code and
// descriptor pool, its fields carry no json_name.
func ProtoDescriptor(t testing.TB, file string, files map[string]string) string {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files),
	})}
	fs, err := c.Compile(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	fd := protodesc.ToFileDescriptorProto(fs[0])
	var strip func(ms []*descriptorpb.DescriptorProto)
	strip = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				f.JsonName = nil
			}
			strip(m.NestedType)
		}
	}
	strip(fd.MessageType)
	b, err := proto.Marshal(fd)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// ProtoFrame encodes the message at the index path from its protojson text and frames it in
// the Confluent wire format with schema id id (sr.ConfluentHeader: the single 0 byte for
// index [0]).
func ProtoFrame(t testing.TB, id int, protoJSON string, indexes ...int) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(Proto(t, indexes...))
	if err := protojson.Unmarshal([]byte(protoJSON), m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := new(sr.ConfluentHeader).AppendEncode(nil, id, indexes)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, b...)
}

// JSONFrame frames a JSON document with schema id id.
func JSONFrame(id int, doc string) []byte {
	out, _ := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
	return append(out, doc...)
}
