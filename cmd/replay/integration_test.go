package replay_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/redact"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// replayEnv is the environment of a replay test: the real broker and PostgreSQL, and a fresh
// schema (migrated, dropped at cleanup) whose name the commands get with --schema.
func replayEnv(t *testing.T) (env map[string]string, schema string) {
	t.Helper()
	dsn, schema := testenv.DSN(t), testenv.PGSchema(t, "fwrcli_")
	env = map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": dsn, "USER": "tester"}
	if r := roottest.Run(t, env, "db", "migrate", "--schema", schema); r.Code != 0 {
		t.Fatalf("db migrate: exit %d: %s", r.Code, r.Stderr)
	}
	return env, schema
}

func replayStore(t *testing.T, schema string) *dedup.Store {
	t.Helper()
	st, err := dedup.Open(context.Background(), testenv.DSN(t), dedup.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// seedDeadLetters writes n events to src and their fieldwork dead letters to dlqTopic; the
// first quarantined of them carry fw.replay.count 3 (replayed three times already).
func seedDeadLetters(t *testing.T, cl *kgo.Client, src, dlqTopic string, n, quarantined int) {
	t.Helper()
	origs := make([]*kgo.Record, n)
	for i := range origs {
		h := []kgo.RecordHeader{{Key: "ce_id", Value: fmt.Appendf(nil, "evt-%06d", i)}, {Key: "trace", Value: []byte{0xfe, byte(i)}}}
		if i < quarantined {
			h = append(h, kgo.RecordHeader{Key: dlq.ReplayHeaderCount, Value: []byte("3")})
		}
		origs[i] = &kgo.Record{Topic: src, Key: fmt.Appendf(nil, "agg-%d", i%13), Value: fmt.Appendf(nil, `{"i":%d}`, i), Headers: h}
	}
	testenv.Produce(t, cl, origs...)
	dls := make([]*kgo.Record, n)
	for i, o := range origs {
		dls[i] = dlq.NewDeadLetter(o, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonExhausted, Error: "db down", Group: "billing", EventID: string(o.Headers[0].Value)})
	}
	for start := 0; start < n; start += 5000 {
		testenv.Produce(t, cl, dls[start:min(start+5000, n)]...)
	}
}

func highWatermarks(t *testing.T, topics ...string) map[string]int64 {
	t.Helper()
	adm := kadm.NewClient(testenv.Client(t))
	ends, err := adm.ListEndOffsets(context.Background(), topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Offset })
	return out
}

// replaySources reads topic and returns the fw.replay.source of every record that has one.
func replaySources(t *testing.T, topic string) []string {
	t.Helper()
	cl := testenv.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	want := int64(0)
	for _, v := range highWatermarks(t, topic) {
		want += v
	}
	var out []string
	var n int64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d of %d records: %v", topic, n, want, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			for _, h := range r.Headers {
				if h.Key == dlq.ReplayHeaderSource {
					out = append(out, string(h.Value))
				}
			}
		})
	}
	return out
}

