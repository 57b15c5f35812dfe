package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// markersOf are the markers the runner claims for ms.
func markersOf(ms []*consumer.Message) []dedup.Marker {
	out := make([]dedup.Marker, len(ms))
	for i, m := range ms {
		out[i] = dedup.Marker{EventID: m.Event.ID, Topic: m.Record.Topic, Partition: m.Record.Partition, Offset: m.Record.Offset,
			AggregateID: m.Event.AggregateID, AggregateVersion: m.Event.Version, Versioned: m.Event.HasVersion}
	}
	return out
}

// claimWith handles seed and then claims ms for consumer with h's part of the claim's
// statement, in one transaction; it returns ClaimWith's error (the transaction then rolled
// back).
func claimWith(t *testing.T, st *dedup.Store, h consumer.Handler, consumerName string, seed, ms []*consumer.Message) error {
	t.Helper()
	ctx := context.Background()
	var claimErr error
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		itx := inboxlink.NewTx(tx).(*inbox.Tx)
		for _, m := range seed {
			if _, err := h.Handle(ctx, itx, m); err != nil {
				return err
			}
		}
		part, ok := h.(consumer.ClaimingBatchHandler).ClaimedBatch(ms)
		if !ok {
			return errors.New("no claimed batch")
		}
		claimErr = st.ClaimWith(ctx, tx, consumerName, markersOf(ms), dedup.ClaimedPart{
			With: part.With, Select: part.Select, Fallback: part.Fallback, Args: part.Args, Row: part.Row})
		if claimErr == nil && part.Committed != nil {
			part.Committed()
		}
		return claimErr
	})
	if err != nil && !errors.Is(err, claimErr) {
		t.Fatal(err)
	}
	return claimErr
}

