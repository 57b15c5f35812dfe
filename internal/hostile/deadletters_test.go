package hostile

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestHostileDeadLetters: dead letters written by other frameworks carry an error message, an
// exception class, a stack trace and an original topic that anyone may have put escape
// sequences, bidirectional overrides, C1 controls and bytes that are not UTF-8 in. dlq list
// and dlq show print them on a colour terminal, in a table through a pipe and as JSON, and
// none of it may reach the terminal raw; the JSON gives every header by the one rule.
func TestHostileDeadLetters(t *testing.T) {
	e, dlqTopic, sch := deadLetterEnv(t, "fwh")

	hostile := escTitle + escRed + bidi + framed + c1CSI + "\xff\xfe" + ownRed + titleST
	be32, be64 := make([]byte, 4), make([]byte, 8)
	binary.BigEndian.PutUint32(be32, 3)
	binary.BigEndian.PutUint64(be64, 42)
	letters := []hostileRecord{
		{name: "spring", key: []byte("task-1" + escClear), value: []byte(`{"event_id":"e-1` + bidi + `"}`), header: []kgo.RecordHeader{
			{Key: "kafka_dlt-original-topic", Value: []byte("orders" + escTitle)},
			{Key: "kafka_dlt-original-partition", Value: be32},
			{Key: "kafka_dlt-original-offset", Value: be64},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte("billing" + ownRed)},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("com.example." + escRed + "Exception")},
			{Key: "kafka_dlt-exception-message", Value: []byte("rejected: " + hostile)},
			{Key: "kafka_dlt-exception-stacktrace", Value: []byte("java.lang.IllegalStateException: " + hostile +
				"\n\tat com.example.Handler.handle(Handler.java:42)\r\n\tat " + overtype + nul)},
		}},
		{name: "connect", key: []byte("\x00\x01" + rawCSI), value: []byte(framed + hostile), header: []kgo.RecordHeader{
			{Key: "__connect.errors.topic", Value: []byte("payments" + bidi)},
			{Key: "__connect.errors.partition", Value: []byte("0")},
			{Key: "__connect.errors.offset", Value: []byte("7")},
			{Key: "__connect.errors.connector.name", Value: []byte("sink" + c1CSI)},
			{Key: "__connect.errors.exception.class.name", Value: []byte("org.apache.kafka.connect.errors.DataException" + titleST)},
			{Key: "__connect.errors.exception.message", Value: []byte(hostile)},
			{Key: "__connect.errors.exception.stacktrace", Value: []byte(hostile + "\n\tat " + escClear)},
		}},
		{name: "unknown convention", key: []byte(ownRed), value: []byte(hostile), header: []kgo.RecordHeader{
			{Key: "x-error" + escTitle, Value: []byte(hostile)},
		}},
	}
	produce(t, dlqTopic, letters)

	list := []string{"dlq", "list", "--topic", dlqTopic, "--schema", sch, "--limit", "0"}
	checkTerminal(t, e.expect(t, 0, append(list, "-o", "table")...))
	checkColourTerminal(t, e.onTerminal(t, 0, list...))
	// CSV is data: a pipe gets it as it is; on a terminal it is escaped (and never coloured).
	checkOnTerminal(t, e.onTerminal(t, 0, append(list, "-o", "csv")...))
	checkJSON(t, e.expect(t, 0, append(list, "-o", "json")...))
	for i, l := range letters {
		addr := fmt.Sprintf("%s/0/%d", dlqTopic, i)
		show := []string{"dlq", "show", addr, "--schema", sch}
		checkTerminal(t, e.expect(t, 0, append(show, "-o", "table")...))
		checkColourTerminal(t, e.onTerminal(t, 0, show...))
		r := e.expect(t, 0, append(show, "-o", "json")...)
		checkJSON(t, r)
		checkRecordJSON(t, r, l.key, l.value, l.header)
	}
}

// deadLetterEnv is an environment on the real services with a dead-letter topic of its own
// (named from prefix) and a migrated store schema of its own.
func deadLetterEnv(t *testing.T, prefix string) (e env, dlqTopic, sch string) {
	t.Helper()
	e = env{brokers: testenv.Brokers(t), dsn: testenv.DSN(t), home: t.TempDir()}
	dlqTopic = testenv.Name(t, prefix) + ".dlq"
	createTopics(t, dlqTopic)
	sch = schema(t)
	e.expect(t, 0, "db", "migrate", "--schema", sch)
	return e, dlqTopic, sch
}
