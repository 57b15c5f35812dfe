package consumer

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// Defaults of the option Breaker: more than 50 dead letters in a row, or more than half of the last
// 1,000 records dead-lettered, stop the consumer (docs/design.md §3.5).
const (
	DefaultBreakerConsecutive = 50
	DefaultBreakerRatio       = 0.5
	DefaultBreakerWindow      = 1000
	// MaxBreakerWindow bounds the window of the option Breaker (one byte and a little of memory a record).
	MaxBreakerWindow = 1_000_000
)

// Breaker rules, the values of TrippedError.Rule and of the rule label of
// fieldwork_consume_breaker_trips_total.
const (
	BreakerRuleConsecutive = "consecutive"
	BreakerRuleRatio       = "ratio"
)

// breakerConfig is the dead-letter breaker's rules (the option Breaker; see the package
// documentation): it stops the consumer, instead of dead-lettering on, when records keep
// failing.
type breakerConfig struct {
	// Off turns the breaker off: every failing record is dead-lettered, however many.
	Off bool
	// Consecutive: more than this many records dead-lettered in a row — in one partition, or
	// in the consumer as a whole with no record handled in between — trip the breaker
	// (default DefaultBreakerConsecutive).
	Consecutive int
	// Ratio and Window: more than Ratio × Window of the consumer's last Window records
	// dead-lettered trip the breaker (default DefaultBreakerRatio of DefaultBreakerWindow).
	// Ratio is in (0, 1]; 1 never trips.
	Ratio  float64
	Window int
}

func (b breakerConfig) withDefaults() breakerConfig {
	if b.Consecutive <= 0 {
		b.Consecutive = DefaultBreakerConsecutive
	}
	if b.Ratio <= 0 {
		b.Ratio = DefaultBreakerRatio
	}
	if b.Window <= 0 {
		b.Window = DefaultBreakerWindow
	}
	return b
}

func (b breakerConfig) validate() error {
	if b.Off {
		return nil
	}
	var errs []error
	if !(b.Ratio > 0 && b.Ratio <= 1) {
		errs = append(errs, fmt.Errorf("breaker ratio %g: must be more than 0 and at most 1", b.Ratio))
	}
	if b.Window > MaxBreakerWindow {
		errs = append(errs, fmt.Errorf("breaker window %d: must be at most %d", b.Window, MaxBreakerWindow))
	}
	return errors.Join(errs...)
}

// windowLimit is the most dead letters the window may hold without tripping.
func (b breakerConfig) windowLimit() int { return int(b.Ratio * float64(b.Window)) }

// Failure is one cause of dead letters: the reason (fw.dlq.reason) and the fingerprint of
// the error (dlq.FingerprintOf, the one rule of a failure's cause), counted.
type Failure struct {
	Reason      string `json:"reason"`
	Fingerprint string `json:"fingerprint"`
	// Cause is the error class and the normalised message.
	Cause string `json:"cause"`
	// Error is the last such error as it was (secrets redacted).
	Error string `json:"error"`
	// Count is how many records of the window failed so.
	Count int `json:"count"`
}

