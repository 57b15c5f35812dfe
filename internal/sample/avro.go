package sample

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// AvroSchema is the sample stream's event (CloudEvents structured mode, a Task as its data)
// as an Avro record, for a topic of the same events in the Confluent wire format
// (docs/design.md §3.6). The aggregate version is a long or a string, so that the bad-version
// poison ("abc") is written as it is.
const AvroSchema = `{"type":"record","name":"TaskCloudEvent","namespace":"fieldwork.sample","fields":[
 {"name":"specversion","type":"string"},{"name":"id","type":"string"},{"name":"type","type":"string"},
 {"name":"source","type":"string"},{"name":"subject","type":"string"},{"name":"time","type":"string"},
 {"name":"datacontenttype","type":"string"},{"name":"aggregatetype","type":"string"},{"name":"aggregateid","type":"string"},
 {"name":"aggregateversion","type":["long","string"]},
 {"name":"data","type":{"type":"record","name":"Task","fields":[
  {"name":"task_id","type":"string"},{"name":"title","type":"string"},{"name":"project","type":"string"},
  {"name":"status","type":"string"},{"name":"priority","type":"string"},{"name":"reporter","type":"string"},
  {"name":"assignee","type":["null","string"],"default":null},{"name":"due_date","type":["null","string"],"default":null},
  {"name":"labels","type":["null",{"type":"array","items":"string"}],"default":null},
  {"name":"note","type":["null","string"],"default":null},{"name":"completed_at","type":["null","string"],"default":null},
  {"name":"updated_at","type":"string"}]}}]}`

// AvroSchemaWith is AvroSchema with more fields at its end (JSON field definitions,
// comma-separated), as a producer's schema evolves.
func AvroSchemaWith(fields string) string {
	return strings.TrimSuffix(AvroSchema, "]}") + "," + fields + "]}"
}

// AvroValue encodes a sample record's value (CloudEvents structured JSON) with schema, a
// parse of AvroSchema or of AvroSchemaWith; ok is false for a value that is not JSON (the
// invalid-json poison), which has no Avro form. The missing-id poison is written with an
// empty id. Equal values encode to equal bytes.
func AvroValue(schema avro.Schema, value []byte) (b []byte, ok bool, err error) {
	var ce map[string]any
	dec := json.NewDecoder(strings.NewReader(string(value)))
	dec.UseNumber()
	if dec.Decode(&ce) != nil {
		return nil, false, nil
	}
	if n, isNum := ce["aggregateversion"].(json.Number); isNum {
		v, err := n.Int64()
		if err != nil {
			return nil, false, fmt.Errorf("aggregateversion %s: %w", n, err)
		}
		ce["aggregateversion"] = v
	}
	if _, has := ce["id"]; !has {
		ce["id"] = ""
	}
	if data, isObj := ce["data"].(map[string]any); isObj {
		if ls, isList := data["labels"].([]any); isList {
			strs := make([]string, len(ls))
			for i, l := range ls {
				strs[i], _ = l.(string)
			}
			data["labels"] = strs
		}
	}
	b, err = avro.Marshal(schema, ce)
	if err != nil {
		return nil, false, fmt.Errorf("avro: %w", err)
	}
	return b, true, nil
}
