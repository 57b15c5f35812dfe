package inspect_test

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// normalise makes output comparable across runs: names become placeholders, timestamps later
// than a day after the fixed ones (those kcat's records get from the broker's clock) become
// <now>, and trailing blanks of table cells go.
func normalise(s string, names map[string]string) string {
	for name, placeholder := range names {
		s = strings.ReplaceAll(s, name, placeholder)
	}
	s = timestamp.ReplaceAllStringFunc(s, func(ts string) string {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err == nil && t.After(inspecttest.Base.Add(24*time.Hour)) {
			return "<now>"
		}
		return ts
	})
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// checkGolden compares got (normalised) with testdata/inspect/name, or rewrites it with
// -update.
func checkGolden(t *testing.T, name, got string, names map[string]string) {
	t.Helper()
	golden.Check(t, filepath.Join("..", "..", "testdata", "inspect", name), []byte(normalise(got, names)))
}

// check runs one command and compares stdout with a golden file and the exit code with want.
func check(t *testing.T, env, names map[string]string, file string, wantCode int, args ...string) roottest.Result {
	t.Helper()
	r := roottest.RunCode(t, env, wantCode, args...)
	checkGolden(t, file, r.Stdout, names)
	return r
}

// TestInspectBrokenStream seeds a stream with every kind of problem (franz-go into partition
// 0, kcat into partition 1) and a consumer group, then checks every inspect command's json
// and table output.
func TestInspectBrokenStream(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	topic := inspecttest.Topic(t, 2)
	inspecttest.SeedBroken(t, topic)
	group := inspecttest.CommitGroup(t, topic, map[int32]int64{0: 4, 1: 4})
	names := map[string]string{topic: "<topic>", group: "<group>"}

	t.Run("topic", func(t *testing.T) {
		check(t, env, names, "topic_broken.json", 0, "inspect", "topic", topic, "-o", "json")
		check(t, env, names, "topic_broken.txt", 0, "inspect", "topic", topic, "-o", "table")
		check(t, env, names, "topic_broken.csv", 0, "inspect", "topic", topic, "-o", "csv")
	})
	t.Run("record", func(t *testing.T) {
		for _, rc := range []struct{ addr, file string }{
			{"0/0", "record_structured"},
			{"0/1", "record_binary"},
			{"0/4", "record_malformed_no_id"},
			{"0/7", "record_non_utf8"},
			{"1/0", "record_kcat_structured"},
			{"1/3", "record_kcat_bad_version"},
		} {
			check(t, env, names, rc.file+".json", 0, "inspect", "record", topic+"/"+rc.addr, "-o", "json")
			check(t, env, names, rc.file+".txt", 0, "inspect", "record", topic+"/"+rc.addr, "-o", "table")
		}
		// The position form fieldwork's own error messages use works too.
		r := roottest.Run(t, env, "inspect", "record", topic+"/1@1", "-o", "jsonl")
		if r.Code != 0 || !strings.Contains(r.Stdout, `"problem":"invalid JSON`) {
			t.Fatalf("record T/1@1: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
	})
	t.Run("record outside partition", func(t *testing.T) {
		r := roottest.Run(t, env, "inspect", "record", topic+"/0/10")
		if r.Code != root.ExitNotFound || r.Stderr != "error: offset 10 is outside "+topic+"/0, whose records are at offsets 0..9\n" {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
	})
	t.Run("aggregate", func(t *testing.T) {
		check(t, env, names, "aggregate_order-1.json", 0, "inspect", "aggregate", topic, "order-1", "-o", "json")
		// The topic as the flag every command names it with: the same answer.
		check(t, env, names, "aggregate_order-1.json", 0, "inspect", "aggregate", "--topic", topic, "order-1", "-o", "json")
		check(t, env, names, "aggregate_order-1.json", 0, "inspect", "aggregate", "-t", topic, topic, "order-1", "-o", "json")
		check(t, env, names, "aggregate_order-1.txt", 0, "inspect", "aggregate", topic, "order-1", "-o", "table")
		check(t, env, names, "aggregate_order-3.txt", 0, "inspect", "aggregate", topic, "order-3", "-o", "table")
		check(t, env, names, "aggregate_order-1_partition1.csv", 0, "inspect", "aggregate", topic, "order-1", "--partition", "1", "-o", "csv")
	})
	t.Run("validate", func(t *testing.T) {
		r := check(t, env, names, "validate_broken.json", root.ExitCheckFailed, "inspect", "validate", topic, "-o", "json")
		want := "problems found: 9 in " + topic + " (3 malformed, 1 missing_version, 1 missing_aggregate_id, 1 conflicting_payload, 1 version_regression, 1 duplicate_version, 1 split_aggregate)\n"
		if r.Stderr != want {
			t.Errorf("stderr = %q\nwant %q", r.Stderr, want)
		}
		check(t, env, names, "validate_broken.txt", root.ExitCheckFailed, "inspect", "validate", topic, "-o", "table")
		check(t, env, names, "validate_broken.csv", root.ExitCheckFailed, "inspect", "validate", topic, "-o", "csv")
		// A bounded selection: partition 1 from offset 2 holds one malformed record.
		check(t, env, names, "validate_broken_partition1.txt", root.ExitCheckFailed, "inspect", "validate", topic, "--partition", "1", "--start-offset", "2", "--end-offset", "3", "-o", "table")
		// Only partition 0 up to offset 3: a gap is not a lint finding, a redelivery is ordinary.
		r = check(t, env, names, "validate_clean_prefix.txt", 0, "inspect", "validate", topic, "--partition", "0", "--end-offset", "3", "-o", "table")
		if r.Stderr != "" {
			t.Errorf("clean validate wrote to stderr: %q", r.Stderr)
		}
		// Memory bounded to one fingerprint per table: spills to disk, same findings.
		r = roottest.Run(t, env, "inspect", "validate", topic, "--memory-entries", "1", "--temp-dir", t.TempDir(), "-o", "json")
		full := roottest.Run(t, env, "inspect", "validate", topic, "-o", "json")
		spilled := strings.Replace(r.Stdout, `"spilled_to_disk": true`, `"spilled_to_disk": false`, 1)
		if r.Code != root.ExitCheckFailed || spilled != full.Stdout || spilled == r.Stdout {
			t.Errorf("spilled run: exit %d, differs from the in-memory one:\n%s", r.Code, r.Stdout)
		}
	})
	t.Run("since", func(t *testing.T) {
		// Every franz-go record is from 2025; kcat's are from now: --since 1h keeps partition 1 only.
		r := roottest.Run(t, env, "inspect", "validate", topic, "--since", "1h", "-o", "json")
		if r.Code != root.ExitCheckFailed || !strings.Contains(r.Stdout, `"records_read": 4,`) {
			t.Fatalf("--since 1h: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = roottest.Run(t, env, "inspect", "aggregate", topic, "order-1", "--until", "2025-01-02T03:04:07Z", "-o", "json")
		if r.Code != 0 || strings.Count(r.Stdout, `"event_id"`) != 2 || !strings.Contains(r.Stdout, `"records_read": 2,`) {
			t.Fatalf("--until: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

func TestInspectCleanStream(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	topic := inspecttest.Topic(t, 1)
	inspecttest.SeedClean(t, topic)
	names := map[string]string{topic: "<topic>"}
	r := check(t, env, names, "validate_clean.json", 0, "inspect", "validate", topic, "-o", "json")
	if r.Stderr != "" {
		t.Errorf("stderr = %q", r.Stderr)
	}
	check(t, env, names, "validate_clean.txt", 0, "inspect", "validate", topic, "-o", "table")
	check(t, env, names, "aggregate_task-2.txt", 0, "inspect", "aggregate", topic, "task-2", "-o", "table")
	check(t, env, names, "aggregate_task-2.jsonl", 0, "inspect", "aggregate", topic, "task-2")
}

func TestInspectEmptyTopic(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	topic := inspecttest.Topic(t, 3)
	names := map[string]string{topic: "<topic>"}
	check(t, env, names, "topic_empty.json", 0, "inspect", "topic", topic, "-o", "json")
	check(t, env, names, "topic_empty.txt", 0, "inspect", "topic", topic, "-o", "table")
	check(t, env, names, "validate_empty.txt", 0, "inspect", "validate", topic, "-o", "table")
	check(t, env, names, "aggregate_empty.json", 0, "inspect", "aggregate", topic, "order-1", "-o", "json")
	r := roottest.Run(t, env, "inspect", "record", topic+"/0/0")
	if r.Code != root.ExitNotFound || !strings.Contains(r.Stderr, "offset 0 is outside "+topic+"/0, which holds no records") {
		t.Fatalf("record in empty topic: exit %d %s", r.Code, r.Stderr)
	}
}

func TestInspectUnknownTopic(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	missing := inspecttest.Name("nop")
	for _, args := range [][]string{
		{"inspect", "topic", missing},
		{"inspect", "record", missing + "/0/0"},
		{"inspect", "aggregate", missing, "order-1"},
		{"inspect", "validate", missing},
	} {
		r := roottest.Run(t, env, args...)
		want := "error: topic \"" + missing + "\" does not exist\n"
		if r.Code != root.ExitNotFound || r.Stderr != want || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 9 and %q", args[:2], r.Code, r.Stderr, r.Stdout, want)
		}
	}
}

// TestInspectUnreachableBroker: a closed port and a listener that never answers both exit 4
// within the connect timeout, naming the broker.
func TestInspectUnreachableBroker(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold the connection open and say nothing
		}
	}()

	for _, tc := range []struct{ addr, want string }{
		{closedAddr, "cannot reach Kafka at " + closedAddr},
		{silent.Addr().String(), "did not answer within 2s"},
	} {
		for _, args := range [][]string{
			{"inspect", "topic", "tasks"},
			{"inspect", "validate", "tasks"},
			{"inspect", "record", "tasks/0/0"},
			{"inspect", "aggregate", "tasks", "x"},
		} {
			r := roottest.Run(t, map[string]string{"FIELDWORK_BROKERS": tc.addr}, append(args, "--connect-timeout", "2s")...)
			if r.Code != root.ExitConnect || !strings.Contains(r.Stderr, tc.want) || r.Elapsed > 15*time.Second {
				t.Errorf("%v at %s: exit %d after %s, stderr %q; want exit 4 with %q", args[:2], tc.addr, r.Code, r.Elapsed, r.Stderr, tc.want)
			}
		}
	}
}

// TestInspectTopicRetention: the retention field says what the configs mean. A topic whose
// configs the user may not read (franz-go's in-process broker with ACLs: the shared Kafka
// enforces none and must not be reconfigured) is unknown, with why, and the rest of the
// report stands; a topic on the real broker with a retention shows it as a duration.
func TestInspectTopicRetention(t *testing.T) {
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "closed"),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "oncall", "pw", kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "closed",
			Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	env := map[string]string{"FIELDWORK_BROKERS": strings.Join(cl.ListenAddrs(), ","),
		"FIELDWORK_SASL_MECHANISM": "PLAIN", "FIELDWORK_SASL_USERNAME": "oncall", "FIELDWORK_SASL_PASSWORD": "pw"}
	r := roottest.Run(t, env, "inspect", "topic", "closed", "--sample", "0", "-o", "table")
	if r.Code != 0 || !regexp.MustCompile(`(?m)^retention +unknown: DescribeConfigs on topic closed was denied .*: its retention cannot be read without that ACL$`).MatchString(r.Stdout) ||
		!strings.Contains(r.Stdout, "Partitions") {
		t.Errorf("denied: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	topic := inspecttest.Name("ret")
	week := "604800000"
	testenv.CreateTopic(t, topic, 1, map[string]*string{"retention.ms": &week})
	r = roottest.Run(t, cmdtest.BrokerEnv(t), "inspect", "topic", topic, "-o", "table")
	for _, want := range []string{`(?m)^retention\.ms +604800000 \(7d\) \(topic\)$`, `(?m)^retention +7d$`} {
		if r.Code != 0 || !regexp.MustCompile(want).MatchString(r.Stdout) {
			t.Errorf("7d topic: exit %d, no %s in\n%s%s", r.Code, want, r.Stdout, r.Stderr)
		}
	}
}
