package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
)

// The task events this service understands: those of fieldwork's sample stream
// (CloudEvents whose data is the whole task after the event).
var knownTypes = map[string]bool{
	"task.created": true, "task.assigned": true, "task.started": true, "task.completed": true, "task.reopened": true,
}

// The service's own tables, beside the inbox's markers in the store's schema (Store.Table).
const (
	tableTasks         = "tasks"
	tableNotifications = "notifications"
)

// task is the part of an event's data the board keeps.
type task struct {
	Title    string `json:"title"`
	Status   string `json:"status"`
	Assignee string `json:"assignee"`
}

// Board is the service's handler (consumer.Handler, with consumer.Namer, consumer.Migrator
// and consumer.Checker):
//
//   - tasks: the task board, one row per task at the highest version applied;
//   - notifications: a notification of each change of the board, written in the same
//     transaction, under the key consumer.IdempotencyKey(consumer, event id). Without a
//     notify URL the row is an outbox entry, for a relay to send; with one, Handle POSTs the
//     notification with the key in the Idempotency-Key header first and the row records
//     the delivery (url, status_code, delivered_at).
type Board struct {
	consumer      string // the inbox consumer name: the idempotency keys are per consumer
	tasks         string // quoted table names
	notifications string
	notify        *notifier // nil: the notifications stay in the outbox
}

// NewBoard returns the handler for the consumer name, its tables in st's schema; notifyURL,
// when not empty, is where notifications are POSTed.
func NewBoard(st *inbox.Store, consumerName, notifyURL string, timeout time.Duration) (*Board, error) {
	b := &Board{consumer: consumerName, tasks: st.Table(tableTasks), notifications: st.Table(tableNotifications)}
	if notifyURL != "" {
		n, err := newNotifier(notifyURL, timeout)
		if err != nil {
			return nil, err
		}
		b.notify = n
	}
	return b, nil
}

// Name is written into the dead letters (fw.dlq.handler) and the logs.
func (b *Board) Name() string { return "taskboard" }

