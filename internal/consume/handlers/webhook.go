package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/printable"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// DefaultWebhookTimeout bounds one delivery attempt.
const DefaultWebhookTimeout = 10 * time.Second

// HeaderIdempotencyKey is the request header that carries consumer.IdempotencyKey.
const HeaderIdempotencyKey = "Idempotency-Key"

// webhook POSTs each event to a URL and records the delivery in webhook_deliveries, in the
// consumer's transaction.
//
// The request carries Idempotency-Key: consumer.IdempotencyKey(consumer, event id), the same
// on every attempt and every redelivery, so a receiver that honours it acts once even when
// fieldwork sends twice (a crash between the POST and the commit, a retry after a 503). The
// body is the decoded event as JSON (the fields of consumer.Event, snake_case).
//
// Failures: a transport error (refused, reset, timeout), 408, 429 and any 5xx are retryable
// (retried in place, then dead-lettered as exhausted); a 3xx or any other 4xx is permanent
// (dead-lettered as rejected at once). A status failure's dead letter has the error class
// http_<code> and quotes the start of the response body (statusError).
//
// A delivery row is keyed by (consumer, event_id); deliveries counts the committed
// deliveries of the event, 1 unless its marker was forgotten and the event replayed.
type webhook struct {
	consumer string
	d        dialect
	table    string
	url      string
	shown    string   // the URL without user info and query values, for messages and the table
	secrets  []string // what shown hides, scrubbed from every error text
	client   *http.Client
}

func newWebhook(cfg Config, d dialect) (*webhook, error) {
	if cfg.WebhookURL == "" {
		return nil, errors.New("the webhook handler needs a URL (--webhook-url)")
	}
	u, err := url.Parse(cfg.WebhookURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook URL %q: want an absolute http:// or https:// URL", redact.URL(cfg.WebhookURL))
	}
	client := cfg.HTTPClient
	if client == nil {
		timeout := cfg.WebhookTimeout
		if timeout <= 0 {
			timeout = DefaultWebhookTimeout
		}
		// The partitions deliver concurrently to one host: keep a connection per partition
		// (the default transport keeps 2 per host and closes the rest after each request).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		client = &http.Client{Timeout: timeout, Transport: tr}
	}
	return &webhook{
		consumer: cfg.Consumer, d: d, table: d.table(TableWebhookDeliveries),
		url: cfg.WebhookURL, shown: redact.URL(cfg.WebhookURL), secrets: redact.URLSecrets(cfg.WebhookURL), client: client,
	}, nil
}

// failure is err as a message fit for logs and the fw.dlq.error header: net/http's errors
// quote the URL (and a redirect's), which may carry a token (docs/design.md §4.2).
func (w *webhook) failure(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return errors.New("POST " + w.shown + ": " + redact.Scrub(err.Error(), w.secrets...))
}

func (w *webhook) Name() string { return NameWebhook }

func (w *webhook) Migrate(ctx context.Context, tx *inbox.Tx) error {
	return exec(ctx, tx, `CREATE TABLE IF NOT EXISTS `+w.table+` (
	consumer        text    NOT NULL,
	event_id        text    NOT NULL,
	idempotency_key text    NOT NULL,
	url             text    NOT NULL,
	status_code     integer NOT NULL,
	attempts        integer NOT NULL,
	deliveries      integer NOT NULL DEFAULT 1,
	delivered_at    `+w.d.timestamp()+` NOT NULL,
	PRIMARY KEY (consumer, event_id)
)`)
}

func (w *webhook) Check(ctx context.Context, tx *inbox.Tx) error {
	return checkTables(ctx, tx, w.table)
}

func (w *webhook) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	ev := m.Event
	key := consumer.IdempotencyKey(w.consumer, ev.ID)
	code, err := w.deliver(ctx, ev, key)
	if err != nil {
		return 0, err
	}
	if err := w.record(ctx, tx, ev.ID, key, code, m.Attempt); err != nil {
		return 0, err
	}
	return consumer.Applied, nil
}

