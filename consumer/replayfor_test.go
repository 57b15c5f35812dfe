package consumer_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestReplayedForAnotherGroupIsSkipped: records aimed at another group (fw.replay.for) are
// skipped, their offsets committed, no marker and no effect written; records aimed at this
// group, and records aimed at none, are handled.
func TestReplayedForAnotherGroupIsSkipped(t *testing.T) {
	t.Parallel()
	st, schema := pgStore(t)
	topic, _ := topics(t, 2)
	recs, man, err := sample.Generate(sample.Options{Seed: 5, Aggregates: 6, EventsPerAggregate: 3})
	if err != nil {
		t.Fatal(err)
	}
	const group = "audit-aimed"
	out := sample.KgoRecords(topic, recs)
	for i, r := range out {
		switch i % 3 {
		case 0:
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: dlq.ReplayHeaderFor, Value: []byte("someone-else")})
		case 1:
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: dlq.ReplayHeaderFor, Value: []byte(group)})
		}
	}
	testenv.Produce(t, producer(t), out...)

	h := handler(t, st, schema, handlers.NameAudit, group, handlers.Config{})
	stats := run(t, engineOpts(t, st, h, topic, group))
	other := int64((len(out) + 2) / 3)
	if stats.OtherGroup != other || stats.Records != int64(len(out)) || stats.Processed != int64(len(out))-other || stats.DeadLettered != 0 {
		t.Fatalf("stats %+v; want %d for another group of %d records", stats, other, len(out))
	}
	if n := markerCount(t, st, group); n != int64(len(out))-other {
		t.Errorf("markers = %d, want %d", n, int64(len(out))-other)
	}
	audit := tableName(t, st, schema, handlers.TableAuditLog)
	for i, id := range man.EventIDs {
		n := queryInt(t, st, `SELECT count(*) FROM `+audit+` WHERE event_id = $1`, id)
		switch {
		case i%3 == 0 && n != 0:
			t.Errorf("event %s, aimed at another group, recorded %d times", id, n)
		case i%3 != 0 && n != 1:
			t.Errorf("event %s recorded %d times, want once", id, n)
		}
	}
	if behind, _ := groupLag(t, producer(t), group, topic); len(behind) != 0 {
		t.Errorf("offsets not committed past the skipped records: %v", behind)
	}
}
