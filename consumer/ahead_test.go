package consumer_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestBatchesWithNothingToClaim: a batch of malformed records only has nothing to claim, and
// the transaction begun for it while it was decoded is rolled back, its connection given back:
// more such batches than the store's pool holds connections (four on this machine), then the
// events after them, every one applied.
func TestBatchesWithNothingToClaim(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 1)
	cl := producer(t)
	const bad = 60
	recs := make([]*kgo.Record, bad)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "not an event %d", i)}
	}
	testenv.Produce(t, cl, recs...)
	_, man := produceSample(t, cl, topic, sample.Options{Seed: 21, Aggregates: 5, EventsPerAggregate: 4})

	const group = "audit-nothing-to-claim"
	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	o := engineOpts(t, st, h, topic, group)
	o.BatchMax = 5 // at least eleven batches of nothing but malformed records
	o.Breaker.Off = true
	stats := run(t, o)
	if stats.DeadLettered != bad || stats.Processed != int64(man.Events) {
		t.Errorf("stats %+v; want %d dead-lettered, %d processed", stats, bad, man.Events)
	}
	if n := markerCount(t, st, group); n != int64(man.Events) {
		t.Errorf("markers = %d, want %d", n, man.Events)
	}
}
