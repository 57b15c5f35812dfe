package schema_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// TestReadsHeader: the headers Detect reads are recognised in any ASCII case, and no other
// header is. For each name, Detect on headers holding it alone must answer as ReadsHeader
// says: a reader that hands Detect no headers when ReadsHeader says none matters gets the
// same answer as one that hands them all.
func TestReadsHeader(t *testing.T) {
	id := []byte{0, 0, 0, 0, 7}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"__value_schema_id", true},
		{"__VALUE_SCHEMA_ID", true},
		{"__key_schema_id", true},
		{"ce_dataschema", true},
		{"CE_DataSchema", true},
		{"dataschema", true},
		{"fw.dlq.original_topic", false},
		{"kafka_dlt-exception-message", false},
		{"ce_id", false},
		{"", false},
		{"__value_schema_idx", false},
	} {
		if got := schema.ReadsHeader(tc.name); got != tc.want {
			t.Errorf("ReadsHeader(%q) = %v, want %v", tc.name, got, tc.want)
		}
		value := []byte(`{"id":"e-1"}`)
		h := []envelope.Header{{Key: tc.name, Value: id}}
		if tc.name == "ce_dataschema" || tc.name == "CE_DataSchema" || tc.name == "dataschema" {
			h[0].Value = []byte("https://registry.example/schemas/ids/7")
		}
		_, _, valueFramed := schema.Detect(h, value, false)
		_, _, keyFramed := schema.Detect(h, value, true)
		if (valueFramed || keyFramed) && !tc.want {
			t.Errorf("Detect reads header %q, which ReadsHeader says it does not", tc.name)
		}
		if !valueFramed && !keyFramed && tc.want {
			t.Errorf("ReadsHeader(%q) but Detect found no framing from it", tc.name)
		}
	}
}
