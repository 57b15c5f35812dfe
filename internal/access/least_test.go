package access

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestReadOnlyPrincipal: DESCRIBE and READ on the topics they read are all the read-only
// commands need. DescribeConfigs denied leaves the retention unknown, said on stderr and in
// the JSON, and the command goes on.
func TestReadOnlyPrincipal(t *testing.T) {
	w := cleanWorld(t)
	p := testenv.NewPrincipal(t, "readonly")
	p.Allow(kadm.NewACLs().Topics(w.topic, w.dlq), kadm.OpDescribe, kadm.OpRead)

	r := expect(t, p, 0, "inspect", "topic", w.topic, "-o", "jsonl")
	var rep struct {
		Totals    struct{ Records int64 }
		Retention struct {
			State string `json:"state"`
			Cause string `json:"unknown_cause"`
		} `json:"retention"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rep.Totals.Records != int64(w.records) || rep.Retention.State != "unknown" || rep.Retention.Cause != "denied" {
		t.Errorf("inspect topic: records %d (want %d), retention %+v (want unknown, denied)\n%s", rep.Totals.Records, w.records, rep.Retention, r)
	}
	if !strings.Contains(r.stderr, "warning: the retention of "+w.topic+" is unknown: DescribeConfigs on topic "+w.topic+" was denied (not authorized: DESCRIBE_CONFIGS on topic "+w.topic+")") {
		t.Errorf("inspect topic: no warning of the retention it could not read\n%s", r)
	}
	if r := expect(t, p, 0, "inspect", "record", w.topic+"/0/0", "-o", "jsonl"); !strings.Contains(r.stdout, `"offset":0`) {
		t.Errorf("inspect record\n%s", r)
	}
	if r := expect(t, p, 0, "inspect", "validate", w.topic, "-o", "jsonl"); !strings.Contains(r.stdout, `"records_read":`+itoa(w.records)) {
		t.Errorf("inspect validate read other than %d records\n%s", w.records, r)
	}
	expect(t, p, 0, "inspect", "aggregate", w.topic, "task-0001", "-o", "jsonl")

	// Without --topic the principal sees its own dead-letter topic and nobody else's.
	for _, args := range [][]string{{"dlq", "list", "--topic", w.dlq}, {"dlq", "list", "--no-status"}} {
		r := expect(t, p, 0, append(args, "-o", "jsonl")...)
		if n := strings.Count(r.stdout, `"topic":"`+w.dlq+`"`); n != w.deadLetters || strings.Count(r.stdout, "\n") != w.deadLetters {
			t.Errorf("%v: %d dead letters of %s listed, want %d\n%s", args, n, w.dlq, w.deadLetters, r)
		}
	}
	if r := expect(t, p, 0, "dlq", "show", w.dlq+"/0/0", "--no-status", "-o", "jsonl"); !strings.Contains(r.stdout, `"original_topic":"`+w.topic+`"`) {
		t.Errorf("dlq show\n%s", r)
	}
	r = expect(t, p, 0, "dlq", "stats", "--topic", w.dlq, "--no-status", "-o", "jsonl")
	if !strings.Contains(r.stdout, `"count":`+itoa(w.deadLetters)) || !strings.Contains(r.stdout, `"state":"unknown"`) ||
		!strings.Contains(r.stderr, "warning: cannot tell when retention deletes the dead letters in "+w.dlq+": DescribeConfigs on topic "+w.dlq+" was denied") {
		t.Errorf("dlq stats: want the count, retention unknown and a warning\n%s", r)
	}
}

// TestReplayerPrincipal: READ on the dead-letter topic and WRITE on the target are all a
// replay needs, its journal in PostgreSQL; without WRITE it is refused naming it, before a
// record is sent.
func TestReplayerPrincipal(t *testing.T) {
	w := cleanWorld(t)
	st := store(t)
	p := testenv.NewPrincipal(t, "replayer")
	p.Allow(kadm.NewACLs().Topics(w.dlq), kadm.OpRead)

	before := endOffsets(t, w.topic)
	denied(t, as(t, p, nil, append([]string{"replay", "--topic", w.dlq}, st...)...), "DESCRIBE on topic "+w.topic)
	denied(t, as(t, p, nil, append([]string{"replay", "--topic", w.dlq, "--execute", "--yes", "--reason", "fix deployed"}, st...)...), "WRITE on topic "+w.topic)
	// DESCRIBE alone lets the plan see the target; the producer is refused (the idempotent
	// producer's InitProducerID answers CLUSTER_AUTHORIZATION_FAILED) and says what is missing.
	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpDescribe)
	denied(t, as(t, p, nil, append([]string{"replay", "--topic", w.dlq, "--execute", "--yes", "--reason", "fix deployed"}, st...)...), "WRITE on topic "+w.topic)
	if got := endOffsets(t, w.topic); got != before {
		t.Fatalf("a refused replay wrote %d records to %s", got-before, w.topic)
	}

	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpWrite)
	if r := expect(t, p, 0, append([]string{"replay", "--topic", w.dlq, "-o", "jsonl"}, st...)...); !strings.Contains(r.stdout, `"to_send":`+itoa(w.deadLetters)) {
		t.Errorf("replay plan: want %d to send\n%s", w.deadLetters, r)
	}
	r := expect(t, p, 0, append([]string{"replay", "--topic", w.dlq, "--execute", "--yes", "--reason", "fix deployed", "-o", "jsonl"}, st...)...)
	if !strings.Contains(r.stdout, `"status":"completed"`) || !strings.Contains(r.stdout, `"sent":`+itoa(w.deadLetters)) {
		t.Errorf("replay --execute\n%s", r)
	}
	if got := endOffsets(t, w.topic); got != before+int64(w.deadLetters) {
		t.Errorf("%s grew by %d records, want %d", w.topic, got-before, w.deadLetters)
	}
	if r := expect(t, p, 0, append([]string{"replay", "runs", "-o", "jsonl"}, st...)...); !strings.Contains(r.stdout, `"status":"completed"`) {
		t.Errorf("replay runs: the journal has no completed run\n%s", r)
	}
}

// TestConsumerPrincipal: READ on its topic and group and WRITE on its dead-letter topic are
// all consume needs. Without the group's ACL it stops at once, also with --stop-when-idle;
// without WRITE on the dead-letter topic it stops the partition at the poison record, its
// offset not committed, and says so.
func TestConsumerPrincipal(t *testing.T) {
	w := poisonedWorld(t)
	st := store(t)
	group := testenv.Name(t, "projection")
	p := testenv.NewPrincipal(t, "consumer")
	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpRead)
	p.Allow(kadm.NewACLs().Topics(w.dlq), kadm.OpDescribe)
	consume := append([]string{"consume", "--topic", w.topic, "--group", group, "--handler", "projection", "--migrate", "--stop-when-idle", "2s", "-o", "jsonl"}, st...)

	denied(t, as(t, p, nil, consume...), "READ on group "+group)

	p.Allow(kadm.NewACLs().Groups(group), kadm.OpRead)
	r := as(t, p, nil, consume...)
	denied(t, r, "WRITE on topic "+w.dlq)
	if !strings.Contains(r.stderr, "stopped at offset") {
		t.Errorf("no partition said where it stopped\n%s", r)
	}
	if n := endOffsets(t, w.dlq); n != 0 {
		t.Errorf("%d dead letters written without WRITE", n)
	}
	committed := committedOffsets(t, group, w.topic)
	if committed >= int64(w.records) {
		t.Errorf("the group committed %d of %d offsets: past a poison record it could not dead-letter", committed, w.records)
	}

	p.Allow(kadm.NewACLs().Topics(w.dlq), kadm.OpWrite)
	r = expect(t, p, 0, consume...)
	if !strings.Contains(r.stdout, `"dead_lettered":`+itoa(w.poison)) {
		t.Errorf("want %d dead letters\n%s", w.poison, r)
	}
	if n := endOffsets(t, w.dlq); n != int64(w.poison) {
		t.Errorf("%s holds %d dead letters, want %d", w.dlq, n, w.poison)
	}
	if got := committedOffsets(t, group, w.topic); got != int64(w.records) {
		t.Errorf("the group committed %d offsets, want all %d", got, w.records)
	}

	// The markers it wrote, read back over the same TLS store by the same principal.
	event := w.manifest.EventIDs[0]
	if r := expect(t, p, 0, append([]string{"processed", "get", event, "-o", "jsonl"}, st...)...); !strings.Contains(r.stdout, `"consumer":"`+group+`"`) {
		t.Errorf("processed get %s: no marker of %s\n%s", event, group, r)
	}
	if r := expect(t, p, 0, append([]string{"processed", "list", "--consumer", group, "-o", "jsonl"}, st...)...); strings.Count(r.stdout, "\n") != w.manifest.Events {
		t.Errorf("processed list: want %d markers\n%s", w.manifest.Events, r)
	}
	r = expect(t, p, 0, append([]string{"processed", "check", "--topic", w.topic, "--consumer", group}, st...)...)
	if want := fmt.Sprintf("%d with a marker, 0 missing, %d malformed", w.records-w.poison, w.poison); !strings.Contains(r.stderr, want) {
		t.Errorf("processed check: want %q\n%s", want, r)
	}

	// Without DESCRIBE_CONFIGS on its topic the prune cannot see the replay horizon: refused
	// as a missing right (dry run and execute alike), nothing deleted; --force prunes anyway.
	prune := append([]string{"processed", "prune", "--consumer", group, "--older-than", "1s", "-o", "jsonl"}, st...)
	denied(t, as(t, p, nil, prune...), "DESCRIBE_CONFIGS on topic "+w.topic)
	denied(t, as(t, p, nil, append(prune, "--execute", "--yes", "--reason", "r")...), "DESCRIBE_CONFIGS on topic "+w.topic)
	if r := expect(t, p, 0, append([]string{"processed", "list", "--consumer", group, "-o", "jsonl"}, st...)...); strings.Count(r.stdout, "\n") != w.manifest.Events {
		t.Errorf("a denied prune deleted markers: want %d left\n%s", w.manifest.Events, r)
	}
	if r := expect(t, p, 0, append(prune, "--force")...); !strings.Contains(r.stderr, "--force: not checking") && !strings.Contains(r.stderr, "--force: pruning anyway") {
		t.Errorf("processed prune --force: want a warning of what it did not check\n%s", r)
	}
}

// TestNoRightsPrincipal: a principal without any ACL gets exit 5 naming what it lacks from
// every command, and dlq list, whose cluster lists it no topic, says that ACLs may hide them.
func TestNoRightsPrincipal(t *testing.T) {
	w := cleanWorld(t)
	st := store(t)
	p := testenv.NewPrincipal(t, "nobody")
	group := testenv.Name(t, "g")
	for _, c := range []struct {
		want string
		args []string
	}{
		{"DESCRIBE on topic " + w.topic, []string{"inspect", "topic", w.topic}},
		{"DESCRIBE on topic " + w.topic, []string{"inspect", "record", w.topic + "/0/0"}},
		{"DESCRIBE on topic " + w.topic, []string{"inspect", "validate", w.topic}},
		{"DESCRIBE on topic " + w.topic, []string{"inspect", "aggregate", w.topic, "task-0001"}},
		{"DESCRIBE on topic " + w.dlq, []string{"dlq", "list", "--topic", w.dlq, "--no-status"}},
		{"DESCRIBE on topic " + w.dlq, []string{"dlq", "show", w.dlq + "/0/0", "--no-status"}},
		{"DESCRIBE on topic " + w.dlq, []string{"dlq", "stats", "--topic", w.dlq, "--no-status"}},
		{"DESCRIBE on topic " + w.dlq, append([]string{"replay", "--topic", w.dlq}, st...)},
		{"DESCRIBE on topic " + w.dlq, append([]string{"replay", "--topic", w.dlq, "--execute", "--yes", "--reason", "r"}, st...)},
		{"READ on topic " + w.topic, append([]string{"consume", "--topic", w.topic, "--group", group, "--handler", "audit", "--migrate", "--stop-when-idle", "2s"}, st...)},
	} {
		denied(t, as(t, p, nil, c.args...), c.want)
	}
	r := expect(t, p, 0, "dlq", "list", "--no-status", "-o", "json")
	if r.stdout != "[]\n" || !strings.Contains(r.stderr, "its ACLs may hide dead-letter topics") || !strings.Contains(r.stderr, "DESCRIBE") {
		t.Errorf("dlq list of no visible topic: want [] and a hint at ACLs\n%s", r)
	}
}

// committedOffsets sums the group's committed offsets on topic.
func committedOffsets(t *testing.T, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(testenv.Client(t)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, o := range offs[topic] {
		if o.At > 0 {
			n += o.At
		}
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDescribeOnlyPrincipal: a principal that may see the topics but not read them is told
// it lacks READ, by every command that reads records.
func TestDescribeOnlyPrincipal(t *testing.T) {
	w := cleanWorld(t)
	p := testenv.NewPrincipal(t, "describer")
	p.Allow(kadm.NewACLs().Topics(w.topic, w.dlq), kadm.OpDescribe)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"READ on topic " + w.topic, []string{"inspect", "record", w.topic + "/0/0"}},
		{"READ on topic " + w.topic, []string{"inspect", "validate", w.topic}},
		{"READ on topic " + w.topic, []string{"inspect", "aggregate", w.topic, "task-0001"}},
		{"READ on topic " + w.dlq, []string{"dlq", "list", "--topic", w.dlq, "--no-status"}},
		{"READ on topic " + w.dlq, []string{"dlq", "show", w.dlq + "/0/0", "--no-status"}},
		{"READ on topic " + w.dlq, []string{"dlq", "stats", "--topic", w.dlq, "--no-status"}},
		{"READ on topic " + w.dlq, []string{"replay", "--topic", w.dlq}},
	} {
		denied(t, as(t, p, nil, c.args...), c.want)
	}
	// inspect topic reads the newest records to tell their formats.
	denied(t, as(t, p, nil, "inspect", "topic", w.topic), "READ on topic "+w.topic)
}
