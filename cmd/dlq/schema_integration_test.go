package dlq_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/schema/schematest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// schemaIDs makes the registry's ids, which depend on what was registered before, into
// placeholders in the forms output gives them, and the framed bytes that hold them (text
// starting with the magic byte and the id's high two bytes, base64 starting with the magic byte
// and the id's high two bytes: ids below 65,536, however many schemas the registry has).
func schemaIDs(s string, ids map[int]string) string {
	for id, name := range ids {
		re := regexp.MustCompile(fmt.Sprintf(`("schema_id": ?|avro:|protobuf:|json:|confluent:|schema id |--schema-id )%d\b`, id))
		s = re.ReplaceAllString(s, "${1}<"+name+">")
	}
	s = framedText.ReplaceAllString(s, `"<framed>"`)
	return framedBase64.ReplaceAllString(s, "<framed base64>")
}

var (
	framedText   = regexp.MustCompile(`"\\u0000\\u0000\\u0000(\\"|[^"])*"`)
	framedBase64 = regexp.MustCompile(`\bAAAA[A-Za-z0-9+/]*=*`)
)

// seedFramed writes dead letters (fieldwork's convention) of registry-framed records to
// partition 0 of topic, with franz-go's sr.Serde and sr.ConfluentHeader: an Avro event with
// an Avro key, a Protobuf message nested in another, a Protobuf message of index [0] (the
// single 0 byte) whose schema has a reference, a JSON Schema document, and a value naming a
// schema id the registry does not know; then, with kcat (an independent client), one more
// JSON Schema value from a file, byte for byte.
func seedFramed(t *testing.T, topic string, ids schematest.Registered) [][]byte {
	t.Helper()
	vs, ks := schematest.Serde(t, ids.AvroEvent, ids.AvroKey)
	note := "first"
	values := [][]byte{
		vs.MustEncode(schematest.Event{EventID: "evt-avro-1", AggregateType: "task", AggregateID: "task-1", AggregateVersion: 2,
			Type: "task.renamed", Data: schematest.TaskData{Title: "write the report", Note: &note}}),
		schematest.ProtoFrame(t, ids.ProtoOrders, `{"sku":"sku-9","quantity":2}`, 0, 0),
		schematest.ProtoFrame(t, ids.ProtoOrders, `{"order_id":"order-1","total":{"currency":"EUR","units":"12"}}`, 0),
		schematest.JSONFrame(ids.JSON, `{"shipment_id":"ship-1","weight_kg":2.5}`),
		schematest.JSONFrame(987654321, `{"shipment_id":"ship-2"}`),
	}
	// Keys: Avro, Protobuf (the Refund message, index [1]), text, JSON Schema, text.
	keys := [][]byte{ks.MustEncode("task-1"), schematest.ProtoFrame(t, ids.ProtoOrders, `{"order_id":"order-1","reason":"key"}`, 1),
		[]byte("order-1"), schematest.JSONFrame(ids.JSON, `{"shipment_id":"ship-1"}`), []byte("ship-2")}
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range values {
		orig := &kgo.Record{Topic: "orders", Partition: 1, Offset: int64(100 + i), Timestamp: dlqBase.Add(-time.Hour), Key: keys[i], Value: values[i]}
		reason := dlq.ReasonRejected
		if i == 4 {
			reason = dlq.ReasonUnsupported
		}
		recs = append(recs, dlq.NewDeadLetter(orig, dlq.Meta{Topic: topic, Group: "orders-svc", Handler: "projection", Reason: reason,
			Error: "rejected by the handler", Attempts: 1, FailedAt: dlqBase.Add(time.Duration(i) * time.Second)}))
	}
	testenv.Produce(t, cl, recs...)
	kcatValue := schematest.JSONFrame(ids.JSON, `{"shipment_id":"ship-3","weight_kg":1}`)
	file := filepath.Join(t.TempDir(), "value.bin")
	if err := os.WriteFile(file, kcatValue, 0o600); err != nil {
		t.Fatal(err)
	}
	// kcat -P with a file: the file's bytes are one record's value.
	out, err := exec.Command(testenv.Kcat(t), "-b", testenv.Brokers(t), "-P", "-t", topic, "-p", "0", "-k", "ship-3",
		"-H", "fw.dlq.topic=orders", "-H", "fw.dlq.reason=rejected", "-H", "fw.dlq.event_id=evt-kcat-json", file).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	return append(values, kcatValue)
}

