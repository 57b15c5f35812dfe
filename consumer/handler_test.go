package consumer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// delay is the n-th wait (n from 1) of a retry loop of b.
func delay(b backoff, n int) time.Duration {
	r := b.start()
	var d time.Duration
	for range n {
		d = r.next()
	}
	return d
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	b := backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 50: time.Second} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := delay(b, n)
			if d < want/2 || d > want {
				t.Fatalf("wait %d = %v, want within [%v, %v]", n, d, want/2, want)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("wait %d: only %d distinct values in 200 draws: no jitter", n, len(seen))
		}
	}
	if d := delay(backoff{}, 1); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("zero backoff: %v", d)
	}
}

func TestClassify(t *testing.T) {
	timeout := &net.OpError{Op: "dial", Err: errors.New("i/o timeout")}
	cases := []struct {
		name string
		err  error
		want class
	}{
		{"plain error", errors.New("boom"), classRetryable},
		{"permanent", Permanent(errors.New("no")), classPermanent},
		{"permanentf wrapped", fmt.Errorf("ctx: %w", Permanentf("bad %d", 1)), classPermanent},
		{"unsupported", Unsupportedf("type %q", "x"), classUnsupported},
		{"retryable", Retryable(errors.New("503")), classRetryable},
		{"connection lost", fmt.Errorf("exec: %w", io.ErrUnexpectedEOF), classInfra},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, classInfra},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, classInfra},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, classInfra},
		{"unique violation", &pgconn.PgError{Code: "23505"}, classRetryable},
		{"marked retryable beats transient", Retryable(timeout), classRetryable},
		{"net timeout unmarked", timeout, classInfra},
	}
	for _, tc := range cases {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s: class %s, want %s", tc.name, got.label(), tc.want.label())
		}
	}
	if Permanent(nil) != nil || Retryable(nil) != nil || Unsupported(nil) != nil {
		t.Error("marking nil must stay nil")
	}
	if !IsPermanent(Unsupportedf("x")) || IsPermanent(Retryable(errors.New("x"))) || !IsRetryable(Retryable(errors.New("x"))) {
		t.Error("IsPermanent / IsRetryable")
	}
}

func TestIdempotencyKey(t *testing.T) {
	k := IdempotencyKey("notifier", "ev-1")
	if len(k) != 64 || k != IdempotencyKey("notifier", "ev-1") {
		t.Fatalf("key %q: want 64 hex digits, stable", k)
	}
	for _, other := range [][2]string{{"notifier", "ev-2"}, {"other", "ev-1"}, {"notifierev", "-1"}, {"notifier\x00", "ev-1"}} {
		if IdempotencyKey(other[0], other[1]) == k {
			t.Errorf("%q and (notifier, ev-1) share a key", other)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o := config{Topics: []string{"tasks", "tasks"}, DLQTopic: "tasks"}.withDefaults()
	err := o.validate()
	for _, want := range []string{`topic "tasks" is also the dead-letter topic`, "given twice", "no consumer group", "no handler", "no inbox store"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v; want %q", err, want)
		}
	}
	if d := (config{}).dlqTopic("tasks"); d != "tasks.dlq" {
		t.Errorf("default dead-letter topic %q", d)
	}
}

// TestShareGroupOptions: a runner belongs to one group; a share group's consumer name and
// attempts per delivery default as documented; ShareStartEarliest needs a share group.
func TestShareGroupOptions(t *testing.T) {
	var c config
	for _, o := range []Opt{Group("g"), ShareGroup("s")} {
		o.apply(&c)
	}
	if err := c.withDefaults().validate(); err == nil || !strings.Contains(err.Error(), `consumer group "g" and share group "s"`) {
		t.Errorf("both groups: %v", err)
	}
	c = config{}
	ShareStartEarliest().apply(&c)
	Group("g").apply(&c)
	if err := c.withDefaults().validate(); err == nil || !strings.Contains(err.Error(), "ShareStartEarliest applies to a share group only") {
		t.Errorf("ShareStartEarliest without a share group: %v", err)
	}
	c = config{}
	ShareGroup("workers").apply(&c)
	o := c.withDefaults()
	if o.Consumer != "workers" || o.MaxAttempts != 1 {
		t.Errorf("share group defaults: consumer %q, max attempts %d; want workers, 1", o.Consumer, o.MaxAttempts)
	}
	MaxAttempts(3).apply(&c)
	if o := c.withDefaults(); o.MaxAttempts != 3 {
		t.Errorf("max attempts given: %d, want 3", o.MaxAttempts)
	}
}
