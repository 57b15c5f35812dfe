package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func newHandler(t *testing.T, st *dedup.Store, name string, cfg Config) consumer.Handler {
	t.Helper()
	cfg.Consumer, cfg.Driver = "c1", st.Driver()
	h, err := New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := h.(consumer.Checker); ok {
		err := inTx(st, func(tx *inbox.Tx) error { return c.Check(context.Background(), tx) })
		if !errors.Is(err, ErrTableMissing) {
			t.Errorf("Check before Migrate: %v, want ErrTableMissing", err)
		}
	}
	if _, err := consumerlink.Prepare(context.Background(), st, h, true); err != nil {
		t.Fatal(err)
	}
	if _, err := consumerlink.Prepare(context.Background(), st, h, true); err != nil {
		t.Fatalf("migrating twice: %v", err)
	}
	if _, err := consumerlink.Prepare(context.Background(), st, h, false); err != nil {
		t.Fatalf("check after migrate: %v", err)
	}
	return h
}

// inTx runs fn in a transaction of st, as the runner gives a handler one.
func inTx(st *dedup.Store, fn func(tx *inbox.Tx) error) error {
	return inboxlink.NewStore(st).(*inbox.Store).InTx(context.Background(), fn)
}

func taskEvent(id, typ string, version int64) consumer.Event {
	data, _ := json.Marshal(map[string]any{"task_id": "task-1", "status": "open", "title": "t"})
	return consumer.Event{ID: id, Type: typ, AggregateType: "task", AggregateID: "task-1", Version: version, HasVersion: true,
		Data: data, Time: time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)}
}

