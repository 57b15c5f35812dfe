package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
)

// The real services, as the repository's tests find them (scripts/services.sh): a test
// that needs one skips when it is not given, and fails when FIELDWORK_TEST_REQUIRE=1.
func service(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("FIELDWORK_TEST_REQUIRE") == "1" {
			t.Fatalf("%s is not set, and FIELDWORK_TEST_REQUIRE=1: start the services (scripts/services.sh start)", name)
		}
		t.Skipf("%s is not set", name)
	}
	return v
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// pgSchema is a fresh schema name on the test PostgreSQL, dropped after the test.
func pgSchema(t *testing.T, dsn string) string {
	t.Helper()
	schema := randomName("taskboard_test_")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// stores are the two databases a team may run the service on: the test PostgreSQL (a
// fresh schema) and an SQLite file in a temporary directory.
func stores(t *testing.T) map[string]*inbox.Store {
	t.Helper()
	ctx := context.Background()
	dsn := service(t, "FIELDWORK_TEST_DSN")
	out := map[string]*inbox.Store{}
	for name, open := range map[string]func() (*inbox.Store, error){
		"postgres": func() (*inbox.Store, error) { return inbox.Open(ctx, dsn, inbox.Schema(pgSchema(t, dsn))) },
		"sqlite":   func() (*inbox.Store, error) { return inbox.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "board.db")) },
	} {
		st, err := open()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("%s: migrate: %v", name, err)
		}
		out[name] = st
	}
	return out
}

// taskEvent is one event of fieldwork's sample stream, as a consumer.Message would hold it.
func taskEvent(id, typ, taskID string, version int64, status string) consumer.Event {
	data, _ := json.Marshal(map[string]any{"task_id": taskID, "title": "Fix " + taskID, "project": "billing",
		"status": status, "assignee": "ana@example.com", "updated_at": "2025-03-03T09:00:00.000Z"})
	return consumer.Event{ID: id, Type: typ, Source: "/tasks-service", Subject: taskID,
		Time: time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC), AggregateType: "task", AggregateID: taskID,
		Version: version, HasVersion: true, Data: data}
}

// handle runs b.Handle on ev in a transaction of its own, committed when it succeeds.
func handle(t *testing.T, st *inbox.Store, b *Board, ev consumer.Event) (consumer.Outcome, error) {
	t.Helper()
	ctx := context.Background()
	var out consumer.Outcome
	var herr error
	err := st.InTx(ctx, func(tx *inbox.Tx) error {
		out, herr = b.Handle(ctx, tx, &consumer.Message{Event: ev, Attempt: 1})
		return herr
	})
	if herr == nil && err != nil {
		t.Fatalf("commit: %v", err)
	}
	return out, herr
}

type boardRow struct {
	version  int64
	eventID  string
	status   string
	assignee string
}

