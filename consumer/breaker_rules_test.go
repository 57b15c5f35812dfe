package consumer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
)

// batchOf is a batch of records from offset from, failed where fail says ('x') and handled
// elsewhere ('.'), the failures rejected with an error naming the record.
func batchOf(from int64, fail string) []judged {
	out := make([]judged, len(fail))
	for i, c := range fail {
		out[i] = judged{offset: from + int64(i)}
		if c == 'x' {
			out[i].dl = &deadLetter{rec: &kgo.Record{Offset: from + int64(i)},
				meta: dlq.Meta{Reason: dlq.ReasonRejected, Error: fmt.Sprintf("task-%04d refused at %d", i, from+int64(i))}}
		}
	}
	return out
}

// TestBreakerRules: the run that trips is one partition's or the consumer's with nothing
// handled in between; a partition's own run survives other partitions' successes; a trip
// cuts the batch at the record, and every later batch at its first failure; the dominant
// failure counts one cause across messages that differ only in ids.
func TestBreakerRules(t *testing.T) {
	p0, p1 := tp{"t", 0}, tp{"t", 1}
	m := newMetrics(nil)

	// Across partitions: 3 failures in p0, then 3 in p1, nothing handled: the 4th of p1
	// (the 7th in a row) trips at limit 6.
	b := newBreaker(breakerConfig{Consecutive: 6, Ratio: 1, Window: 100}, m)
	if cut, trip := b.judge(p0, batchOf(0, "..xxx")); cut != -1 || trip != nil {
		t.Fatalf("p0: cut %d trip %v", cut, trip)
	}
	cut, trip := b.judge(p1, batchOf(10, "xxxx."))
	if cut != 13 || trip == nil || !trip.AcrossPartitions || trip.Consecutive != 7 || trip.Rule != BreakerRuleConsecutive {
		t.Fatalf("p1: cut %d trip %+v; want a trip at 13, 7 in a row across partitions", cut, trip)
	}
	if trip.Dominant.Count != 7 || trip.Dominant.Reason != dlq.ReasonRejected || trip.Failed != 7 || trip.Records != 9 {
		t.Errorf("dominant %+v, %d of %d failed; want one cause for the 7 failures of 9 records", trip.Dominant, trip.Failed, trip.Records)
	}
	// Tripped: a later batch is cut at its first failure, one without failure is not cut.
	if cut, trip := b.judge(p0, batchOf(5, "..x..")); cut != 7 || trip != nil {
		t.Errorf("after the trip: cut %d trip %v; want 7 and no new trip", cut, trip)
	}
	if cut, _ := b.judge(p0, batchOf(10, "....")); cut != -1 {
		t.Errorf("after the trip, a batch without failures: cut %d", cut)
	}

	// One partition failing while another succeeds: its own run trips.
	b = newBreaker(breakerConfig{Consecutive: 4, Ratio: 1, Window: 100}, m)
	for i := range 4 {
		if cut, trip := b.judge(p0, batchOf(int64(i), "x")); cut != -1 || trip != nil {
			t.Fatalf("p0 failure %d: tripped early", i)
		}
		b.judge(p1, batchOf(int64(i), "."))
	}
	cut, trip = b.judge(p0, batchOf(4, "x"))
	if cut != 4 || trip == nil || trip.AcrossPartitions || trip.Consecutive != 5 {
		t.Errorf("p0's fifth failure: cut %d trip %+v; want p0's own run of 5", cut, trip)
	}
	var te *TrippedError
	if !errors.As(trip.kinded(), &te) || te.Error() == "" {
		t.Error("the trip must be returned as itself")
	}

	// The window evicts the only earlier failure of a cause as the next one of that cause
	// comes: the cause is still counted (it once vanished from under the count).
	b = newBreaker(breakerConfig{Consecutive: 50, Ratio: 1, Window: 2}, m)
	for i := range 10 {
		if cut, trip := b.judge(p0, batchOf(int64(i*2), "x.")); cut != -1 || trip != nil {
			t.Fatalf("window 2, x. %d: cut %d trip %+v", i, cut, trip)
		}
	}
	if len(b.causes) != 1 || b.failed != 1 {
		t.Errorf("window 2 after x.x.…x.: %d causes, %d failed; want 1 and 1", len(b.causes), b.failed)
	}

	// The window forgets: failures spread thin enough never trip.
	b = newBreaker(breakerConfig{Consecutive: 50, Ratio: 0.5, Window: 10}, m)
	for i := range 100 {
		if cut, trip := b.judge(p0, batchOf(int64(i*2), "x.")); cut != -1 || trip != nil {
			t.Fatalf("half failing never exceeds half: tripped at %d: %+v", i, trip)
		}
	}
	// The window holds x.x.x.x.x. (5 of 10): the next x evicts an x (still 5), the one after
	// it a "." (6 of 10): that one trips.
	if cut, trip := b.judge(p0, batchOf(200, "xx")); cut != 201 || trip == nil || trip.Rule != BreakerRuleRatio || trip.Failed != 6 || trip.Records != 10 {
		t.Errorf("6 of the last 10: cut %d trip %+v", cut, trip)
	}

	// Off: nothing is judged.
	if b := newBreaker(breakerConfig{Off: true}, m); b != nil {
		t.Error("an Off breaker must be nil")
	} else if cut, trip := b.judge(p0, batchOf(0, "xxxxxxxx")); cut != -1 || trip != nil {
		t.Error("a nil breaker must never trip")
	}
}
