package processed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCheckRefusesAnUnreadableRange: a topic whose 83 records are none of them events fails
// the check (a check error) with the most common malformed reason and its count, though no
// event is missing; the README tour's topic (the sandbox's stream: 3 malformed of 209, every
// event marked) still passes; a share of malformed records above MaxMalformedShare fails,
// NoMalformed accepts none.
func TestCheckRefusesAnUnreadableRange(t *testing.T) {
	c, st := checkServices(t)

	unread := testenv.Topic(t, 3, nil)
	prod := testenv.Client(t, kgo.DefaultProduceTopic(unread))
	var recs []*kgo.Record
	for i := range 83 {
		v := fmt.Appendf(nil, `{"specversion":"1.0","id":"u-%02d"`, i) // cut short: invalid JSON
		if i%10 == 0 {
			v = []byte(`{"specversion":"1.0","type":"task.created"}`) // no id
		}
		recs = append(recs, &kgo.Record{Key: []byte("task-1"), Value: v})
	}
	testenv.Produce(t, prod, recs...)
	rep, err := processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: unread, Consumer: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.DominantMalformed
	if rep.Records != 83 || rep.Events != 0 || rep.Missing != 0 || rep.Malformed != 83 || !rep.Unreadable || d == nil ||
		d.Records != 74 || !strings.HasPrefix(d.Reason, "invalid JSON: ") || rep.MaxMalformedShare != processed.DefaultMaxMalformedShare {
		t.Fatalf("unreadable: records %d events %d missing %d malformed %d unreadable %v dominant %+v share %v",
			rep.Records, rep.Events, rep.Missing, rep.Malformed, rep.Unreadable, d, rep.MaxMalformedShare)
	}
	err = rep.Result()
	if fwerr.KindOf(err) != fwerr.KindCheck || !strings.Contains(err.Error(), "no record of "+unread+" could be read as an event (83 malformed records)") ||
		!strings.Contains(err.Error(), "most common reason (74 records): invalid JSON: ") {
		t.Fatalf("result: %v", err)
	}

	// The tour's topic: the stream the sandbox seeds, every event marked.
	tour := testenv.Topic(t, 3, nil)
	stream, man, err := sample.Generate(sample.DefaultOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Produce(t, testenv.Client(t, kgo.DefaultProduceTopic(tour)), sample.KgoRecords(tour, stream)...)
	var markers []dedup.Marker
	seen := map[string]bool{}
	for _, id := range man.EventIDs {
		if id != "" && !seen[id] {
			seen[id] = true
			markers = append(markers, dedup.Marker{EventID: id})
		}
	}
	mark(t, st, "task-projection", markers...)
	rep, err = processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: tour, Consumer: "task-projection"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != int64(man.Records) || rep.Malformed != 3 || rep.Missing != 0 || rep.Unreadable || rep.Result() != nil ||
		rep.DominantMalformed == nil || rep.DominantMalformed.Records != 1 {
		t.Fatalf("the tour's topic: records %d (of %d) malformed %d missing %d unreadable %v dominant %+v: %v",
			rep.Records, man.Records, rep.Malformed, rep.Missing, rep.Unreadable, rep.DominantMalformed, rep.Result())
	}

	// Above the share: 3 of the tour's records are malformed, more than none.
	rep, err = processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: tour, Consumer: "task-projection", MaxMalformedShare: processed.NoMalformed})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("3 of %d records of %s could not be read as events, more than --max-malformed-share 0 allows; most common reason (1 record): ", man.Records, tour)
	if err := rep.Result(); !rep.Unreadable || rep.MaxMalformedShare != 0 || fwerr.KindOf(err) != fwerr.KindCheck || !strings.Contains(err.Error(), want) {
		t.Fatalf("no malformed record accepted: unreadable %v share %v: %v\nwant %s", rep.Unreadable, rep.MaxMalformedShare, err, want)
	}
}