func registryEnv(t *testing.T) map[string]string {
	url, user, pw := testenv.SchemaRegistry(t)
	env := cmdtest.BrokerEnv(t)
	env["FIELDWORK_SCHEMA_REGISTRY"], env["FIELDWORK_SCHEMA_REGISTRY_USERNAME"], env["FIELDWORK_SCHEMA_REGISTRY_PASSWORD"] = url, user, pw
	return env
}

// TestDLQSchemaRegistry reads registry-framed dead letters through the real registry in
// inspect record, dlq show, dlq list (JSON and table, golden) and dlq stats, and without a
// registry, with one that is down, and with a wrong password.
func TestDLQSchemaRegistry(t *testing.T) {
	env := registryEnv(t)
	prefix := testenv.Name(t, "dlqsr")
	ids := schematest.Register(t, testenv.RegistryClient(t), prefix)
	topic := dlqTopic(t, 1, nil)
	values := seedFramed(t, topic, ids)
	names := map[string]string{topic: "<topic>"}
	idNames := map[int]string{ids.AvroEvent: "avro-event", ids.AvroKey: "avro-key", ids.ProtoOrders: "proto-orders", ids.JSON: "json"}
	golden := func(t *testing.T, file string, code int, env map[string]string, args ...string) roottest.Result {
		t.Helper()
		r := roottest.RunCode(t, env, code, args...)
		dlqGolden(t, file, schemaIDs(r.Stdout, idNames), names)
		return r
	}

	t.Run("list", func(t *testing.T) {
		r := golden(t, "list_schema.json", 0, env, "dlq", "list", "--topic", topic, "-o", "json")
		var es []map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &es); err != nil || len(es) != 6 {
			t.Fatalf("%d entries, %v", len(es), err)
		}
		avro := es[0]["value_schema"].(map[string]any)
		if avro["format"] != "avro" || avro["decoded"].(map[string]any)["event_id"] != "evt-avro-1" || es[0]["event_id"] != "evt-avro-1" {
			t.Fatalf("avro value: %v (event id %v)", avro, es[0]["event_id"])
		}
		if k := es[0]["key_schema"].(map[string]any); k["decoded"] != "task-1" {
			t.Fatalf("avro key: %v", k)
		}
		if p := es[1]["value_schema"].(map[string]any); p["message"] != "fieldwork.orders.Order.Line" || fmt.Sprint(p["message_indexes"]) != "[0 0]" {
			t.Fatalf("nested protobuf: %v", p)
		}
		if k := es[1]["key_schema"].(map[string]any); k["message"] != "fieldwork.orders.Refund" || k["decoded"].(map[string]any)["reason"] != "key" {
			t.Fatalf("protobuf key: %v", k)
		}
		if k := es[3]["key_schema"].(map[string]any); k["format"] != "json" || k["decoded"].(map[string]any)["shipment_id"] != "ship-1" {
			t.Fatalf("json key: %v", k)
		}
		if p := es[2]["value_schema"].(map[string]any); p["decoded"].(map[string]any)["total"].(map[string]any)["currency"] != "EUR" {
			t.Fatalf("protobuf with a reference: %v", p)
		}
		if p := es[4]["value_schema"].(map[string]any); p["problem"] != "unknown_schema" || !strings.Contains(p["error"].(string), "schema id 987654321: not found") {
			t.Fatalf("unknown id: %v", p)
		}
		if p := es[5]["value_schema"].(map[string]any); p["decoded"].(map[string]any)["shipment_id"] != "ship-3" {
			t.Fatalf("kcat's value: %v", p)
		}
		if r.Stderr != "" {
			t.Fatalf("stderr: %s", r.Stderr)
		}
		golden(t, "list_schema.txt", 0, env, "dlq", "list", "--topic", topic, "-o", "table", "--wide")
		r = roottest.RunCode(t, env, 0, "dlq", "list", "--topic", topic, "-o", "jsonl", "--schema-id", fmt.Sprint(ids.JSON))
		if es := dlqEntries(t, r.Stdout); len(es) != 2 {
			t.Fatalf("--schema-id %d: %d entries", ids.JSON, len(es))
		}
	})
	t.Run("show", func(t *testing.T) {
		golden(t, "show_schema_avro.txt", 0, env, "dlq", "show", topic+"/0/0", "-o", "table")
		r := golden(t, "show_schema_protobuf.json", 0, env, "dlq", "show", topic+"/0/1", "-o", "json")
		var d map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
			t.Fatal(err)
		}
		if v := d["value_schema"].(map[string]any); v["decoded"].(map[string]any)["sku"] != "sku-9" {
			t.Fatalf("show: %v", v)
		}
	})
	t.Run("inspect record", func(t *testing.T) {
		golden(t, "show_inspect_schema_avro.txt", 0, env, "inspect", "record", topic+"/0/0", "-o", "table")
		r := roottest.RunCode(t, env, 0, "inspect", "record", topic+"/0/0", "-o", "json")
		var rep map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatal(err)
		}
		// The dead letter's envelope is read from the decoded Avro value.
		if ev, _ := rep["event"].(map[string]any); ev == nil || ev["event_id"] != "evt-avro-1" || ev["aggregate_id"] != "task-1" {
			t.Fatalf("event: %v (%v)", rep["event"], rep["malformed"])
		}
		for _, c := range []struct{ offset, want string }{{"1", `"sku":"sku-9"`}, {"2", `"currency":"EUR"`}, {"3", `"shipment_id":"ship-1"`}} {
			r := roottest.RunCode(t, env, 0, "inspect", "record", topic+"/0/"+c.offset, "-o", "json")
			var rep struct {
				ValueSchema struct {
					Decoded json.RawMessage `json:"decoded"`
				} `json:"value_schema"`
				KeySchema *struct {
					Decoded json.RawMessage `json:"decoded"`
				} `json:"key_schema"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || !strings.Contains(strings.Join(strings.Fields(string(rep.ValueSchema.Decoded)), ""), c.want) {
				t.Fatalf("inspect record %s: %v\n%s", c.offset, err, r.Stdout)
			}
			if c.offset != "2" && (rep.KeySchema == nil || len(rep.KeySchema.Decoded) == 0) {
				t.Fatalf("inspect record %s: the key is not decoded:\n%s", c.offset, r.Stdout)
			}
		}
	})
	t.Run("stats", func(t *testing.T) {
		r := roottest.RunCode(t, env, 0, "dlq", "stats", "--topic", topic, "--group-by", "schema", "-o", "json")
		got := strings.Join(strings.Fields(schemaIDs(r.Stdout, idNames)), "")
		for _, want := range []string{`"schema":"avro:<avro-event>","count":1`, `"schema":"protobuf:<proto-orders>","count":2`, `"schema":"json:<json>","count":2`, `"schema":"confluent:987654321","count":1`} {
			if !strings.Contains(got, want) {
				t.Fatalf("stats lack %s:\n%s", want, r.Stdout)
			}
		}
	})
	t.Run("replay", func(t *testing.T) {
		env := registryEnv(t)
		env["FIELDWORK_DSN"], env["USER"] = testenv.DSN(t), "tester"
		pg := testenv.PGSchema(t, "fwsr_")
		roottest.RunCode(t, env, 0, "db", "migrate", "--schema", pg)
		target := topic + ".target"
		dlqNamedTopic(t, target, 1, nil)
		r := roottest.RunCode(t, env, 0, "replay", "--schema", pg, "--topic", topic, "--to", target, "-o", "json")
		var plan struct {
			Sample []struct {
				ValueSchema map[string]any `json:"value_schema"`
			}
		}
		if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil || len(plan.Sample) != 6 {
			t.Fatalf("plan: %v\n%s", err, r.Stdout)
		}
		if d, _ := plan.Sample[0].ValueSchema["decoded"].(map[string]any); d["event_id"] != "evt-avro-1" {
			t.Fatalf("the plan's sample is not decoded: %v", plan.Sample[0].ValueSchema)
		}
		roottest.RunCode(t, env, 0, "replay", "--schema", pg, "--topic", topic, "--to", target, "--execute", "--yes", "--reason", "schema fixed", "-o", "json")
		// The replayed records carry the original bytes, not the decoded values.
		sources := testenv.ReadTopic(t, testenv.Brokers(t), topic)
		sent := testenv.ReadTopic(t, testenv.Brokers(t), target)
		if len(sent) != len(values) || len(sources) != len(values) {
			t.Fatalf("%d sent, %d dead letters, want %d", len(sent), len(sources), len(values))
		}
		for i, rec := range sent {
			if !bytes.Equal(rec.Value, values[i]) || !bytes.Equal(rec.Value, sources[i].Value) || !bytes.Equal(rec.Key, sources[i].Key) {
				t.Fatalf("record %d: sent value %x key %x, dead letter value %x key %x", i, rec.Value, rec.Key, sources[i].Value, sources[i].Key)
			}
		}
	})
	t.Run("no registry", func(t *testing.T) {
		env := cmdtest.BrokerEnv(t)
		r := roottest.RunCode(t, env, 0, "dlq", "list", "--topic", topic, "-o", "json")
		var es []map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &es); err != nil {
			t.Fatal(err)
		}
		if v := es[0]["value_schema"].(map[string]any); v["framing"] != "confluent" || int(v["schema_id"].(float64)) != ids.AvroEvent || v["decoded"] != nil {
			t.Fatalf("framing without a registry: %v", v)
		}
		if !strings.Contains(r.Stderr, "pass --schema-registry") {
			t.Fatalf("stderr: %s", r.Stderr)
		}
		r = roottest.RunCode(t, env, 0, "dlq", "list", "--topic", topic, "-o", "table")
		if !strings.Contains(r.Stdout, "confluent:") {
			t.Fatalf("no schema column:\n%s", r.Stdout)
		}
	})
	t.Run("registry down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		down := registryEnv(t)
		down["FIELDWORK_SCHEMA_REGISTRY"] = "http://" + addr
		r := roottest.RunCode(t, down, 0, "dlq", "list", "--topic", topic, "-o", "jsonl")
		if len(dlqEntries(t, r.Stdout)) != 6 || !strings.Contains(r.Stderr, "warning: ") || !strings.Contains(r.Stderr, "did not answer") {
			t.Fatalf("down, list: stderr %s", r.Stderr)
		}
		// inspect validate cannot tell a malformed record from one it could not decode: it needs the registry.
		r = roottest.RunCode(t, down, root.ExitConnect, "inspect", "validate", topic, "-o", "json")
		if !strings.Contains(r.Stderr, addr) || !strings.Contains(r.Stderr, "did not answer") {
			t.Fatalf("down, validate: %s", r.Stderr)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		bad := registryEnv(t)
		bad["FIELDWORK_SCHEMA_REGISTRY_PASSWORD"] = "not-the-registry-secret"
		for _, args := range [][]string{{"dlq", "list", "--topic", topic, "-o", "json"}, {"inspect", "record", topic + "/0/0"}} {
			r := roottest.RunCode(t, bad, root.ExitConnect, args...)
			if strings.Contains(r.Stdout+r.Stderr, "not-the-registry-secret") || !strings.Contains(r.Stderr, "refused the credentials") {
				t.Fatalf("%v: stdout %s\nstderr %s", args, r.Stdout, r.Stderr)
			}
		}
	})
}
