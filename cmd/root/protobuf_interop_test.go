package root_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestConfluentPythonProtobuf writes 83 task events with Confluent's own Protobuf serializer
// (confluent-kafka for Python, scripts/python/produce_protobuf.py, from the virtualenv
// scripts/services.sh makes) through the real registry: the schema registered as a base64
// serialized FileDescriptorProto, a .proto with two messages and the event the second
// (message index [1]), its aggregate_version an int64 that protojson renders as a string, its
// occurred_at a google.protobuf.Timestamp; once in one file, once with the event's data in
// another file registered as a reference. inspect validate reads every event, consume applies
// every one (none dead-lettered: processed check finds each one's marker), and inspect record
// shows the version as an integer and the time as the event's time.
func TestConfluentPythonProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reference bool
	}{{"one-file", false}, {"reference", true}} {
		t.Run(tc.name, func(t *testing.T) {
			topic := testenv.Topic(t, 3, nil)
			testenv.CreateTopic(t, topic+".dlq", 1, nil)
			args := []string{"--name", strings.ReplaceAll(testenv.Name(t, "py"), ".", "-")}
			if tc.reference {
				args = append(args, "--reference")
			}
			produceWithPython(t, "produce_protobuf.py", topic, args...)

			env := interopEnv(t)
			checkInteropEvents(t, env, topic)

			var rec struct {
				Event struct {
					Version    int64  `json:"aggregate_version"`
					HasVersion bool   `json:"has_version"`
					Time       string `json:"time"`
				} `json:"event"`
				ValueSchema struct {
					Format  string `json:"format"`
					Message string `json:"message"`
					Indexes []int  `json:"message_indexes"`
				} `json:"value_schema"`
			}
			r := roottest.Run(t, env, "inspect", "record", topic+"/0/0", "-o", "json")
			if err := json.Unmarshal([]byte(r.Stdout), &rec); r.Code != 0 || err != nil || !rec.Event.HasVersion || rec.Event.Version != 1 ||
				rec.ValueSchema.Format != "protobuf" || !strings.HasSuffix(rec.ValueSchema.Message, ".TaskEvent") || len(rec.ValueSchema.Indexes) != 1 ||
				rec.ValueSchema.Indexes[0] != 1 || !strings.HasPrefix(rec.Event.Time, "2026-05-28T") {
				t.Fatalf("inspect record: exit %d, %+v (%v)\n%s\n%s", r.Code, rec, err, r.Stdout, r.Stderr)
			}

			checkInteropConsumed(t, env, topic)
		})
	}
}

// produceWithPython writes 83 events to topic with script, a producer of scripts/python run by
// the virtualenv's python, through the registry, and fails the test unless all 83 were
// delivered.
func produceWithPython(t *testing.T, script, topic string, args ...string) {
	t.Helper()
	url, user, pw := testenv.SchemaRegistry(t)
	args = append([]string{filepath.Join(testenv.ModuleRoot(t), "scripts", "python", script),
		"--brokers", testenv.Brokers(t), "--registry", url, "--topic", topic, "--count", "83"}, args...)
	cmd := exec.Command(testenv.Python(t), args...)
	cmd.Env = append(os.Environ(), "SCHEMA_REGISTRY_USER="+user, "SCHEMA_REGISTRY_PASSWORD="+pw)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "delivered 83") {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// interopEnv is the environment of fieldwork's runs in an interoperability test: the broker,
// a store of its own (SQLite in the test's directory) and the registry.
func interopEnv(t *testing.T) map[string]string {
	url, user, pw := testenv.SchemaRegistry(t)
	return map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": "sqlite:" + filepath.Join(t.TempDir(), "store.db"),
		"FIELDWORK_SCHEMA_REGISTRY": url, "FIELDWORK_SCHEMA_REGISTRY_USERNAME": user, "FIELDWORK_SCHEMA_REGISTRY_PASSWORD": pw}
}

// checkInteropEvents: inspect validate reads every one of the 83 events of topic, of 5
// aggregates.
func checkInteropEvents(t *testing.T, env map[string]string, topic string) {
	t.Helper()
	var v struct {
		Events         int64 `json:"events"`
		RecordsScanned int64 `json:"records_read"`
		Aggregates     int64 `json:"aggregates"`
	}
	r := roottest.Run(t, env, "inspect", "validate", topic, "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &v); r.Code != 0 || err != nil || v.Events != 83 || v.RecordsScanned != 83 || v.Aggregates != 5 {
		t.Fatalf("inspect validate: exit %d, %+v (%v)\n%s\n%s", r.Code, v, err, r.Stdout, r.Stderr)
	}
}

// checkInteropConsumed: consume (the audit handler) applies every event of topic, none
// dead-lettered: processed check finds each one's marker and topic.dlq stays empty.
func checkInteropConsumed(t *testing.T, env map[string]string, topic string) {
	t.Helper()
	group := testenv.Name(t, "audit")
	r := roottest.Run(t, env, "consume", "--topic", topic, "--group", group, "--handler", "audit", "--migrate",
		"--stop-when-idle", "3s", "--metrics-addr", "", "--log-format", "json")
	if r.Code != 0 {
		t.Fatalf("consume: exit %d\n%s", r.Code, r.Stderr)
	}
	var c struct {
		Events     int64 `json:"events"`
		WithMarker int64 `json:"with_marker"`
		Missing    int64 `json:"missing"`
		Malformed  int64 `json:"malformed"`
	}
	r = roottest.Run(t, env, "processed", "check", "--topic", topic, "--consumer", group, "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &c); r.Code != 0 || err != nil || c.Events != 83 || c.WithMarker != 83 || c.Malformed != 0 {
		t.Fatalf("processed check after consume: exit %d, %+v (%v)\n%s\n%s", r.Code, c, err, r.Stdout, r.Stderr)
	}
	r = roottest.Run(t, env, "inspect", "topic", topic+".dlq", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"records": 0`) {
		t.Fatalf("the dead-letter topic: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
