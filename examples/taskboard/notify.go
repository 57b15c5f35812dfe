package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/consumer"
)

// HeaderIdempotencyKey is the request header of a notification that carries its key.
const HeaderIdempotencyKey = "Idempotency-Key"

// notifier POSTs notifications to one URL.
type notifier struct {
	url    string
	shown  string // the URL without user info or query, for the deliveries table and errors
	client *http.Client
}

func newNotifier(raw string, timeout time.Duration) (*notifier, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--notify-url %q: want an absolute http:// or https:// URL", raw)
	}
	shown := *u
	shown.User, shown.RawQuery, shown.Fragment = nil, "", ""
	return &notifier{url: raw, shown: shown.String(), client: &http.Client{Timeout: timeout}}, nil
}

// post sends body with its idempotency key and returns the 2xx status. A transport failure,
// 408, 429 or 5xx is consumer.Retryable (the runner tries again with backoff, then
// dead-letters the event as exhausted); any other status is consumer.Permanent (dead-lettered
// at once), with the error class http_<code>.
func (n *notifier) post(ctx context.Context, key string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return 0, consumer.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, key)
	resp, err := n.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, consumer.Retryable(fmt.Errorf("POST %s: %w", n.shown, err))
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return code, nil
	}
	err = consumer.WithErrorClass(fmt.Sprintf("http_%d", code),
		fmt.Errorf("POST %s: %s: %s", n.shown, resp.Status, strings.Join(strings.Fields(string(head)), " ")))
	if code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 {
		return 0, consumer.Retryable(err)
	}
	return 0, consumer.Permanent(err)
}
