package dlq_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// dlqStore opens a migrated store in a schema of its own on the real PostgreSQL, dropped at
// cleanup.
func dlqStore(t *testing.T) (st *dedup.Store, dsn, schema string) {
	t.Helper()
	dsn, schema = testenv.DSN(t), testenv.PGSchema(t, "fwdlq_")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := dedup.Open(ctx, dsn, dedup.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	return st, dsn, schema
}

// statusesOf lists `dlq list` with the store and returns each dead letter's status by key.
func statusesOf(t *testing.T, env map[string]string, args ...string) map[string]string {
	t.Helper()
	r := roottest.Run(t, env, append([]string{"dlq", "list", "-o", "jsonl"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
	}
	out := map[string]string{}
	for _, e := range dlqEntries(t, r.Stdout) {
		s, _ := e["status"].(string)
		out[e["key"].(string)] = s
	}
	return out
}

func sameStatuses(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
	}
}

// TestDLQStatus follows dead letters through a replay and consume cycle against the real
// broker and PostgreSQL: pending; replayed once the replay journal records a send of one;
// resolved once the consumer has a marker for the event (Store.Claim in a transaction, as a
// consumer writes it).
func TestDLQStatus(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	st, dsn, schema := dlqStore(t)
	env["FIELDWORK_DSN"] = dsn
	topic := dlqTopic(t, 1, nil)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	dead := func(key, id, reason string, i int) *kgo.Record {
		orig := &kgo.Record{Topic: "tasks", Partition: 0, Offset: int64(100 + i), Timestamp: dlqBase, Key: []byte(key),
			Value: []byte(`{"specversion":"1.0","id":"` + id + `","type":"task.created","source":"/tasks"}`)}
		if id == "" {
			orig.Value = []byte(`{"specversion":"1.0","type":"task.created"}`)
		}
		return dlq.NewDeadLetter(orig, dlq.Meta{Topic: topic, Group: "projector", Handler: "projection", Reason: reason, Error: "boom", FailedAt: dlqBase.Add(time.Duration(i) * time.Second)})
	}
	testenv.Produce(t, cl,
		dead("a", "evt-a", dlq.ReasonRejected, 0),
		dead("b", "evt-b", dlq.ReasonRejected, 1),
		dead("noid", "", dlq.ReasonMalformed, 2),
		dead("c", "evt-c", dlq.ReasonExhausted, 3),
		&kgo.Record{Key: []byte("s"), Value: []byte(`{"event_id":"evt-s"}`), Timestamp: dlqBase.Add(4 * time.Second), Headers: dlqHeaders(
			dlq.SpringOriginalTopic, "orders", dlq.SpringOriginalConsumerGroup, "order-service", dlq.SpringExceptionFQCN, "java.lang.IllegalStateException")},
	)
	names := map[string]string{topic: "<topic>"}
	store := []string{"--topic", topic, "--schema", schema}

	sameStatuses(t, "before", statusesOf(t, env, store...), map[string]string{
		"a": "pending", "b": "pending", "noid": "unknown", "c": "pending", "s": "pending"})
	// Without a store there is no status.
	sameStatuses(t, "--no-status", statusesOf(t, env, append(store, "--no-status")...), map[string]string{
		"a": "", "b": "", "noid": "", "c": "", "s": ""})

	// A replay sends c back (offset 3 of the dead-letter topic); the journal records it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UTC()
	if err := st.CreateReplayRun(ctx, dedup.ReplayRun{ID: "run-1", Operator: "test", Reason: "fixed", Selection: "{}",
		Sources: []string{topic}, Target: "original", Status: dedup.RunRunning, Owner: "test"},
		[]dedup.ReplayCheckpoint{{Topic: topic, Partition: 0, Start: 3, End: 3, AckedThrough: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "run-1", Owner: "test", Status: dedup.RunCompleted,
		Counts: dedup.RunCounts{Selected: 1, Sent: 1}, Finished: true, Now: now,
		Checkpoints: []dedup.ReplayCheckpoint{{Topic: topic, Partition: 0, Start: 3, End: 3, AckedThrough: 3}},
		Sends: []dedup.ReplaySend{{SourceTopic: topic, SourcePartition: 0, SourceOffset: 3, EventID: "evt-c",
			TargetTopic: "tasks", TargetPartition: 0, TargetOffset: 204, At: now}},
	}); err != nil {
		t.Fatal(err)
	}
	sameStatuses(t, "replayed", statusesOf(t, env, store...), map[string]string{
		"a": "pending", "b": "pending", "noid": "unknown", "c": "replayed", "s": "pending"})
	dlqCheck(t, env, names, "list_status.txt", 0, append([]string{"dlq", "list", "-o", "table"}, store...)...)
	// stats tells the same statuses (the journal knows dead letters by their position).
	r0 := roottest.Run(t, env, append([]string{"dlq", "stats", "-o", "json"}, store...)...)
	var before struct {
		Topics []dlq.TopicSummary `json:"topics"`
	}
	if err := json.Unmarshal([]byte(r0.Stdout), &before); err != nil || len(before.Topics) != 1 || before.Topics[0].Statuses == nil ||
		*before.Topics[0].Statuses != (dlq.StatusCounts{Pending: 3, Replayed: 1, Unknown: 1}) {
		t.Errorf("stats after the replay: %v\n%s%s", err, r0.Stdout, r0.Stderr)
	}
	r := roottest.Run(t, env, "dlq", "show", topic+"/0/3", "-o", "table", "--schema", schema)
	if r.Code != 0 || !strings.Contains(r.Stdout, "replayed (replay run run-1 sent it to tasks/0/204 at ") {
		t.Errorf("show replayed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// The consumer processes a (a redelivery) and c (the replayed copy): both resolved.
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, "projector", []dedup.Marker{{EventID: "evt-a", Topic: "tasks"}, {EventID: "evt-c", Topic: "tasks", Partition: 0, Offset: 204}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sameStatuses(t, "after", statusesOf(t, env, store...), map[string]string{
		"a": "resolved", "b": "pending", "noid": "unknown", "c": "resolved", "s": "pending"})
	sameStatuses(t, "--status pending", statusesOf(t, env, append(store, "--status", "pending")...), map[string]string{
		"b": "pending", "s": "pending"})
	sameStatuses(t, "--status resolved,unknown", statusesOf(t, env, append(store, "--status", "resolved,unknown")...), map[string]string{
		"a": "resolved", "noid": "unknown", "c": "resolved"})
	// Another consumer has processed nothing; the Spring dead letter then counts for it too.
	sameStatuses(t, "--consumer billing", statusesOf(t, env, append(store, "--consumer", "billing")...), map[string]string{
		"a": "pending", "b": "pending", "noid": "unknown", "c": "replayed", "s": "pending"})
	sameStatuses(t, "--limit 1 --status pending", statusesOf(t, env, append(store, "--status", "pending", "--limit", "1")...), map[string]string{
		"b": "pending"})

	r = roottest.Run(t, env, "dlq", "show", topic+"/0/0", "-o", "json", "--schema", schema)
	var shown struct {
		Status       string         `json:"status"`
		StatusDetail dlq.StatusInfo `json:"status_detail"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &shown); err != nil || r.Code != 0 || shown.Status != "resolved" ||
		shown.StatusDetail.Consumer != "projector" || shown.StatusDetail.Marker == nil || shown.StatusDetail.Marker.EventID != "evt-a" {
		t.Errorf("show resolved: exit %d %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}

	r = roottest.Run(t, env, append([]string{"dlq", "stats", "-o", "json", "--group-by", "reason"}, store...)...)
	var rep struct {
		Topics []dlq.TopicSummary `json:"topics"`
		Groups []struct {
			Reason   string           `json:"reason"`
			Statuses dlq.StatusCounts `json:"status"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 {
		t.Fatalf("stats: exit %d %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	want := dlq.StatusCounts{Pending: 2, Resolved: 2, Unknown: 1}
	if len(rep.Topics) != 1 || rep.Topics[0].Statuses == nil || *rep.Topics[0].Statuses != want {
		t.Errorf("stats statuses: %+v", rep.Topics)
	}
	byReason := map[string]dlq.StatusCounts{}
	for _, g := range rep.Groups {
		byReason[g.Reason] = g.Statuses
	}
	if byReason[dlq.ReasonRejected] != (dlq.StatusCounts{Pending: 1, Resolved: 1}) || byReason[dlq.ReasonExhausted] != (dlq.StatusCounts{Pending: 1, Resolved: 1}) ||
		byReason[dlq.ReasonMalformed] != (dlq.StatusCounts{Unknown: 1}) || len(byReason) != 3 {
		t.Errorf("stats by reason: %+v", byReason)
	}
	dlqCheck(t, env, names, "stats_status.txt", 0, append([]string{"dlq", "stats", "-o", "table"}, store...)...)
}

// TestDLQReplayHint runs the dry-run command line `dlq show` prints, through the real replay
// command: it plans the dead letter back to its original topic.
func TestDLQReplayHint(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	source := dlqTopic(t, 2, nil)
	topic := dlqTopic(t, 1, nil)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	testenv.Produce(t, cl, dlq.NewDeadLetter(&kgo.Record{Topic: source, Partition: 1, Offset: 5, Key: []byte("k"), Value: []byte(`{"event_id":"e"}`)},
		dlq.Meta{Topic: topic, Group: "g", Reason: dlq.ReasonRejected, Error: "no"}))
	r := roottest.Run(t, env, "dlq", "show", topic+"/0/0", "-o", "json")
	var shown struct {
		Replay dlq.ReplayHint `json:"replay"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &shown); err != nil || r.Code != 0 {
		t.Fatalf("show: exit %d %v %s", r.Code, err, r.Stderr)
	}
	if shown.Replay.Target != source || shown.Replay.DryRun != "fieldwork replay "+topic+"/0/0" ||
		shown.Replay.Command != "fieldwork replay "+topic+`/0/0 --execute --reason "…"` {
		t.Fatalf("hint %+v", shown.Replay)
	}
	args := strings.Fields(shown.Replay.DryRun)[1:]
	r = roottest.Run(t, env, append(args, "-o", "json")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, source) {
		t.Errorf("%s: exit %d\n%s%s", shown.Replay.DryRun, r.Code, r.Stdout, r.Stderr)
	}
}