// Migrate creates the service's tables if they do not exist (consumer.Migrator). Times are
// RFC 3339 text, so that the statements are the same on PostgreSQL and SQLite but for the
// notifications' surrogate key.
//
// notifications has no unique key on the event or the idempotency key on purpose: the
// inbox is what makes each event's notification happen once, and a unique index would hide
// it if it did not.
func (b *Board) Migrate(ctx context.Context, tx *inbox.Tx) error {
	id := "id bigserial PRIMARY KEY"
	if tx.Driver() == "sqlite" {
		id = "id integer PRIMARY KEY" // the rowid, assigned on insert
	}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS ` + b.tasks + ` (
	aggregate_id text   PRIMARY KEY,
	version      bigint NOT NULL,
	event_id     text   NOT NULL,
	event_type   text   NOT NULL,
	title        text   NOT NULL,
	status       text   NOT NULL,
	assignee     text   NOT NULL,
	data         text   NOT NULL,
	updated_at   text   NOT NULL
)`,
		`CREATE TABLE IF NOT EXISTS ` + b.notifications + ` (
	` + id + `,
	event_id        text    NOT NULL,
	aggregate_id    text    NOT NULL,
	version         bigint  NOT NULL,
	idempotency_key text    NOT NULL,
	payload         text    NOT NULL,
	created_at      text    NOT NULL,
	url             text,
	status_code     integer,
	delivered_at    text
)`,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// Check fails when the tables are missing (consumer.Checker), so that a service started
// with --migrate=false on a new database stops with a clear message.
func (b *Board) Check(ctx context.Context, tx *inbox.Tx) error {
	for _, t := range []string{b.tasks, b.notifications} {
		var n int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+t+` WHERE 1 = 0`).Scan(&n); err != nil {
			return fmt.Errorf("table %s: %w (run with --migrate)", t, err)
		}
	}
	return nil
}

// Handle applies one fresh event inside tx, the transaction its marker was claimed in.
//
// An event it can never handle is returned marked, and the runner dead-letters it: an
// unknown type as consumer.Unsupported, an event without an aggregate or a version, or
// whose data is not a task, as consumer.Permanent. A database error is returned as it is:
// the runner tells infrastructure failures (retried) from the rest.
//
// With consumer.VersionGuard (as main runs it) the runner never hands it an event older than
// or as old as the task's newest applied version: the claim marks it stale. The upsert keeps
// the same rule (its WHERE), so that the board stays right with the guard off, and Handle
// then says Stale, which the runner keeps in the marker too; no notification is written
// for a stale event either way.
func (b *Board) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	ev := m.Event
	if !knownTypes[ev.Type] {
		return 0, consumer.Unsupportedf("event type %q is not a task event", ev.Type)
	}
	if ev.AggregateID == "" {
		return 0, consumer.Permanentf("event %s names no aggregate (task)", ev.ID)
	}
	if !ev.HasVersion {
		return 0, consumer.Permanentf("event %s has no aggregate version", ev.ID)
	}
	var t task
	if d := bytes.TrimSpace(ev.Data); len(d) == 0 || d[0] != '{' {
		return 0, consumer.Permanentf("event %s: data is not a task object", ev.ID)
	}
	if err := json.Unmarshal(ev.Data, &t); err != nil {
		return 0, consumer.Permanentf("event %s: data is not a task object: %w", ev.ID, err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	n, err := tx.Exec(ctx, `INSERT INTO `+b.tasks+` AS t
	(aggregate_id, version, event_id, event_type, title, status, assignee, data, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (aggregate_id) DO UPDATE SET version = excluded.version, event_id = excluded.event_id,
	event_type = excluded.event_type, title = excluded.title, status = excluded.status,
	assignee = excluded.assignee, data = excluded.data, updated_at = excluded.updated_at
WHERE t.version < excluded.version`,
		ev.AggregateID, ev.Version, ev.ID, ev.Type, t.Title, t.Status, t.Assignee, string(ev.Data), now)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return consumer.Stale, nil
	}
	return consumer.Applied, b.notifyChange(ctx, tx, ev, t, now)
}

// notification is the body of a notification: a task changed.
type notification struct {
	EventID  string `json:"event_id"`
	Type     string `json:"type"`
	TaskID   string `json:"task_id"`
	Version  int64  `json:"version"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Assignee string `json:"assignee,omitempty"`
}

// notifyChange writes the notification of an applied event in tx, POSTing it first when the
// board has a notify URL. Its key is the same on every attempt, redelivery and replay of the
// event for this consumer: the receiver acts once even when it is sent twice (a crash
// between the POST and the commit).
func (b *Board) notifyChange(ctx context.Context, tx *inbox.Tx, ev consumer.Event, t task, now string) error {
	key := consumer.IdempotencyKey(b.consumer, ev.ID)
	body, err := json.Marshal(notification{EventID: ev.ID, Type: ev.Type, TaskID: ev.AggregateID, Version: ev.Version,
		Title: t.Title, Status: t.Status, Assignee: t.Assignee})
	if err != nil {
		return consumer.Permanent(err)
	}
	var url, code, delivered any // NULL: queued in the outbox
	if b.notify != nil {
		c, err := b.notify.post(ctx, key, body)
		if err != nil {
			return err
		}
		url, code, delivered = b.notify.shown, c, now
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+b.notifications+`
	(event_id, aggregate_id, version, idempotency_key, payload, created_at, url, status_code, delivered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, ev.ID, ev.AggregateID, ev.Version, key, string(body), now, url, code, delivered)
	return err
}

// Summary says what the board holds: the tasks by status and the notifications.
func (b *Board) Summary(ctx context.Context, st *inbox.Store) (string, error) {
	var out string
	err := st.InTx(ctx, func(tx *inbox.Tx) error {
		rows, err := tx.Query(ctx, `SELECT status, count(*) FROM `+b.tasks+` GROUP BY status ORDER BY status`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var total int64
		var parts []string
		for rows.Next() {
			var status string
			var n int64
			if err := rows.Scan(&status, &n); err != nil {
				return err
			}
			total += n
			parts = append(parts, fmt.Sprintf("%d %s", n, status))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var queued, delivered int64
		if err := tx.QueryRow(ctx, `SELECT count(*) - count(delivered_at), count(delivered_at) FROM `+b.notifications).Scan(&queued, &delivered); err != nil {
			return err
		}
		out = fmt.Sprintf("board: %s (%s); notifications: %d in the outbox, %d delivered",
			plural(total, "task"), strings.Join(parts, ", "), queued, delivered)
		return nil
	})
	return out, err
}
