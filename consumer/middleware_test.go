package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// flaky fails chosen events: retryably on their first failures[id] attempts, or for good.
// Its calls are made from one partition's worker, in order.
type flaky struct {
	failures  map[string]int
	permanent map[string]bool
	// slow: the event's first attempt waits for its context to end (30s at the most).
	slow string
	mu   sync.Mutex
	// cancelled is the error of the slow attempt's context when it ended.
	cancelled error
	// traced is the value traceKey had in the context of each call, handled the events of
	// the calls.
	traced  []any
	handled []string
}

type traceKey struct{}

func (h *flaky) Handle(ctx context.Context, _ *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	id := m.Event.ID
	h.mu.Lock()
	h.traced = append(h.traced, ctx.Value(traceKey{}))
	h.handled = append(h.handled, id)
	h.mu.Unlock()
	if id == h.slow && m.Attempt == 1 {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.cancelled = ctx.Err()
			h.mu.Unlock()
			return 0, ctx.Err()
		case <-time.After(30 * time.Second):
			return 0, errors.New("the attempt was not cancelled")
		}
	}
	switch {
	case h.permanent[id]:
		return 0, consumer.Permanentf("refused %s", id)
	case m.Attempt <= h.failures[id]:
		return 0, consumer.Retryable(fmt.Errorf("busy %s (attempt %d)", id, m.Attempt))
	}
	return consumer.Applied, nil
}

// seenCall is one call a recording middleware saw: when it entered ("enter") or left
// ("leave") it, the event and attempt, and the error it returned.
type seenCall struct {
	step, at, id string
	attempt      int
	err          string
}

// recorder is a team's own middleware: it notes every call through it.
type recorder struct {
	mu    sync.Mutex
	calls []seenCall
}

func (r *recorder) step(name string) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
			r.note(seenCall{step: name, at: "enter", id: m.Event.ID, attempt: m.Attempt})
			out, err := next.Handle(ctx, tx, m)
			c := seenCall{step: name, at: "leave", id: m.Event.ID, attempt: m.Attempt}
			if err != nil {
				c.err = err.Error()
			}
			r.note(c)
			return out, err
		})
	}
}

func (r *recorder) note(c seenCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// of is the calls of event id.
func (r *recorder) of(id string) []seenCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seenCall
	for _, c := range r.calls {
		if c.id == id {
			out = append(out, c)
		}
	}
	return out
}

// produceEvents produces n CloudEvents ev-0 … ev-<n-1> of one aggregate to topic.
func produceEvents(t *testing.T, topic string, n int) {
	t.Helper()
	var krecs []*kgo.Record
	for i := range n {
		krecs = append(krecs, ceRecord(topic, "task-0001", ceValue(t, fmt.Sprintf("ev-%d", i), sample.TypeCreated, "task-0001", i+1)))
	}
	testenv.Produce(t, producer(t), krecs...)
}

