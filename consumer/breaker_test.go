package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// runTripped runs an engine that must stop on its breaker and returns the trip.
func runTripped(t testing.TB, o options) (*consumer.TrippedError, consumer.Stats) {
	t.Helper()
	e, err := runEngine(t, o)
	var te *consumer.TrippedError
	if !errors.As(err, &te) {
		t.Fatalf("run: %v; want the breaker tripped (stats %+v)", err, e.Stats())
	}
	if k := fwerr.KindOf(err); k != fwerr.KindTripped {
		t.Errorf("kind %v, want KindTripped (exit 8)", k)
	}
	return te, e.Stats()
}

// dlqOffsets are the source offsets of topic's dead letters, by source partition, and how
// many dead letters name each record.
func dlqOffsets(t testing.TB, dlqTopic string) map[int32]map[int64]int {
	t.Helper()
	out := map[int32]map[int64]int{}
	for _, r := range readAll(t, dlqTopic) {
		d := dlq.Parse(r)
		if d.OriginalPartition == nil || d.OriginalOffset == nil {
			t.Fatalf("dead letter %d without coordinates", r.Offset)
		}
		p := *d.OriginalPartition
		if out[p] == nil {
			out[p] = map[int64]int{}
		}
		out[p][*d.OriginalOffset]++
	}
	return out
}

// checkNothingPastTrip: on a topic whose every record fails, a partition's committed offset
// is exactly its dead letters: every offset before it dead-lettered once, none after it.
func checkNothingPastTrip(t testing.TB, cl *kgo.Client, group, topic, dlqTopic string) (committed map[int32]int64, written int) {
	t.Helper()
	_, committed = groupLag(t, cl, group, topic)
	got := dlqOffsets(t, dlqTopic)
	for p, c := range committed {
		for off, n := range got[p] {
			if off >= c {
				t.Errorf("partition %d: offset %d dead-lettered but the group committed only %d", p, off, c)
			}
			if n != 1 {
				t.Errorf("partition %d: offset %d dead-lettered %d times", p, off, n)
			}
		}
		for off := int64(0); off < c; off++ {
			if got[p][off] == 0 {
				t.Errorf("partition %d: offset %d committed (group at %d) but never dead-lettered: lost", p, off, c)
			}
		}
		written += len(got[p])
	}
	return committed, written
}

// TestBreakerStopsUnreadableTopic: a topic on three partitions whose every record is
// unreadable trips the breaker after --breaker-consecutive dead letters instead of emptying
// the topic into its dead-letter topic: Run returns the trip (exit 8) naming the dominant
// reason and its count, no more dead letters are written than the limit, no partition's
// offset is committed past its dead letters, and the metrics say so. A second run with the
// breaker off dead-letters the rest: every record exactly once.
func TestBreakerStopsUnreadableTopic(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 3)
	const n, limit = 300, 20
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%03d", i), Value: fmt.Appendf(nil, "unreadable %d", i)}
	}
	cl := producer(t)
	testenv.Produce(t, cl, recs...)

	group := testenv.Name(t, "unreadable")
	h := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
	o := engineOpts(t, st, h, topic, group)
	o.Breaker = breaker{Consecutive: limit}
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	te, stats := runTripped(t, o)

	if te.Rule != consumer.BreakerRuleConsecutive || te.Limit != limit || te.Consecutive != limit+1 {
		t.Errorf("trip %+v; want the consecutive rule, %d in a row over %d", te, limit+1, limit)
	}
	if te.Dominant.Reason != dlq.ReasonMalformed || te.Dominant.Count != limit+1 || te.Failed != limit+1 {
		t.Errorf("dominant %+v of %d failed; want malformed, %d of %d", te.Dominant, te.Failed, limit+1, limit+1)
	}
	msg := te.Error()
	for _, want := range []string{"dead-letter breaker tripped at " + topic + "/", "most common failure: malformed, 21 of the 21 failed", "20 dead letters written"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if stats.DeadLettered != limit || te.DeadLettered != limit {
		t.Errorf("stats %+v, trip %d dead-lettered; want %d", stats, te.DeadLettered, limit)
	}
	committed, written := checkNothingPastTrip(t, cl, group, topic, dlqTopic)
	if written != limit {
		t.Errorf("%d dead letters in %s, want %d (the limit)", written, dlqTopic, limit)
	}
	if c := committed[te.Partition]; c != te.Offset {
		t.Errorf("tripping partition %d committed at %d, want the trip point %d", te.Partition, c, te.Offset)
	}
	checkMetrics(t, reg, map[string]float64{
		`fieldwork_consume_breaker_trips_total{rule="consecutive"}`:                                         1,
		`fieldwork_consume_breaker_tripped`:                                                                 1,
		`fieldwork_consume_breaker_window_failures`:                                                         limit + 1,
		`fieldwork_consume_dead_letters_total{reason="malformed",topic="` + topic + `",writer="fieldwork"}`: limit,
	})

	// The operator lets them through (--no-breaker): each of the others dead-lettered once.
	o = engineOpts(t, st, h, topic, group)
	o.Breaker = breaker{Off: true}
	if s := run(t, o); s.DeadLettered != n-limit {
		t.Errorf("second run: %+v; want the other %d dead-lettered", s, n-limit)
	}
	got := dlqOffsets(t, dlqTopic)
	total := 0
	for p, offs := range got {
		for off, c := range offs {
			if c != 1 {
				t.Errorf("%d/%d dead-lettered %d times", p, off, c)
			}
		}
		total += len(offs)
	}
	if total != n {
		t.Errorf("%d records dead-lettered in all, want %d", total, n)
	}
	if behind, _ := groupLag(t, cl, group, topic); len(behind) > 0 {
		t.Errorf("partitions behind after the second run: %v", behind)
	}
}

