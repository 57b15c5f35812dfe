package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// recovery is the world of a recovery test: a source topic of CloudEvents, its dead-letter
// topic (named .dlq, so that dlq commands find it), a webhook receiver that rejects (422)
// until told to accept, and the store.
type recovery struct {
	env    map[string]string
	schema string
	// notifier and auditor are the test's own consumer group names.
	notifier, auditor string
	cl                *kgo.Client
	src, dlq          string
	accept            atomic.Bool
	// reject, when set, rejects the bodies that contain it even when accepting.
	reject    atomic.Value
	delivered atomic.Int64
	url       string
}

func newRecovery(t *testing.T) *recovery {
	t.Helper()
	env, schema := replayEnv(t)
	w := &recovery{env: env, schema: schema, cl: testenv.Client(t), notifier: testenv.Name(t, "notifier"), auditor: testenv.Name(t, "auditor")}
	w.src = testenv.Topic(t, 3, nil)
	w.dlq = dlqTopicOf(t, 3)
	w.reject.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		if bad := w.reject.Load().(string); !w.accept.Load() || bad != "" && strings.Contains(body.String(), bad) {
			http.Error(rw, "rejected", http.StatusUnprocessableEntity) // permanent: dead-lettered at once
			return
		}
		w.delivered.Add(1)
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

// event is a CloudEvent of task-(i%4) at version v with data.
func (w *recovery) event(id string, i, v int, data string) *kgo.Record {
	return &kgo.Record{Topic: w.src, Key: fmt.Appendf(nil, "task-%d", i%4), Value: fmt.Appendf(nil,
		`{"specversion":"1.0","id":"%s","type":"task.created","source":"/tasks","aggregatetype":"task","aggregateid":"task-%d","aggregateversion":%d,"data":%s}`,
		id, i%4, v, data), Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
}

// consume runs `fieldwork consume` of group until idle and returns its summary.
func (w *recovery) consume(t *testing.T, group, handler string) map[string]any {
	t.Helper()
	args := []string{"consume", "--topic", w.src, "--group", group, "--handler", handler, "--dlq-topic", w.dlq, "--migrate",
		"--schema", w.schema, "--stop-when-idle", "3s", "--metrics-addr", "", "--log-level", "warn", "-o", "json"}
	if handler == "webhook" {
		args = append(args, "--webhook-url", w.url)
	}
	r := roottest.Run(t, w.env, args...)
	if r.Code != 0 {
		t.Fatalf("consume %s: exit %d\n%s\n%s", group, r.Code, r.Stdout, r.Stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatalf("consume summary %q: %v", r.Stdout, err)
	}
	return sum
}

// deadLetters lists the dead-letter topic (status for consumer, when given) as JSON objects.
func (w *recovery) deadLetters(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	r := roottest.Run(t, w.env, append([]string{"dlq", "list", "--topic", w.dlq, "--schema", w.schema, "-o", "jsonl", "--limit", "0"}, args...)...)
	if r.Code != 0 {
		t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("dlq list line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// replayedRecords reads topic whole and returns the records that carry fw.replay.id.
func replayedRecords(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	cl := testenv.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	want := sumOffsets(highWatermarks(t, topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	for n := int64(0); n < want; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d of %d records: %v", topic, n, want, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if header(r, dlq.ReplayHeaderID) != "" {
				out = append(out, r)
			}
		})
	}
	return out
}

func header(r *kgo.Record, key string) string { return testenv.Header(r, key) }

// dlqTopicOf creates a topic named as a dead-letter topic (.dlq), so that dlq commands find
// it, unique to the test.
func dlqTopicOf(t *testing.T, partitions int32) string {
	t.Helper()
	name := testenv.Name(t, "fw") + ".dlq"
	testenv.CreateTopic(t, name, partitions, nil)
	return name
}

// TestReplayForOneOfTwoGroups: a replay of dead letters that one group wrote is for that
// group by default (fw.replay.for): the group processes the events, and a second group
// reading the same topic skips the replayed records without a marker.
func TestReplayForOneOfTwoGroups(t *testing.T) {
	w := newRecovery(t)
	const n = 6
	for i := range n {
		testenv.Produce(t, w.cl, w.event(fmt.Sprintf("aim-%02d", i), i, i/4+1, `{"title":"t"}`))
	}
	w.consume(t, w.notifier, "webhook") // rejects: n dead letters of group notifier
	if got := len(w.deadLetters(t, "--consumer", w.notifier, "--status", "pending")); got != n {
		t.Fatalf("%d pending dead letters, want %d", got, n)
	}

	r := roottest.Run(t, w.env, "replay", "--topic", w.dlq, "--schema", w.schema, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"for_group": "`+w.notifier+`"`) || !strings.Contains(r.Stdout, `"for_group_default": true`) {
		t.Fatalf("plan: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "for consumer group "+w.notifier+" only") {
		t.Errorf("the plan does not say whom the records are for:\n%s", r.Stderr)
	}
	w.accept.Store(true)
	if r := roottest.Run(t, w.env, "replay", "--topic", w.dlq, "--schema", w.schema, "--execute", "--yes", "--reason", "receiver fixed"); r.Code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, rec := range replayedRecords(t, w.src) {
		if got := header(rec, dlq.ReplayHeaderFor); got != w.notifier {
			t.Fatalf("%s/%d/%d: fw.replay.for %q, want %s", rec.Topic, rec.Partition, rec.Offset, got, w.notifier)
		}
	}

	// A second group, new to the topic, reads the originals and the replayed copies.
	audit := w.consume(t, w.auditor, "audit")
	if audit["processed"] != float64(n) || audit["other_group"] != float64(n) || audit["duplicates"] != float64(0) {
		t.Fatalf("auditor: %v, want %d processed, %d for another group, no duplicates", audit, n, n)
	}
	notifier := w.consume(t, w.notifier, "webhook")
	if notifier["processed"] != float64(n) || notifier["other_group"] != float64(0) {
		t.Fatalf("notifier: %v, want the %d replayed events processed", notifier, n)
	}
	if d := w.delivered.Load(); d != n {
		t.Fatalf("the receiver got %d deliveries, want %d", d, n)
	}
	copies := map[[2]int64]bool{}
	for _, rec := range replayedRecords(t, w.src) {
		copies[[2]int64{int64(rec.Partition), rec.Offset}] = true
	}
	st := replayStore(t, w.schema)
	for _, consumer := range []string{w.notifier, w.auditor} {
		page, err := st.List(context.Background(), dedup.ListFilter{Consumer: consumer, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) != n {
			t.Fatalf("%s has %d markers, want %d", consumer, len(page.Rows), n)
		}
		for _, m := range page.Rows {
			// The notifier's markers come from the replayed copies, the auditor's from the originals.
			if copy := copies[[2]int64{int64(*m.Partition), *m.Offset}]; copy != (consumer == w.notifier) {
				t.Errorf("%s's marker of %s is from %s/%d/%d (a replayed copy: %v)", consumer, m.EventID, *m.Topic, *m.Partition, *m.Offset, copy)
			}
		}
	}
	if got := len(w.deadLetters(t, "--consumer", w.notifier, "--status", "resolved")); got != n {
		t.Fatalf("%d resolved dead letters for notifier, want %d", got, n)
	}
}

// TestReplayEditedResolvesTheOriginal: a dead letter whose value the handler rejects is fixed
// with --value-file and --set-header: the plan shows the diff, only the edited copy is sent
// (fw.replay.edited names the dead letter), and once the consumer processes it the original
// dead letter is resolved. An edit that changes the event id is refused.
func TestReplayEditedResolvesTheOriginal(t *testing.T) {
	w := newRecovery(t)
	w.accept.Store(true)
	w.reject.Store(`"due":"never"`)
	testenv.Produce(t, w.cl, w.event("edit-1", 1, 1, `{"title":"a","due":"never"}`), w.event("edit-2", 2, 1, `{"title":"b"}`))
	w.consume(t, w.notifier, "webhook")
	dls := w.deadLetters(t)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1: %v", len(dls), dls)
	}
	addr := fmt.Sprintf("%s/%v/%v", dls[0]["topic"], dls[0]["partition"], dls[0]["offset"])

	dir := t.TempDir()
	fixed := filepath.Join(dir, "fixed.json")
	value := `{"specversion":"1.0","id":"edit-1","type":"task.created","source":"/tasks","aggregatetype":"task","aggregateid":"task-1","aggregateversion":1,"data":{"title":"a","due":"2026-12-24"}}`
	if err := os.WriteFile(fixed, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	r := roottest.Run(t, w.env, "replay", addr, "--value-file", fixed, "--set-header", "fixed-by=oncall", "--schema", w.schema, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("plan: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var plan struct {
		Edit struct {
			Original, Diff string
			EventID        string `json:"event_id"`
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Edit.Original != addr || plan.Edit.EventID != "edit-1" || !strings.Contains(plan.Edit.Diff, `-    "due": "never"`) || !strings.Contains(plan.Edit.Diff, `+    "due": "2026-12-24"`) {
		t.Fatalf("the plan's edit: %+v", plan.Edit)
	}
	if got := sumOffsets(highWatermarks(t, w.src)); got != 2 {
		t.Fatalf("a dry run sent something: %s holds %d records", w.src, got)
	}

	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(strings.Replace(value, "edit-1", "edit-9", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := roottest.Run(t, w.env, "replay", addr, "--value-file", other, "--schema", w.schema, "--execute", "--yes", "--reason", "x"); r.Code != 2 || !strings.Contains(r.Stderr, "keeps its id") {
		t.Fatalf("an edit changing the event id: exit %d\n%s", r.Code, r.Stderr)
	}

	r = roottest.Run(t, w.env, "replay", addr, "--value-file", fixed, "--set-header", "fixed-by=oncall", "--schema", w.schema,
		"--execute", "--yes", "--reason", "due date fixed by hand", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sent := replayedRecords(t, w.src)
	if len(sent) != 1 {
		t.Fatalf("%d replayed records, want the edited copy alone", len(sent))
	}
	if c := sent[0]; string(c.Value) != value || header(c, dlq.ReplayHeaderEdited) != addr || header(c, "fixed-by") != "oncall" || header(c, dlq.ReplayHeaderSource) != addr {
		t.Fatalf("the edited copy: value %s, headers %v", c.Value, c.Headers)
	}
	if st := w.deadLetters(t, "--consumer", w.notifier); st[0]["status"] != "replayed" {
		t.Fatalf("status after the replay: %v", st[0]["status"])
	}
	w.consume(t, w.notifier, "webhook")
	if st := w.deadLetters(t, "--consumer", w.notifier); len(st) != 1 || st[0]["status"] != "resolved" {
		t.Fatalf("after the edited copy was processed: %v", st)
	}
	if d := w.delivered.Load(); d != 2 {
		t.Fatalf("the receiver got %d deliveries, want 2 (edit-2, then the edited edit-1)", d)
	}
	run := replayRuns(t, w)
	if len(run) != 1 || !strings.Contains(string(run[0].Selection), `"edit"`) || !strings.Contains(string(run[0].Selection), `"record":"`+addr+`"`) {
		t.Fatalf("the journal does not link the edit to %s: %+v", addr, run)
	}

	// A record that is no event at all has no event id: its dead letter's status is unknown
	// until an edit gives the copy one; then it follows the copy.
	testenv.Produce(t, w.cl, &kgo.Record{Topic: w.src, Key: []byte("task-3"), Value: []byte("not an event")})
	w.consume(t, w.notifier, "webhook")
	var bad map[string]any
	for _, d := range w.deadLetters(t, "--consumer", w.notifier) {
		if d["reason"] == "malformed" {
			bad = d
		}
	}
	if bad == nil || bad["status"] != "unknown" {
		t.Fatalf("the malformed dead letter: %v", bad)
	}
	badAddr := fmt.Sprintf("%s/%v/%v", bad["topic"], bad["partition"], bad["offset"])
	third := filepath.Join(dir, "third.json")
	if err := os.WriteFile(third, []byte(`{"specversion":"1.0","id":"edit-3","type":"task.created","source":"/tasks","aggregatetype":"task","aggregateid":"task-3","aggregateversion":1,"data":{"title":"c"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := roottest.Run(t, w.env, "replay", badAddr, "--value-file", third, "--for-group", w.notifier, "--schema", w.schema,
		"--execute", "--yes", "--reason", "rewritten by hand"); r.Code != 0 {
		t.Fatalf("replay of the malformed one: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	status := func() any {
		for _, d := range w.deadLetters(t, "--consumer", w.notifier) {
			if fmt.Sprintf("%s/%v/%v", d["topic"], d["partition"], d["offset"]) == badAddr {
				return d["status"]
			}
		}
		return nil
	}
	if st := status(); st != "replayed" {
		t.Fatalf("the malformed dead letter after its edited copy was sent: %v, want replayed", st)
	}
	w.consume(t, w.notifier, "webhook")
	if st := status(); st != "resolved" {
		t.Fatalf("the malformed dead letter after its edited copy was processed: %v, want resolved", st)
	}
}

func replayRuns(t *testing.T, w *recovery) []dedup.ReplayRun {
	t.Helper()
	runs, err := replayStore(t, w.schema).ReplayRuns(context.Background(), dedup.ReplayRunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestReplayFromAListingFile: the JSON Lines of dlq list, cut at --limit 3, are replayed
// exactly: the three dead letters they name and no other; a file of addresses and event ids
// the same.
func TestReplayFromAListingFile(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 2, nil), dlqTopicOf(t, 2)
	seedDeadLetters(t, cl, src, dlqTopic, 10, 0)

	r := roottest.Run(t, env, "dlq", "list", "--topic", dlqTopic, "--schema", schema, "--limit", "3", "-o", "jsonl")
	if r.Code != 0 {
		t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
	}
	file := filepath.Join(t.TempDir(), "triaged.jsonl")
	if err := os.WriteFile(file, []byte(r.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var e struct {
			Topic     string
			Partition int32
			Offset    int64
		}
		if err := json.Unmarshal([]byte(line), &e); err == nil && e.Topic != "" {
			want = append(want, fmt.Sprintf("%s/%d/%d", e.Topic, e.Partition, e.Offset))
		}
	}
	if len(want) != 3 {
		t.Fatalf("the listing names %v", want)
	}
	r = roottest.Run(t, env, "replay", "--from-file", file, "--schema", schema, "--execute", "--yes", "--reason", "ticket 42")
	if r.Code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "cut at its limit") {
		t.Errorf("no warning that the listing was cut:\n%s", r.Stderr)
	}
	got := replaySources(t, src)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("replayed %v, want exactly %v", got, want)
	}

	// Addresses and event ids, with comments: the event id selects its dead letter wherever it is.
	list := fmt.Sprintf("# triaged\n%s/1/%d\n\nevt-000007\n", dlqTopic, 0)
	if err := os.WriteFile(file, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	r = roottest.Run(t, env, "replay", "--from-file", file, "--topic", dlqTopic, "--schema", schema, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"selected": 2`) {
		t.Fatalf("plan of addresses and event ids: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if err := os.WriteFile(file, []byte(dlqTopic+"/0/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := roottest.Run(t, env, "replay", "--from-file", file); r.Code != 2 || !strings.Contains(r.Stderr, file+":1") {
		t.Fatalf("a bad address: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestFingerprintsGroupFailuresByCause: dead letters whose messages differ only in ids, numbers
// and quoted values are one fingerprint in dlq stats; dlq list --fingerprint and replay
// --fingerprint select that one group.
func TestFingerprintsGroupFailuresByCause(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 1, nil), dlqTopicOf(t, 1)
	messages := []string{
		`order 1001 rejected: customer "ann" has no card (request 7f3e9a2b-1c4d-4e5f-8a9b-0c1d2e3f4a5b)`,
		`order 2 rejected: customer "bo" has no card (request 00000000-0000-4000-8000-000000000001)`,
		`order 33 rejected: customer "cy" has no card (request 123e4567-e89b-12d3-a456-426614174000)`,
		`timeout after 30s talking to billing-7`,
	}
	for i, m := range messages {
		o := &kgo.Record{Topic: src, Key: []byte("k"), Value: fmt.Appendf(nil, `{"event_id":"fp-%d"}`, i)}
		testenv.Produce(t, cl, dlq.NewDeadLetter(o, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonRejected, ErrorClass: "http_422", Error: m, Group: "billing", EventID: fmt.Sprintf("fp-%d", i)}))
	}
	r := roottest.Run(t, env, "dlq", "stats", "--topic", dlqTopic, "--schema", schema, "--by", "fingerprint", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("dlq stats: exit %d\n%s", r.Code, r.Stderr)
	}
	var stats struct {
		Groups []struct {
			Fingerprint, Cause string
			Example            kafka.RecordAddress
			Topics             []string
			Count              int
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &stats); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if len(stats.Groups) != 2 || stats.Groups[0].Count != 3 || stats.Groups[1].Count != 1 ||
		stats.Groups[0].Cause != "http_422: order <n> rejected: customer <q> has no card (request <uuid>)" ||
		!slices.Equal(stats.Groups[0].Topics, []string{src}) || stats.Groups[0].Example.String() != dlqTopic+"/0/0" {
		t.Fatalf("groups %+v", stats.Groups)
	}
	fp := stats.Groups[0].Fingerprint
	if got := len(strings.Split(strings.TrimSpace(roottest.Run(t, env, "dlq", "list", "--topic", dlqTopic, "--schema", schema, "--fingerprint", fp, "-o", "jsonl").Stdout), "\n")); got != 3 {
		t.Fatalf("dlq list --fingerprint: %d lines, want 3", got)
	}
	r = roottest.Run(t, env, "replay", "--topic", dlqTopic, "--fingerprint", fp, "--schema", schema, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"selected": 3`) || !strings.Contains(r.Stdout, `"fingerprint": "`+fp+`"`) {
		t.Fatalf("replay --fingerprint: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := roottest.Run(t, env, "dlq", "list", "--topic", dlqTopic, "--fingerprint", "nope"); r.Code != 2 {
		t.Fatalf("a bad fingerprint: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestReplayGuards: dead letters older than their target's retention, and an aggregate whose
// consumer processed a newer version, are warned about; --strict refuses to execute and sends
// nothing; without it the replay goes on.
func TestReplayGuards(t *testing.T) {
	env, schema := replayEnv(t)
	cl := testenv.Client(t)
	hour := "3600000"
	target := testenv.Topic(t, 1, map[string]*string{"retention.ms": &hour})
	dlqTopic := testenv.Topic(t, 1, nil)
	old := time.Now().Add(-2 * time.Hour) // when the consumer gave up: older than the target's retention
	o := &kgo.Record{Topic: target, Key: []byte("task-1"), Timestamp: old, Value: []byte(
		`{"specversion":"1.0","id":"guard-1","type":"task.updated","source":"/t","aggregatetype":"task","aggregateid":"task-1","aggregateversion":3,"data":{}}`)}
	testenv.Produce(t, cl, dlq.NewDeadLetter(o, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonRejected, Error: "no", Group: "projection", EventID: "guard-1", FailedAt: old}))
	st := replayStore(t, schema)
	ctx := context.Background()
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, "projection", []dedup.Marker{{EventID: "guard-9", Topic: target, AggregateID: "task-1", AggregateVersion: 5}})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	r := roottest.Run(t, env, "replay", "--topic", dlqTopic, "--schema", schema, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stderr, "older than the replay horizon") || !strings.Contains(r.Stderr, "processed version 5") {
		t.Fatalf("plan: exit %d, no guard warnings\n%s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, `"past_horizon"`) || !strings.Contains(r.Stdout, `"newer_processed"`) {
		t.Fatalf("the plan's guards in JSON:\n%s", r.Stdout)
	}
	r = roottest.Run(t, env, "replay", "--topic", dlqTopic, "--schema", schema, "--strict", "--execute", "--yes", "--reason", "x")
	if r.Code != 3 || !strings.Contains(r.Stderr, "--strict") {
		t.Fatalf("--strict: exit %d\n%s", r.Code, r.Stderr)
	}
	if n := sumOffsets(highWatermarks(t, target)); n != 0 {
		t.Fatalf("--strict sent %d records", n)
	}
	r = roottest.Run(t, env, "replay", "--topic", dlqTopic, "--schema", schema, "--execute", "--yes", "--reason", "x")
	if r.Code != 0 || !strings.Contains(r.Stderr, "older than the replay horizon") {
		t.Fatalf("without --strict: exit %d\n%s", r.Code, r.Stderr)
	}
	if n := sumOffsets(highWatermarks(t, target)); n != 1 {
		t.Fatalf("sent %d records, want 1", n)
	}
}

// TestReplayStopOnRedeadletter: a consumer whose handler still rejects dead-letters the
// replayed records again; --stop-on-redeadletter 3 stops the run after three of them, marks
// it interrupted with the reason (resumable) and exits 3, before it sent everything.
func TestReplayStopOnRedeadletter(t *testing.T) {
	w := newRecovery(t)
	const n = 60
	for i := range n {
		testenv.Produce(t, w.cl, w.event(fmt.Sprintf("stop-%02d", i), i, i/4+1, `{"title":"t"}`))
	}
	bin := fieldworkBinary(t)
	environ := append(os.Environ(), "FIELDWORK_BROKERS="+w.env["FIELDWORK_BROKERS"], "FIELDWORK_DSN="+w.env["FIELDWORK_DSN"],
		"FIELDWORK_CONFIG="+filepath.Join(t.TempDir(), "absent.yaml"))
	consumer := exec.Command(bin, "consume", "--topic", w.src, "--group", w.notifier, "--handler", "webhook", "--webhook-url", w.url,
		"--dlq-topic", w.dlq, "--no-breaker", "--migrate", "--schema", w.schema, "--metrics-addr", "", "--log-level", "warn")
	consumer.Env = environ
	var cerr bytes.Buffer
	consumer.Stderr = &cerr
	if err := consumer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = consumer.Process.Kill(); _ = consumer.Wait() })
	defer func() {
		if t.Failed() {
			t.Logf("consumer stderr:\n%s", cerr.String())
		}
	}()
	testenv.WaitUntil(t, time.Minute, nil, fmt.Sprintf("the consumer dead-lettering the %d records", n), func() bool {
		return sumOffsets(highWatermarks(t, w.dlq)) >= n
	})

	r := roottest.Run(t, w.env, "replay", "--topic", w.dlq, "--schema", w.schema, "--execute", "--yes", "--reason", "try again",
		"--rate", "5", "--stop-on-redeadletter", "3", "-o", "json")
	if r.Code != 3 || !strings.Contains(r.Stderr, "dead-lettered again") {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var sum struct {
		RunID   string `json:"run_id"`
		Status  string
		Stopped bool
		Counts  struct{ Sent int }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if !sum.Stopped || sum.Status != dedup.RunInterrupted || sum.Counts.Sent >= n {
		t.Fatalf("summary %+v, want a run stopped before it sent %d", sum, n)
	}
	runs := replayRuns(t, w)
	if len(runs) != 1 || runs[0].Status != dedup.RunInterrupted || !strings.Contains(runs[0].Error, "stop-on-redeadletter") {
		t.Fatalf("journal %+v", runs)
	}
	if r := roottest.Run(t, w.env, "replay", "runs", "--schema", w.schema); !strings.Contains(r.Stdout, sum.RunID) {
		t.Fatalf("replay runs:\n%s", r.Stdout)
	}
}