// TestMiddlewareOrder: a team's own steps, one outside the built-ins and one between Retry
// and Recover, see each event in the documented order: the outer one once per event, with
// the event settled (nil) when it leaves, the inner one every attempt, with its error.
func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	produceEvents(t, topic, 4)
	h := &flaky{failures: map[string]int{"ev-1": 2}, permanent: map[string]bool{"ev-2": true}}
	rec := &recorder{}
	o := engineOpts(t, st, h, topic, "order")
	o.MaxAttempts = 3
	o.Chain = []consumer.Middleware{rec.step("outer"), consumer.DeadLetter(), consumer.Retry(), rec.step("inner"), consumer.Metrics(), consumer.Recover()}
	stats := run(t, o)
	if stats.Processed != 3 || stats.DeadLettered != 1 || stats.Retried != 2 {
		t.Errorf("stats %+v; want 3 processed, 1 dead-lettered, 2 retries", stats)
	}
	want := map[string][]seenCall{
		"ev-0": {{"outer", "enter", "ev-0", 1, ""}, {"inner", "enter", "ev-0", 1, ""}, {"inner", "leave", "ev-0", 1, ""}, {"outer", "leave", "ev-0", 1, ""}},
		"ev-1": {
			{"outer", "enter", "ev-1", 1, ""},
			{"inner", "enter", "ev-1", 1, ""}, {"inner", "leave", "ev-1", 1, "busy ev-1 (attempt 1)"},
			{"inner", "enter", "ev-1", 2, ""}, {"inner", "leave", "ev-1", 2, "busy ev-1 (attempt 2)"},
			{"inner", "enter", "ev-1", 3, ""}, {"inner", "leave", "ev-1", 3, ""},
			{"outer", "leave", "ev-1", 3, ""},
		},
		"ev-2": {{"outer", "enter", "ev-2", 1, ""}, {"inner", "enter", "ev-2", 1, ""}, {"inner", "leave", "ev-2", 1, "refused ev-2"}, {"outer", "leave", "ev-2", 1, ""}},
	}
	for id, w := range want {
		if got := rec.of(id); !slices.Equal(got, w) {
			t.Errorf("%s: the steps saw\n%v\nwant\n%v", id, got, w)
		}
	}
	dls := readAll(t, dlqTopic)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	if id, _ := header(dls[0], dlq.HeaderEventID); id != "ev-2" {
		t.Errorf("dead letter of %s, want ev-2", id)
	}
	if r, _ := header(dls[0], dlq.HeaderReason); r != dlq.ReasonRejected {
		t.Errorf("reason %s, want rejected", r)
	}
}

// TestNoDeadLetterStep: a chain without DeadLetter leaves a permanent failure unsettled:
// the batch is retried as after an infrastructure failure (up to MaxInfraRetries here), the
// log says the chain has no dead-letter step, and nothing is dead-lettered or committed.
func TestNoDeadLetterStep(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	produceEvents(t, topic, 2)
	h := &flaky{permanent: map[string]bool{"ev-1": true}}
	o := engineOpts(t, st, h, topic, "no-dead-letter")
	o.MaxInfraRetries = 2
	o.Chain = []consumer.Middleware{consumer.Retry(), consumer.Recover()}
	const noStep = "the handler chain has no dead-letter step"
	counts := map[string]*atomic.Int64{noStep: {}}
	o.Logger = slog.New(counting{testLogger(t).Handler(), counts})
	e, err := runEngine(t, o)
	if err == nil || !strings.Contains(err.Error(), "giving up after 2 infrastructure retries") || !strings.Contains(err.Error(), "refused ev-1") {
		t.Fatalf("run: %v; want giving up after 2 infrastructure retries, refused ev-1", err)
	}
	if !strings.Contains(err.Error(), "no dead-letter step") {
		t.Errorf("run: %v; want it to say the chain has no dead-letter step", err)
	}
	if n := counts[noStep].Load(); n != 2 {
		t.Errorf("the log says %d times that the chain has no dead-letter step, want at each of the 2 retries", n)
	}
	if s := e.Stats(); s.InfraRetries != 2 || s.DeadLettered != 0 || s.Processed != 0 {
		t.Errorf("stats %+v; want 2 infrastructure retries, nothing processed or dead-lettered", s)
	}
	if n := queryInt(t, st, `SELECT count(*) FROM `+st.Table()); n != 0 {
		t.Errorf("%d markers, want none", n)
	}
	if dls := readAll(t, dlqTopic); len(dls) != 0 {
		t.Errorf("%d dead letters, want none", len(dls))
	}
}

// TestTimeout: Timeout cancels an attempt that outlives it; the attempt fails retryably and
// the next one handles the event.
func TestTimeout(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	produceEvents(t, topic, 3)
	h := &flaky{slow: "ev-1"}
	o := engineOpts(t, st, h, topic, "timeout")
	o.Chain = []consumer.Middleware{consumer.DeadLetter(), consumer.Retry(), consumer.Timeout(200 * time.Millisecond), consumer.Metrics(), consumer.Recover()}
	stats := run(t, o)
	if stats.Processed != 3 || stats.Retried != 1 || stats.DeadLettered != 0 {
		t.Errorf("stats %+v; want 3 processed after 1 retry", stats)
	}
	if !errors.Is(h.cancelled, context.DeadlineExceeded) {
		t.Errorf("the slow attempt's context ended with %v, want its deadline", h.cancelled)
	}
	if dls := readAll(t, dlqTopic); len(dls) != 0 {
		t.Errorf("%d dead letters", len(dls))
	}
}

