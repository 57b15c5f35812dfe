package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// TestDuplicatesAbsorbed: producer-retry duplicates (the same event id twice) and a whole
// range produced again have exactly one effect.
func TestDuplicatesAbsorbed(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 3)
	cl := producer(t)
	recs, man := produceSample(t, cl, topic, sample.Options{Seed: 11, Aggregates: 30, EventsPerAggregate: 6, DuplicateFraction: 0.25})

	const group = "audit-dups"
	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	stats := run(t, engineOpts(t, st, h, topic, group))
	unique := int64(man.UniqueEventIDs())
	if stats.Processed != unique || stats.Duplicates != int64(len(man.Duplicates)) || stats.DeadLettered != 0 {
		t.Errorf("first run: %+v; want processed %d, duplicates %d", stats, unique, len(man.Duplicates))
	}

	// An operator replays the whole range: every record again, new offsets, same ids.
	testenv.Produce(t, cl, sample.KgoRecords(topic, recs)...)
	stats = run(t, engineOpts(t, st, h, topic, group))
	if stats.Processed != 0 || stats.Duplicates != int64(len(recs)) || stats.Records != int64(len(recs)) {
		t.Errorf("replay run: %+v; want every one of the %d records a duplicate", stats, len(recs))
	}

	audit := tableName(t, st, schema, handlers.TableAuditLog)
	if n := queryInt(t, st, `SELECT count(*) FROM `+audit); n != unique {
		t.Errorf("audit rows = %d, want %d", n, unique)
	}
	if n := queryInt(t, st, `SELECT count(*) FROM (SELECT event_id FROM `+audit+` GROUP BY event_id HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d events recorded more than once", n)
	}
	if n := markerCount(t, st, group); n != unique {
		t.Errorf("markers = %d, want %d", n, unique)
	}
	for _, d := range man.Duplicates[:3] {
		if n := queryInt(t, st, `SELECT count(*) FROM `+audit+` WHERE event_id = $1`, d.EventID); n != 1 {
			t.Errorf("duplicated event %s recorded %d times", d.EventID, n)
		}
	}
}

// TestStaleVersionsAreNoOps: an older version re-emitted after a newer one does not change
// the projection, and is still marked, with the outcome stale (dedup.OutcomeStale) that the
// applied events' markers do not have: through the batch handler and event by event.
func TestStaleVersionsAreNoOps(t *testing.T) {
	t.Parallel()
	for _, perEvent := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "per-event"}[perEvent], func(t *testing.T) {
			st, schema := pgStore(t)
			topic, _ := topics(t, 2)
			_, man := produceSample(t, producer(t), topic, sample.Options{Seed: 12, Aggregates: 12, EventsPerAggregate: 6, DuplicateFraction: 0.1, Stale: 8})
			const group = "projection-stale"
			h := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
			o := engineOpts(t, st, h, topic, group)
			o.PerEvent = perEvent
			stats := run(t, o)
			if stats.Stale != int64(len(man.Stale)) || stats.Processed != int64(man.Events) || stats.DeadLettered != 0 {
				t.Errorf("stats %+v; want %d stale, %d processed", stats, len(man.Stale), man.Events)
			}
			checkProjection(t, st, schema, group, man)
			var stale []string
			for _, s := range man.Stale {
				rows, err := st.Get(context.Background(), s.EventID, group)
				if err != nil || len(rows) != 1 {
					t.Errorf("stale event %s: markers %v, %v; want it marked", s.EventID, rows, err)
				}
				stale = append(stale, s.EventID)
			}
			var all []string // every record's event id: the applied events' and the stale ones'
			for _, id := range man.EventIDs {
				if id != "" {
					all = append(all, id)
				}
			}
			outcomes, err := st.Outcomes(context.Background(), group, all)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range stale {
				if outcomes[id] != dedup.OutcomeStale {
					t.Errorf("stale event %s: outcome %q, want %q", id, outcomes[id], dedup.OutcomeStale)
				}
			}
			if len(outcomes) != len(stale) {
				t.Errorf("%d markers say stale, want the %d stale events'", len(outcomes), len(stale))
			}
		})
	}
}

// checkProjection fails t unless task_state holds every effect of the stream exactly once
// (invariant.Projection, the one check of it), and returns the applied and stale counts.
func checkProjection(t testing.TB, st *dedup.Store, schema, consumer string, man sample.Manifest) (applied, stale int64) {
	t.Helper()
	f, probs, err := invariant.Projection(context.Background(), st, schema, consumer, man)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
	return f.Applied, f.Stale
}

func tableName(t testing.TB, st *dedup.Store, schema, name string) string {
	t.Helper()
	tn, err := handlers.Table(st.Driver(), schema, name)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// ceValue is a CloudEvents structured value for hand-made events.
func ceValue(t testing.TB, id, typ, aggID string, version any) []byte {
	t.Helper()
	m := map[string]any{
		"specversion": "1.0", "id": id, "type": typ, "source": "/test", "aggregatetype": "task",
		"aggregateid": aggID, "time": "2025-03-03T09:00:00Z",
		"data": map[string]any{"task_id": aggID, "status": "open", "title": "t"},
	}
	if version != nil {
		m["aggregateversion"] = version
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ceRecord(topic string, key string, value []byte) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: value,
		Headers: []kgo.RecordHeader{{Key: sample.HeaderContentType, Value: []byte(sample.ContentType)}}}
}

// TestPoisonDeadLettered: malformed records, an unsupported type and an event the handler
// rejects land in the dead-letter topic with every fw.dlq.* header, carry no marker, and the
// partition keeps moving past them.
func TestPoisonDeadLettered(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	recs, man, err := sample.Generate(sample.Options{Seed: 13, Aggregates: 5, EventsPerAggregate: 4, Poison: 3})
	if err != nil {
		t.Fatal(err)
	}
	krecs := sample.KgoRecords(topic, recs)
	// After the sample: an unknown type (unsupported), a task event with no version (the
	// projection rejects it), and a good event that must still be applied after them.
	krecs = append(krecs,
		ceRecord(topic, "task-0001", ceValue(t, "ev-unknown-type", "task.archived", "task-0001", 99)),
		ceRecord(topic, "task-0002", ceValue(t, "ev-no-version", sample.TypeAssigned, "task-0002", nil)),
		ceRecord(topic, "task-0100", ceValue(t, "ev-after-poison", sample.TypeCreated, "task-0100", 1)),
	)
	testenv.Produce(t, producer(t), krecs...)
	offsets := map[string]int64{} // "kind" → offset
	for i, p := range man.Poison {
		offsets["poison-"+strconv.Itoa(i)] = krecs[p.Index].Offset
	}
	n := len(krecs)
	offsets["unsupported"], offsets["rejected"] = krecs[n-3].Offset, krecs[n-2].Offset

	const group = "projection-poison"
	h := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
	started := time.Now().UTC().Add(-time.Second)
	reg := prometheus.NewRegistry()
	o := engineOpts(t, st, h, topic, group)
	o.Registerer = reg
	stats := run(t, o)
	if stats.DeadLettered != 5 || stats.Processed != int64(man.Events)+1 {
		t.Errorf("stats %+v; want 5 dead-lettered, %d processed", stats, man.Events+1)
	}
	checkMetrics(t, reg, map[string]float64{
		`fieldwork_consume_events_total{outcome="processed",topic="` + topic + `"}`:                           float64(man.Events) + 1,
		`fieldwork_consume_events_total{outcome="dead_lettered",topic="` + topic + `"}`:                       5,
		`fieldwork_consume_dead_letters_total{reason="malformed",topic="` + topic + `",writer="fieldwork"}`:   3,
		`fieldwork_consume_dead_letters_total{reason="unsupported",topic="` + topic + `",writer="fieldwork"}`: 1,
		`fieldwork_consume_dead_letters_total{reason="rejected",topic="` + topic + `",writer="fieldwork"}`:    1,
		`fieldwork_consume_handler_errors_total{class="permanent"}`:                                           1,
		`fieldwork_consume_batch_duration_seconds_count{topic="` + topic + `"}`:                               float64(stats.Batches),
		`fieldwork_consume_projection_gaps_total`:                                                             -1, // not registered here
	})

	dls := readAll(t, dlqTopic)
	if len(dls) != 5 {
		t.Fatalf("%d dead letters, want 5", len(dls))
	}
	byOffset := map[int64]*kgo.Record{}
	for _, d := range dls {
		off, _ := header(d, dlq.HeaderOffset)
		o, _ := strconv.ParseInt(off, 10, 64)
		byOffset[o] = d
	}
	want := []struct {
		name, reason, eventID, attempts string
	}{
		{"poison-0", dlq.ReasonMalformed, man.Poison[0].EventID, "1"},
		{"poison-1", dlq.ReasonMalformed, man.Poison[1].EventID, "1"},
		{"poison-2", dlq.ReasonMalformed, man.Poison[2].EventID, "1"},
		{"unsupported", dlq.ReasonUnsupported, "ev-unknown-type", "1"},
		{"rejected", dlq.ReasonRejected, "ev-no-version", "1"},
	}
	for _, w := range want {
		off := offsets[w.name]
		d := byOffset[off]
		if d == nil {
			t.Errorf("%s (offset %d): no dead letter", w.name, off)
			continue
		}
		orig := krecs[slices.IndexFunc(krecs, func(r *kgo.Record) bool { return r.Offset == off })]
		if string(d.Key) != string(orig.Key) || string(d.Value) != string(orig.Value) || len(d.Headers) < len(orig.Headers) ||
			d.Headers[0].Key != orig.Headers[0].Key || string(d.Headers[0].Value) != string(orig.Headers[0].Value) {
			t.Errorf("%s: key, value or original headers not kept byte for byte", w.name)
		}
		exact := map[string]string{
			dlq.HeaderTopic: topic, dlq.HeaderPartition: "0", dlq.HeaderOffset: strconv.FormatInt(off, 10),
			dlq.HeaderTimestamp: orig.Timestamp.UTC().Format(time.RFC3339Nano), dlq.HeaderGroup: group,
			dlq.HeaderHandler: handlers.NameProjection, dlq.HeaderReason: w.reason, dlq.HeaderAttempts: w.attempts,
		}
		if w.eventID != "" {
			exact[dlq.HeaderEventID] = w.eventID
		} else if v, ok := header(d, dlq.HeaderEventID); ok {
			t.Errorf("%s: fw.dlq.event_id %q for a record without a readable id", w.name, v)
		}
		for k, v := range exact {
			if got, ok := header(d, k); !ok || got != v {
				t.Errorf("%s: header %s = %q (present %v), want %q", w.name, k, got, ok, v)
			}
		}
		if e, _ := header(d, dlq.HeaderError); e == "" {
			t.Errorf("%s: no fw.dlq.error", w.name)
		}
		for _, k := range []string{dlq.HeaderFirstFailedAt, dlq.HeaderFailedAt} {
			v, _ := header(d, k)
			ts, err := time.Parse(time.RFC3339Nano, v)
			if err != nil || ts.Before(started) || ts.After(time.Now().Add(time.Second)) {
				t.Errorf("%s: %s = %q, want an RFC 3339 time of this run", w.name, k, v)
			}
		}
		if w.eventID != "" {
			if rows, err := st.Get(context.Background(), w.eventID, group); err != nil || len(rows) != 0 {
				t.Errorf("%s: dead-lettered event %s has markers %v (%v)", w.name, w.eventID, rows, err)
			}
		}
	}
	if n := queryInt(t, st, `SELECT count(*) FROM `+tableName(t, st, schema, handlers.TableTaskState)+` WHERE aggregate_id = 'task-0100'`); n != 1 {
		t.Errorf("the event after the poison was not applied")
	}
}

// rejectingHandler fails chosen events: permanently, or retryably every time.
type rejectingHandler struct {
	permanent, retryable map[string]bool
	calls                map[string]int
}

func (h *rejectingHandler) Name() string                             { return "rejecting" }
func (h *rejectingHandler) Migrate(context.Context, *inbox.Tx) error { return nil }
func (h *rejectingHandler) Check(context.Context, *inbox.Tx) error   { return nil }
func (h *rejectingHandler) String() string                           { return fmt.Sprint(h.calls) }
func (h *rejectingHandler) Handle(ctx context.Context, _ *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	ev := m.Event
	h.calls[ev.ID]++
	switch {
	case h.permanent[ev.ID]:
		return 0, consumer.Permanentf("refused %s", ev.ID)
	case h.retryable[ev.ID]:
		return 0, consumer.Retryable(fmt.Errorf("provider busy (attempt %d)", m.Attempt))
	}
	return consumer.Applied, nil
}

// TestRetryableExhausted: a handler that keeps failing retryably is tried MaxAttempts times
// in place, then the event is dead-lettered as exhausted; a permanent failure is
// dead-lettered at once; neither keeps a marker, and the other events commit.
func TestRetryableExhausted(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	var krecs []*kgo.Record
	for i := range 6 {
		id := fmt.Sprintf("ev-%d", i)
		krecs = append(krecs, ceRecord(topic, "task-0001", ceValue(t, id, sample.TypeCreated, "task-0001", i+1)))
	}
	testenv.Produce(t, producer(t), krecs...)
	h := &rejectingHandler{permanent: map[string]bool{"ev-1": true}, retryable: map[string]bool{"ev-3": true}, calls: map[string]int{}}
	o := engineOpts(t, st, h, topic, "rejecting")
	o.MaxAttempts = 3
	stats := run(t, o)
	if stats.Processed != 4 || stats.DeadLettered != 2 || stats.Retried != 2 {
		t.Errorf("stats %+v; want 4 processed, 2 dead-lettered, 2 retries", stats)
	}
	if h.calls["ev-1"] != 1 || h.calls["ev-3"] != 3 || h.calls["ev-5"] != 1 {
		t.Errorf("calls %v; want ev-1 once, ev-3 three times, the others once", h.calls)
	}
	dls := readAll(t, dlqTopic)
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dls))
	}
	for _, d := range dls {
		id, _ := header(d, dlq.HeaderEventID)
		reason, _ := header(d, dlq.HeaderReason)
		attempts, _ := header(d, dlq.HeaderAttempts)
		first, _ := header(d, dlq.HeaderFirstFailedAt)
		last, _ := header(d, dlq.HeaderFailedAt)
		switch id {
		case "ev-1":
			if reason != dlq.ReasonRejected || attempts != "1" || first != last {
				t.Errorf("ev-1: reason %s attempts %s first %s last %s", reason, attempts, first, last)
			}
		case "ev-3":
			if reason != dlq.ReasonExhausted || attempts != "3" || first >= last {
				t.Errorf("ev-3: reason %s attempts %s first %s last %s", reason, attempts, first, last)
			}
		default:
			t.Errorf("unexpected dead letter %s", id)
		}
		if rows, _ := st.Get(context.Background(), id, "rejecting"); len(rows) != 0 {
			t.Errorf("%s is dead-lettered and marked", id)
		}
	}
	if n := queryInt(t, st, `SELECT count(*) FROM `+st.Table()+` WHERE consumer = 'rejecting'`); n != 4 {
		t.Errorf("%d markers, want 4", n)
	}
}

// checkMetrics compares gathered samples, named as in the exposition format with labels in
// alphabetical order, with want; -1 means the sample must be absent.
func checkMetrics(t testing.TB, reg *prometheus.Registry, want map[string]float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					labels += ","
				}
				labels += l.GetName() + `="` + l.GetValue() + `"`
			}
			name := mf.GetName()
			if labels != "" {
				labels = "{" + labels + "}"
			}
			switch {
			case m.GetCounter() != nil:
				got[name+labels] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[name+labels] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				got[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v < 0 && ok:
			t.Errorf("metric %s present", k)
		case v >= 0 && (!ok || g != v):
			t.Errorf("metric %s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// TestMaxInfraRetries: a handler failing on infrastructure every time is retried as a
// whole batch, never dead-lettered, and with MaxInfraRetries the engine gives up with an
// error, leaving nothing marked and the offset uncommitted.
func TestMaxInfraRetries(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	testenv.Produce(t, producer(t), ceRecord(topic, "task-0001", ceValue(t, "ev-1", sample.TypeCreated, "task-0001", 1)))
	o := engineOpts(t, st, brokenDB{}, topic, "broken")
	o.MaxInfraRetries = 3
	e, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = e.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 infrastructure retries") {
		t.Fatalf("run: %v; want giving up after 3 retries", err)
	}
	if st := e.Stats(); st.InfraRetries != 3 || st.DeadLettered != 0 || st.Processed != 0 {
		t.Errorf("stats %+v", st)
	}
	if n := queryInt(t, st, `SELECT count(*) FROM `+st.Table()); n != 0 {
		t.Errorf("%d markers", n)
	}
	if dls := readAll(t, dlqTopic); len(dls) != 0 {
		t.Errorf("%d dead letters", len(dls))
	}
	cl := testenv.Client(t)
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "broken")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.At >= 0 {
		t.Errorf("offset committed: %d", o.At)
	}
}

// brokenDB fails as a dropped database connection does.
type brokenDB struct{}

func (brokenDB) Name() string                             { return "broken" }
func (brokenDB) Migrate(context.Context, *inbox.Tx) error { return nil }
func (brokenDB) Handle(context.Context, *inbox.Tx, *consumer.Message) (consumer.Outcome, error) {
	return 0, fmt.Errorf("write: %w", io.ErrUnexpectedEOF)
}