func boardRows(t *testing.T, st *inbox.Store) map[string]boardRow {
	t.Helper()
	ctx := context.Background()
	rows := map[string]boardRow{}
	err := st.InTx(ctx, func(tx *inbox.Tx) error {
		rs, err := tx.Query(ctx, `SELECT aggregate_id, version, event_id, status, assignee FROM `+st.Table(tableTasks))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var id string
			var r boardRow
			if err := rs.Scan(&id, &r.version, &r.eventID, &r.status, &r.assignee); err != nil {
				return err
			}
			rows[id] = r
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// notified are the notifications written: the idempotency key of each, in order, with
// whether it was delivered (status_code not NULL).
type notified struct {
	eventID, key string
	delivered    bool
}

func notifications(t *testing.T, st *inbox.Store) []notified {
	t.Helper()
	ctx := context.Background()
	var out []notified
	err := st.InTx(ctx, func(tx *inbox.Tx) error {
		rs, err := tx.Query(ctx, `SELECT event_id, idempotency_key, status_code IS NOT NULL FROM `+st.Table(tableNotifications)+` ORDER BY id`)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var n notified
			if err := rs.Scan(&n.eventID, &n.key, &n.delivered); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newBoard(t *testing.T, st *inbox.Store, notifyURL string) *Board {
	t.Helper()
	b, err := NewBoard(st, "taskboard", notifyURL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.InTx(context.Background(), func(tx *inbox.Tx) error { return b.Migrate(context.Background(), tx) }); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return b
}

// TestHandleBoard: the board keeps each task at its highest version; an older or equal
// version is Stale, changes nothing and notifies nothing; each applied event writes one
// notification keyed by consumer.IdempotencyKey, in the event's transaction.
func TestHandleBoard(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			b := newBoard(t, st, "")
			steps := []struct {
				ev   consumer.Event
				want consumer.Outcome
			}{
				{taskEvent("e1", "task.created", "task-1", 1, "open"), consumer.Applied},
				{taskEvent("e2", "task.assigned", "task-1", 2, "assigned"), consumer.Applied},
				{taskEvent("e1-again", "task.created", "task-1", 1, "open"), consumer.Stale},
				{taskEvent("e4", "task.completed", "task-1", 4, "done"), consumer.Applied},
				{taskEvent("e3", "task.started", "task-1", 3, "in_progress"), consumer.Stale},
				{taskEvent("e4-again", "task.completed", "task-1", 4, "done"), consumer.Stale},
				{taskEvent("e9", "task.created", "task-2", 1, "open"), consumer.Applied},
			}
			for _, s := range steps {
				out, err := handle(t, st, b, s.ev)
				if err != nil || out != s.want {
					t.Fatalf("%s (v%d): %v, %v; want %v", s.ev.ID, s.ev.Version, out, err, s.want)
				}
			}
			got := boardRows(t, st)
			if r := got["task-1"]; r.version != 4 || r.eventID != "e4" || r.status != "done" {
				t.Errorf("task-1 = %+v; want version 4 from e4, done", r)
			}
			if r := got["task-2"]; r.version != 1 || r.status != "open" || len(got) != 2 {
				t.Errorf("board = %+v; want task-1 and task-2 (v1, open)", got)
			}
			var want []notified
			for _, id := range []string{"e1", "e2", "e4", "e9"} {
				want = append(want, notified{eventID: id, key: consumer.IdempotencyKey("taskboard", id)})
			}
			if got := notifications(t, st); !slices.Equal(got, want) {
				t.Errorf("notifications = %v\nwant %v", got, want)
			}

			// A failure after the notification is written rolls it back with the board's row:
			// the event's transaction is all or nothing.
			err := st.InTx(context.Background(), func(tx *inbox.Tx) error {
				if _, err := b.Handle(context.Background(), tx, &consumer.Message{Event: taskEvent("e5", "task.reopened", "task-1", 5, "open")}); err != nil {
					return err
				}
				return errors.New("the handler's next step failed")
			})
			if err == nil {
				t.Fatal("InTx: no error")
			}
			if got := boardRows(t, st)["task-1"]; got.version != 4 || len(notifications(t, st)) != 4 {
				t.Errorf("after a rollback: task-1 at v%d, %d notifications; want v4, 4", got.version, len(notifications(t, st)))
			}
		})
	}
}

// TestHandlePoison: what the board cannot handle is marked so that the runner
// dead-letters it: an unknown type as unsupported; no aggregate, no version, or data that
// is not a task object, as permanent (rejected). Nothing is written.
func TestHandlePoison(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			b := newBoard(t, st, "")
			noVersion := taskEvent("p2", "task.created", "task-1", 0, "open")
			noVersion.HasVersion = false
			noAggregate := taskEvent("p3", "task.created", "", 1, "open")
			for _, c := range []struct {
				ev          consumer.Event
				unsupported bool
			}{
				{taskEvent("p1", "task.archived", "task-1", 1, "open"), true},
				{noVersion, false},
				{noAggregate, false},
				{withData(taskEvent("p4", "task.created", "task-1", 1, "open"), `"oops"`), false},
				{withData(taskEvent("p5", "task.created", "task-1", 1, "open"), `null`), false},
				{withData(taskEvent("p6", "task.created", "task-1", 1, "open"), ``), false},
				{withData(taskEvent("p7", "task.created", "task-1", 1, "open"), `{"title": 7}`), false},
			} {
				out, err := handle(t, st, b, c.ev)
				if !consumer.IsPermanent(err) {
					t.Errorf("%s: %v, %v; want a permanent (or unsupported) error", c.ev.ID, out, err)
				}
				if got := strings.Contains(err.Error(), "not a task event"); got != c.unsupported {
					t.Errorf("%s: %v; unsupported %v, want %v", c.ev.ID, err, got, c.unsupported)
				}
			}
			if got := boardRows(t, st); len(got) != 0 {
				t.Errorf("board = %v; want nothing written", got)
			}
			if got := notifications(t, st); len(got) != 0 {
				t.Errorf("notifications = %v; want none", got)
			}
		})
	}
}

func withData(ev consumer.Event, data string) consumer.Event {
	ev.Data = json.RawMessage(data)
	return ev
}

// TestHandleNotify: with --notify-url each notification is POSTed with its idempotency key in
// the Idempotency-Key header (the same on every attempt) and its row records the delivery; a
// 503 is retryable, a 400 permanent with the error class http_400, neither writes a row,
// and neither error quotes the URL's secret.
func TestHandleNotify(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	status := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Header.Get(HeaderIdempotencyKey))
		w.WriteHeader(status)
		fmt.Fprint(w, http.StatusText(status))
	}))
	defer srv.Close()
	setStatus := func(code int) { mu.Lock(); status = code; mu.Unlock() }

	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			b := newBoard(t, st, srv.URL+"/notify?token=secret")
			mu.Lock()
			seen = nil
			mu.Unlock()
			ev := taskEvent("c1", "task.completed", "task-1", 4, "done")

			setStatus(http.StatusServiceUnavailable)
			_, err := handle(t, st, b, ev)
			if !consumer.IsRetryable(err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("503: %v; want a retryable error that does not quote the token", err)
			}
			setStatus(http.StatusBadRequest)
			_, err = handle(t, st, b, ev)
			if !consumer.IsPermanent(err) || consumer.ErrorClass(err) != "http_400" || strings.Contains(err.Error(), "secret") {
				t.Errorf("400: %v (class %q); want a permanent error of class http_400", err, consumer.ErrorClass(err))
			}
			if got := notifications(t, st); len(got) != 0 {
				t.Errorf("notifications after failures = %v; want none", got)
			}
			setStatus(http.StatusAccepted)
			if out, err := handle(t, st, b, ev); err != nil || out != consumer.Applied {
				t.Fatalf("202: %v, %v", out, err)
			}
			key := consumer.IdempotencyKey("taskboard", "c1")
			if got := notifications(t, st); !slices.Equal(got, []notified{{eventID: "c1", key: key, delivered: true}}) {
				t.Errorf("notifications = %v; want c1's, delivered, under %s", got, key)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(seen, []string{key, key, key}) {
				t.Errorf("Idempotency-Key headers = %v; want %s three times", seen, key)
			}
		})
	}
}

