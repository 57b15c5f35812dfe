package consumer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestWebhookRetriesWithOneKey: a receiver that answers 503 twice and then 200 is called
// three times with the same Idempotency-Key, and the delivery is recorded once; a 422 is
// permanent (dead-lettered at once, not retried), its dead letter classed http_422 and quoting
// the start of the response body, on one line, bounded and without the URL's token.
func TestWebhookRetriesWithOneKey(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string][]string{} // event id → Idempotency-Key of each call
	const token = "s3cr3t-t0ken"
	refusal := `{"error": "title too long",` + "\n" + `"echo": "` + token + `", "detail": "` + strings.Repeat("é", 400) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID string `json:"event_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		calls[ev.ID] = append(calls[ev.ID], r.Header.Get(handlers.HeaderIdempotencyKey))
		n := len(calls[ev.ID])
		mu.Unlock()
		switch {
		case ev.ID == "ev-refused":
			http.Error(w, refusal, http.StatusUnprocessableEntity)
		case n <= 2:
			http.Error(w, "try later", http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()

	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	ids := []string{"ev-a", "ev-refused", "ev-b"}
	cl := producer(t)
	for i, id := range ids {
		testenv.Produce(t, cl, ceRecord(topic, "task-0001", ceValue(t, id, sample.TypeCreated, "task-0001", i+1)))
	}
	const group = "notifier"
	h := handler(t, st, schema, handlers.NameWebhook, group, handlers.Config{WebhookURL: srv.URL + "/hook?token=" + token})
	stats := run(t, engineOpts(t, st, h, topic, group))
	if stats.Processed != 2 || stats.DeadLettered != 1 || stats.Retried != 4 {
		t.Errorf("stats %+v; want 2 processed, 1 dead-lettered, 4 retries", stats)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"ev-a", "ev-b"} {
		want := consumer.IdempotencyKey(group, id)
		if len(calls[id]) != 3 {
			t.Errorf("%s: %d calls, want 3", id, len(calls[id]))
		}
		for i, k := range calls[id] {
			if k != want {
				t.Errorf("%s call %d: Idempotency-Key %q, want %q", id, i+1, k, want)
			}
		}
	}
	if len(calls["ev-refused"]) != 1 {
		t.Errorf("ev-refused: %d calls, want 1 (a 422 is permanent)", len(calls["ev-refused"]))
	}

	table := tableName(t, st, schema, handlers.TableWebhookDeliveries)
	type delivery struct {
		key                          string
		status, attempts, deliveries int
	}
	for _, id := range []string{"ev-a", "ev-b"} {
		var d delivery
		err := st.InTx(t.Context(), func(tx *dedup.Tx) error {
			return tx.QueryRow(t.Context(), `SELECT idempotency_key, status_code, attempts, deliveries FROM `+table+` WHERE consumer = $1 AND event_id = $2`,
				group, id).Scan(&d.key, &d.status, &d.attempts, &d.deliveries)
		})
		if err != nil || d != (delivery{consumer.IdempotencyKey(group, id), 202, 3, 1}) {
			t.Errorf("%s: delivery %+v (%v); want recorded once, status 202 after 3 attempts", id, d, err)
		}
	}
	if n := queryInt(t, st, `SELECT count(*) FROM `+table); n != 2 {
		t.Errorf("%d delivery rows, want 2", n)
	}
	dls := readAll(t, dlqTopic)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	reason, _ := header(dls[0], dlq.HeaderReason)
	msg, _ := header(dls[0], dlq.HeaderError)
	class, _ := header(dls[0], dlq.HeaderErrorClass)
	wantStart := fmt.Sprintf(`POST %s/hook?token=REDACTED: 422 Unprocessable Entity: {"error": "title too long", "echo": "xxxxx", "detail": "éé`, srv.URL)
	if reason != dlq.ReasonRejected || class != "http_422" || !strings.HasPrefix(msg, wantStart) {
		t.Errorf("dead letter reason %q class %q error %q; want rejected, http_422, error starting %q", reason, class, msg, wantStart)
	}
	body := strings.TrimPrefix(msg, wantStart[:strings.Index(wantStart, "{")])
	if !strings.HasSuffix(body, "…") || len(body) > handlers.ResponseBodyShown+len("…") || !utf8.ValidString(body) || strings.Contains(msg, token) {
		t.Errorf("quoted body %q (%d bytes): want valid UTF-8 cut to %d bytes with …, no token", body, len(body), handlers.ResponseBodyShown)
	}
	if d := dlq.Parse(dls[0]); d.ErrorClass != "http_422" || d.ErrorMessage != msg {
		t.Errorf("parsed dead letter: class %q message %q", d.ErrorClass, d.ErrorMessage)
	}
}

// TestWebhookPartitionsDeliverConcurrently: the webhook posts one partition's events one
// after the other, but the partitions post concurrently. The receiver holds each request
// until another is in flight (or 10s pass), so calls made one at a time would never overlap.
func TestWebhookPartitionsDeliverConcurrently(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	inFlight, most, calls := 0, 0, 0
	overlap := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		if inFlight++; inFlight > most {
			most = inFlight
			if most == 2 {
				close(overlap)
			}
		}
		mu.Unlock()
		select {
		case <-overlap:
		case <-time.After(10 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	st, schema := pgStore(t)
	topic, _ := topics(t, 2)
	cl := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		for i := range 2 {
			task := fmt.Sprintf("task-%d", p)
			r := ceRecord(topic, task, ceValue(t, fmt.Sprintf("ev-%d-%d", p, i), sample.TypeCreated, task, i+1))
			r.Partition = p
			testenv.Produce(t, cl, r)
		}
	}
	const group = "concurrent-notifier"
	h := handler(t, st, schema, handlers.NameWebhook, group, handlers.Config{WebhookURL: srv.URL})
	stats := run(t, engineOpts(t, st, h, topic, group))
	mu.Lock()
	defer mu.Unlock()
	if stats.Processed != 4 || calls != 4 || most < 2 {
		t.Errorf("stats %+v, %d calls, at most %d at once; want 4 processed and two partitions posting at once", stats, calls, most)
	}
}
