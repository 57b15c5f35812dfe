package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdExit is `fw-exit CODE PROGRAM ARGS...`: it runs any program (a runbook script, say) and
// fails unless it exits with CODE. Its stdout and stderr are kept for the next stdout/stderr
// checks, as after exec.
func cmdExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fw-exit CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("fw-exit: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Logf("stdout:\n%s\nstderr:\n%s", ts.ReadFile("stdout"), ts.ReadFile("stderr"))
		ts.Fatalf("fw-exit: %s exited %d, want %d", args[1], got, want)
	}
}

// cmdCreateDB is `fw-create-db VAR`: it creates a PostgreSQL database of its own on
// $FIELDWORK_TEST_DSN's server, sets VAR to its DSN, and drops it when the script ends, so a
// script can use the store's default schema without meeting another script's.
func cmdCreateDB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fw-create-db VAR")
	}
	base := os.Getenv("FIELDWORK_TEST_DSN")
	if base == "" {
		ts.Fatalf("fw-create-db: FIELDWORK_TEST_DSN is not set")
	}
	name := ts.Getenv("FW_SCHEMA")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	ts.Check(err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE DATABASE "`+name+`"`)
	ts.Check(err)
	ts.Defer(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	})
	u, err := url.Parse(base)
	ts.Check(err)
	u.Path = "/" + name
	ts.Setenv(args[0], u.String())
}

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
