package dlq_test

import (
	"encoding/binary"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	dlqcmd "github.com/fieldwork/fieldwork/cmd/dlq"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// dlqBase is the timestamp of the first dead letter produced with franz-go; each next one is
// a second later. kcat cannot set timestamps: its records carry the broker's clock.
var dlqBase = time.Date(2026, 3, 14, 9, 26, 53, 589_000_000, time.UTC)

// dlqTopic creates a dead-letter topic named like inspecttest.Name (a fixed length, so tables
// keep their widths) that keeps records forever, with extra configs, deleted at cleanup.
func dlqTopic(t *testing.T, partitions int32, configs map[string]string) string {
	t.Helper()
	name := inspecttest.Name("dlq") + ".dlq"
	dlqNamedTopic(t, name, partitions, configs)
	return name
}

// dlqNamedTopic creates the topic name as dlqTopic does (testenv.CreateTopic: records kept
// forever unless configs say otherwise, deleted at cleanup).
func dlqNamedTopic(t *testing.T, name string, partitions int32, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	testenv.CreateTopic(t, name, partitions, cfg)
}

func dlqBE32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func dlqBE64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func dlqHeaders(kv ...string) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

// kcatProduce writes one record with kcat: key and value, and text headers k=v.
func kcatProduce(t *testing.T, kcat, topic, key, value string, headers ...string) {
	t.Helper()
	args := []string{"-b", testenv.Brokers(t), "-P", "-t", topic, "-p", "0", "-K", "\t"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	cmd := exec.Command(kcat, args...)
	cmd.Stdin = strings.NewReader(key + "\t" + value + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
}

// seedConventions writes one dead letter of every convention to partition 0 of topic: with
// franz-go (fixed timestamps) fieldwork's own (dlq.NewDeadLetter), Spring (one with a
// truncated partition header), Kafka Connect, Watermill, SmallRye and one of no convention
// with a key that is not UTF-8; then with kcat (text headers only, as an operator types
// them) SmallRye, Kafka Connect, Watermill and Spring with its numbers as text.
func seedConventions(t *testing.T, topic string) {
	t.Helper()
	kcat := testenv.Kcat(t)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	at := func(i int) time.Time { return dlqBase.Add(time.Duration(i) * time.Second) }
	orig := &kgo.Record{
		Topic: "tasks", Partition: 4, Offset: 1041, Timestamp: dlqBase.Add(-time.Hour), Key: []byte("task-7"),
		Value:   []byte(`{"specversion":"1.0","id":"evt-fw-1","type":"task.completed","source":"/tasks","aggregateid":"task-7","aggregateversion":3,"data":{"title":"x"}}`),
		Headers: dlqHeaders("content-type", "application/cloudevents+json"),
	}
	fw := dlq.NewDeadLetter(orig, dlq.Meta{
		Topic: topic, Group: "projector", Handler: "projection", Reason: dlq.ReasonRejected,
		Error: "task task-7 is archived", Attempts: 3, FirstFailedAt: at(0).Add(-2 * time.Second), FailedAt: at(0),
	})
	poison := dlq.NewDeadLetter(&kgo.Record{
		Topic: "tasks", Partition: 1, Offset: 7, Timestamp: dlqBase.Add(-time.Hour), Key: []byte("task-9"),
		Value: []byte(`{"specversion":"1.0","type":"task.created"}`), Headers: dlqHeaders("content-type", "application/cloudevents+json"),
	}, dlq.Meta{Topic: topic, Group: "projector", Handler: "projection", Reason: dlq.ReasonMalformed,
		Error: `cloudevents-structured: field "id": missing`, Attempts: 1, FailedAt: at(1)})
	recs := []*kgo.Record{
		fw, poison,
		{Key: []byte("order-3"), Value: []byte(`{"event_id":"evt-spring","aggregate_id":"order-3","aggregate_version":1,"type":"order.placed"}`), Timestamp: at(2), Headers: []kgo.RecordHeader{
			{Key: dlq.SpringOriginalTopic, Value: []byte("orders")},
			{Key: dlq.SpringOriginalPartition, Value: dlqBE32(3)},
			{Key: dlq.SpringOriginalOffset, Value: dlqBE64(42)},
			{Key: dlq.SpringOriginalTimestamp, Value: dlqBE64(dlqBase.Add(-time.Minute).UnixMilli())},
			{Key: dlq.SpringOriginalTimestampType, Value: []byte("CreateTime")},
			{Key: dlq.SpringOriginalConsumerGroup, Value: []byte("order-service")},
			{Key: dlq.SpringExceptionFQCN, Value: []byte("org.springframework.kafka.listener.ListenerExecutionFailedException")},
			{Key: dlq.SpringExceptionCauseFQCN, Value: []byte("java.lang.IllegalStateException")},
			{Key: dlq.SpringExceptionMessage, Value: []byte("no such customer: c-17")},
			{Key: dlq.SpringExceptionStacktrace, Value: []byte("java.lang.IllegalStateException: no such customer: c-17\n\tat com.example.Orders.place(Orders.java:42)")},
		}},
		{Key: []byte("order-4"), Value: []byte(`{"event_id":"evt-spring-2"}`), Timestamp: at(3), Headers: []kgo.RecordHeader{
			{Key: dlq.SpringOriginalTopic, Value: []byte("orders")},
			{Key: dlq.SpringOriginalPartition, Value: []byte{0, 0, 3}},
			{Key: dlq.SpringOriginalOffset, Value: dlqBE64(43)},
			{Key: dlq.SpringExceptionFQCN, Value: []byte("java.lang.IllegalStateException")},
			{Key: dlq.SpringExceptionMessage, Value: []byte("no such customer: c-18")},
		}},
		{Key: []byte("customer-2"), Value: []byte("{not json"), Timestamp: at(4), Headers: dlqHeaders(
			dlq.ConnectTopic, "customers", dlq.ConnectPartition, "2", dlq.ConnectOffset, "1234567",
			dlq.ConnectConnectorName, "jdbc-sink", dlq.ConnectTaskID, "0", dlq.ConnectStage, "VALUE_CONVERTER",
			dlq.ConnectClassName, "org.apache.kafka.connect.json.JsonConverter",
			dlq.ConnectExceptionClassName, "org.apache.kafka.connect.errors.DataException",
			dlq.ConnectExceptionMessage, "Converting byte[] to Kafka Connect data failed due to serialization error",
			dlq.ConnectExceptionStacktrace, "org.apache.kafka.connect.errors.DataException: Converting byte[] failed\n\tat JsonConverter.toConnectData(JsonConverter.java:324)",
		)},
		{Key: []byte("payment-5"), Value: []byte(`{"event_id":"evt-wm"}`), Timestamp: at(5), Headers: dlqHeaders(
			dlq.WatermillTopic, "payments", dlq.WatermillHandler, "payments_handler",
			dlq.WatermillSubscriber, "*kafka.Subscriber", dlq.WatermillReason, "card declined",
		)},
		{Key: []byte("movie-1"), Value: []byte(`{"title":"x"}`), Timestamp: at(6), Headers: dlqHeaders(
			dlq.SmallRyeExceptionClassName, "java.lang.RuntimeException", dlq.SmallRyeReason, "Something went wrong",
			dlq.SmallRyeTopic, "movies", dlq.SmallRyePartition, "1", dlq.SmallRyeOffset, "17",
		)},
		{Key: []byte("\xffkey\xfe"), Value: []byte("opaque"), Timestamp: at(7), Headers: dlqHeaders("x-error", "boom")},
	}
	testenv.Produce(t, cl, recs...)
	kcatProduce(t, kcat, topic, "order-9", `{"event_id":"evt-kcat-sr"}`,
		"dead-letter-topic=orders", "dead-letter-partition=2", "dead-letter-offset=7",
		"dead-letter-reason=rejected by hand", "dead-letter-exception-class-name=java.lang.IllegalArgumentException")
	kcatProduce(t, kcat, topic, "customer-3", `{"event_id":"evt-kcat-connect"}`,
		"__connect.errors.topic=customers", "__connect.errors.partition=0", "__connect.errors.offset=99",
		"__connect.errors.connector.name=s3-sink", "__connect.errors.stage=TASK_PUT",
		"__connect.errors.exception.class.name=org.apache.kafka.connect.errors.ConnectException",
		"__connect.errors.exception.message=bucket not found")
	kcatProduce(t, kcat, topic, "payment-6", `{"event_id":"evt-kcat-wm"}`,
		"topic_poisoned=payments", "handler_poisoned=refunds", "reason_poisoned=refund exceeds charge")
	kcatProduce(t, kcat, topic, "order-10", `{"event_id":"evt-kcat-spring"}`,
		"kafka_dlt-original-topic=orders", "kafka_dlt-original-partition=5", "kafka_dlt-original-offset=77",
		"kafka_dlt-exception-fqcn=java.lang.NullPointerException", "kafka_dlt-exception-message=customer is null")
}

var (
	dlqTimestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	dlqAge       = regexp.MustCompile(`\b\d+[dhms](\d+[dhms])?\b`)
	dlqPadding   = regexp.MustCompile(`  +`)
)

// dlqNormalise makes output comparable across runs: names become placeholders, times from
// the last day (kcat's records, "now") become <now>; in tables, ages become <age> and column
// padding two blanks (ages of kcat's records change the widths).
func dlqNormalise(s string, names map[string]string, table bool) string {
	for name, placeholder := range names {
		s = strings.ReplaceAll(s, name, placeholder)
	}
	recent := time.Now().Add(-24 * time.Hour)
	s = dlqTimestamp.ReplaceAllStringFunc(s, func(ts string) string {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && t.After(recent) {
			return "<now>"
		}
		return ts
	})
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if table {
			l = dlqAge.ReplaceAllString(l, "<age>")
			l = dlqPadding.ReplaceAllString(l, "  ")
		}
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// dlqGolden compares got, normalised, with testdata/dlq/cmd/name, or rewrites it with
// -update. list*.txt and stats*.txt files are tables whose padding is normalised; show*.txt
// are detail views whose only age ends a line, so their alignment (and the indentation of
// the value) is kept.
func dlqGolden(t *testing.T, name, got string, names map[string]string) {
	t.Helper()
	table := strings.HasSuffix(name, ".txt") && !strings.HasPrefix(name, "show")
	if strings.HasPrefix(name, "show") {
		got = dlqAge.ReplaceAllString(got, "<age>")
	}
	got = dlqNormalise(got, names, table)
	golden.Check(t, filepath.Join("..", "..", "testdata", "dlq", "cmd", name), []byte(got))
}

func dlqCheck(t *testing.T, env, names map[string]string, file string, wantCode int, args ...string) roottest.Result {
	t.Helper()
	r := roottest.RunCode(t, env, wantCode, args...)
	dlqGolden(t, file, r.Stdout, names)
	return r
}

// dlqEntries decodes `dlq list -o jsonl` output, leaving out the truncation mark that ends
// an output cut at --limit.
func dlqEntries(t *testing.T, out string) []map[string]any {
	t.Helper()
	var es []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var e map[string]any
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		if _, mark := e["_truncated"]; !mark {
			es = append(es, e)
		}
	}
	return es
}

// TestDLQConventions lists, shows and summarises dead letters of every convention, produced
// with franz-go and with kcat, against the real broker.
func TestDLQConventions(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	topic := dlqTopic(t, 1, nil)
	seedConventions(t, topic)
	names := map[string]string{topic: "<topic>"}

	t.Run("list", func(t *testing.T) {
		dlqCheck(t, env, names, "list.json", 0, "dlq", "list", "--topic", topic, "-o", "json")
		dlqCheck(t, env, names, "list.txt", 0, "dlq", "list", "--topic", topic, "-o", "table")
		dlqCheck(t, env, names, "list.csv", 0, "dlq", "list", "--topic", topic, "-o", "csv")

		r := roottest.Run(t, env, "dlq", "list", "--topic", topic, "-o", "jsonl")
		es := dlqEntries(t, r.Stdout)
		if r.Code != 0 || r.Stderr != "" || len(es) != 12 {
			t.Fatalf("jsonl: exit %d, %d entries, stderr %q", r.Code, len(es), r.Stderr)
		}
		// Every convention's original coordinates and error, as its writer meant them.
		want := []struct {
			conv, orig, class, message string
		}{
			{"fieldwork", "tasks/4/1041", "", "task task-7 is archived"},
			{"fieldwork", "tasks/1/7", "", `cloudevents-structured: field "id": missing`},
			{"spring", "orders/3/42", "java.lang.IllegalStateException", "no such customer: c-17"},
			{"spring", "orders/?/43", "java.lang.IllegalStateException", "no such customer: c-18"},
			{"connect", "customers/2/1234567", "org.apache.kafka.connect.errors.DataException", "Converting byte[] to Kafka Connect data failed due to serialization error"},
			{"watermill", "payments/?/?", "", "card declined"},
			{"smallrye", "movies/1/17", "java.lang.RuntimeException", "Something went wrong"},
			{"unknown", "-", "", ""},
			{"smallrye", "orders/2/7", "java.lang.IllegalArgumentException", "rejected by hand"},
			{"connect", "customers/0/99", "org.apache.kafka.connect.errors.ConnectException", "bucket not found"},
			{"watermill", "payments/?/?", "", "refund exceeds charge"},
			{"spring", "orders/5/77", "java.lang.NullPointerException", "customer is null"},
		}
		for i, w := range want {
			var d dlq.DeadLetter
			b, _ := json.Marshal(es[i])
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			if string(d.Convention) != w.conv || dlqcmd.Original(d) != w.orig || d.ErrorClass != w.class || d.ErrorMessage != w.message {
				t.Errorf("dead letter %d: %s %s %q %q, want %s %s %q %q", i, d.Convention, dlqcmd.Original(d), d.ErrorClass, d.ErrorMessage, w.conv, w.orig, w.class, w.message)
			}
		}
		// The truncated Spring partition is listed, and flagged.
		if p := es[3]["header_problems"]; !strings.Contains(mustJSON(t, p), `"header":"kafka_dlt-original-partition","problem":"want 4 bytes, got 3"`) {
			t.Errorf("truncated partition header not flagged: %s", mustJSON(t, p))
		}
		// The key that is not UTF-8 keeps its exact bytes.
		if es[7]["key_base64"] != "/2tlef4=" {
			t.Errorf("non-UTF-8 key: %v", es[7]["key_base64"])
		}
	})

	t.Run("filters", func(t *testing.T) {
		count := func(args ...string) (int, roottest.Result) {
			t.Helper()
			r := roottest.Run(t, env, append([]string{"dlq", "list", "--topic", topic, "-o", "jsonl"}, args...)...)
			if r.Code != 0 {
				t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
			}
			return len(dlqEntries(t, r.Stdout)), r
		}
		for _, tc := range []struct {
			args []string
			want int
		}{
			{[]string{"--dlq-reason", "malformed"}, 2},
			{[]string{"--dlq-reason", "rejected,unknown"}, 7},
			{[]string{"--dlq-reason", "exhausted"}, 3},
			{[]string{"--original-topic", "orders"}, 4},
			{[]string{"--error", "^no such customer"}, 2},
			{[]string{"--error", `IllegalStateException$`}, 2},
			{[]string{"--group", "projector"}, 2},
			{[]string{"--key", "order-3"}, 1},
			{[]string{"--key-base64", "/2tlef4="}, 1},
			{[]string{"--event-id", "evt-spring"}, 1},
			{[]string{"--event-id", "evt-fw-1"}, 1},
			{[]string{"--since", "1h"}, 4},
			{[]string{"--until", "1h"}, 8},
			{[]string{"--since", dlqBase.Add(2 * time.Second).Format(time.RFC3339Nano), "--until", dlqBase.Add(4 * time.Second).Format(time.RFC3339Nano)}, 2},
		} {
			if got, r := count(tc.args...); got != tc.want {
				t.Errorf("%v: %d dead letters, want %d\n%s", tc.args, got, tc.want, r.Stdout)
			}
		}
		// Cut at --limit: said on stderr and, off a terminal, by a mark that ends the output.
		got, r := count("--limit", "3")
		if got != 3 || !strings.Contains(r.Stderr, "showing the first 3 dead letters: more remain") ||
			!strings.HasSuffix(r.Stdout, "}\n"+`{"_truncated":{"limit":3,"written":3}}`+"\n") {
			t.Errorf("--limit 3: %d, stdout %q, stderr %q", got, r.Stdout, r.Stderr)
		}
		got, r = count("--limit", "3", "--mark-truncated=false")
		if got != 3 || strings.Contains(r.Stdout, "_truncated") {
			t.Errorf("--limit 3 --mark-truncated=false: %d, stdout %q", got, r.Stdout)
		}
		got, r = count("--limit", "12")
		if got != 12 || r.Stderr != "" || strings.Contains(r.Stdout, "_truncated") {
			t.Errorf("--limit 12 of 12: %d, stderr %q", got, r.Stderr)
		}
		// Found by the default pattern (every topic ending in .dlq), and by a pattern.
		r = roottest.Run(t, env, "dlq", "list", "--pattern", "^"+regexp.QuoteMeta(topic)+"$", "--limit", "0", "-o", "jsonl")
		if r.Code != 0 || len(dlqEntries(t, r.Stdout)) != 12 {
			t.Errorf("--pattern: exit %d, %s", r.Code, r.Stderr)
		}
		r = roottest.Run(t, env, "dlq", "list", "--limit", "0", "--event-id", "evt-kcat-wm", "-o", "jsonl")
		if es := dlqEntries(t, r.Stdout); r.Code != 0 || len(es) != 1 || es[0]["topic"] != topic {
			t.Errorf("default pattern: exit %d, %s %s", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("show", func(t *testing.T) {
		dlqCheck(t, env, names, "show_fieldwork.txt", 0, "dlq", "show", topic+"/0/0", "-o", "table")
		dlqCheck(t, env, names, "show_fieldwork.json", 0, "dlq", "show", topic+"/0/0", "-o", "json")
		dlqCheck(t, env, names, "show_spring_truncated.txt", 0, "dlq", "show", topic+"/0/3", "-o", "table")
		dlqCheck(t, env, names, "show_spring_truncated.json", 0, "dlq", "show", topic+"/0/3", "-o", "json")
		dlqCheck(t, env, names, "show_unknown.txt", 0, "dlq", "show", topic+"/0/7", "-o", "table")
		r := dlqCheck(t, env, names, "show_event_id.txt", 0, "dlq", "show", "--event-id", "evt-spring", "--topic", topic, "-o", "table")
		if r.Stderr != "" {
			t.Errorf("stderr %q", r.Stderr)
		}
		r = roottest.Run(t, env, "dlq", "show", "--event-id", "evt-nope", "--topic", topic)
		if r.Code != root.ExitNotFound || !strings.Contains(r.Stderr, `no dead letter of event "evt-nope" in `+topic) {
			t.Errorf("missing event id: exit %d %q", r.Code, r.Stderr)
		}
		r = roottest.Run(t, env, "dlq", "show", topic+"/0/12")
		if r.Code != root.ExitNotFound || r.Stderr != "error: offset 12 is outside "+topic+"/0, whose records are at offsets 0..11\n" {
			t.Errorf("offset outside: exit %d %q", r.Code, r.Stderr)
		}
	})

	t.Run("stats", func(t *testing.T) {
		dlqCheck(t, env, names, "stats.json", 0, "dlq", "stats", "--topic", topic, "-o", "json")
		dlqCheck(t, env, names, "stats.txt", 0, "dlq", "stats", "--topic", topic, "-o", "table")
		dlqCheck(t, env, names, "stats_by_topic_convention.csv", 0, "dlq", "stats", "--topic", topic, "--group-by", "topic,reason", "-o", "csv")
		r := roottest.Run(t, env, "dlq", "stats", "--topic", topic, "--group-by", "", "--dlq-reason", "malformed", "-o", "json")
		var rep dlq.StatsReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Matched != 2 || rep.RecordsRead != 12 || len(rep.Groups) != 1 || rep.Groups[0].Count != 2 {
			t.Errorf("stats --dlq-reason malformed: exit %d %v\n%s", r.Code, err, r.Stdout)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDLQBadInput: a topic that does not exist (exit 9, not found, with no usage hint), an empty dead-letter topic, and a pattern
// that matches nothing.
func TestDLQBadInput(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	missing := inspecttest.Name("nop") + ".dlq"
	for _, args := range [][]string{
		{"dlq", "list", "--topic", missing},
		{"dlq", "stats", "--topic", missing},
		{"dlq", "show", missing + "/0/0"},
		{"dlq", "show", "--event-id", "x", "--topic", missing},
	} {
		r := roottest.Run(t, env, args...)
		want := "error: topic \"" + missing + "\" does not exist\n"
		if r.Code != root.ExitNotFound || r.Stderr != want || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 9 and %q", args, r.Code, r.Stderr, r.Stdout, want)
		}
	}

	empty := dlqTopic(t, 3, nil)
	names := map[string]string{empty: "<topic>"}
	for _, tc := range []struct{ format, stdout, stderr string }{
		{"table", "", "no dead letters in " + empty + "\n"},
		{"json", "[]\n", ""},
		{"jsonl", "", ""},
		{"csv", strings.Join(dlqcmd.CSVHeader, ",") + "\n", ""},
	} {
		r := roottest.Run(t, env, "dlq", "list", "--topic", empty, "-o", tc.format)
		if r.Code != 0 || r.Stdout != tc.stdout || r.Stderr != tc.stderr {
			t.Errorf("empty, %s: exit %d, stdout %q, stderr %q", tc.format, r.Code, r.Stdout, r.Stderr)
		}
	}
	r := dlqCheck(t, env, names, "stats_empty.txt", 0, "dlq", "stats", "--topic", empty, "-o", "table")
	if r.Stderr != "no dead letters in "+empty+"\n" {
		t.Errorf("stats of empty: stderr %q", r.Stderr)
	}
	dlqCheck(t, env, names, "stats_empty.json", 0, "dlq", "stats", "--topic", empty, "-o", "json")

	r = roottest.Run(t, env, "dlq", "list", "--pattern", "^no-such-topic-at-all$", "-o", "json")
	if r.Code != 0 || r.Stdout != "[]\n" || r.Stderr != "no dead letters: no topic matches --pattern ^no-such-topic-at-all$\n"+
		"hint: the cluster lists only the topics you may DESCRIBE: its ACLs may hide dead-letter topics (name one with --topic to see why)\n" {
		t.Errorf("pattern matching nothing: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}

// TestDLQRetention: stats reads each topic's retention and warns when the oldest dead letter
// comes within a day of deletion; compacted and infinite retention say so.
func TestDLQRetention(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	// 60h retention, oldest dead letter 48h old: deletable in about 12h.
	soon := dlqTopic(t, 1, map[string]string{"retention.ms": "216000000"})
	compacted := dlqTopic(t, 1, map[string]string{"cleanup.policy": "compact"})
	forever := dlqTopic(t, 1, nil)
	now := time.Now()
	for _, topic := range []string{soon, compacted, forever} {
		cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
		testenv.Produce(t, cl, dlq.NewDeadLetter(&kgo.Record{Topic: "tasks", Key: []byte("k"), Value: []byte(`{"event_id":"e"}`)},
			dlq.Meta{Topic: topic, Reason: dlq.ReasonExhausted, Error: "timeout", FailedAt: now.Add(-48 * time.Hour)}))
	}
	r := roottest.Run(t, env, "dlq", "stats", "--topic", soon, "--topic", compacted, "--topic", forever, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "warning: the oldest dead letter in "+soon) || !strings.Contains(r.Stderr, "becomes deletable by retention (2d12h) in 1") {
		t.Errorf("no retention warning for %s: %q", soon, r.Stderr)
	}
	if strings.Count(r.Stderr, "warning:") != 1 {
		t.Errorf("warnings: %q", r.Stderr)
	}
	var rep dlq.StatsReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	byTopic := map[string]dlq.TopicSummary{}
	for _, ts := range rep.Topics {
		byTopic[ts.Topic] = ts
	}
	if s := byTopic[soon]; !s.RetentionWarning || s.OldestDeletableAt == nil || s.Retention.Describe() != "2d12h" {
		t.Errorf("soon: %+v", s)
	}
	if s := byTopic[compacted]; s.RetentionWarning || s.OldestDeletableAt != nil || s.Retention.Describe() != "compacted: not deleted by age" {
		t.Errorf("compacted: %+v", s)
	}
	if s := byTopic[forever]; s.RetentionWarning || s.OldestDeletableAt != nil || s.Retention.Describe() != "forever" {
		t.Errorf("forever: %+v", s)
	}
	r = roottest.Run(t, env, "dlq", "stats", "--topic", soon, "--topic", compacted, "--topic", forever, "-o", "table")
	if !strings.Contains(r.Stdout, "(under a day)") || !strings.Contains(r.Stdout, "compacted: not deleted by age") || !strings.Contains(r.Stdout, "never") {
		t.Errorf("table:\n%s", r.Stdout)
	}
}