func TestReplayCLIBadInput(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	seedDeadLetters(t, cl, src, dlqTopic, 10, 0)
	// A Spring dead letter naming a topic that does not exist.
	dlt := testenv.Topic(t, 1, nil)
	gone := testenv.Name(t, "gone")
	testenv.Produce(t, cl, &kgo.Record{Topic: dlt, Value: []byte("{}"), Headers: []kgo.RecordHeader{
		{Key: dlq.SpringOriginalTopic, Value: []byte(gone)},
		{Key: dlq.SpringOriginalPartition, Value: binary.BigEndian.AppendUint32(nil, 0)},
		{Key: dlq.SpringOriginalOffset, Value: binary.BigEndian.AppendUint64(nil, 7)},
	}})
	// A Spring dead letter of partition 5 of src, which has one partition.
	dlt5 := testenv.Topic(t, 1, nil)
	testenv.Produce(t, cl, &kgo.Record{Topic: dlt5, Value: []byte("{}"), Headers: []kgo.RecordHeader{
		{Key: dlq.SpringOriginalTopic, Value: []byte(src)},
		{Key: dlq.SpringOriginalPartition, Value: binary.BigEndian.AppendUint32(nil, 5)},
		{Key: dlq.SpringOriginalOffset, Value: binary.BigEndian.AppendUint64(nil, 7)},
	}})
	before := highWatermarks(t, src, dlqTopic, dlt)

	cases := []struct {
		name string
		code int
		want string
		args []string
	}{
		{"inverted offsets", 2, "--end-offset 2 is before --start-offset 5", []string{"--topic", dlqTopic, "--start-offset", "5", "--end-offset", "2"}},
		{"end offset out of range", root.ExitNotFound, fmt.Sprintf("end offset 500 is outside %s/0, whose records are at offsets 0..9", dlqTopic), []string{"--topic", dlqTopic, "--start-offset", "0", "--end-offset", "500"}},
		{"record out of range", root.ExitNotFound, "whose records are at offsets 0..9", []string{dlqTopic + "/0/99"}},
		{"unknown partition", root.ExitNotFound, fmt.Sprintf("topic %s has no partition 7 (partitions 0..0)", dlqTopic), []string{"--topic", dlqTopic, "--partition", "7"}},
		{"unknown topic", root.ExitNotFound, `topic "` + gone + `" does not exist`, []string{"--topic", gone}},
		{"execute without reason", 2, "--execute needs --reason", []string{"--topic", dlqTopic, "--execute", "--yes"}},
		{"into the topic being read", 2, "refusing to write into " + dlqTopic, []string{"--topic", dlqTopic, "--to", dlqTopic}},
		{"not a dead letter", 2, src + "/0/0 is not a dead letter", []string{"--topic", src}},
		{"not a dead letter, executed", 2, src + "/0/0 is not a dead letter", []string{"--topic", src, "--execute", "--yes", "--reason", "x"}},
		{"target does not exist, dry run", root.ExitNotFound, "target does not exist: " + gone + " (1 records); nothing was sent", []string{"--topic", dlt}},
		{"target does not exist", root.ExitNotFound, "target does not exist: " + gone + " (where " + dlt + "/0/0 goes); nothing was sent", []string{"--topic", dlt, "--execute", "--yes", "--reason", "x"}},
		{"to a topic that does not exist", root.ExitNotFound, "target does not exist: " + gone + " (10 records)", []string{"--topic", dlqTopic, "--to", gone, "--execute", "--yes", "--reason", "x"}},
		{"original partition that does not exist, dry run", root.ExitNotFound, "target does not exist: " + src + " partition 5 (1 records)", []string{"--topic", dlt5, "--to-partition", "original"}},
		{"original partition that does not exist", root.ExitNotFound, "target does not exist: " + src + " partition 5 (where " + dlt5 + "/0/0 goes); nothing was sent", []string{"--topic", dlt5, "--to-partition", "original", "--execute", "--yes", "--reason", "x"}},
		{"no terminal, no --yes", 2, "without --yes", []string{"--topic", dlqTopic, "--execute", "--reason", "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := roottest.Run(t, env, append([]string{"replay", "--schema", schema}, tc.args...)...)
			if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) {
				t.Fatalf("exit %d, want %d; stderr %q, want it to contain %q", r.Code, tc.code, r.Stderr, tc.want)
			}
		})
	}
	if after := highWatermarks(t, src, dlqTopic, dlt); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("end offsets moved: %v → %v", before, after)
	}
	if runs, err := replayStore(t, schema).ReplayRuns(context.Background(), dedup.ReplayRunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("runs journaled by refused replays: %v %v", runs, err)
	}
}