// TrippedError is what Run returns when the dead-letter breaker stopped the consumer
// (fwerr.KindTripped, exit 8). The record at Topic/Partition/Offset is where it tripped: it
// was not dead-lettered and its offset is not committed, nor is any later one of that
// partition, so a restart after the fix reads it again; the dead letters written before it
// stay written.
type TrippedError struct {
	// Rule is BreakerRuleConsecutive or BreakerRuleRatio.
	Rule      string `json:"rule"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Consecutive is the run of failed records that tripped it (the rule consecutive), and
	// AcrossPartitions whether that run spans partitions (nothing handled in any partition
	// in between) rather than being one partition's.
	Consecutive      int  `json:"consecutive"`
	AcrossPartitions bool `json:"across_partitions"`
	// Failed is how many of the last Records records failed, the tripping one included.
	Failed  int `json:"failed"`
	Records int `json:"records"`
	// Limit is the setting that was passed: Breaker.Consecutive, or Ratio × Window.
	Limit int `json:"limit"`
	// Dominant is the most common failure among the last Records records.
	Dominant Failure `json:"dominant"`
	// DeadLettered is how many dead letters this run wrote in all.
	DeadLettered int64 `json:"dead_lettered"`
}

func (e *TrippedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dead-letter breaker tripped at %s/%d/%d: ", e.Topic, e.Partition, e.Offset)
	switch {
	case e.Rule == BreakerRuleConsecutive && e.AcrossPartitions:
		fmt.Fprintf(&b, "%d records in a row failed with no record handled in between (more than %d in a row)", e.Consecutive, e.Limit)
	case e.Rule == BreakerRuleConsecutive:
		fmt.Fprintf(&b, "%d records in a row of %s/%d failed (more than %d in a row)", e.Consecutive, e.Topic, e.Partition, e.Limit)
	default:
		fmt.Fprintf(&b, "%d of the last %d records failed (more than %d)", e.Failed, e.Records, e.Limit)
	}
	d := e.Dominant
	fmt.Fprintf(&b, "; most common failure: %s, %d of the %d failed of the last %d records (fingerprint %s): %s",
		d.Reason, d.Count, e.Failed, e.Records, d.Fingerprint, d.Error)
	fmt.Fprintf(&b, "; %d dead letters written, none from %s/%d/%d on: that record and the partition's later ones are not committed, "+
		"so a run after the fix reads them again (--no-breaker dead-letters them all instead)",
		e.DeadLettered, e.Topic, e.Partition, e.Offset)
	return b.String()
}

// kinded is the error as Run returns it: exit 8 (fwerr.KindTripped).
func (e *TrippedError) kinded() error { return fwerr.Wrap(fwerr.KindTripped, e) }

// judged is one record as the breaker sees it: its offset, and its dead letter when it
// failed.
type judged struct {
	offset int64
	dl     *deadLetter
}

// breaker counts the records of every partition in the order their batches finish, one
// batch at a time, each batch's in offset order.
type breaker struct {
	cfg breakerConfig
	m   *metrics

	mu sync.Mutex
	// streak is the consumer's run of failed records with no record handled in between;
	// streaks the partitions' own.
	streak  int
	streaks map[tp]int
	// ring is the last cfg.Window records, true for a failed one; next is where the next
	// goes, n how many it holds, failed how many of those failed.
	ring            []failKey
	next, n, failed int
	causes          map[failKey]*Failure
	tripped         *TrippedError
}

// failKey names a failure cause in the window; "" is a record handled.
type failKey string

func newBreaker(cfg breakerConfig, m *metrics) *breaker {
	if cfg.Off {
		return nil
	}
	return &breaker{cfg: cfg, m: m, streaks: map[tp]int{}, ring: make([]failKey, cfg.Window), causes: map[failKey]*Failure{}}
}

// judge counts a batch's records (offset order) and returns the offset from which nothing of
// the batch may be committed nor dead-lettered, -1 for none, and the TrippedError when this
// batch tripped the breaker. Once tripped, a batch is cut at its first failed record: no
// dead letter is written after the trip.
func (b *breaker) judge(k tp, recs []judged) (cut int64, trip *TrippedError) {
	if b == nil {
		return -1, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.gauges()
	for _, r := range recs {
		if b.tripped != nil {
			if r.dl != nil {
				return r.offset, nil
			}
			continue
		}
		if r.dl == nil {
			b.streak, b.streaks[k] = 0, 0
			b.push("")
			continue
		}
		b.streak++
		b.streaks[k]++
		b.push(b.key(r.dl))
		switch {
		case b.streaks[k] > b.cfg.Consecutive || b.streak > b.cfg.Consecutive:
			across := b.streaks[k] <= b.cfg.Consecutive
			run := b.streaks[k]
			if across {
				run = b.streak
			}
			b.trip(&TrippedError{Rule: BreakerRuleConsecutive, Consecutive: run, AcrossPartitions: across, Limit: b.cfg.Consecutive}, k, r)
		case b.failed > b.cfg.windowLimit():
			b.trip(&TrippedError{Rule: BreakerRuleRatio, Limit: b.cfg.windowLimit()}, k, r)
		default:
			continue
		}
		return r.offset, b.tripped
	}
	return -1, nil
}

// trip records the trip at r of partition k.
func (b *breaker) trip(t *TrippedError, k tp, r judged) {
	t.Topic, t.Partition, t.Offset = k.topic, k.partition, r.offset
	t.Failed, t.Records = b.failed, b.n
	var best failKey
	for key, f := range b.causes {
		if best == "" || f.Count > b.causes[best].Count || (f.Count == b.causes[best].Count && key < best) {
			best = key
		}
	}
	if best != "" {
		t.Dominant = *b.causes[best]
	}
	b.tripped = t
	b.m.breakerTrips.WithLabelValues(t.Rule).Inc()
	b.m.breakerTripped.Set(1)
}

// key is dl's failure cause, counted in causes.
func (b *breaker) key(dl *deadLetter) failKey {
	fp := dlq.FingerprintOf(dlq.DeadLetter{ErrorClass: dl.meta.ErrorClass, ErrorMessage: dl.meta.Error})
	k := failKey(dl.meta.Reason + "\x00" + fp.ID)
	f := b.causes[k]
	if f == nil {
		f = &Failure{Reason: dl.meta.Reason, Fingerprint: fp.ID, Cause: fp.Cause}
		b.causes[k] = f
	}
	f.Error = redact.Text(dl.meta.Error)
	return k
}

// push adds a record to the window, evicting the oldest when it is full. The caller has
// counted a failed record's cause (key). The new record is counted before the oldest is
// evicted: when both have the one cause, evicting first would drop the cause that key made.
func (b *breaker) push(k failKey) {
	if k != "" {
		b.failed++
		b.causes[k].Count++
	}
	if b.n == len(b.ring) {
		if old := b.ring[b.next]; old != "" {
			b.failed--
			if f := b.causes[old]; f != nil {
				if f.Count--; f.Count == 0 {
					delete(b.causes, old)
				}
			}
		}
	} else {
		b.n++
	}
	b.ring[b.next] = k
	b.next = (b.next + 1) % len(b.ring)
}

// forget drops a partition's own streak (it was revoked or lost: another member may handle
// its records meanwhile).
func (b *breaker) forget(k tp) {
	if b == nil {
		return
	}
	b.mu.Lock()
	delete(b.streaks, k)
	b.mu.Unlock()
}

// isTripped reports whether the breaker has tripped.
func (b *breaker) isTripped() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tripped != nil
}

// gauges sets the breaker's gauges (under mu).
func (b *breaker) gauges() {
	run := b.streak
	for _, s := range b.streaks {
		run = max(run, s)
	}
	b.m.breakerConsecutive.Set(float64(run))
	b.m.breakerWindowFailed.Set(float64(b.failed))
}