// HandleBatch delivers the batch's events one after the other, in offset order (the
// partitions' batches run concurrently), stopping at the first delivery that fails, and
// records the deliveries made with one statement on PostgreSQL (consumer.BatchHandler). The
// failed event, having written nothing, is then retried or dead-lettered by the engine as
// from Handle.
func (w *webhook) HandleBatch(ctx context.Context, tx *inbox.Tx, evs []*consumer.Message) (consumer.BatchResult, error) {
	var res consumer.BatchResult
	n := 0
	var (
		ids, keys = make([]string, 0, len(evs)), make([]string, 0, len(evs))
		codes     = make([]int32, 0, len(evs))
	)
	for _, be := range evs {
		key := consumer.IdempotencyKey(w.consumer, be.Event.ID)
		code, err := w.deliver(ctx, be.Event, key)
		if err != nil {
			res.Err = err
			break
		}
		ids, keys, codes = append(ids, be.Event.ID), append(keys, key), append(codes, int32(code))
		n++
	}
	if !w.d.arrays {
		for i := range n {
			if err := w.record(ctx, tx, ids[i], keys[i], int(codes[i]), 1); err != nil {
				return consumer.BatchResult{}, err
			}
		}
	} else if n > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO `+w.table+` AS t (consumer, event_id, idempotency_key, url, status_code, attempts, deliveries, delivered_at)
SELECT $1, e.event_id, e.idempotency_key, $4, e.status_code, 1, 1, $5
FROM unnest($2::text[], $3::text[], $6::integer[]) AS e(event_id, idempotency_key, status_code)`+deliveryConflict, w.consumer, ids, keys, w.shown, nowUTC(), codes); err != nil {
			return consumer.BatchResult{}, err
		}
	}
	res.Outcomes = make([]consumer.Outcome, n) // all Applied
	return res, nil
}

// deliveryConflict is how a delivery row of an event delivered again (its marker forgotten,
// the event replayed) is updated.
const deliveryConflict = `
ON CONFLICT (consumer, event_id) DO UPDATE SET idempotency_key = excluded.idempotency_key, url = excluded.url,
	status_code = excluded.status_code, attempts = excluded.attempts, deliveries = t.deliveries + 1,
	delivered_at = excluded.delivered_at`

// record writes the delivery row of one event.
func (w *webhook) record(ctx context.Context, tx *inbox.Tx, eventID, key string, code, attempts int) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+w.table+` AS t (consumer, event_id, idempotency_key, url, status_code, attempts, deliveries, delivered_at)
VALUES ($1, $2, $3, $4, $5, $6, 1, $7)`+deliveryConflict,
		w.consumer, eventID, key, w.shown, code, attempts, w.d.ts(nowUTC()))
	return err
}

// deliver POSTs ev with its idempotency key and returns the 2xx status code, or the
// delivery's failure marked retryable or permanent (the context's error unmarked).
func (w *webhook) deliver(ctx context.Context, ev consumer.Event, key string) (int, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, consumer.Permanent(fmt.Errorf("encode event %s: %w", ev.ID, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return 0, consumer.Permanent(fmt.Errorf("webhook request: %w", w.failure(err)))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "fieldwork-consume")
	req.Header.Set(HeaderIdempotencyKey, key)
	resp, err := w.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, consumer.Retryable(w.failure(err))
	}
	code := resp.StatusCode
	var head []byte
	if code < 200 || code >= 300 {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, ResponseBodyShown+1))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case code >= 200 && code < 300:
		return code, nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return 0, consumer.Retryable(w.statusError(resp.Status, code, head))
	default:
		return 0, consumer.Permanent(w.statusError(resp.Status, code, head))
	}
}

// ResponseBodyShown is how many bytes of a failed delivery's response body its error (and
// so the dead letter's fw.dlq.error) quotes.
const ResponseBodyShown = 512

// statusError is the failure of a delivery answered with a status that is not 2xx: class
// http_<code>, and the message "POST <url>: <status>: <body>" where body is the start of the
// response body (ResponseBodyShown bytes at most, "…" when cut), on one line, escaped for a
// terminal and scrubbed of the URL's secrets and of anything that looks like a password
// (docs/design.md §4.2).
func (w *webhook) statusError(status string, code int, head []byte) error {
	msg := "POST " + w.shown + ": " + status
	if body := responseExcerpt(head); body != "" {
		msg += ": " + redact.Scrub(body, w.secrets...)
	}
	return consumer.WithErrorClass("http_"+strconv.Itoa(code), errors.New(msg))
}

// responseExcerpt is head (a response body's first bytes, ResponseBodyShown+1 at most) as
// one escaped line: whitespace runs folded to one space, cut to ResponseBodyShown bytes at a
// rune boundary with "…" when longer.
func responseExcerpt(head []byte) string {
	cut := len(head) > ResponseBodyShown
	if cut {
		head = head[:ResponseBodyShown]
		for len(head) > 0 && !utf8.Valid(head) && len(head) > ResponseBodyShown-utf8.UTFMax {
			head = head[:len(head)-1]
		}
	}
	s := printable.Escape(strings.Join(strings.Fields(string(head)), " "))
	if cut {
		s += "…"
	}
	return s
}

func nowUTC() time.Time { return time.Now().UTC() }