// kafkaTopic creates a topic (and its .dlq) on the test Kafka, deleted after the test.
func kafkaTopic(t *testing.T, brokers string) (*kgo.Client, string) {
	t.Helper()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	topic := randomName("taskboard-test-")
	for _, tp := range []string{topic, topic + ".dlq"} {
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, tp); err != nil {
			t.Fatalf("create topic %s: %v", tp, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := adm.DeleteTopic(ctx, tp); err != nil {
				t.Errorf("delete topic %s: %v", tp, err)
			}
		})
	}
	return cl, topic
}

// record is ev as fieldwork's sample generator writes it: CloudEvents structured mode,
// keyed by the task id.
func record(topic string, ev consumer.Event) *kgo.Record {
	v, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": ev.ID, "type": ev.Type, "source": ev.Source,
		"subject": ev.Subject, "time": ev.Time.Format(time.RFC3339), "datacontenttype": "application/json",
		"aggregatetype": "task", "aggregateid": ev.AggregateID, "aggregateversion": ev.Version, "data": ev.Data})
	return &kgo.Record{Topic: topic, Key: []byte(ev.AggregateID), Value: v,
		Headers: []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}}
}

func produce(t *testing.T, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// deadLetters reads topic's dead letters: the fw.dlq.reason header of each, by event key.
func deadLetters(t *testing.T, brokers, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var reasons []string
	for len(reasons) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("dead letters in %s: %v after 30s; want %d", topic, reasons, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "fw.dlq.reason" {
					reasons = append(reasons, string(h.Value))
				}
			}
		})
	}
	return reasons
}

