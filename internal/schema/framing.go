// Package schema reads record payloads framed for a schema registry (docs/design.md §3.6): it
// detects the framing of a key or value (the Confluent wire format's magic byte 0 and schema
// id, a schema id or GUID in the __key_schema_id / __value_schema_id headers, a CloudEvents
// dataschema naming a registry schema) and decodes the payload through a Confluent-compatible
// registry: Avro (hamba/avro), Protobuf (compiled from the registry's text with protocompile,
// references resolved, rendered with protojson) and JSON Schema (the JSON itself). Schemas
// are fetched once per Decoder, so once per run.
//
// Detection needs no registry: every reader shows the framing and schema id of a record even
// when none is configured. A schema that cannot be fetched or a payload that does not match
// its schema is a *Error naming the schema and the cause, returned per payload: a scan goes on.
package schema

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/fieldwork/fieldwork/internal/envelope"
)

// Framing names how a payload says which schema it was written with. Its values are stable:
// they appear in JSON output.
type Framing string

const (
	// FramingConfluent is the Confluent wire format: magic byte 0, a 4-byte big-endian schema
	// id, for Protobuf the message-index list, then the payload.
	FramingConfluent Framing = "confluent"
	// FramingHeader is the schema named in a __key_schema_id / __value_schema_id header
	// (magic byte 1 and a 16-byte GUID, or magic byte 0 and a schema id; for Protobuf the
	// message indexes after it); the record's bytes are the payload alone.
	FramingHeader Framing = "confluent-header"
	// FramingDataSchema is a CloudEvents dataschema (ce_dataschema header) that names a
	// registry schema by id (…/schemas/ids/N) or by subject and version
	// (…/subjects/S/versions/V); the record's bytes are the payload alone.
	FramingDataSchema Framing = "cloudevents-dataschema"
)

// The record headers that carry a schema id beside the payload.
const (
	KeySchemaIDHeader   = "__key_schema_id"
	ValueSchemaIDHeader = "__value_schema_id"
)

// Ref is what a framed payload says about its schema, read without a registry.
type Ref struct {
	Framing Framing `json:"framing"`
	// ID is the registry's schema id; 0 when the payload names its schema otherwise.
	ID int `json:"schema_id,omitempty"`
	// GUID is the schema's GUID (magic byte 1 in a schema-id header).
	GUID string `json:"schema_guid,omitempty"`
	// Subject and Version name the schema when a dataschema names it that way.
	Subject string `json:"subject,omitempty"`
	Version int    `json:"version,omitempty"`
	// DataSchema is the CloudEvents dataschema as written.
	DataSchema string `json:"dataschema,omitempty"`

	// indexes is the message-index list of a schema-id header (Protobuf), undecoded.
	indexes []byte
}

// String is the schema's short name: "id 42", "guid 0f…", "subject orders-value version 3".
func (r Ref) String() string {
	switch {
	case r.ID > 0:
		return "id " + strconv.Itoa(r.ID)
	case r.GUID != "":
		return "guid " + r.GUID
	case r.Subject != "":
		return "subject " + r.Subject + " version " + strconv.Itoa(r.Version)
	}
	return string(r.Framing)
}

// Detect reads the framing of a record's key (key true) or value: it returns the reference and
// the bytes after the framing (for Protobuf still holding the message-index list of the wire
// format), or ok false when the bytes name no schema. A schema-id header wins over the bytes
// themselves, and the bytes' magic byte 0 over a CloudEvents dataschema (which describes the
// value only).
func Detect(headers []envelope.Header, b []byte, key bool) (ref Ref, rest []byte, ok bool) {
	name := ValueSchemaIDHeader
	if key {
		name = KeySchemaIDHeader
	}
	if h, found := envelope.LastHeader(headers, name); found {
		if ref, ok := headerRef(h); ok {
			return ref, b, true
		}
	}
	if id, rest, err := new(sr.ConfluentHeader).DecodeID(b); err == nil && registryID(id) {
		return Ref{Framing: FramingConfluent, ID: id}, rest, true
	}
	if !key {
		for _, n := range dataSchemaHeaders {
			if h, found := envelope.LastHeader(headers, n); found {
				if ref, ok := dataSchemaRef(string(h)); ok {
					return ref, b, true
				}
			}
		}
	}
	return Ref{}, nil, false
}

