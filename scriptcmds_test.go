package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
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