// TestService runs the service as `go run .` does (run, its flags and environment) against
// the real Kafka and PostgreSQL: a stream with a duplicate, stale versions (one the handler
// would reject, which the version guard keeps from it) and poison, then more events consumed
// until SIGTERM, which drains.
func TestService(t *testing.T) {
	brokers, dsn := service(t, "FIELDWORK_TEST_BROKERS"), service(t, "FIELDWORK_TEST_DSN")
	schema := pgSchema(t, dsn)
	cl, topic := kafkaTopic(t, brokers)
	ctx := context.Background()

	a1, a2 := taskEvent(randomName("a1-"), "task.created", "task-a", 1, "open"), taskEvent(randomName("a2-"), "task.assigned", "task-a", 2, "assigned")
	a3 := taskEvent(randomName("a3-"), "task.completed", "task-a", 3, "done")
	b1 := taskEvent(randomName("b1-"), "task.created", "task-b", 1, "open")
	staleA2 := a2
	staleA2.ID = randomName("a2-re-") // an older version re-emitted later under a new id
	// An older version whose data the handler would reject: the version guard marks it stale
	// in the claim, so the handler never sees it and it is not dead-lettered.
	staleBroken := withData(taskEvent(randomName("a1-re-"), "task.created", "task-a", 1, "open"), `"oops"`)
	archived := taskEvent(randomName("x-"), "task.archived", "task-c", 1, "open")
	oops := withData(taskEvent(randomName("y-"), "task.created", "task-e", 1, "open"), `"oops"`)
	broken := &kgo.Record{Topic: topic, Key: []byte("task-d"), Value: []byte(`{"specversion":"1.0","id":"cut off`)}
	produce(t, cl, record(topic, a1), record(topic, a2), record(topic, a3), record(topic, a3), record(topic, staleA2),
		record(topic, staleBroken), record(topic, b1), record(topic, archived), record(topic, oops), broken)

	env := map[string]string{"TASKBOARD_BROKERS": brokers, "TASKBOARD_DSN": dsn, "TASKBOARD_SCHEMA": schema}
	getenv := func(k string) string { return env[k] }
	group := randomName("taskboard-test-")
	t.Cleanup(func() { // after the runs: the group has no member left
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := kadm.NewClient(cl).DeleteGroup(ctx, group); err != nil {
			t.Errorf("delete group %s: %v", group, err)
		}
	})
	args := []string{"--topic", topic, "--group", group, "--migrate", "--stop-when-idle", "1s"}
	var out, errs bytes.Buffer
	if err := run(ctx, args, getenv, &out, &errs, nil, func() {}); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	wantOut := "taskboard: 10 records: 4 applied, 1 duplicate, 2 stale, 3 dead-lettered\n" +
		"board: 2 tasks (1 done, 1 open); notifications: 4 in the outbox, 0 delivered\n"
	if out.String() != wantOut {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr:\n%s", out.String(), wantOut, errs.String())
	}
	reasons := deadLetters(t, brokers, topic+".dlq", 3)
	slices.Sort(reasons)
	if strings.Join(reasons, ",") != "malformed,rejected,unsupported" {
		t.Errorf("dead letters' reasons = %v; want malformed (not JSON), rejected (data \"oops\") and unsupported (task.archived)", reasons)
	}

	st, err := inbox.Open(ctx, dsn, inbox.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := boardRows(t, st); got["task-a"].version != 3 || got["task-a"].eventID != a3.ID || got["task-b"].version != 1 {
		t.Errorf("board = %+v; want task-a at v3 (%s), task-b at v1", got, a3.ID)
	}
	var want []string
	for _, ev := range []consumer.Event{a1, a2, a3, b1} {
		want = append(want, ev.ID+" "+consumer.IdempotencyKey(group, ev.ID))
	}
	var got []string
	for _, n := range notifications(t, st) {
		got = append(got, n.eventID+" "+n.key)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("notifications = %v\nwant one per applied event, keyed by its idempotency key: %v", got, want)
	}

	// Started again, without --stop-when-idle: the committed offsets hold, the new events
	// are applied, and SIGTERM drains and stops it.
	b2 := taskEvent(randomName("b2-"), "task.assigned", "task-b", 2, "assigned")
	produce(t, cl, record(topic, b2))
	sigs := make(chan os.Signal, 1)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	out.Reset()
	done := make(chan error, 1)
	go func() { done <- run(runCtx, args[:len(args)-2], getenv, &out, &errs, sigs, stop) }()
	deadline := time.Now().Add(60 * time.Second)
	for boardRows(t, st)["task-b"].version != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("task-b not at v2 after 60s\n%s", errs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	sigs <- syscall.SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not return within 60s of SIGTERM")
	}
	if !strings.HasPrefix(out.String(), "taskboard: 1 record: 1 applied, 0 duplicates, 0 stale, 0 dead-lettered\n") {
		t.Errorf("second run's stdout:\n%s", out.String())
	}
}