func handle(t *testing.T, st *dedup.Store, h consumer.Handler, ev consumer.Event) (consumer.Outcome, error) {
	t.Helper()
	var out consumer.Outcome
	var herr error
	err := inTx(st, func(tx *inbox.Tx) error {
		out, herr = h.Handle(context.Background(), tx, &consumer.Message{Event: ev, Record: &kgo.Record{Topic: "tasks", Partition: 1, Offset: 7}, Attempt: 1})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, herr
}

func TestProjectionOnSQLite(t *testing.T) {
	st := testenv.SQLiteStore(t)
	h := newHandler(t, st, NameProjection, Config{})
	steps := []struct {
		ev   consumer.Event
		want consumer.Outcome
	}{
		{taskEvent("e1", "task.created", 1), consumer.Applied},
		{taskEvent("e2", "task.assigned", 2), consumer.Applied},
		{taskEvent("e2b", "task.created", 1), consumer.Stale},    // older: no-op
		{taskEvent("e2c", "task.assigned", 2), consumer.Stale},   // equal: no-op
		{taskEvent("e5", "task.completed", 5), consumer.Applied}, // a gap of 2
	}
	for _, s := range steps {
		out, err := handle(t, st, h, s.ev)
		if err != nil || out != s.want {
			t.Fatalf("%s v%d: %v %v, want %v", s.ev.ID, s.ev.Version, out, err, s.want)
		}
	}
	table, _ := Table("sqlite", "", TableTaskState)
	if table != `"fieldwork_task_state"` {
		t.Errorf("table %s", table)
	}
	var version, applied, stale, gaps int64
	var typ, status string
	err := inTx(st, func(tx *inbox.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT version, applied_events, stale_events, version_gaps, event_type, status FROM `+table+` WHERE consumer = 'c1' AND aggregate_id = 'task-1'`).
			Scan(&version, &applied, &stale, &gaps, &typ, &status)
	})
	if err != nil || version != 5 || applied != 3 || stale != 2 || gaps != 1 || typ != "task.completed" || status != "open" {
		t.Errorf("row: version %d applied %d stale %d gaps %d type %s status %s (%v)", version, applied, stale, gaps, typ, status, err)
	}

	bad := []struct {
		name string
		ev   consumer.Event
		perm bool
	}{
		{"unknown type", taskEvent("x1", "task.archived", 9), true},
		{"no version", func() consumer.Event { e := taskEvent("x2", "task.started", 0); e.HasVersion = false; return e }(), true},
		{"no aggregate", func() consumer.Event { e := taskEvent("x3", "task.started", 9); e.AggregateID = ""; return e }(), true},
		{"data not an object", func() consumer.Event {
			e := taskEvent("x4", "task.started", 9)
			e.Data = json.RawMessage(`"x"`)
			return e
		}(), true},
	}
	for _, b := range bad {
		_, err := handle(t, st, h, b.ev)
		if !consumer.IsPermanent(err) {
			t.Errorf("%s: %v, want a permanent failure", b.name, err)
		}
	}
}

func TestAuditOnSQLite(t *testing.T) {
	st := testenv.SQLiteStore(t)
	h := newHandler(t, st, NameAudit, Config{})
	for _, id := range []string{"a", "b", "c"} {
		if out, err := handle(t, st, h, taskEvent(id, "anything.at.all", 1)); err != nil || out != consumer.Applied {
			t.Fatalf("%s: %v %v", id, out, err)
		}
	}
	var n int64
	table, _ := Table("sqlite", "", TableAuditLog)
	err := inTx(st, func(tx *inbox.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE "partition" = 1 AND "offset" = 7 AND occurred_at = '2025-03-03T09:00:00.000000Z'`).Scan(&n)
	})
	if err != nil || n != 3 {
		t.Errorf("audit rows %d (%v)", n, err)
	}
}

func TestWebhookOnSQLite(t *testing.T) {
	codes := map[string]int{"ok": 200, "busy": 503, "limited": 429, "gone": 404, "moved": 301}
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev envelope.Event // the body is the event as fieldwork writes it everywhere
		_ = json.NewDecoder(r.Body).Decode(&ev)
		keys = append(keys, r.Header.Get(HeaderIdempotencyKey))
		if codes[ev.ID] == 301 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(codes[ev.ID])
	}))
	defer srv.Close()
	st := testenv.SQLiteStore(t)
	h := newHandler(t, st, NameWebhook, Config{WebhookURL: srv.URL, HTTPClient: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})

	if out, err := handle(t, st, h, taskEvent("ok", "t", 1)); err != nil || out != consumer.Applied {
		t.Fatalf("ok: %v %v", out, err)
	}
	if keys[0] != consumer.IdempotencyKey("c1", "ok") {
		t.Errorf("key %q", keys[0])
	}
	for id, retryable := range map[string]bool{"busy": true, "limited": true, "gone": false, "moved": false} {
		_, err := handle(t, st, h, taskEvent(id, "t", 1))
		if consumer.IsRetryable(err) != retryable || consumer.IsPermanent(err) == retryable {
			t.Errorf("%s: %v; retryable %v", id, err, retryable)
		}
	}
	// Unreachable: retryable, and the message names the URL without its password.
	dead, err := New(NameWebhook, Config{Consumer: "c1", Driver: "sqlite", WebhookURL: "http://user:secret@127.0.0.1:1/hook", WebhookTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = handle(t, st, dead, taskEvent("x", "t", 1))
	if !consumer.IsRetryable(err) || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable: %v", err)
	}
	// A token in the query: shown as REDACTED, also when net/http quotes a redirect's URL.
	const token = "Tok3n-Never-Shown"
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/next?token="+token, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	tokened, err := New(NameWebhook, Config{Consumer: "c1", Driver: "sqlite", WebhookURL: redirect.URL + "/x?token=" + token, WebhookTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = handle(t, st, tokened, taskEvent("y", "t", 1))
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "/x?token=REDACTED") {
		t.Errorf("redirected to an unreachable URL: %v", err)
	}
	// Delivered twice (a forgotten marker, a replay): one row, deliveries 2.
	if _, err := handle(t, st, h, taskEvent("ok", "t", 1)); err != nil {
		t.Fatal(err)
	}
	table, _ := Table("sqlite", "", TableWebhookDeliveries)
	var deliveries, code int
	err = inTx(st, func(tx *inbox.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT deliveries, status_code FROM `+table+` WHERE consumer = 'c1' AND event_id = 'ok'`).Scan(&deliveries, &code)
	})
	if err != nil || deliveries != 2 || code != 200 {
		t.Errorf("deliveries %d status %d (%v)", deliveries, code, err)
	}

	if _, err := New(NameWebhook, Config{Consumer: "c1", Driver: "sqlite"}); err == nil {
		t.Error("webhook without a URL")
	}
	if _, err := New(NameWebhook, Config{Consumer: "c1", Driver: "sqlite", WebhookURL: "ftp://x"}); err == nil {
		t.Error("webhook with an ftp URL")
	}
	if _, err := New("email", Config{Consumer: "c1", Driver: "sqlite"}); err == nil {
		t.Error("unknown handler")
	}
}

func TestTableNames(t *testing.T) {
	for _, tc := range []struct{ driver, schema, want string }{
		{"postgres", "", `"fieldwork"."task_state"`},
		{"postgres", "billing", `"billing"."task_state"`},
		{"sqlite", "billing", `"billing_task_state"`},
		{"sqlite", "main", `"task_state"`},
	} {
		if got, err := Table(tc.driver, tc.schema, TableTaskState); err != nil || got != tc.want {
			t.Errorf("%s %q: %s %v, want %s", tc.driver, tc.schema, got, err, tc.want)
		}
	}
	if _, err := Table("postgres", `x"; drop table y; --`, TableTaskState); err == nil {
		t.Error("an invalid schema name was accepted")
	}
}
