package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// projEvent is a task event for calling the projection directly.
func projEvent(id, typ, task string, version int64) *consumer.Message {
	data, _ := json.Marshal(map[string]any{"task_id": task, "status": "v" + strconv.FormatInt(version, 10), "title": "t"})
	return &consumer.Message{
		Event: consumer.Event{ID: id, Type: typ, AggregateType: sample.AggregateType, AggregateID: task, Version: version,
			HasVersion: true, Data: data, Time: time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC).Add(time.Duration(version) * time.Minute)},
		Record: &kgo.Record{Topic: "tasks", Partition: 0, Offset: version},
	}
}

type taskRow struct {
	Version, Applied, Stale, Gaps int64
	EventID, EventType, Status    string
}

func taskRows(t *testing.T, st *dedup.Store, schema, consumer string) map[string]taskRow {
	t.Helper()
	table := tableName(t, st, schema, handlers.TableTaskState)
	got := map[string]taskRow{}
	err := st.InTx(context.Background(), func(tx *dedup.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT aggregate_id, version, applied_events, stale_events, version_gaps, event_id, event_type, status FROM `+table+` WHERE consumer = $1`, consumer)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var r taskRow
			if err := rows.Scan(&id, &r.Version, &r.Applied, &r.Stale, &r.Gaps, &r.EventID, &r.EventType, &r.Status); err != nil {
				return err
			}
			got[id] = r
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestProjectionBatchReportsLikeEvents: the projection's HandleBatch, on PostgreSQL (one
// statement) and on SQLite, reports each event applied or stale exactly as Handle called
// event after event does, and leaves the same rows: superseded versions newer than what came
// before them count as applied, older or equal ones as stale (tasks with nothing applied
// included), gaps counted, the newest event written. A rejected event ends the prefix.
func TestProjectionBatchReportsLikeEvents(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"postgres", "sqlite"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var st *dedup.Store
			schema := dedup.DefaultSchema
			if driver == "postgres" {
				st, schema = pgStore(t)
			} else {
				st = testenv.SQLiteStore(t)
			}
			ctx := context.Background()
			seed := []*consumer.Message{
				projEvent("s1", sample.TypeCreated, "t1", 3),
				projEvent("s4", sample.TypeCreated, "t4", 5),
			}
			batch := []*consumer.Message{
				projEvent("b0", sample.TypeAssigned, "t1", 2),  // older than stored 3: stale
				projEvent("b1", sample.TypeStarted, "t1", 4),   // applied, superseded below
				projEvent("b2", sample.TypeStarted, "t1", 4),   // equal to the one before it: stale
				projEvent("b3", sample.TypeCreated, "t2", 1),   // new task: applied
				projEvent("b4", sample.TypeCompleted, "t1", 6), // applied, a gap (4 → 6)
				projEvent("b5", sample.TypeCreated, "t2", 1),   // stale within the batch
				projEvent("b6", sample.TypeStarted, "t3", 3),   // new task at version 3: applied, a gap
				projEvent("b7", sample.TypeAssigned, "t2", 2),  // applied
				projEvent("b8", sample.TypeCreated, "t4", 1),   // stale: t4 has nothing applied in the batch
				projEvent("b9", sample.TypeStarted, "t4", 5),   // stale (equal)
			}
			want := []consumer.Outcome{consumer.Stale, consumer.Applied, consumer.Stale, consumer.Applied, consumer.Applied,
				consumer.Stale, consumer.Applied, consumer.Applied, consumer.Stale, consumer.Stale}
			wantRows := map[string]taskRow{
				"t1": {Version: 6, Applied: 3, Stale: 2, Gaps: 2, EventID: "b4", EventType: sample.TypeCompleted, Status: "v6"},
				"t2": {Version: 2, Applied: 2, Stale: 1, EventID: "b7", EventType: sample.TypeAssigned, Status: "v2"},
				"t3": {Version: 3, Applied: 1, Gaps: 1, EventID: "b6", EventType: sample.TypeStarted, Status: "v3"},
				"t4": {Version: 5, Applied: 1, Stale: 2, Gaps: 1, EventID: "s4", EventType: sample.TypeCreated, Status: "v5"},
			}

			outcomes := map[string][]consumer.Outcome{}
			for _, name := range []string{"single", "batch"} {
				h := handler(t, st, schema, handlers.NameProjection, name, handlers.Config{})
				err := inTx(ctx, st, func(tx *inbox.Tx) error {
					for _, be := range seed {
						if _, err := h.Handle(ctx, tx, be); err != nil {
							return err
						}
					}
					if name == "batch" {
						res, err := h.HandleBatch(ctx, tx, batch)
						if err != nil || res.Err != nil {
							return fmt.Errorf("HandleBatch: %v, %v", err, res.Err)
						}
						outcomes[name] = res.Outcomes
						return nil
					}
					for _, be := range batch {
						out, err := h.Handle(ctx, tx, be)
						if err != nil {
							return err
						}
						outcomes[name] = append(outcomes[name], out)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !slices.Equal(outcomes[name], want) {
					t.Errorf("%s: outcomes %v, want %v", name, outcomes[name], want)
				}
				if got := taskRows(t, st, schema, name); fmt.Sprint(got) != fmt.Sprint(wantRows) {
					t.Errorf("%s: rows\n%v\nwant\n%v", name, got, wantRows)
				}
			}

			// A rejected event ends the prefix: the events before it applied, it reported
			// as its first failure, having written nothing.
			h := handler(t, st, schema, handlers.NameProjection, "prefix", handlers.Config{})
			var res consumer.BatchResult
			err := inTx(ctx, st, func(tx *inbox.Tx) error {
				var err error
				res, err = h.HandleBatch(ctx, tx, []*consumer.Message{
					projEvent("p0", sample.TypeCreated, "t5", 1),
					projEvent("p1", "task.archived", "t5", 2),
					projEvent("p2", sample.TypeStarted, "t5", 3),
				})
				return err
			})
			if err != nil || !slices.Equal(res.Outcomes, []consumer.Outcome{consumer.Applied}) || !consumer.IsPermanent(res.Err) {
				t.Errorf("prefix: %v, %v, %v; want [applied] and an unsupported event", res.Outcomes, res.Err, err)
			}
			if got := taskRows(t, st, schema, "prefix"); got["t5"].Version != 1 || got["t5"].Applied != 1 {
				t.Errorf("prefix: rows %v, want t5 at version 1", got)
			}
		})
	}
}

// TestBatchFailureFallsBackToEvents: an event that passes the projection's checks but makes
// its batch statement fail (a NUL byte in the status, which PostgreSQL text refuses) rolls
// the batch back; the engine applies it again event by event, so that the poison event is
// exhausted and dead-lettered alone with its marker removed and every other event applied
// and marked, exactly as with --per-event.
func TestBatchFailureFallsBackToEvents(t *testing.T) {
	t.Parallel()
	for _, perEvent := range []bool{false, true} {
		t.Run(fmt.Sprintf("per-event=%v", perEvent), func(t *testing.T) {
			t.Parallel()
			st, schema := pgStore(t)
			topic, dlqTopic := topics(t, 1)
			recs, man, err := sample.Generate(sample.Options{Seed: 21, Aggregates: 8, EventsPerAggregate: 5, Stale: 3})
			if err != nil {
				t.Fatal(err)
			}
			krecs := sample.KgoRecords(topic, recs)
			poison, err := json.Marshal(map[string]any{
				"specversion": "1.0", "id": "ev-nul-status", "type": sample.TypeCreated, "source": "/test",
				"aggregatetype": "task", "aggregateid": "task-0100", "aggregateversion": 1, "time": "2025-03-03T09:00:00Z",
				"data": map[string]any{"task_id": "task-0100", "status": "open\x00", "title": "t"},
			})
			if err != nil {
				t.Fatal(err)
			}
			mid := len(krecs) / 2
			krecs = slices.Insert(krecs, mid, ceRecord(topic, "task-0100", poison))
			testenv.Produce(t, producer(t), krecs...)
			poisonOffset := krecs[mid].Offset

			group := "fallback-" + strconv.FormatBool(perEvent)
			h := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
			reg := prometheus.NewRegistry()
			o := engineOpts(t, st, h, topic, group)
			o.Registerer, o.MaxAttempts, o.PerEvent = reg, 2, perEvent
			stats := run(t, o)
			if stats.DeadLettered != 1 || stats.Processed != int64(man.Events) || stats.Stale != int64(len(man.Stale)) {
				t.Errorf("stats %+v; want 1 dead-lettered, %d processed, %d stale", stats, man.Events, len(man.Stale))
			}
			if perEvent && stats.BatchFallbacks != 0 || !perEvent && stats.BatchFallbacks < 1 {
				t.Errorf("batch fallbacks %d (per event %v)", stats.BatchFallbacks, perEvent)
			}
			checkMetrics(t, reg, map[string]float64{
				`fieldwork_consume_dead_letters_total{reason="exhausted",topic="` + topic + `",writer="fieldwork"}`: 1,
				`fieldwork_consume_batch_fallbacks_total`:                                                           float64(stats.BatchFallbacks),
			})
			checkProjection(t, st, schema, group, man)
			if n := markerCount(t, st, group); n != int64(man.UniqueEventIDs()) {
				t.Errorf("markers %d, want %d", n, man.UniqueEventIDs())
			}
			if rows, err := st.Get(context.Background(), "ev-nul-status", group); err != nil || len(rows) != 0 {
				t.Errorf("the poison event has markers %v (%v)", rows, err)
			}
			dls := readAll(t, dlqTopic)
			if len(dls) != 1 {
				t.Fatalf("%d dead letters, want 1", len(dls))
			}
			for k, v := range map[string]string{dlq.HeaderOffset: strconv.FormatInt(poisonOffset, 10), dlq.HeaderEventID: "ev-nul-status",
				dlq.HeaderReason: dlq.ReasonExhausted, dlq.HeaderAttempts: "2"} {
				if got, _ := header(dls[0], k); got != v {
					t.Errorf("dead letter %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestAuditBatchRecordsLikeEvents: the audit's HandleBatch (one INSERT on PostgreSQL) writes
// the rows Handle writes, event after event, NULL version and time included. (Its statement for
// one partition is the one TestClaimedBatchLikeHandleBatch and the runner's tests use.)
func TestAuditBatchRecordsLikeEvents(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	ctx := context.Background()
	evs := []*consumer.Message{projEvent("a1", "anything.at.all", "t1", 1), projEvent("a2", sample.TypeCreated, "t2", 7)}
	evs[1].Event.HasVersion, evs[1].Event.Time, evs[1].Event.Source = false, time.Time{}, "/src"
	evs[1].Record.Partition = 1 // the statement for events of several partitions (a batch's are one's)
	table := tableName(t, st, schema, handlers.TableAuditLog)
	rows := map[string][]string{}
	for _, name := range []string{"single", "batch"} {
		h := handler(t, st, schema, handlers.NameAudit, name, handlers.Config{})
		err := inTx(ctx, st, func(tx *inbox.Tx) error {
			if name == "batch" {
				res, err := h.HandleBatch(ctx, tx, evs)
				if err == nil && (res.Err != nil || len(res.Outcomes) != len(evs)) {
					err = fmt.Errorf("HandleBatch: %v outcomes, %v", res.Outcomes, res.Err)
				}
				return err
			}
			for _, be := range evs {
				if _, err := h.Handle(ctx, tx, be); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = st.InTx(ctx, func(tx *dedup.Tx) error {
			rs, err := tx.Query(ctx, `SELECT concat_ws('|', event_id, event_type, source, aggregate_type, aggregate_id,
	coalesce(aggregate_version::text, 'null'), topic, "partition", "offset", coalesce(occurred_at::text, 'null'), data)
FROM `+table+` WHERE consumer = $1 ORDER BY topic, "partition", "offset"`, name)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var s string
				if err := rs.Scan(&s); err != nil {
					return err
				}
				rows[name] = append(rows[name], s)
			}
			return rs.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(rows["batch"]) != 2 || !slices.Equal(rows["batch"], rows["single"]) {
		t.Errorf("batch rows\n%q\nwant (as Handle writes them)\n%q", rows["batch"], rows["single"])
	}
}