func TestReplayCLIDryRunExecuteAndJournal(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 3, nil), testenv.Topic(t, 2, nil)
	seedDeadLetters(t, cl, src, dlqTopic, 50, 2)
	before := highWatermarks(t, src, dlqTopic)

	// A dry run sends nothing: every end offset is where it was.
	r := roottest.Run(t, env, "replay", "--schema", schema, "--topic", dlqTopic, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("dry run: exit %d: %s", r.Code, r.Stderr)
	}
	var plan struct {
		Counts struct {
			Read, Selected, ToSend, Quarantined int64
		}
		Targets []struct {
			Topic     string
			Partition int32
			Records   int64
		}
		Sample []json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, r.Stdout)
	}
	if plan.Counts.Read != 50 || plan.Counts.Selected != 50 || plan.Counts.Quarantined != 2 || len(plan.Sample) != 10 || len(plan.Targets) != 3 {
		t.Fatalf("plan: %+v", plan)
	}
	if !strings.Contains(r.Stderr, "2 records would be quarantined") || !strings.Contains(r.Stderr, "dry run: nothing was sent") {
		t.Fatalf("dry run stderr: %s", r.Stderr)
	}
	if after := highWatermarks(t, src, dlqTopic); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a dry run moved end offsets: %v → %v", before, after)
	}
	if runs, _ := replayStore(t, schema).ReplayRuns(context.Background(), dedup.ReplayRunFilter{}); len(runs) != 0 {
		t.Fatalf("a dry run was journaled: %+v", runs)
	}

	// Executed: 48 sent, 2 quarantined, exit 3.
	r = roottest.Run(t, env, "replay", "--schema", schema, "--topic", dlqTopic, "--execute", "--yes", "--reason", "db is back", "-o", "json")
	if r.Code != 3 || !strings.Contains(r.Stderr, "2 records quarantined") {
		t.Fatalf("execute: exit %d, want 3: %s", r.Code, r.Stderr)
	}
	var sum struct {
		RunID       string `json:"run_id"`
		Status      string
		Counts      dedup.RunCounts
		Quarantined []struct{ Source string }
		Targets     []dedup.TargetCount
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, r.Stdout)
	}
	if sum.Status != "completed" || sum.Counts != (dedup.RunCounts{Selected: 50, Sent: 48, Quarantined: 2}) || len(sum.Quarantined) != 2 {
		t.Fatalf("summary %+v", sum)
	}
	var perTarget int64
	for _, tc := range sum.Targets {
		perTarget += tc.Records
	}
	after := highWatermarks(t, src)
	var added int64
	for k, v := range after {
		added += v - before[k]
	}
	if perTarget != 48 || added != 48 {
		t.Fatalf("targets %+v (sum %d), %d records added to %s", sum.Targets, perTarget, added, src)
	}

	// The journal: runs and show.
	r = roottest.Run(t, env, "replay", "runs", "--schema", schema, "-o", "json")
	var runs []struct {
		ID                       string `json:"run_id"`
		Status, Operator, Reason string
		Selection                map[string]any
		Sent                     int64
	}
	if err := json.Unmarshal([]byte(r.Stdout), &runs); err != nil || r.Code != 0 {
		t.Fatalf("runs: %v %d\n%s", err, r.Code, r.Stdout)
	}
	if len(runs) != 1 || runs[0].ID != sum.RunID || runs[0].Status != "completed" || runs[0].Operator != "tester" ||
		runs[0].Reason != "db is back" || runs[0].Selection["topic"] != dlqTopic || runs[0].Sent != 48 {
		t.Fatalf("runs: %+v", runs)
	}
	r = roottest.Run(t, env, "replay", "show", sum.RunID, "--schema", schema, "-o", "json")
	var show struct {
		Checkpoints []dedup.ReplayCheckpoint
		Targets     []dedup.TargetCount
	}
	if err := json.Unmarshal([]byte(r.Stdout), &show); err != nil || r.Code != 0 {
		t.Fatalf("show: %v %d\n%s", err, r.Code, r.Stdout)
	}
	if len(show.Checkpoints) != 2 || show.Checkpoints[0].AckedThrough != show.Checkpoints[0].End || len(show.Targets) != len(sum.Targets) {
		t.Fatalf("show: %+v", show)
	}
	r = roottest.Run(t, env, "replay", "show", sum.RunID, "--schema", schema, "-o", "table")
	for _, want := range []string{"Replay run " + sum.RunID, "Checkpoints", "acked through", "Sent, per target"} {
		if !strings.Contains(strings.ToLower(r.Stdout), strings.ToLower(want)) {
			t.Fatalf("show table lacks %q:\n%s", want, r.Stdout)
		}
	}
	if r = roottest.Run(t, env, "replay", "show", "no-such-run", "--schema", schema); r.Code != root.ExitNotFound || !strings.Contains(r.Stderr, `no replay run "no-such-run"`) {
		t.Fatalf("show of an unknown run: exit %d %s", r.Code, r.Stderr)
	}
	if r = roottest.Run(t, env, "replay", "resume", sum.RunID, "--schema", schema, "--execute", "--yes"); r.Code != 0 || !strings.Contains(r.Stderr, "nothing to resume") {
		t.Fatalf("resume of a completed run: exit %d %s", r.Code, r.Stderr)
	}

	// Each dead letter reached the target once.
	sources := replaySources(t, src)
	slices.Sort(sources)
	if len(sources) != 48 || len(slices.Compact(sources)) != 48 {
		t.Fatalf("%d replayed records in %s", len(sources), src)
	}
}