// dataSchemaHeaders are the headers of a CloudEvents dataschema, binary mode first.
var dataSchemaHeaders = []string{"ce_dataschema", "dataschema"}

// ReadsHeader reports whether a header named name is one Detect reads (ASCII case ignored,
// as envelope.LastHeader does). A reader that keeps no headers hands Detect a record's headers
// only when one of them is: without one, Detect answers from the bytes alone.
func ReadsHeader(name string) bool {
	// The names start with '_', 'c' or 'd', letters no other rune folds to: a first byte of
	// anything else (fw.dlq.…, kafka_dlt-…, most headers) is none of them. Small enough to be
	// inlined into a loop over every record's headers.
	if name == "" {
		return false
	}
	switch name[0] {
	case '_', 'c', 'C', 'd', 'D':
		return readsHeader(name)
	}
	return false
}

// ReadsAnyHeader reports whether one of a record's headers is one Detect reads (ReadsHeader).
func ReadsAnyHeader(hs []kgo.RecordHeader) bool {
	for i := range hs {
		if ReadsHeader(hs[i].Key) {
			return true
		}
	}
	return false
}

func readsHeader(name string) bool {
	if strings.EqualFold(name, ValueSchemaIDHeader) || strings.EqualFold(name, KeySchemaIDHeader) {
		return true
	}
	for _, n := range dataSchemaHeaders {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// registryID reports whether id is one a schema registry can have given a schema: 1 to
// 2^31-1. The wire format's four bytes are a Java int, which Confluent's serializers write and
// their deserializers read signed, and a registry numbers its schemas from 1: bytes after a
// magic byte 0 that read as 0 or as a negative int (a binary value that merely begins with a
// zero byte, say) name no schema.
func registryID(id int) bool { return id > 0 && id <= math.MaxInt32 }

// headerRef reads a schema-id header: magic byte 1 and a 16-byte GUID, or magic byte 0 and a
// 4-byte id, then (Protobuf) the message indexes.
func headerRef(h []byte) (Ref, bool) {
	switch {
	case len(h) >= 17 && h[0] == 1:
		g := hex.EncodeToString(h[1:17])
		return Ref{Framing: FramingHeader, GUID: g[:8] + "-" + g[8:12] + "-" + g[12:16] + "-" + g[16:20] + "-" + g[20:],
			indexes: h[17:]}, true
	case len(h) >= 5 && h[0] == 0:
		id := int(binary.BigEndian.Uint32(h[1:5]))
		return Ref{Framing: FramingHeader, ID: id, indexes: h[5:]}, registryID(id)
	}
	return Ref{}, false
}

// dataSchemaRef reads a CloudEvents dataschema that names a registry schema: a URI whose path
// ends in /schemas/ids/N (the registry's own address of a schema) or /subjects/S/versions/V.
func dataSchemaRef(ds string) (Ref, bool) {
	parts := strings.Split(strings.TrimRight(ds, "/"), "/")
	n := len(parts)
	if n >= 3 && parts[n-3] == "schemas" && parts[n-2] == "ids" {
		if id, err := strconv.Atoi(parts[n-1]); err == nil && registryID(id) {
			return Ref{Framing: FramingDataSchema, ID: id, DataSchema: ds}, true
		}
	}
	if n >= 4 && parts[n-4] == "subjects" && parts[n-2] == "versions" {
		if v, err := strconv.Atoi(parts[n-1]); err == nil && v > 0 && parts[n-3] != "" {
			return Ref{Framing: FramingDataSchema, Subject: parts[n-3], Version: v, DataSchema: ds}, true
		}
	}
	return Ref{}, false
}