// rejectAll is a release with a bug that rejects every event, on the batch path
// (HandleBatch fails on the first event) and event by event alike.
type rejectAll struct{ named }

func (h rejectAll) Handle(context.Context, *inbox.Tx, *consumer.Message) (consumer.Outcome, error) {
	return 0, consumer.Permanentf("release 2.0 cannot apply tasks: column \"due\" does not exist")
}

func (h rejectAll) HandleBatch(ctx context.Context, tx *inbox.Tx, evs []*consumer.Message) (consumer.BatchResult, error) {
	_, err := h.Handle(ctx, tx, evs[0])
	return consumer.BatchResult{Err: err}, nil
}

// TestBreakerStopsRejectingHandler: a handler deployed with a bug that rejects everything,
// on the batch path and event by event, over a topic of four partitions whose first records
// were handled by the release before: the breaker trips after the limit, the group's
// offsets stop at the dead letters, and the fixed release then handles the rest: markers
// plus dead letters are the events, none lost and none both.
func TestBreakerStopsRejectingHandler(t *testing.T) {
	t.Parallel()
	for _, perEvent := range []bool{false, true} {
		t.Run(fmt.Sprintf("per-event=%v", perEvent), func(t *testing.T) {
			t.Parallel()
			st, schema := pgStore(t)
			topic, dlqTopic := topics(t, 4)
			recs, man, err := sample.Generate(sample.Options{Seed: 91, Aggregates: 80, EventsPerAggregate: 5})
			if err != nil {
				t.Fatal(err)
			}
			cl := producer(t)
			krecs := sample.KgoRecords(topic, recs)
			const good, limit = 40, 30
			testenv.Produce(t, cl, krecs[:good]...)
			group := testenv.Name(t, "rejectall")
			fixed := handler(t, st, schema, handlers.NameProjection, group, handlers.Config{})
			if s := run(t, engineOpts(t, st, fixed, topic, group)); s.Processed != good {
				t.Fatalf("the release before: %+v", s)
			}
			_, before := groupLag(t, cl, group, topic)
			testenv.Produce(t, cl, krecs[good:]...)

			o := engineOpts(t, st, rejectAll{fixed}, topic, group)
			o.PerEvent = perEvent
			o.Breaker = breaker{Consecutive: limit}
			te, _ := runTripped(t, o)
			if te.Dominant.Reason != dlq.ReasonRejected || !strings.Contains(te.Dominant.Error, "release 2.0 cannot apply tasks") ||
				te.Dominant.Count != limit+1 || te.Rule != consumer.BreakerRuleConsecutive {
				t.Errorf("trip %+v; want rejected by release 2.0, %d of them", te, limit+1)
			}
			if !strings.Contains(te.Error(), "most common failure: rejected, 31 of the 31 failed") {
				t.Errorf("message: %s", te)
			}
			_, after := groupLag(t, cl, group, topic)
			dead := dlqOffsets(t, dlqTopic)
			written := 0
			for p, c := range after {
				from := max(before[p], 0)
				for off := from; off < c; off++ {
					if dead[p][off] != 1 {
						t.Errorf("%d/%d committed past by the buggy release but dead-lettered %d times", p, off, dead[p][off])
					}
				}
				for off := range dead[p] {
					if off >= c || off < from {
						t.Errorf("%d/%d dead-lettered outside the committed range [%d, %d)", p, off, from, c)
					}
				}
				written += len(dead[p])
			}
			if written > limit || written == 0 {
				t.Errorf("%d dead letters written; want at most %d", written, limit)
			}

			// The fix: the rest is handled, nothing lost.
			if s := run(t, engineOpts(t, st, fixed, topic, group)); s.DeadLettered != 0 {
				t.Errorf("fixed release: %+v", s)
			}
			markers := markerCount(t, st, group)
			if markers+int64(written) != int64(man.Events) {
				t.Errorf("%d markers + %d dead letters, want the %d events", markers, written, man.Events)
			}
			for _, r := range readAll(t, dlqTopic) {
				id, _ := header(r, dlq.HeaderEventID)
				if rows, _ := st.Get(context.Background(), id, group); len(rows) != 0 {
					t.Errorf("%s is dead-lettered and marked", id)
				}
			}
			if behind, _ := groupLag(t, cl, group, topic); len(behind) > 0 {
				t.Errorf("partitions behind after the fix: %v", behind)
			}
		})
	}
}

