package dlq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func TestParseStatuses(t *testing.T) {
	got, err := ParseStatuses([]string{"pending, resolved", "", "unknown"})
	if err != nil || !slices.Equal(got, []Status{StatusPending, StatusResolved, StatusUnknown}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParseStatuses(nil); got != nil || err != nil {
		t.Fatalf("none: %v %v", got, err)
	}
	if _, err := ParseStatuses([]string{"pending,done"}); fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), `"done"`) {
		t.Fatalf("unknown status: %v", err)
	}
}

// TestResolve tells every status from a real (SQLite) store: markers, the replay journal,
// and the dead letters that cannot be looked up.
func TestResolve(t *testing.T) {
	ctx := context.Background()
	st := testenv.SQLiteStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	ds := []DeadLetter{
		{Topic: "t.dlq", Partition: 0, Offset: 0, Group: "g", EventID: "a"},     // marker: resolved
		{Topic: "t.dlq", Partition: 0, Offset: 1, Group: "g", EventID: "b"},     // nothing: pending
		{Topic: "t.dlq", Partition: 1, Offset: 0, Group: "g", EventID: "c"},     // journaled replay: replayed
		{Topic: "t.dlq", Partition: 1, Offset: 1, Group: "g"},                   // no event id
		{Topic: "t.dlq", Partition: 1, Offset: 2, EventID: "d"},                 // no group, no --consumer
		{Topic: "t.dlq", Partition: 1, Offset: 3, Group: "g", EventID: "x\x00"}, // not storable
		{Topic: "u.dlq", Partition: 0, Offset: 0, Group: "h", EventID: "a"},     // another consumer: pending
		{Topic: "t.dlq", Partition: 1, Offset: 4, Group: "g", EventID: "a"},     // the same event again: resolved
		{Topic: "t.dlq", Partition: 1, Offset: 5},                               // no event id, no group, replayed: unknown
		{Topic: "t.dlq", Partition: 1, Offset: 6, Group: "g"},                   // no event id, replayed: unknown
	}
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, "g", []dedup.Marker{{EventID: "a"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateReplayRun(ctx, dedup.ReplayRun{ID: "r1", Selection: "{}", Sources: []string{"t.dlq"}, Target: "original", Status: dedup.RunRunning, Owner: "o"},
		[]dedup.ReplayCheckpoint{{Topic: "t.dlq", Partition: 1, Start: 0, End: 0, AckedThrough: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r1", Owner: "o", Status: dedup.RunCompleted, Finished: true, Now: now,
		Checkpoints: []dedup.ReplayCheckpoint{{Topic: "t.dlq", Partition: 1, Start: 0, End: 0, AckedThrough: 0}},
		Sends: []dedup.ReplaySend{
			{SourceTopic: "t.dlq", SourcePartition: 1, SourceOffset: 0, EventID: "c", TargetTopic: "t", TargetPartition: 2, TargetOffset: 9, At: now},
			{SourceTopic: "t.dlq", SourcePartition: 1, SourceOffset: 5, TargetTopic: "t", TargetPartition: 0, TargetOffset: 10, At: now},
			{SourceTopic: "t.dlq", SourcePartition: 1, SourceOffset: 6, TargetTopic: "t", TargetPartition: 1, TargetOffset: 11, At: now},
		},
	}); err != nil {
		t.Fatal(err)
	}

	got, err := StatusLookup{Store: st}.Resolve(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{StatusResolved, StatusPending, StatusReplayed, StatusUnknown, StatusUnknown, StatusUnknown, StatusPending, StatusResolved, StatusUnknown, StatusUnknown}
	for i, w := range want {
		if got[i].Status != w {
			t.Errorf("%d (%+v): %s, want %s (%+v)", i, ds[i], got[i].Status, w, got[i])
		}
	}
	if m := got[0].Marker; m == nil || m.Consumer != "g" || m.EventID != "a" {
		t.Errorf("resolved without its marker: %+v", got[0])
	}
	if r := got[2].Replay; r == nil || r.RunID != "r1" || r.TargetTopic != "t" || r.TargetPartition != 2 || r.TargetOffset != 9 || !r.At.Equal(now) {
		t.Errorf("replayed without its replay: %+v", got[2].Replay)
	}
	for i, why := range map[int]string{3: "no event id", 4: "no consumer group in the dead letter: pass --consumer", 5: "event id unusable", 8: "no event id", 9: "no event id"} {
		if !strings.HasPrefix(got[i].Why, why) {
			t.Errorf("%d: why %q, want %q", i, got[i].Why, why)
		}
	}
	// Whatever the status, the latest replay is told: also of a dead letter without an event
	// id (with a group or none), whose status stays unknown.
	for i, off := range map[int]int64{8: 10, 9: 11} {
		if r := got[i].Replay; r == nil || r.RunID != "r1" || r.TargetOffset != off {
			t.Errorf("%d: replay %+v, want run r1's send to offset %d", i, r, off)
		}
	}
	if got[3].Replay != nil || got[1].Replay != nil {
		t.Errorf("a replay of dead letters no run sent: %+v, %+v", got[3].Replay, got[1].Replay)
	}
	// --consumer overrides each dead letter's group.
	got, err = StatusLookup{Store: st, Consumer: "h"}.Resolve(ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != StatusPending || got[4].Status != StatusPending || got[2].Status != StatusReplayed || got[0].Consumer != "h" {
		t.Errorf("--consumer h: %+v", got)
	}
	// No store: no status.
	got, err = StatusLookup{}.Resolve(ctx, ds)
	if err != nil || len(got) != len(ds) || got[0] != (StatusInfo{}) {
		t.Errorf("without a store: %+v %v", got, err)
	}
}

// TestStatusBatcher keeps the order, batches lookups, and passes ErrStop and errors on.
func TestStatusBatcher(t *testing.T) {
	ctx := context.Background()
	var order []int64
	b := NewStatusBatcher(StatusLookup{}, 0, func(d DeadLetter, s StatusInfo) error {
		order = append(order, d.Offset)
		if s != (StatusInfo{}) {
			t.Errorf("status without a store: %+v", s)
		}
		return nil
	})
	for i := range 3 {
		if err := b.Add(ctx, DeadLetter{Offset: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(order, []int64{0, 1, 2}) {
		t.Fatalf("without a store, not emitted at once: %v", order)
	}

	st := testenv.SQLiteStore(t)
	order = nil
	b = NewStatusBatcher(StatusLookup{Store: st}, 2, func(d DeadLetter, s StatusInfo) error {
		order = append(order, d.Offset)
		if s.Status != StatusPending {
			t.Errorf("%d: %+v", d.Offset, s)
		}
		if d.Offset == 3 {
			return ErrStop
		}
		return nil
	})
	for i := range 5 {
		err := b.Add(ctx, DeadLetter{Topic: "t", Offset: int64(i), Group: "g", EventID: "e"})
		switch {
		case i == 0 && len(order) != 0:
			t.Fatalf("emitted before the batch was full: %v", order)
		case i == 3 && !errors.Is(err, ErrStop):
			t.Fatalf("ErrStop not passed on: %v", err)
		case i != 3 && err != nil:
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("order %v", order)
	}
}

// TestResolveTellsTheRecordApart: replayed means the journal sent this dead letter, not one
// that was at its coordinates before. A run journaled under topic ID A sent t.dlq/0/0; the
// dead letter there now is replayed only while it is that record — the same topic ID (when the
// lookup knows it), event id and timestamp.
func TestResolveTellsTheRecordApart(t *testing.T) {
	ctx := context.Background()
	st := testenv.SQLiteStore(t)
	ts := time.UnixMilli(1_700_000_000_123).UTC()
	if err := st.CreateReplayRun(ctx, dedup.ReplayRun{ID: "r1", Selection: "{}", Sources: []string{"t.dlq"}, SourceTopicIDs: map[string]string{"t.dlq": "A"},
		Target: "original", Status: dedup.RunRunning, Owner: "o"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r1", Owner: "o", Status: dedup.RunCompleted, Finished: true,
		Sends: []dedup.ReplaySend{{SourceTopic: "t.dlq", SourceOffset: 0, SourceTimestamp: ts, EventID: "e", TargetTopic: "t", TargetOffset: 9, At: ts}},
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(id string) func(context.Context, string) (string, error) {
		return func(context.Context, string) (string, error) { return id, nil }
	}
	dl := func(eventID string, at time.Time) DeadLetter {
		return DeadLetter{Topic: "t.dlq", Partition: 0, Offset: 0, Timestamp: at, Group: "g", EventID: eventID}
	}
	for _, c := range []struct {
		name    string
		topicID func(context.Context, string) (string, error)
		d       DeadLetter
		want    Status
	}{
		{"the record sent, its topic's ID known", ids("A"), dl("e", ts), StatusReplayed},
		{"the record sent, no topic ID to compare", nil, dl("e", ts), StatusReplayed},
		{"the topic recreated, the same record again", ids("B"), dl("e", ts), StatusPending},
		{"the topic recreated, another record", nil, dl("f", ts.Add(time.Hour)), StatusPending},
		{"another timestamp", ids("A"), dl("e", ts.Add(time.Millisecond)), StatusPending},
		{"another event id", nil, dl("f", ts), StatusPending},
	} {
		got, err := StatusLookup{Store: st, TopicID: c.topicID}.Resolve(ctx, []DeadLetter{c.d})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Status != c.want || (c.want == StatusReplayed) != (got[0].Replay != nil) {
			t.Errorf("%s: %+v, want %s", c.name, got[0], c.want)
		}
	}

	// A batcher asks each topic's ID once; a lookup error is returned.
	asked := map[string]int{}
	lookup := StatusLookup{Store: st, TopicID: func(_ context.Context, topic string) (string, error) {
		asked[topic]++
		if topic == "broken.dlq" {
			return "", errors.New("metadata refused")
		}
		return "A", nil
	}}
	var got []Status
	b := NewStatusBatcher(lookup, 2, func(_ DeadLetter, s StatusInfo) error { got = append(got, s.Status); return nil })
	for range 5 {
		if err := b.Add(ctx, dl("e", ts)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if asked["t.dlq"] != 1 || len(got) != 5 || got[4] != StatusReplayed {
		t.Fatalf("asked %v, statuses %v", asked, got)
	}
	broken := dl("e", ts)
	broken.Topic = "broken.dlq"
	if _, err := lookup.Resolve(ctx, []DeadLetter{broken}); err == nil || !strings.Contains(err.Error(), "metadata refused") {
		t.Fatalf("a topic ID lookup that failed: %v", err)
	}
}