// TestTrace: Trace's hook gets each event with a context the handler then sees, and is
// called with the outcome: outside DeadLetter an event that failed for good is settled
// (nil), inside it the hook sees the failure.
func TestTrace(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, _ := topics(t, 1)
	produceEvents(t, topic, 3)
	h := &flaky{permanent: map[string]bool{"ev-1": true}}
	var mu sync.Mutex
	ended := map[string][]string{} // "outer"/"inner" → "id:error" per call
	trace := func(name string) consumer.Middleware {
		return consumer.Trace(func(ctx context.Context, m *consumer.Message) (context.Context, func(error)) {
			id := m.Event.ID
			return context.WithValue(ctx, traceKey{}, name+":"+id), func(err error) {
				mu.Lock()
				defer mu.Unlock()
				ended[name] = append(ended[name], fmt.Sprintf("%s:%v", id, err))
			}
		})
	}
	o := engineOpts(t, st, h, topic, "trace")
	o.Chain = append([]consumer.Middleware{trace("outer")}, consumer.DeadLetter(), consumer.Retry(), trace("inner"), consumer.Recover())
	stats := run(t, o)
	if stats.Processed != 2 || stats.DeadLettered != 1 {
		t.Errorf("stats %+v; want 2 processed, 1 dead-lettered", stats)
	}
	if want := []string{"ev-0:<nil>", "ev-1:<nil>", "ev-2:<nil>"}; !slices.Equal(ended["outer"], want) {
		t.Errorf("outer trace ended %v, want %v", ended["outer"], want)
	}
	if want := []string{"ev-0:<nil>", "ev-1:refused ev-1", "ev-2:<nil>"}; !slices.Equal(ended["inner"], want) {
		t.Errorf("inner trace ended %v, want %v", ended["inner"], want)
	}
	if want := []any{"inner:ev-0", "inner:ev-1", "inner:ev-2"}; !slices.Equal(h.traced, want) {
		t.Errorf("the handler's contexts carried %v, want %v", h.traced, want)
	}
}

// TestVersionGuard: with VersionGuard the claim keeps the older and equal versions of an
// aggregate from the handler: they are marked stale and counted so, the others handled.
func TestVersionGuard(t *testing.T) {
	t.Parallel()
	st, _ := pgStore(t)
	topic, _ := topics(t, 1)
	var krecs []*kgo.Record
	for i, v := range []int{1, 3, 2, 3, 4} {
		krecs = append(krecs, ceRecord(topic, "task-0001", ceValue(t, fmt.Sprintf("ev-%d", i), sample.TypeAssigned, "task-0001", v)))
	}
	krecs = append(krecs, ceRecord(topic, "task-0002", ceValue(t, "ev-unversioned", sample.TypeAssigned, "task-0002", nil)))
	testenv.Produce(t, producer(t), krecs...)
	h := &flaky{}
	o := engineOpts(t, st, h, topic, "guarded")
	o.VersionGuard = true
	stats := run(t, o)
	if stats.Processed != 4 || stats.Stale != 2 || stats.Duplicates != 0 {
		t.Errorf("stats %+v; want 4 processed, 2 stale", stats)
	}
	if want := []string{"ev-0", "ev-1", "ev-4", "ev-unversioned"}; !slices.Equal(h.handled, want) {
		t.Errorf("handled %v, want %v", h.handled, want)
	}
	if n := queryInt(t, st, `SELECT count(*) FROM `+st.Table()+` WHERE consumer = $1 AND outcome = 'stale'`, "guarded"); n != 2 {
		t.Errorf("%d markers stale, want 2", n)
	}
	if n := markerCount(t, st, "guarded"); n != 6 {
		t.Errorf("%d markers, want 6", n)
	}
}
