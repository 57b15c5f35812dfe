package root_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestConfluentPythonAvroAndJSONSchema writes 83 task events with Confluent's own Avro and JSON
// Schema serializers (confluent-kafka for Python, scripts/python/produce_schema.py, from the
// virtualenv scripts/services.sh makes) through the real registry, each serializer registering
// its schema itself: flat records with event_id and event_type side by side and no "type", the
// Avro occurred_at a timestamp-millis long, the JSON one an RFC 3339 string. inspect validate
// reads every event, inspect record shows the event's type (from event_type) and time and the
// schema the value was read with, and consume applies every one (processed check finds each
// one's marker; nothing dead-lettered).
func TestConfluentPythonAvroAndJSONSchema(t *testing.T) {
	for _, format := range []string{"avro", "json"} {
		t.Run(format, func(t *testing.T) {
			topic := testenv.Topic(t, 3, nil)
			testenv.CreateTopic(t, topic+".dlq", 1, nil)
			produceWithPython(t, "produce_schema.py", topic, "--name", strings.ReplaceAll(testenv.Name(t, "py"), ".", "-"), "--format", format)
			env := interopEnv(t)
			checkInteropEvents(t, env, topic)

			var rec struct {
				Event struct {
					ID         string `json:"event_id"`
					Type       string `json:"type"`
					Version    int64  `json:"aggregate_version"`
					HasVersion bool   `json:"has_version"`
					Time       string `json:"time"`
				} `json:"event"`
				ValueSchema struct {
					Framing string `json:"framing"`
					Format  string `json:"format"`
				} `json:"value_schema"`
			}
			r := roottest.Run(t, env, "inspect", "record", topic+"/0/0", "-o", "json")
			if err := json.Unmarshal([]byte(r.Stdout), &rec); r.Code != 0 || err != nil || !rec.Event.HasVersion || rec.Event.Version != 1 ||
				rec.Event.Type != "task.created" || !strings.HasPrefix(rec.Event.ID, "evt-") || !strings.HasPrefix(rec.Event.Time, "2026-05-28T") ||
				rec.ValueSchema.Framing != "confluent" || rec.ValueSchema.Format != format {
				t.Fatalf("inspect record: exit %d, %+v (%v)\n%s\n%s", r.Code, rec, err, r.Stdout, r.Stderr)
			}
			checkInteropConsumed(t, env, topic)
		})
	}
}