// oneInThree handles every third record (by offset) and rejects the others: too many fail,
// never more than two in a row.
type oneInThree struct{ named }

func (h oneInThree) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	ev, rec := m.Event, m.Record
	if rec.Offset%3 != 0 {
		return 0, consumer.Permanentf("task %s: offset %d refused", ev.AggregateID, rec.Offset)
	}
	return h.named.Handle(ctx, tx, m)
}

// TestBreakerRatio: two records of three fail, never more than two in a row: the ratio rule
// trips once more than --breaker-ratio of the window failed, at the exact record, naming the
// cause counted across different messages (one fingerprint).
func TestBreakerRatio(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	cl := producer(t)
	produceSample(t, cl, topic, sample.Options{Seed: 92, Aggregates: 30, EventsPerAggregate: 2})
	group := testenv.Name(t, "ratio")
	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	o := engineOpts(t, st, oneInThree{h}, topic, group)
	o.Breaker = breaker{Ratio: 0.5, Window: 30}
	te, _ := runTripped(t, o)
	// Failures at 1, 2, 4, 5, …: the 16th (more than 15 of 30) is offset 23, the 24th record.
	if te.Rule != consumer.BreakerRuleRatio || te.Offset != 23 || te.Failed != 16 || te.Records != 24 || te.Limit != 15 {
		t.Errorf("trip %+v; want the ratio rule at offset 23, 16 of 24 failed, limit 15", te)
	}
	if te.Dominant.Count != 16 || te.Dominant.Reason != dlq.ReasonRejected {
		t.Errorf("dominant %+v; want 16 rejected", te.Dominant)
	}
	if !strings.Contains(te.Error(), "16 of the last 24 records failed (more than 15)") {
		t.Errorf("message: %s", te)
	}
	dead := dlqOffsets(t, dlqTopic)[0]
	if len(dead) != 15 {
		t.Errorf("%d dead letters, want 15", len(dead))
	}
	for off := range dead {
		if off >= 23 {
			t.Errorf("offset %d dead-lettered past the trip", off)
		}
	}
	if _, c := groupLag(t, cl, group, topic); c[0] != 23 {
		t.Errorf("committed %d, want 23", c[0])
	}
}