// TestReplayCLIKillAndResume runs the binary on 20,000 dead letters at --rate 2000, SIGKILLs
// it mid-run, and resumes the run: every record reaches the target at least once, and the
// records sent twice (a fw.replay.source seen more than once) are at most the run's duplicate
// window, the records handed to the producer without reaching the journal.
func TestReplayCLIKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and replays 20,000 records")
	}
	const n = 20_000
	child := startReplayChild(t, 3, n, "2000")
	src, dlqTopic, st := child.src, child.dlqTopic, child.st
	// Kill it once the journal shows a third of the records sent.
	run := child.waitSent(t, n/3)
	if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.cmd.Wait() // reaps it: its pid no longer exists, so resume may take the run over
	killed, _, err := st.ReplayRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if killed.Status != dedup.RunRunning || killed.Sent >= n {
		t.Fatalf("after SIGKILL the journal says %+v", killed)
	}
	beforeResume := len(replaySources(t, src))

	out := child.resume(t, run.ID)
	var sum struct {
		Status          string
		Resumed         bool
		Counts          dedup.RunCounts
		DuplicateWindow int64 `json:"duplicate_window"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("resume summary: %v\n%s", err, out)
	}
	if sum.Status != "completed" || !sum.Resumed || sum.Counts != (dedup.RunCounts{Selected: n, Sent: n}) {
		t.Fatalf("resume summary %+v", sum)
	}

	all := replaySources(t, src)
	seen := map[string]int{}
	for _, s := range all {
		seen[s]++
	}
	for p := range 3 {
		for o := range int64(n) {
			delete(seen, fmt.Sprintf("%s/%d/%d", dlqTopic, p, o))
		}
	}
	if len(seen) != 0 {
		t.Fatalf("records from unexpected sources: %v", seen)
	}
	distinct := map[string]bool{}
	for _, s := range all {
		distinct[s] = true
	}
	if len(distinct) != n {
		t.Fatalf("%d distinct records reached %s, want all %d", len(distinct), src, n)
	}
	dups := len(all) - n
	t.Logf("SIGKILL after %d records journaled as sent (%d in the target); resumed: %d records re-sent after the kill (duplicate fw.replay.source); window %d = producer buffer %d + journal batch %d",
		killed.Sent, beforeResume, dups, sum.DuplicateWindow, replay.DefaultMaxBuffered, replay.DefaultFlushRecords)
	fmt.Printf("replay kill/resume: re-sent after SIGKILL %d, duplicate window %d (max buffered records %d + journal batch %d)\n",
		dups, sum.DuplicateWindow, replay.DefaultMaxBuffered, replay.DefaultFlushRecords)
	if want := int64(replay.DefaultMaxBuffered + replay.DefaultFlushRecords); sum.DuplicateWindow != want {
		t.Fatalf("duplicate window %d, want %d", sum.DuplicateWindow, want)
	}
	if int64(dups) > sum.DuplicateWindow {
		t.Fatalf("%d records re-sent after the kill, more than the window %d", dups, sum.DuplicateWindow)
	}
}

// TestReplayThroughTheDevStack replays tasks.dlq of `fieldwork dev` (kfake and SQLite) back
// into tasks the same way as on a real cluster: plan, execute, journal, loop guard counters.
func TestReplayThroughTheDevStack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	addr, _, _, done := roottest.StartDev(t, ctx, "--dead-letters", "--dsn", dsn)
	env := map[string]string{"FIELDWORK_BROKERS": addr, "FIELDWORK_DSN": dsn, "USER": "dev"}
	before := devEnds(t, addr)

	r := roottest.Run(t, env, "replay", "--topic", "tasks.dlq", "-o", "jsonl")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"to_send":3`) {
		t.Fatalf("dev dry run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = roottest.Run(t, env, "replay", "--topic", "tasks.dlq", "--execute", "--yes", "--reason", "dev", "-o", "jsonl")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"status":"completed"`) || !strings.Contains(r.Stdout, `"sent":3`) {
		t.Fatalf("dev replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	after := devEnds(t, addr)
	if after["tasks"]-before["tasks"] != 3 || after["tasks.dlq"] != before["tasks.dlq"] {
		t.Fatalf("end offsets %v → %v", before, after)
	}
	r = roottest.Run(t, env, "replay", "runs", "-o", "jsonl")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"operator":"dev"`) {
		t.Fatalf("dev runs: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	cancel()
	<-done
}

func devEnds(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "tasks", "tasks.dlq")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Topic] += o.Offset })
	return out
}

// TestReplayCycleThroughTheConsumer is the recovery loop end to end on the real broker and
// PostgreSQL: `fieldwork consume` dead-letters events its webhook rejects; dlq list says
// pending; the receiver is fixed; `replay --execute` sends the dead letters back; dlq list
// says replayed; the consumer handles them; dlq list says resolved.
func TestReplayCycleThroughTheConsumer(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	tasks := testenv.Topic(t, 3, nil)
	tasksDLQ := testenv.Name(t, "fw") + ".dlq"
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(context.Background(), 3, 1, nil, tasksDLQ); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", tasksDLQ, err, resp.Err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), tasksDLQ) })

	var accept atomic.Bool
	var delivered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accept.Load() {
			http.Error(w, "schema v2 not supported yet", http.StatusUnprocessableEntity) // permanent: dead-lettered at once
			return
		}
		delivered.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	const n = 12
	recs := make([]*kgo.Record, n)
	for i := range recs {
		id := fmt.Sprintf("cycle-%02d", i)
		recs[i] = &kgo.Record{Topic: tasks, Key: fmt.Appendf(nil, "task-%d", i%4), Value: fmt.Appendf(nil,
			`{"specversion":"1.0","id":"%s","type":"task.created","source":"/tasks","time":"2025-01-02T03:04:05Z","aggregatetype":"task","aggregateid":"task-%d","aggregateversion":%d,"data":{"title":"t%d"}}`,
			id, i%4, i/4+1, i), Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
	}
	testenv.Produce(t, cl, recs...)

	consume := func() {
		t.Helper()
		r := roottest.Run(t, env, "consume", "--topic", tasks, "--group", "notifier", "--handler", "webhook", "--webhook-url", srv.URL,
			"--dlq-topic", tasksDLQ, "--migrate", "--schema", schema, "--stop-when-idle", "3s", "--metrics-addr", "", "--log-level", "warn")
		if r.Code != 0 {
			t.Fatalf("consume: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
	}
	statuses := func() map[string]int {
		t.Helper()
		r := roottest.Run(t, env, "dlq", "list", "--topic", tasksDLQ, "--schema", schema, "--consumer", "notifier", "-o", "jsonl")
		if r.Code != 0 {
			t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
		}
		out := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			var e struct{ Status string }
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("dlq list line %q: %v", line, err)
			}
			out[e.Status]++
		}
		return out
	}

	consume()
	if got := statuses(); got["pending"] != n || len(got) != 1 {
		t.Fatalf("after the rejecting consume: %v, want %d pending", got, n)
	}
	accept.Store(true)
	r := roottest.Run(t, env, "replay", "--topic", tasksDLQ, "--schema", schema, "--execute", "--yes", "--reason", "receiver accepts v2", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf(`"sent": %d`, n)) {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := statuses(); got["replayed"] != n || len(got) != 1 {
		t.Fatalf("after the replay: %v, want %d replayed", got, n)
	}
	consume()
	if got := statuses(); got["resolved"] != n || len(got) != 1 {
		t.Fatalf("after consuming the replayed events: %v, want %d resolved", got, n)
	}
	if d := delivered.Load(); d != n {
		t.Fatalf("the receiver got %d deliveries, want %d", d, n)
	}
	// The dead-letter topic did not grow: nothing failed again.
	if ends := highWatermarks(t, tasksDLQ); sumOffsets(ends) != n {
		t.Fatalf("%s holds %d records, want %d", tasksDLQ, sumOffsets(ends), n)
	}
}

func sumOffsets(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// fieldworkBinary builds the fieldwork binary once per test run.
func fieldworkBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fieldwork-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "fieldwork")
		if out, err := exec.Command("go", "build", "-o", binPath, "../..").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// replayChild is `fieldwork replay --execute` running as a child process on dead letters of
// its own, seeded in dlqTopic from src, and the journal it writes.
type replayChild struct {
	cmd           *exec.Cmd
	out, errOut   bytes.Buffer
	environ       []string
	bin, schema   string
	src, dlqTopic string
	st            *dedup.Store
}

// startReplayChild seeds n dead letters in topics of the given partitions and starts the
// binary replaying them at rate records per second.
func startReplayChild(t *testing.T, partitions int32, n int, rate string) *replayChild {
	t.Helper()
	env, schema := replayEnv(t)
	c := &replayChild{bin: fieldworkBinary(t), schema: schema}
	c.src, c.dlqTopic = testenv.Topic(t, partitions, nil), testenv.Topic(t, partitions, nil)
	seedDeadLetters(t, testenv.Client(t), c.src, c.dlqTopic, n, 0)
	c.environ = append(os.Environ(), "FIELDWORK_BROKERS="+env["FIELDWORK_BROKERS"], "FIELDWORK_DSN="+env["FIELDWORK_DSN"],
		"FIELDWORK_CONFIG="+filepath.Join(t.TempDir(), "absent.yaml"))
	c.cmd = exec.Command(c.bin, "replay", "--schema", schema, "--topic", c.dlqTopic, "--execute", "--yes", "--reason", "x", "--rate", rate, "-o", "json")
	c.cmd.Env = c.environ
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.st = replayStore(t, schema)
	return c
}

// waitSent waits, for a minute at most, until the journal's one run has sent at least sent
// records, and returns the run.
func (c *replayChild) waitSent(t *testing.T, sent int64) dedup.ReplayRun {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		runs, err := c.st.ReplayRuns(context.Background(), dedup.ReplayRunFilter{})
		if err == nil && len(runs) == 1 && runs[0].Sent >= sent {
			return runs[0]
		}
		if time.Now().After(deadline) {
			_ = c.cmd.Process.Kill()
			t.Fatalf("the run did not get going: %v %+v\n%s", err, runs, c.errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resume runs `fieldwork replay resume RUN --execute --yes` to its end and returns its stdout.
func (c *replayChild) resume(t *testing.T, runID string) []byte {
	t.Helper()
	resume := exec.Command(c.bin, "replay", "resume", runID, "--schema", c.schema, "--execute", "--yes", "-o", "json")
	resume.Env = c.environ
	var out, errOut bytes.Buffer
	resume.Stdout, resume.Stderr = &out, &errOut
	if err := resume.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, errOut.String())
	}
	return out.Bytes()
}

// TestReplayCLISIGINTMarksInterrupted stops a running replay with SIGINT: it exits 130, the
// journal says interrupted with every acknowledged record behind its checkpoints, and the
// resume sends the rest without sending anything twice.
func TestReplayCLISIGINTMarksInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const n = 4000
	child := startReplayChild(t, 2, n, "1000")
	src, st := child.src, child.st
	child.waitSent(t, 1000)
	if err := child.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := child.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v, want exit 130\n%s", err, child.errOut.String())
	}
	if !strings.Contains(child.errOut.String(), "fieldwork replay resume") {
		t.Fatalf("no resume hint:\n%s", child.errOut.String())
	}
	runs, _ := st.ReplayRuns(context.Background(), dedup.ReplayRunFilter{})
	run, cps, err := st.ReplayRun(context.Background(), runs[0].ID)
	if err != nil || run.Status != dedup.RunInterrupted || run.Sent >= n || run.FinishedAt == nil {
		t.Fatalf("journal after SIGINT: %+v %v", run, err)
	}
	var behind int64
	for _, c := range cps {
		behind += c.AckedThrough - c.Start + 1
	}
	if inTarget := int64(len(replaySources(t, src))); inTarget != run.Sent || behind != run.Sent {
		t.Fatalf("interrupted: %d in the target, journal says %d sent, checkpoints cover %d", inTarget, run.Sent, behind)
	}
	child.resume(t, run.ID)
	sources := replaySources(t, src)
	distinct := map[string]bool{}
	for _, s := range sources {
		distinct[s] = true
	}
	if len(sources) != n || len(distinct) != n {
		t.Fatalf("after the resume: %d records, %d distinct, want %d of each", len(sources), len(distinct), n)
	}
}

// TestReplayCLIConfirmOnATerminal: on a terminal an executed replay shows the plan it asks
// about (the selection, every filter, the counts and targets, the warnings) before the
// question; no sends nothing and records nothing, yes sends.
func TestReplayCLIConfirmOnATerminal(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	seedDeadLetters(t, cl, src, dlqTopic, 10, 0)
	terminal := func(answer string) (code int, stderr string) {
		return roottest.RunOnTerminal(t, env, answer, "replay", "--schema", schema, "--topic", dlqTopic, "--dlq-reason", "exhausted", "--group", "billing",
			"--execute", "--reason", "db is back", "-o", "json")
	}

	code, stderr := terminal("n\n")
	for _, want := range []string{"Replay plan\n", "Selection\n", "source  ", "--dlq-reason  exhausted\n", "--group       billing\n",
		"to send      10\n", "Targets\n", "  context  none (flags and environment)\n", "  cluster  " + env["FIELDWORK_BROKERS"] + "\n",
		"  store    " + redact.DSN(env["FIELDWORK_DSN"]) + " \"" + schema + "\".\"processed_events\"\n",
		fmt.Sprintf("  plan     10 to %s\n", src), "  reason   db is back\n",
		fmt.Sprintf("Send 10 records from %s (10 to %s)? [y/N] ", dlqTopic, src), "cancelled: nothing was changed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("answered no: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 6 || strings.Contains(stderr, "Sample") {
		t.Fatalf("answered no: exit %d:\n%s", code, stderr)
	}
	if runs, err := replayStore(t, schema).ReplayRuns(t.Context(), dedup.ReplayRunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("runs after a no: %+v %v", runs, err)
	}
	if code, stderr = terminal("y\n"); code != 0 {
		t.Fatalf("answered yes: exit %d:\n%s", code, stderr)
	}
	if got := replaySources(t, src); len(got) != 10 {
		t.Fatalf("%d records replayed, want 10", len(got))
	}
}

// TestReplayCLIPlanPrintsItsFilters: a dry run prints what it selects and every filter it
// applies, in JSON (selection, filters) and in the table (a Selection section, each filter as
// its flag); the executed run journals them, and replay show prints them the same way.
func TestReplayCLIPlanPrintsItsFilters(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	seedDeadLetters(t, cl, src, dlqTopic, 10, 0)
	args := []string{"replay", "--schema", schema, "--topic", dlqTopic, "--partition", "0", "--start-offset", "0", "--end-offset", "8",
		"--dlq-reason", "exhausted", "--error", "db", "--original-topic", src, "--group", "billing", "--key", "agg-1", "--event-id", "evt-000001"}

	r := roottest.Run(t, env, append(args, "-o", "json")...)
	var plan struct {
		Selection map[string]any
		Filters   map[string]any
		Counts    struct{ Read, Selected int64 }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil || r.Code != 0 {
		t.Fatalf("dry run: exit %d %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	wantFilters := map[string]any{"dlq_reason": []any{"exhausted"}, "error": "db", "original_topic": src, "group": "billing", "key": "agg-1", "event_id": "evt-000001"}
	wantSelection := map[string]any{"topic": dlqTopic, "partitions": []any{0.0}, "start_offset": 0.0, "last_offset": 8.0}
	if fmt.Sprint(plan.Filters) != fmt.Sprint(wantFilters) || fmt.Sprint(plan.Selection) != fmt.Sprint(wantSelection) || plan.Counts.Read != 9 || plan.Counts.Selected != 1 {
		t.Fatalf("plan selection %v filters %v counts %+v", plan.Selection, plan.Filters, plan.Counts)
	}

	// The table's fields, each a line "NAME  VALUE" aligned on the widest name.
	lines := func(what, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			name, value, _ := strings.Cut(w, " ")
			re := `(?m)^` + regexp.QuoteMeta(name) + `$` // a section's title
			if value != "" {
				re = `(?m)^` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(value) + `$`
			}
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%s lacks the line %q:\n%s", what, w, out)
			}
		}
	}
	selection := []string{"Selection", "partitions 0", "offsets 0..8", "--dlq-reason exhausted", "--error db", "--original-topic " + src,
		"--group billing", "--key agg-1", "--event-id evt-000001"}
	r = roottest.Run(t, env, append(args, "-o", "table")...)
	lines("the dry-run table", r.Stdout, selection...)

	// No filter at all says so.
	r = roottest.Run(t, env, "replay", "--schema", schema, "--topic", dlqTopic, "-o", "table")
	lines("a plan without filters", r.Stdout, "filters none", "offsets all", "partitions all")

	r = roottest.Run(t, env, append(args, "--execute", "--yes", "--reason", "one event", "-o", "json")...)
	var sum struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || r.Code != 0 {
		t.Fatalf("execute: exit %d %v\n%s", r.Code, err, r.Stderr)
	}
	r = roottest.Run(t, env, "replay", "show", sum.RunID, "--schema", schema, "-o", "table")
	lines("replay show", r.Stdout, selection...)
}