// TestClaimedBatchLikeHandleBatch: the projection's and the audit's part of the claim's
// statement (ClaimedBatch) write what HandleBatch writes after a claim, and the projection
// counts the same gaps (between events of the batch, before a task's first event against its
// row and against no row); the statement falls back, writing nothing, when an event was
// claimed before or (the projection) is stale against its row; a batch with an event stale
// against an earlier one of its task is no claimed batch.
func TestClaimedBatchLikeHandleBatch(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	ctx := context.Background()
	seed := []*consumer.Message{projEvent("s1", sample.TypeCreated, "t1", 3), projEvent("s4", sample.TypeCreated, "t4", 5)}
	batch := []*consumer.Message{
		projEvent("b1", sample.TypeStarted, "t1", 4), projEvent("b3", sample.TypeCreated, "t2", 1),
		projEvent("b4", sample.TypeCompleted, "t1", 6), projEvent("b6", sample.TypeStarted, "t3", 3),
		projEvent("b7", sample.TypeAssigned, "t2", 2), projEvent("b9", sample.TypeStarted, "t4", 7),
	}
	regs := map[string]*prometheus.Registry{}
	for _, name := range []string{"batch", "claimed"} {
		regs[name] = prometheus.NewRegistry()
		h := handler(t, st, schema, handlers.NameProjection, name, handlers.Config{Registerer: regs[name]})
		if name == "claimed" {
			if err := claimWith(t, st, h, name, seed, batch); err != nil {
				t.Fatal(err)
			}
			continue
		}
		err := inTx(ctx, st, func(tx *inbox.Tx) error {
			for _, m := range seed {
				if _, err := h.Handle(ctx, tx, m); err != nil {
					return err
				}
			}
			res, err := h.HandleBatch(ctx, tx, batch)
			if err == nil && slices.Contains(res.Outcomes, consumer.Stale) {
				err = fmt.Errorf("outcomes %v, want every event applied", res.Outcomes)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, want := taskRows(t, st, schema, "claimed"), taskRows(t, st, schema, "batch"); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 4 {
		t.Errorf("claimed rows\n%v\nHandleBatch's\n%v", got, want)
	}
	if n := markerCount(t, st, "claimed"); n != int64(len(batch)) {
		t.Errorf("markers %d, want %d", n, len(batch))
	}
	// Gaps: the seed's two (t1 and t4 new at 3 and 5), then t1 4 → 6 within the batch, t3 new
	// at 3, t4 5 → 7 against its row.
	for name, reg := range regs {
		t.Run(name, func(t *testing.T) {
			checkMetrics(t, reg, map[string]float64{"fieldwork_consume_projection_gaps_total": 5})
		})
	}

	// A batch with an event stale within it (t2 at 3 twice) is HandleBatch's to judge.
	h := handler(t, st, schema, handlers.NameProjection, "claimed", handlers.Config{})
	if _, ok := h.(consumer.ClaimingBatchHandler).ClaimedBatch([]*consumer.Message{projEvent("d1", sample.TypeStarted, "t2", 3),
		projEvent("d2", sample.TypeCreated, "t5", 1), projEvent("d3", sample.TypeStarted, "t2", 3)}); ok {
		t.Error("a batch with an event stale within it: a claimed batch")
	}

	// A stale event (t1 is at version 6 now), or one at the stored version (t2 at 2): nothing
	// is written.
	stale := []*consumer.Message{projEvent("c1", sample.TypeStarted, "t2", 3), projEvent("c2", sample.TypeStarted, "t1", 5)}
	if err := claimWith(t, st, h, "claimed", nil, stale); !errors.Is(err, dedup.ErrClaimFallback) {
		t.Errorf("a stale event: %v, want ErrClaimFallback", err)
	}
	equal := []*consumer.Message{projEvent("e1", sample.TypeCreated, "t6", 1), projEvent("e2", sample.TypeAssigned, "t2", 2)}
	if err := claimWith(t, st, h, "claimed", nil, equal); !errors.Is(err, dedup.ErrClaimFallback) {
		t.Errorf("an event at its task's version: %v, want ErrClaimFallback", err)
	}
	if got := taskRows(t, st, schema, "claimed"); got["t2"].Version != 2 || got["t1"].Stale != 0 {
		t.Errorf("after the stale batch: rows %v", got)
	}

	// The audit: every event recorded; claimed again, nothing is written.
	h = handler(t, st, schema, handlers.NameAudit, "audit", handlers.Config{})
	table := tableName(t, st, schema, handlers.TableAuditLog)
	for i, want := range []error{nil, dedup.ErrClaimFallback} {
		if err := claimWith(t, st, h, "audit", nil, batch[i*2:]); !errors.Is(err, want) {
			t.Errorf("audit %d: %v, want %v", i, err, want)
		}
		if got := queryInt(t, st, `SELECT count(*) FROM `+table+` WHERE consumer = 'audit'`); got != int64(len(batch)) {
			t.Errorf("audit %d: rows %d, want %d", i, got, len(batch))
		}
	}
	var offsets int64
	for _, m := range batch {
		offsets += m.Record.Offset
	}
	if got := queryInt(t, st, `SELECT coalesce(sum("offset"), 0) FROM `+table+` WHERE consumer = 'audit' AND topic = 'tasks' AND "partition" = 0`); got != offsets {
		t.Errorf("audit rows: sum of offsets in tasks/0 %d, want %d", got, offsets)
	}
	if n := markerCount(t, st, "audit"); n != int64(len(batch)) {
		t.Errorf("audit markers %d, want %d", n, len(batch))
	}
}

// TestClaimedBatchPartlyClaimedBefore: a batch some of whose events were claimed before (a
// redelivery) is applied once: the statement that claims and writes finds them, the runner
// rolls it back, claims first and writes only the fresh events.
func TestClaimedBatchPartlyClaimedBefore(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 1)
	const events = 40
	var recs []*kgo.Record
	for i := range events {
		v, err := json.Marshal(map[string]any{"specversion": "1.0", "id": "ev-" + strconv.Itoa(i), "type": "anything", "source": "/test",
			"aggregateid": "a", "time": "2025-03-03T09:00:00Z", "data": map[string]any{"i": i}})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, ceRecord(topic, "a", v))
	}
	testenv.Produce(t, producer(t), recs...)
	group := "partly"
	before := []string{"ev-5", "ev-17", "ev-30"}
	err := st.InTx(context.Background(), func(tx *dedup.Tx) error {
		var ms []dedup.Marker
		for _, id := range before {
			ms = append(ms, dedup.Marker{EventID: id})
		}
		_, err := st.Claim(context.Background(), tx, group, ms)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	stats := run(t, engineOpts(t, st, h, topic, group))
	if stats.Processed != events-int64(len(before)) || stats.Duplicates != int64(len(before)) {
		t.Errorf("stats %+v; want %d processed, %d duplicates", stats, events-len(before), len(before))
	}
	table := tableName(t, st, schema, handlers.TableAuditLog)
	if n := queryInt(t, st, `SELECT count(*) FROM `+table+` WHERE consumer = $1`, group); n != events-int64(len(before)) {
		t.Errorf("audit rows %d, want %d", n, events-len(before))
	}
	if n := queryInt(t, st, `SELECT count(DISTINCT event_id) FROM `+table+` WHERE consumer = $1 AND event_id = ANY($2)`, group, before); n != 0 {
		t.Errorf("%d events claimed before were recorded", n)
	}
	if n := markerCount(t, st, group); n != events {
		t.Errorf("markers %d, want %d", n, events)
	}
}

// TestClaimWithFallsBackOnADuplicateKey: the claim's statement inserts its markers without ON
// CONFLICT, so a marker that exists already, or a row of the part's that meets a unique key,
// fails it with a unique violation: ClaimWith says ErrClaimFallback, and nothing of the
// statement is written, markers or the part's rows.
func TestClaimWithFallsBackOnADuplicateKey(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	ctx := context.Background()
	table := `"` + schema + `".uq`
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE `+table+` (k text PRIMARY KEY); INSERT INTO `+table+` VALUES ('taken')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(key string, ids ...string) error {
		var ms []dedup.Marker
		for _, id := range ids {
			ms = append(ms, dedup.Marker{EventID: id, Topic: "t", Partition: 0, Offset: int64(len(ms))})
		}
		return st.ClaimWith(ctx, nil, "dup", ms, dedup.ClaimedPart{With: `fw_uq AS (INSERT INTO ` + table + ` VALUES ($1))`, Args: []any{key}})
	}
	check := func(step string, markers, rows int64) {
		t.Helper()
		if got := markerCount(t, st, "dup"); got != markers {
			t.Errorf("%s: markers %d, want %d", step, got, markers)
		}
		if got := queryInt(t, st, `SELECT count(*) FROM `+table); got != rows {
			t.Errorf("%s: the part's rows %d, want %d", step, got, rows)
		}
	}
	if err := claim("taken", "a", "b"); !errors.Is(err, dedup.ErrClaimFallback) {
		t.Errorf("the part's key taken: %v, want ErrClaimFallback", err)
	}
	check("the part's key taken", 0, 1)
	if err := claim("free", "a", "b"); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	check("fresh", 2, 2)
	if err := claim("free-2", "c", "b"); !errors.Is(err, dedup.ErrClaimFallback) {
		t.Errorf("a marker claimed before: %v, want ErrClaimFallback", err)
	}
	check("a marker claimed before", 2, 2)
}
