package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kgo"
)

// webhook is a downstream for the webhook handler that fails with 503 until fixed.
type webhook struct {
	mu        sync.Mutex
	failing   bool
	succeeded map[string]int // Idempotency-Key → successful deliveries
	failed    int
}

var (
	webhooksMu sync.Mutex
	webhooks   = map[*testscript.TestScript]*webhook{}
)

// cmdWebhook is `fw-webhook start VAR | fix | once`: start serves a downstream on 127.0.0.1
// that answers 503 (and sets VAR to its URL); fix makes it answer 200; once checks that no
// Idempotency-Key was delivered successfully more than once and prints the counts.
func cmdWebhook(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fw-webhook start VAR | fix | once")
	}
	webhooksMu.Lock()
	w := webhooks[ts]
	webhooksMu.Unlock()
	switch args[0] {
	case "start":
		if len(args) != 2 {
			ts.Fatalf("usage: fw-webhook start VAR")
		}
		w = &webhook{failing: true, succeeded: map[string]int{}}
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.failing {
				w.failed++
				rw.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.succeeded[r.Header.Get("Idempotency-Key")]++
			rw.WriteHeader(http.StatusOK)
		}))
		ts.Defer(srv.Close)
		webhooksMu.Lock()
		webhooks[ts] = w
		webhooksMu.Unlock()
		ts.Defer(func() {
			webhooksMu.Lock()
			delete(webhooks, ts)
			webhooksMu.Unlock()
		})
		ts.Setenv(args[1], srv.URL)
	case "fix":
		if w == nil {
			ts.Fatalf("fw-webhook fix: not started")
		}
		w.mu.Lock()
		w.failing = false
		w.mu.Unlock()
	case "once":
		if w == nil {
			ts.Fatalf("fw-webhook once: not started")
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for k, n := range w.succeeded {
			if n != 1 {
				ts.Fatalf("fw-webhook: key %s delivered %d times", k, n)
			}
		}
		fmt.Fprintf(ts.Stdout(), "delivered %d keys once each; %d failed attempts\n", len(w.succeeded), w.failed)
	default:
		ts.Fatalf("usage: fw-webhook start VAR | fix | once")
	}
}

// plainConsumer is a consumer that knows nothing of fieldwork: a franz-go group member
// (client id plain-consumer) that commits after each record and retries a record whose value
// is POISON forever, as a consumer without a dead-letter path does.
type plainConsumer struct {
	cl      *kgo.Client
	cancel  context.CancelFunc
	done    chan struct{}
	stuck   chan struct{}
	mu      sync.Mutex
	handled []string
	once    sync.Once
}

var (
	plainMu        sync.Mutex
	plainConsumers = map[*testscript.TestScript]*plainConsumer{}
)

// cmdPlainConsumer is `fw-plain-consumer start GROUP TOPIC | stuck | stop`: start runs a
// plainConsumer on $FIELDWORK_BROKERS in the background; stuck waits (up to 30s) until it
// retries a poison record; stop makes it leave the group and prints the keys it handled.
func cmdPlainConsumer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fw-plain-consumer start GROUP TOPIC | stuck | stop")
	}
	plainMu.Lock()
	c := plainConsumers[ts]
	plainMu.Unlock()
	switch args[0] {
	case "start":
		if len(args) != 3 || c != nil {
			ts.Fatalf("usage: fw-plain-consumer start GROUP TOPIC (one at a time)")
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(ts.Getenv("FIELDWORK_BROKERS"), ",")...),
			kgo.ConsumerGroup(args[1]), kgo.ConsumeTopics(args[2]), kgo.DisableAutoCommit(),
			kgo.ClientID("plain-consumer"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ts.Check(err)
		ctx, cancel := context.WithCancel(context.Background())
		c = &plainConsumer{cl: cl, cancel: cancel, done: make(chan struct{}), stuck: make(chan struct{})}
		go c.run(ctx)
		plainMu.Lock()
		plainConsumers[ts] = c
		plainMu.Unlock()
		ts.Defer(c.stop)
	case "stuck":
		if c == nil {
			ts.Fatalf("fw-plain-consumer stuck: none started")
		}
		select {
		case <-c.stuck:
		case <-time.After(30 * time.Second):
			ts.Fatalf("the plain consumer did not reach a poison record within 30s")
		}
	case "stop":
		if c == nil {
			ts.Fatalf("fw-plain-consumer stop: none started")
		}
		c.stop()
		plainMu.Lock()
		delete(plainConsumers, ts)
		plainMu.Unlock()
		c.mu.Lock()
		fmt.Fprintf(ts.Stdout(), "handled %s\n", strings.Join(c.handled, " "))
		c.mu.Unlock()
	default:
		ts.Fatalf("usage: fw-plain-consumer start GROUP TOPIC | stuck | stop")
	}
}

func (c *plainConsumer) run(ctx context.Context) {
	defer close(c.done)
	var once sync.Once
	for ctx.Err() == nil {
		for _, rec := range c.cl.PollFetches(ctx).Records() {
			if string(rec.Value) == "POISON" {
				once.Do(func() { close(c.stuck) })
				<-ctx.Done()
				return
			}
			c.mu.Lock()
			c.handled = append(c.handled, string(rec.Key))
			c.mu.Unlock()
			_ = c.cl.CommitRecords(ctx, rec)
		}
	}
}

// stop ends the consumer and makes it leave its group; it may be called more than once.
func (c *plainConsumer) stop() {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		c.cl.Close()
	})
}
