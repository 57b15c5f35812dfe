package dlq_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestDLQConsumeReplayCycle follows dead letters written by `fieldwork consume` itself through
// a fix, a `fieldwork replay` and a second consume, against the real broker and PostgreSQL:
// listed with the right original coordinates and error; pending; replayed once the journal
// has the send; resolved once the consumer has processed the replayed copy.
func TestDLQConsumeReplayCycle(t *testing.T) {
	env := cmdtest.BrokerEnv(t)
	_, dsn, schema := dlqStore(t)
	env["FIELDWORK_DSN"] = dsn
	source := inspecttest.Name("cyc")
	dead := source + dlq.DefaultTopicSuffix
	dlqNamedTopic(t, source, 1, nil)
	dlqNamedTopic(t, dead, 1, nil)

	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "no such customer", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	cl := testenv.Client(t, kgo.DefaultProduceTopic(source))
	ev := func(id, agg string) *kgo.Record {
		return &kgo.Record{Key: []byte(agg), Headers: dlqHeaders("content-type", "application/cloudevents+json"),
			Value: []byte(`{"specversion":"1.0","id":"` + id + `","type":"task.created","source":"/tasks","aggregateid":"` + agg + `","aggregateversion":1,"data":{}}`)}
	}
	testenv.Produce(t, cl, ev("evt-1", "task-1"), ev("evt-2", "task-2"), &kgo.Record{Key: []byte("task-3"), Value: []byte(`{"specversion":"1.0",`)})

	consume := func() {
		t.Helper()
		r := roottest.Run(t, env, "consume", "--topic", source, "--group", "billing", "--handler", "webhook", "--webhook-url", srv.URL,
			"--schema", schema, "--migrate", "--stop-when-idle", "3s", "--metrics-addr", "", "--log-format", "json")
		if r.Code != 0 {
			t.Fatalf("consume: exit %d\n%s", r.Code, r.Stderr)
		}
	}
	list := func() []dlq.DeadLetter {
		t.Helper()
		r := roottest.Run(t, env, "dlq", "list", "--topic", dead, "--schema", schema, "-o", "jsonl")
		if r.Code != 0 {
			t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
		}
		var out []dlq.DeadLetter
		for _, e := range dlqEntries(t, r.Stdout) {
			var d dlq.DeadLetter
			b, _ := json.Marshal(e)
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
		return out
	}
	statuses := func() []string {
		t.Helper()
		r := roottest.Run(t, env, "dlq", "list", "--topic", dead, "--schema", schema, "-o", "jsonl")
		var out []string
		for _, e := range dlqEntries(t, r.Stdout) {
			out = append(out, e["event_id"].(string)+"="+e["status"].(string))
		}
		return out
	}

	consume()
	ds := list()
	if len(ds) != 3 {
		t.Fatalf("%d dead letters, want 3: %+v", len(ds), ds)
	}
	byOffset := map[int64]dlq.DeadLetter{}
	for _, d := range ds {
		if d.Convention != dlq.ConventionFieldwork || d.OriginalTopic != source || d.OriginalPartition == nil || *d.OriginalPartition != 0 ||
			d.OriginalOffset == nil || d.Group != "billing" || d.Handler != "webhook" {
			t.Errorf("dead letter %+v", d)
			continue
		}
		byOffset[*d.OriginalOffset] = d
	}
	for off, want := range map[int64]struct{ id, reason, msg string }{
		0: {"evt-1", dlq.ReasonRejected, "400 Bad Request"},
		1: {"evt-2", dlq.ReasonRejected, "400 Bad Request"},
		2: {"", dlq.ReasonMalformed, "invalid JSON"},
	} {
		d := byOffset[off]
		if d.EventID != want.id || d.Reason != want.reason || !strings.Contains(d.ErrorMessage, want.msg) {
			t.Errorf("offset %d: %q %q %q, want %q %q ~%q", off, d.EventID, d.Reason, d.ErrorMessage, want.id, want.reason, want.msg)
		}
	}
	if got := strings.Join(statuses(), " "); !sameSet(got, "evt-1=pending evt-2=pending =unknown") {
		t.Errorf("after the first consume: %s", got)
	}

	// The provider is fixed; evt-1's dead letter is replayed.
	failing.Store(false)
	var addr string
	for _, d := range ds {
		if d.EventID == "evt-1" {
			addr = d.Address().String()
		}
	}
	r := roottest.Run(t, env, "replay", addr, "--execute", "--yes", "--reason", "provider fixed", "--schema", schema)
	if r.Code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := strings.Join(statuses(), " "); !sameSet(got, "evt-1=replayed evt-2=pending =unknown") {
		t.Errorf("after the replay: %s", got)
	}

	// The consumer handles the replayed copy: resolved.
	consume()
	if got := strings.Join(statuses(), " "); !sameSet(got, "evt-1=resolved evt-2=pending =unknown") {
		t.Errorf("after the second consume: %s", got)
	}
	r = roottest.Run(t, env, "dlq", "stats", "--topic", dead, "--schema", schema, "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"status": {
        "pending": 1,
        "replayed": 0,
        "resolved": 1,
        "stale": 0,
        "unknown": 1
      }`) {
		t.Errorf("stats: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// sameSet reports whether two space-separated lists hold the same words.
func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, w := range x {
		seen[w]++
	}
	for _, w := range y {
		if seen[w]--; seen[w] < 0 {
			return false
		}
	}
	return true
}
