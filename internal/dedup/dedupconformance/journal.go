package dedupconformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// The replay journal's part of the suite (migration 002).

func newRun(id, owner string, created time.Time) dedup.ReplayRun {
	return dedup.ReplayRun{
		ID: id, Operator: "alice", Reason: "fix deployed", Selection: `{"from":"orders.dlq"}`,
		Sources: []string{"orders.dlq"}, Target: "original", Status: dedup.RunRunning, Owner: owner,
		CreatedAt: created,
	}
}

func twoCheckpoints() []dedup.ReplayCheckpoint {
	return []dedup.ReplayCheckpoint{
		{Topic: "orders.dlq", Partition: 1, Start: 10, End: 19, AckedThrough: 9},
		{Topic: "orders.dlq", Partition: 0, Start: 0, End: 99, AckedThrough: -1},
	}
}

func send(p int32, off int64, targetOff int64, at time.Time) dedup.ReplaySend {
	return dedup.ReplaySend{SourceTopic: "orders.dlq", SourcePartition: p, SourceOffset: off, EventID: fmt.Sprintf("e-%d-%d", p, off),
		TargetTopic: "orders", TargetPartition: 2, TargetOffset: targetOff, At: at}
}

func testJournalRunRoundTrip(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	created := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	run := newRun("r-1", "host:1", created)
	run.Sources = []string{"a.dlq", "b.dlq"}
	if err := st.CreateReplayRun(ctx, run, twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	got, cps, err := st.ReplayRun(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "r-1" || got.Operator != "alice" || got.Reason != "fix deployed" || got.Selection != run.Selection ||
		len(got.Sources) != 2 || got.Sources[1] != "b.dlq" || got.Target != "original" || got.Status != dedup.RunRunning ||
		got.Owner != "host:1" || got.Error != "" || !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(created) || got.FinishedAt != nil {
		t.Fatalf("run read back: %+v", got)
	}
	// Ordered by topic and partition.
	if len(cps) != 2 || cps[0].Partition != 0 || cps[0].End != 99 || cps[0].AckedThrough != -1 ||
		cps[1].Partition != 1 || cps[1].Start != 10 || cps[1].AckedThrough != 9 {
		t.Fatalf("checkpoints: %+v", cps)
	}
	var nf *dedup.RunNotFoundError
	if _, _, err := st.ReplayRun(ctx, "nope"); !errors.As(err, &nf) {
		t.Fatalf("unknown run: %v, want *RunNotFoundError", err)
	}
	if err := st.CreateReplayRun(ctx, run, nil); err == nil {
		t.Fatal("a second run with the same id was accepted")
	}
	if _, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{}); err != nil {
		t.Fatalf("runs after a refused duplicate: %v", err)
	}
}

func testJournalProgress(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	if err := st.CreateReplayRun(ctx, newRun("r", "me", time.Time{}), twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := dedup.ReplayProgress{
		RunID: "r", Owner: "me", Status: dedup.RunRunning, Now: now,
		Counts:      dedup.RunCounts{Selected: 5, Sent: 3, Quarantined: 1, Skipped: 1},
		Checkpoints: []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, AckedThrough: 4}},
		Sends:       []dedup.ReplaySend{send(0, 0, 100, now), send(0, 2, 101, now), send(0, 4, 102, now), send(0, 7, 103, now)},
		FlushID:     "me#1",
	}
	if err := st.SaveReplayProgress(ctx, p); err != nil {
		t.Fatal(err)
	}
	// A flush from a process that does not own the run writes nothing.
	stolen := p
	stolen.Owner, stolen.Counts.Sent = "other", 99
	stolen.Sends = []dedup.ReplaySend{send(0, 50, 999, now)}
	stolen.Checkpoints = []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, AckedThrough: 60}}
	if err := st.SaveReplayProgress(ctx, stolen); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("flush by a non-owner: %v, want ErrRunNotOwned", err)
	}
	// A flush retried with the same FlushID (its first commit may have
	// landed) stores its sends once; a checkpoint never moves back.
	if err := st.SaveReplayProgress(ctx, p); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Second)
	p2 := dedup.ReplayProgress{
		RunID: "r", Owner: "me", Status: dedup.RunCompleted, Finished: true, Now: later,
		Counts:      dedup.RunCounts{Selected: 6, Sent: 4, Quarantined: 1, Skipped: 1},
		Checkpoints: []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, AckedThrough: 3}, {Topic: "orders.dlq", Partition: 1, AckedThrough: 12}},
		Sends:       []dedup.ReplaySend{send(1, 11, 201, later)}, FlushID: "me#2",
	}
	if err := st.SaveReplayProgress(ctx, p2); err != nil {
		t.Fatal(err)
	}
	run, cps, err := st.ReplayRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != dedup.RunCompleted || run.Sent != 4 || run.Selected != 6 || run.Quarantined != 1 || run.Skipped != 1 ||
		!run.UpdatedAt.Equal(later) || run.FinishedAt == nil || !run.FinishedAt.Equal(later) {
		t.Fatalf("run after progress: %+v", run)
	}
	if cps[0].AckedThrough != 4 || cps[1].AckedThrough != 12 {
		t.Fatalf("checkpoints after progress: %+v", cps)
	}
	counts, err := st.ReplayTargetCounts(ctx, "r")
	if err != nil || len(counts) != 1 || counts[0] != (dedup.TargetCount{Topic: "orders", Partition: 2, Records: 5}) {
		t.Fatalf("target counts: %+v %v", counts, err)
	}
	// Beyond the checkpoints (0 → 4, 1 → 12): 0/7 only, with its first target offset.
	after, err := st.ReplaySendsAfterCheckpoint(ctx, "r")
	if err != nil || len(after) != 1 || after[0].SourceOffset != 7 || after[0].TargetOffset != 103 || after[0].EventID != "e-0-7" ||
		!after[0].At.Equal(now) {
		t.Fatalf("sends after the checkpoint: %+v %v", after, err)
	}
	// A failure records its error; progress is many small transactions.
	if err := st.TakeReplayRun(ctx, "r", dedup.RunCompleted, "me", "me2", ""); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r", Owner: "me2", Status: dedup.RunFailed, Error: "broker gone", Finished: true,
		Counts: run.RunCounts}); err != nil {
		t.Fatal(err)
	}
	if run, _, _ := st.ReplayRun(ctx, "r"); run.Status != dedup.RunFailed || run.Error != "broker gone" || run.Owner != "me2" {
		t.Fatalf("failed run: %+v", run)
	}
}

func testJournalTake(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	if err := st.CreateReplayRun(ctx, newRun("r", "dead:1", time.Time{}), twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r", Owner: "dead:1", Status: dedup.RunInterrupted, Finished: true}); err != nil {
		t.Fatal(err)
	}
	// Two resumers read the same state; one wins.
	// The winner journals the selection it resumes with (how it executes), the loser nothing.
	if err := st.TakeReplayRun(ctx, "r", dedup.RunInterrupted, "dead:1", "a:2", `{"from":"tasks.dlq","execution":{"rate":2000}}`); err != nil {
		t.Fatalf("first taker: %v", err)
	}
	if err := st.TakeReplayRun(ctx, "r", dedup.RunInterrupted, "dead:1", "b:3", `{"from":"tasks.dlq","execution":{"rate":1}}`); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("second taker: %v, want ErrRunNotOwned", err)
	}
	run, _, _ := st.ReplayRun(ctx, "r")
	if run.Status != dedup.RunRunning || run.Owner != "a:2" || run.FinishedAt != nil || run.Selection != `{"from":"tasks.dlq","execution":{"rate":2000}}` {
		t.Fatalf("taken run: %+v", run)
	}
	// An empty selection keeps the run's.
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r", Owner: "a:2", Status: dedup.RunInterrupted, Finished: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.TakeReplayRun(ctx, "r", dedup.RunInterrupted, "a:2", "c:4", ""); err != nil {
		t.Fatal(err)
	}
	if run, _, _ := st.ReplayRun(ctx, "r"); run.Owner != "c:4" || run.Selection != `{"from":"tasks.dlq","execution":{"rate":2000}}` {
		t.Fatalf("taken again: %+v", run)
	}
	// The old owner's late flush is refused.
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r", Owner: "dead:1", Status: dedup.RunRunning}); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("late flush of the old owner: %v", err)
	}
	if err := st.TakeReplayRun(ctx, "missing", dedup.RunInterrupted, "", "a:2", ""); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("take a missing run: %v", err)
	}
}

func testJournalList(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, env := NewStore(t, fresh)
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 5 {
		run := newRun(fmt.Sprintf("r%d", i), "o", base.Add(time.Duration(i)*time.Minute))
		if i%2 == 1 {
			run.Status = dedup.RunCompleted
		}
		if err := st.CreateReplayRun(ctx, run, nil); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{})
	if err != nil || len(runs) != 5 || runs[0].ID != "r4" || runs[4].ID != "r0" {
		t.Fatalf("runs: %d %v", len(runs), err)
	}
	runs, err = st.ReplayRuns(ctx, dedup.ReplayRunFilter{Status: dedup.RunCompleted, Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].ID != "r3" {
		t.Fatalf("completed, limit 1: %+v %v", runs, err)
	}
	// The journal belongs to the schema: a store of another marker table in
	// the same namespace migrates without error and sees the same runs.
	other := env.Open(t, dedup.Options{Table: "other_events"})
	if _, err := other.Migrate(ctx, false); err != nil {
		t.Fatalf("migrate a second marker table: %v", err)
	}
	if runs, err := other.ReplayRuns(ctx, dedup.ReplayRunFilter{}); err != nil || len(runs) != 5 {
		t.Fatalf("runs through the other store: %d %v", len(runs), err)
	}
}

// rec is the record of orders.dlq at p/off that send(p, off, …) journaled: its event id, no
// topic ID or timestamp (not compared).
func rec(p int32, off int64) dedup.SourceRecord {
	return dedup.SourceRecord{SourceRef: dedup.SourceRef{Topic: "orders.dlq", Partition: p, Offset: off}, EventID: fmt.Sprintf("e-%d-%d", p, off)}
}

func testReplayedSources(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	for i, id := range []string{"early", "late"} {
		if err := st.CreateReplayRun(ctx, newRun(id, "o", t0), nil); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Duration(i) * time.Minute)
		sends := []dedup.ReplaySend{send(0, 5, int64(100+i), at)}
		if i == 0 {
			sends = append(sends, send(1, 6, 50, at))
		}
		if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: id, Owner: "o", Status: dedup.RunCompleted, Sends: sends}); err != nil {
			t.Fatal(err)
		}
	}
	noTopic := rec(1, 6)
	noTopic.Topic = "" // empty Topic: the topic argument
	other := rec(0, 5)
	other.Topic = "other.dlq"
	recs := []dedup.SourceRecord{rec(0, 5), noTopic, rec(0, 6), other, rec(0, 5)} // 0/5 twice
	got, err := st.ReplayedSources(ctx, "orders.dlq", recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("replayed: %+v", got)
	}
	r := got[recs[0].SourceRef]
	if r.RunID != "late" || !r.At.Equal(t0.Add(time.Minute)) || r.TargetTopic != "orders" || r.TargetPartition != 2 || r.TargetOffset != 101 {
		t.Fatalf("latest replay of orders.dlq/0/5: %+v", r)
	}
	if r := got[recs[1].SourceRef]; r.RunID != "early" || r.TargetOffset != 50 {
		t.Fatalf("orders.dlq/1/6 by an empty-topic ref: %+v", r)
	}
	// One flush holding sends out of order, with gaps, to two target topics: a record inside a
	// batch's range but not in it is absent.
	if err := st.CreateReplayRun(ctx, newRun("gaps", "o", t0), nil); err != nil {
		t.Fatal(err)
	}
	gap := []dedup.ReplaySend{send(3, 14, 1014, t0), send(3, 10, 1010, t0), send(3, 12, 1012, t0)}
	gap[1].TargetTopic, gap[1].TargetPartition = "audit", 7
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "gaps", Owner: "o", Status: dedup.RunCompleted, Sends: gap}); err != nil {
		t.Fatal(err)
	}
	gapRecs := []dedup.SourceRecord{rec(3, 10), rec(3, 11), rec(3, 12), rec(3, 14), rec(3, 15)}
	found, err := st.ReplayedSources(ctx, "orders.dlq", gapRecs)
	if err != nil || len(found) != 3 || found[gapRecs[0].SourceRef].TargetTopic != "audit" || found[gapRecs[0].SourceRef].TargetPartition != 7 ||
		found[gapRecs[2].SourceRef].TargetOffset != 1012 || found[gapRecs[3].SourceRef].TargetOffset != 1014 {
		t.Fatalf("records in a batch with gaps: %+v %v", found, err)
	}
	counts, err := st.ReplayTargetCounts(ctx, "gaps")
	if err != nil || len(counts) != 2 || counts[0] != (dedup.TargetCount{Topic: "audit", Partition: 7, Records: 1}) || counts[1].Records != 2 {
		t.Fatalf("target counts of a mixed flush: %+v %v", counts, err)
	}
	// The spans: per source partition, the lowest and highest offset any run sent from.
	spans, err := st.ReplayedSpans(ctx, "orders.dlq")
	want := map[int32]dedup.OffsetSpan{0: {First: 5, Last: 5}, 1: {First: 6, Last: 6}, 3: {First: 10, Last: 14}}
	if err != nil || !maps.Equal(spans, want) {
		t.Fatalf("spans of orders.dlq: %v %v, want %v", spans, err, want)
	}
	if !spans[3].Holds(11) || spans[3].Holds(15) || spans[3].Holds(9) {
		t.Fatalf("span 10–14 holds 11, not 9 or 15: %v", spans[3])
	}
	if spans, err := st.ReplayedSpans(ctx, "never.dlq"); err != nil || len(spans) != 0 {
		t.Fatalf("spans of a topic never replayed: %v %v", spans, err)
	}
	if got, err := st.ReplayedSources(ctx, "orders.dlq", nil); err != nil || len(got) != 0 {
		t.Fatalf("no refs: %v %v", got, err)
	}
	// A batch wider than its neighbours (a run that sent 2 dead letters 5,000 apart, after a
	// run of narrow batches over the same partition) holds its records wherever a window falls:
	// the widest batch of the partition bounds the read.
	if err := st.CreateReplayRun(ctx, newRun("narrow", "o", t0), nil); err != nil {
		t.Fatal(err)
	}
	for lo := int64(0); lo < 6000; lo += 100 {
		if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "narrow", Owner: "o", Status: dedup.RunRunning, Sends: []dedup.ReplaySend{send(9, lo, lo, t0), send(9, lo+50, lo+50, t0)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateReplayRun(ctx, newRun("wide", "o", t0), nil); err != nil {
		t.Fatal(err)
	}
	wide := []dedup.ReplaySend{send(9, 300, 7300, t0.Add(time.Minute)), send(9, 5300, 7301, t0.Add(time.Minute))}
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "wide", Owner: "o", Status: dedup.RunCompleted, Sends: wide}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off    int64
		run    string
		target int64
	}{{300, "wide", 7300}, {5300, "wide", 7301}, {5350, "narrow", 5350}, {5301, "", 0}, {6100, "", 0}} {
		got, err := st.ReplayedSources(ctx, "orders.dlq", []dedup.SourceRecord{rec(9, c.off)})
		r, ok := got[rec(9, c.off).SourceRef]
		if err != nil || ok != (c.run != "") || r.RunID != c.run || r.TargetOffset != c.target {
			t.Fatalf("orders.dlq/9/%d beside a wide batch: %+v %v, want run %q at %d", c.off, got, err, c.run, c.target)
		}
	}
	// Many records go in chunks.
	many := make([]dedup.SourceRecord, 25_000)
	for i := range many {
		many[i] = rec(0, int64(i))
	}
	if got, err := st.ReplayedSources(ctx, "orders.dlq", many); err != nil || len(got) != 1 || got[many[5].SourceRef].RunID != "late" {
		t.Fatalf("25,000 records: %d %v", len(got), err)
	}
}

// testRecordIdentity: a run journals its source topic's ID and each send its record's event id
// and timestamp, and a journaled send counts as a replay of the record now at its coordinates
// only when they agree: a record of the topic recreated since (another topic ID), or another
// record at the same place (another event id or timestamp), was not replayed by it, and a later
// send of such a record does not hide the earlier send of this one.
func testRecordIdentity(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	ts := t0.Add(-time.Hour) // the source records' own timestamps
	journalIdentityRuns(ctx, t, st, t0, ts)

	run, _, err := st.ReplayRun(ctx, "of-A")
	if err != nil || len(run.SourceTopicIDs) != 1 || run.SourceTopicIDs["orders.dlq"] != "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("topic IDs of a run read back: %+v %v", run.SourceTopicIDs, err)
	}
	runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{})
	if err != nil || len(runs) != 2 || runs[0].SourceTopicIDs["orders.dlq"] != "BBBBBBBBBBBBBBBBBBBBBB" {
		t.Fatalf("topic IDs of listed runs: %+v %v", runs, err)
	}
	at := func(off int64, topicID, eventID string, stamp time.Time) dedup.SourceRecord {
		return dedup.SourceRecord{SourceRef: dedup.SourceRef{Topic: "orders.dlq", Offset: off}, TopicID: topicID, EventID: eventID, Timestamp: stamp}
	}
	checkReplayedBy(ctx, t, st, []replayedCase{
		{"the new 0/1, by the run of B", at(1, "BBBBBBBBBBBBBBBBBBBBBB", "e-new-1", ts.Add(time.Hour)), "of-B"},
		{"the old 0/1, by the run of A although B's is later", at(1, "AAAAAAAAAAAAAAAAAAAAAA", "e-old-1", ts), "of-A"},
		{"the new 0/2: the send of A was of the old one", at(2, "BBBBBBBBBBBBBBBBBBBBBB", "e-2", ts.Add(time.Second)), ""},
		{"0/2 under A", at(2, "AAAAAAAAAAAAAAAAAAAAAA", "e-2", ts.Add(time.Second)), "of-A"},
		{"0/2 under A, another timestamp", at(2, "AAAAAAAAAAAAAAAAAAAAAA", "e-2", ts), ""},
		{"0/2 under A, another event id", at(2, "AAAAAAAAAAAAAAAAAAAAAA", "e-x", ts.Add(time.Second)), ""},
		{"0/2, topic ID not known to the asker", at(2, "", "e-2", ts.Add(time.Second)), "of-A"},
		{"0/1, topic ID and timestamp not known: told by event id", at(1, "", "e-old-1", time.Time{}), "of-A"},
		{"0/3 under a third topic ID", at(3, "CCCCCCCCCCCCCCCCCCCCCC", "e-3", ts.Add(time.Hour)), ""},
	})
	// A resume reads the sends beyond the checkpoint with their timestamps.
	after, err := st.ReplaySendsAfterCheckpoint(ctx, "of-B")
	if err != nil || len(after) != 2 || !after[0].SourceTimestamp.Equal(ts.Add(time.Hour)) || after[0].EventID != "e-new-1" {
		t.Fatalf("sends after the checkpoint: %+v %v", after, err)
	}
	// A topic ID for a topic the run does not read, or an empty one, is refused.
	bad := newRun("bad", "o", t0)
	bad.SourceTopicIDs = map[string]string{"elsewhere": "AAAAAAAAAAAAAAAAAAAAAA"}
	if err := st.CreateReplayRun(ctx, bad, nil); err == nil {
		t.Fatal("a topic ID of a topic the run does not read was accepted")
	}
	bad.SourceTopicIDs = map[string]string{"orders.dlq": ""}
	if err := st.CreateReplayRun(ctx, bad, nil); err == nil {
		t.Fatal("an empty topic ID was accepted")
	}
}

// journalIdentityRuns journals, at t0, a run of orders.dlq under topic ID A that sends 0/1 and
// 0/2; and a minute later a run of the topic recreated as B that sends its 0/1 (another event
// id, another time) and 0/3. ts is the source records' own timestamp.
func journalIdentityRuns(ctx context.Context, t *testing.T, st *dedup.Store, t0, ts time.Time) {
	t.Helper()
	journal := func(run, topicID string, at time.Time, sends ...dedup.ReplaySend) {
		t.Helper()
		r := newRun(run, "o", at)
		if topicID != "" {
			r.SourceTopicIDs = map[string]string{"orders.dlq": topicID}
		}
		if err := st.CreateReplayRun(ctx, r, []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, Start: 0, End: 9, AckedThrough: -1}}); err != nil {
			t.Fatal(err)
		}
		for i := range sends {
			sends[i].At = at
		}
		if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: run, Owner: "o", Status: dedup.RunCompleted, Sends: sends, FlushID: run + "#1"}); err != nil {
			t.Fatal(err)
		}
	}
	timed := func(off int64, at time.Time, eventID string, targetOff int64) dedup.ReplaySend {
		s := send(0, off, targetOff, time.Time{})
		s.SourceTimestamp, s.EventID = at, eventID
		return s
	}
	journal("of-A", "AAAAAAAAAAAAAAAAAAAAAA", t0,
		timed(1, ts, "e-old-1", 101), timed(2, ts.Add(time.Second), "e-2", 102))
	journal("of-B", "BBBBBBBBBBBBBBBBBBBBBB", t0.Add(time.Minute),
		timed(1, ts.Add(time.Hour), "e-new-1", 201), timed(3, ts.Add(time.Hour), "e-3", 203))

}

func testJournalNotMigrated(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	st := Env{DSN: dsn, Schema: schema}.Open(t, dedup.Options{})
	if _, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{}); !errors.Is(err, dedup.ErrNotMigrated) {
		t.Fatalf("ReplayRuns on an unmigrated store: %v, want ErrNotMigrated", err)
	}
	if _, err := st.ReplayedSources(ctx, "t", []dedup.SourceRecord{{SourceRef: dedup.SourceRef{Offset: 1}}}); !errors.Is(err, dedup.ErrNotMigrated) {
		t.Fatalf("ReplayedSources on an unmigrated store: %v, want ErrNotMigrated", err)
	}
	if err := st.CreateReplayRun(ctx, newRun("r", "o", time.Time{}), nil); !errors.Is(err, dedup.ErrNotMigrated) {
		t.Fatalf("CreateReplayRun on an unmigrated store: %v, want ErrNotMigrated", err)
	}
}

// testTargetCountsBackfill: the counts per target partition are kept as sends are journaled
// (migration 004), and a store journaled before migration 004 gets them summed from its sends
// when it is migrated. Its send batches, in the arrays of that time, still read as sends.
func testTargetCountsBackfill(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, env := NewStore(t, fresh)
	if err := st.CreateReplayRun(ctx, newRun("r", "me", time.Time{}), twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	other := send(1, 12, 300, now)
	other.TargetTopic, other.TargetPartition = "audit", 0
	for i, sends := range [][]dedup.ReplaySend{
		{send(0, 0, 100, now), send(0, 1, 101, now), other},
		{send(1, 11, 201, now), func() dedup.ReplaySend { s := send(1, 13, 5, now); s.TargetPartition = 0; return s }()},
	} {
		p := dedup.ReplayProgress{RunID: "r", Owner: "me", Status: dedup.RunRunning, Now: now, Sends: sends, FlushID: fmt.Sprintf("me#%d", i)}
		if err := st.SaveReplayProgress(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	want := []dedup.TargetCount{{Topic: "audit", Partition: 0, Records: 1}, {Topic: "orders", Partition: 0, Records: 1}, {Topic: "orders", Partition: 2, Records: 3}}
	check := func(when, run string, want []dedup.TargetCount) {
		t.Helper()
		got, err := st.ReplayTargetCounts(ctx, run)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("target counts of %s %s: %+v %v, want %+v", run, when, got, err, want)
		}
	}
	check("as journaled", "r", want)

	journalBeforeTargetCounts(ctx, t, st, env, now)
	if _, err := st.ReplayTargetCounts(ctx, "old"); err == nil {
		t.Fatal("target counts read without their table")
	}
	steps, err := st.Migrate(ctx, false)
	if err != nil || len(steps) == 0 || steps[0].Version != 4 {
		t.Fatalf("migrate a version-3 store: %+v %v", steps, err)
	}
	check("summed by migration 004", "old", []dedup.TargetCount{{Topic: "audit", Partition: 0, Records: 1}, {Topic: "orders", Partition: 2, Records: 2}})
	sends, err := st.ReplaySendsAfterCheckpoint(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sends {
		got = append(got, fmt.Sprintf("%s/%d/%d %s → %s/%d/%d", s.SourceTopic, s.SourcePartition, s.SourceOffset, s.EventID, s.TargetTopic, s.TargetPartition, s.TargetOffset))
	}
	if w := "[orders.dlq/0/0 e-0-0 → orders/2/100 orders.dlq/0/1 e-0-1 → orders/2/101 orders.dlq/1/12 e-1-12 → audit/0/300]"; fmt.Sprint(got) != w {
		t.Fatalf("sends journaled before: %v, want %s", got, w)
	}
}

// journalBeforeTargetCounts journals run "old" as a store before migration 004 held it (its
// sends in the arrays written then, no counts) and turns st back into that store.
func journalBeforeTargetCounts(ctx context.Context, t *testing.T, st *dedup.Store, env Env, now time.Time) {
	table := func(name string) string { return journalTable(st, env, name) }
	if err := st.CreateReplayRun(ctx, newRun("old", "me", time.Time{}), twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	type legacy struct {
		part          int32
		target        string
		offsets       []int64
		ids           []string
		tparts        []int32
		targetOffsets []int64
	}
	rows := []legacy{
		{0, "orders", []int64{0, 1}, []string{"e-0-0", "e-0-1"}, []int32{2, 2}, []int64{100, 101}},
		{1, "audit", []int64{12}, []string{"e-1-12"}, []int32{0}, []int64{300}},
	}
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		for i, r := range rows {
			arrays := []any{r.offsets, r.ids, r.tparts, r.targetOffsets}
			if st.Driver() != "postgres" { // SQLite keeps them as JSON text
				for k, a := range arrays {
					text, _ := json.Marshal(a)
					arrays[k] = string(text)
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+table("replay_send_batches")+` (run_id, flush_id, source_topic, source_partition,
  first_offset, last_offset, target_topic, records, source_offsets, event_ids, target_partitions, target_offsets, sent_at)
VALUES ('old', $1, 'orders.dlq', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				fmt.Sprintf("old#%d", i), r.part, r.offsets[0], r.offsets[len(r.offsets)-1], r.target, len(r.offsets),
				arrays[0], arrays[1], arrays[2], arrays[3], sqlTime(st, now))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The store as it was before: no counts table, version 3.
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		if _, err := tx.Exec(ctx, `DROP TABLE `+table("replay_target_counts")); err != nil {
			return err
		}
		if err := dropOutcome(ctx, tx, st); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM `+migrationsTable(st, env)+` WHERE version >= 4`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// journalTable is the quoted table name of the journal's table name in env.
func journalTable(st *dedup.Store, env Env, name string) string {
	return dedup.TableName(st.Driver(), env.Schema, name)
}

// testJournalBeforeRecordIdentity: a store journaled before record identity (PostgreSQL
// migration 006, SQLite 005) — runs without topic IDs, send batches without source timestamps,
// in each form the driver wrote them (PostgreSQL: the arrays of before migration 005 and the
// packed version 1 of 005; SQLite: the JSON arrays) — is migrated, and its journal reads with
// the documented meaning: what it did not record is not compared, so its sends count for the
// record now at their coordinates when the event id is theirs, whatever that record's topic ID
// and timestamp; a record with another event id was not replayed by them. A run journaled after
// the migration, in the same store, is told apart by its topic ID.
func testJournalBeforeRecordIdentity(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, env := NewStore(t, fresh)
	status, err := st.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	identity := 0 // the migration of record identity; those after it are replayed too
	for _, a := range status.Applied {
		if a.Name == "replay_record_identity" {
			identity = a.Version
		}
	}
	pg := st.Driver() == "postgres"
	now := time.Now().UTC().Truncate(time.Millisecond)
	journalBeforeRecordIdentity(ctx, t, st, env, identity, now)

	steps, err := st.Migrate(ctx, false)
	if err != nil || len(steps) != status.Latest-identity+1 || steps[0].Version != identity || steps[0].Name != "replay_record_identity" {
		t.Fatalf("migrate a store of before record identity: %+v %v", steps, err)
	}
	run, _, err := st.ReplayRun(ctx, "old")
	if err != nil || len(run.SourceTopicIDs) != 0 || run.Sources[0] != "orders.dlq" {
		t.Fatalf("a run journaled before: %+v %v", run, err)
	}
	legacy := []int64{1, 2}
	if pg {
		legacy = append(legacy, 3)
	}
	after, err := st.ReplaySendsAfterCheckpoint(ctx, "old")
	if err != nil || len(after) != len(legacy) {
		t.Fatalf("sends journaled before: %+v %v", after, err)
	}
	for i, s := range after {
		if s.SourceOffset != legacy[i] || s.EventID != fmt.Sprintf("e-0-%d", legacy[i]) || s.TargetOffset != 100+legacy[i] || !s.SourceTimestamp.IsZero() {
			t.Fatalf("send %d journaled before: %+v", i, s)
		}
	}
	replayedAcrossRecordIdentity(ctx, t, st, now)
}

// journalBeforeRecordIdentity turns st back into a store of before record identity (no tables
// of it, the version before identity) and journals run "old" in it, as it was written then:
// sends of 0/1 and 0/2 (and, on PostgreSQL, 0/3 packed in version 1, without timestamps).
func journalBeforeRecordIdentity(ctx context.Context, t *testing.T, st *dedup.Store, env Env, identity int, now time.Time) {
	pg := st.Driver() == "postgres"
	table := func(name string) string { return journalTable(st, env, name) }

	// The store as it was before: no tables of record identity, the version before.
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		drop := []string{"replay_run_topics"}
		if !pg {
			drop = append(drop, "replay_send_times")
		}
		for _, name := range drop {
			if _, err := tx.Exec(ctx, `DROP TABLE `+table(name)); err != nil {
				return err
			}
		}
		if err := dropOutcome(ctx, tx, st); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM `+migrationsTable(st, env)+` WHERE version >= $1`, identity)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateReplayRun(ctx, newRun("old", "o", time.Time{}), []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, Start: 0, End: 9, AckedThrough: -1}}); err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO ` + table("replay_send_batches") + ` (run_id, flush_id, source_topic, source_partition,
  first_offset, last_offset, target_topic, records, source_offsets, event_ids, target_partitions, target_offsets, sent_at)
VALUES ('old', $1, 'orders.dlq', 0, $2, $3, 'orders', $4, $5, $6, $7, $8, $9)`
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		if !pg { // SQLite: JSON arrays, the only form it wrote
			_, err := tx.Exec(ctx, insert, "old#1", 1, 2, 2, "[1,2]", `["e-0-1","e-0-2"]`, "[2,2]", "[101,102]", sqlTime(st, now))
			return err
		}
		// PostgreSQL before migration 005: arrays.
		if _, err := tx.Exec(ctx, insert, "old#1", 1, 2, 2, []int64{1, 2}, []string{"e-0-1", "e-0-2"}, []int32{2, 2}, []int64{101, 102}, now); err != nil {
			return err
		}
		// Migration 005: packed, version 1 (no timestamps).
		b := dedupdriver.SendBatch{SourceOffsets: []int64{3}, EventIDs: []string{"e-0-3"}, TargetPartitions: []int32{2}, TargetOffsets: []int64{103}}
		_, err := tx.Exec(ctx, `INSERT INTO `+table("replay_send_batches")+` (run_id, flush_id, source_topic, source_partition,
  first_offset, last_offset, target_topic, records, sends, sent_at) VALUES ('old', 'old#2', 'orders.dlq', 0, 3, 3, 'orders', 1, $1, $2)`, b.Pack(nil), now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// replayedCase is a record of orders.dlq and the run that replayed it ("": not replayed).
type replayedCase struct {
	name string
	rec  dedup.SourceRecord
	run  string
}

// checkReplayedBy asks the store, one record at a time, which run replayed each case's record.
func checkReplayedBy(ctx context.Context, t *testing.T, st *dedup.Store, cases []replayedCase) {
	t.Helper()
	for _, c := range cases {
		got, err := st.ReplayedSources(ctx, "orders.dlq", []dedup.SourceRecord{c.rec})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := got[c.rec.SourceRef]
		if c.run == "" && ok || c.run != "" && r.RunID != c.run {
			t.Errorf("%s: replay %+v (found %v), want run %q", c.name, r, ok, c.run)
		}
	}
}

// replayedAcrossRecordIdentity checks, after the migration, that a run of the topic recreated
// (topic ID B) that sends its 0/1, another record, is told apart from run "old"'s sends.
func replayedAcrossRecordIdentity(ctx context.Context, t *testing.T, st *dedup.Store, now time.Time) {
	newer := newRun("new", "o", time.Time{})
	newer.SourceTopicIDs = map[string]string{"orders.dlq": "BBBBBBBBBBBBBBBBBBBBBB"}
	if err := st.CreateReplayRun(ctx, newer, nil); err != nil {
		t.Fatal(err)
	}
	s1 := send(0, 1, 201, now.Add(time.Minute))
	s1.EventID, s1.SourceTimestamp = "e-new-1", now
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "new", Owner: "o", Status: dedup.RunCompleted, Sends: []dedup.ReplaySend{s1}}); err != nil {
		t.Fatal(err)
	}
	at := func(off int64, topicID, eventID string) dedup.SourceRecord {
		return dedup.SourceRecord{SourceRef: dedup.SourceRef{Topic: "orders.dlq", Offset: off}, TopicID: topicID, EventID: eventID, Timestamp: now.Add(-time.Hour)}
	}
	checkReplayedBy(ctx, t, st, []replayedCase{
		{"an old send, whatever the topic ID and timestamp asked", at(2, "ZZZZZZZZZZZZZZZZZZZZZZ", "e-0-2"), "old"},
		{"an old send, another event id", at(2, "ZZZZZZZZZZZZZZZZZZZZZZ", "e-other"), ""},
		{"the old 0/1 beside the new run's 0/1", at(1, "", "e-0-1"), "old"},
		{"the new 0/1", at(1, "BBBBBBBBBBBBBBBBBBBBBB", "e-new-1"), ""}, // its timestamp is not the one asked
		{"the new 0/1 with its timestamp", dedup.SourceRecord{SourceRef: dedup.SourceRef{Topic: "orders.dlq", Offset: 1}, TopicID: "BBBBBBBBBBBBBBBBBBBBBB", EventID: "e-new-1", Timestamp: now}, "new"},
	})
	if st.Driver() == "postgres" {
		got, err := st.ReplayedSources(ctx, "orders.dlq", []dedup.SourceRecord{at(3, "ZZZZZZZZZZZZZZZZZZZZZZ", "e-0-3")})
		if err != nil || got[dedup.SourceRef{Topic: "orders.dlq", Offset: 3}].TargetOffset != 103 {
			t.Fatalf("a send packed in version 1: %+v %v", got, err)
		}
	}
}

// testMarkerActions: the journal of prunes and forgets round-trips, newest first, and is the
// schema's, shared by its marker tables.
func testMarkerActions(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	if got, err := st.MarkerActions(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("empty journal: %+v, %v", got, err)
	}
	if err := st.RecordMarkerAction(ctx, dedup.MarkerAction{Action: dedup.ActionPrune, Operator: "alice", Reason: "quarterly",
		Selection: `{"older_than":"30d"}`, Counts: `{"candidates":12}`, Deleted: 12}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordMarkerAction(ctx, dedup.MarkerAction{Action: dedup.ActionForget, Operator: "bob",
		Selection: `{"consumer":"billing"}`, Counts: "{}", Deleted: 2, Error: "connection reset"}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordMarkerAction(ctx, dedup.MarkerAction{Action: "vacuum", Operator: "eve", Selection: "{}", Counts: "{}"}); err == nil {
		t.Fatal("an unknown action was journaled")
	}
	got, err := st.MarkerActions(ctx, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("journal: %+v, %v", got, err)
	}
	f, p := got[0], got[1]
	if f.Action != dedup.ActionForget || f.Operator != "bob" || f.Reason != "" || f.Deleted != 2 || f.Error != "connection reset" ||
		f.MarkerTable != st.TableLabel() || f.ID <= p.ID {
		t.Fatalf("forget read back: %+v", f)
	}
	if p.Action != dedup.ActionPrune || p.Operator != "alice" || p.Reason != "quarterly" || p.Selection != `{"older_than":"30d"}` || p.Counts != `{"candidates":12}` ||
		p.Deleted != 12 || p.Error != "" || p.At.IsZero() || time.Since(p.At) > time.Hour || time.Until(p.At) > time.Hour {
		t.Fatalf("prune read back: %+v", p)
	}
	if got, err := st.MarkerActions(ctx, 1); err != nil || len(got) != 1 || got[0].ID != f.ID {
		t.Fatalf("limit 1: %+v, %v", got, err)
	}
}

// testGroupActions: the journal of group skips, resets and undos round-trips, newest first; an
// undo names its skip or reset, which reads back as undone by it, and a skip is undone at most
// once.
func testGroupActions(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	if got, err := st.GroupActions(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("empty journal: %+v, %v", got, err)
	}
	if a, err := st.GroupAction(ctx, "nope"); err != nil || a != nil {
		t.Fatalf("a missing action: %+v, %v", a, err)
	}
	skip := dedup.GroupAction{ID: "20260101-000000-aaaaaa", Action: dedup.ActionSkip, Group: "billing", Topic: "orders",
		DeadLetterTopic: "orders.dlq", Operator: "alice", Reason: "poison", Offsets: `[{"partition":0,"old_offset":4,"new_offset":5}]`, Parked: 1}
	if err := st.RecordGroupAction(ctx, skip); err != nil {
		t.Fatal(err)
	}
	undo := dedup.GroupAction{ID: "20260101-000001-bbbbbb", Action: dedup.ActionUndo, Group: "billing", Topic: "orders",
		DeadLetterTopic: "orders.dlq", Operator: "bob", Reason: "wrong group", Offsets: `[{"partition":0,"old_offset":5,"new_offset":4}]`, Undoes: skip.ID}
	if err := st.RecordGroupAction(ctx, undo); err != nil {
		t.Fatal(err)
	}
	again := undo
	again.ID = "20260101-000002-cccccc"
	if err := st.RecordGroupAction(ctx, again); err == nil {
		t.Fatal("a skip was undone twice")
	}
	if err := st.RecordGroupAction(ctx, dedup.GroupAction{ID: "x", Action: "rewind", Group: "g", Topic: "t", Offsets: "[]"}); err == nil {
		t.Fatal("an unknown action was journaled")
	}
	got, err := st.GroupAction(ctx, skip.ID)
	if err != nil || got == nil {
		t.Fatalf("skip: %+v, %v", got, err)
	}
	if got.Action != dedup.ActionSkip || got.Group != "billing" || got.Topic != "orders" || got.DeadLetterTopic != "orders.dlq" ||
		got.Operator != "alice" || got.Reason != "poison" || got.Offsets != skip.Offsets || got.Parked != 1 || got.Undoes != "" ||
		got.UndoneBy != undo.ID || got.At.IsZero() || time.Since(got.At) > time.Hour {
		t.Fatalf("skip read back: %+v", got)
	}
	list, err := st.GroupActions(ctx, 10)
	if err != nil || len(list) != 2 || list[0].ID != undo.ID || list[0].Undoes != skip.ID || list[0].UndoneBy != "" || list[1].ID != skip.ID {
		t.Fatalf("list: %+v, %v", list, err)
	}
	// A reset (migration 012): its topics joined, no dead-letter topic, undone like a skip.
	reset := dedup.GroupAction{ID: "20260101-000003-dddddd", Action: dedup.ActionReset, Group: "billing", Topic: "orders,payments",
		Operator: "carol", Reason: "rewind", Offsets: `[{"topic":"orders","partition":0,"old_offset":5,"new_offset":0}]`}
	if err := st.RecordGroupAction(ctx, reset); err != nil {
		t.Fatalf("a reset: %v", err)
	}
	undoReset := dedup.GroupAction{ID: "20260101-000004-eeeeee", Action: dedup.ActionUndo, Group: "billing", Topic: "orders,payments",
		Operator: "carol", Reason: "too far", Offsets: `[{"topic":"orders","partition":0,"old_offset":0,"new_offset":5}]`, Undoes: reset.ID}
	if err := st.RecordGroupAction(ctx, undoReset); err != nil {
		t.Fatalf("the undo of a reset: %v", err)
	}
	if got, err := st.GroupAction(ctx, reset.ID); err != nil || got == nil || got.Action != dedup.ActionReset || got.Topic != "orders,payments" ||
		got.Offsets != reset.Offsets || got.UndoneBy != undoReset.ID {
		t.Fatalf("reset read back: %+v, %v", got, err)
	}
}

// dropOutcome takes the marker table back to before the marker-outcome migration (009) and
// the version guard's (011), which a test that replays older migrations replays too.
func dropOutcome(ctx context.Context, tx *dedup.Tx, st *dedup.Store) error {
	if _, err := tx.Exec(ctx, `DROP TABLE `+st.VersionsTable()); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `ALTER TABLE `+st.Table()+` DROP COLUMN outcome`)
	return err
}

// testJournalWorkers: a run shared by workers (migration 013) journals each partition's
// worker and counts; a worker writes only the partitions it holds, the run's counts are their
// sum, and the run completes once every checkpoint reached its end.
func testJournalWorkers(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	st, _ := NewStore(t, fresh)
	now := time.Now().UTC()
	run := newRun("w-1", "", now)
	run.Status = dedup.RunPlanned
	cps := twoCheckpoints()
	for i := range cps {
		cps[i].Worker = &dedup.PartitionWorker{}
	}
	if err := st.CreateReplayRun(ctx, run, cps); err != nil {
		t.Fatal(err)
	}
	got, read, err := st.ReplayRun(ctx, "w-1")
	if err != nil || got.Status != dedup.RunPlanned || len(read) != 2 || read[0].Worker == nil || read[0].Worker.Owner != "" {
		t.Fatalf("created: %+v %+v %v", got, read, err)
	}
	// A run of one process has no worker rows.
	if err := st.CreateReplayRun(ctx, newRun("solo", "h:1", now), twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	if _, solo, _ := st.ReplayRun(ctx, "solo"); solo[0].Worker != nil {
		t.Fatalf("a run of one process has workers: %+v", solo[0].Worker)
	}
	if err := st.TakeReplayPartitions(ctx, "w-1", "a:1", []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := st.TakeReplayPartitions(ctx, "w-1", "b:2", []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	flush := func(owner string, p int32, acked int64, sent int64, id string) error {
		return st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "w-1", Owner: owner, Partitioned: true, FlushID: id, Now: time.Now(),
			Sends: []dedup.ReplaySend{send(p, acked, acked, time.Now())},
			Checkpoints: []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: p, AckedThrough: acked,
				Worker: &dedup.PartitionWorker{Counts: dedup.RunCounts{Selected: sent, Sent: sent}}}}})
	}
	if err := flush("a:1", 0, 49, 50, "a#1"); err != nil {
		t.Fatal(err)
	}
	if err := flush("b:2", 1, 19, 10, "b#1"); err != nil {
		t.Fatal(err)
	}
	// a does not hold partition 1: refused, its checkpoint untouched.
	if err := flush("a:1", 1, 15, 99, "a#2"); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("a flush of a partition not held: %v", err)
	}
	got, read, _ = st.ReplayRun(ctx, "w-1")
	if got.Status != dedup.RunRunning || got.Selected != 60 || got.Sent != 60 || read[0].AckedThrough != 49 || read[1].AckedThrough != 19 ||
		read[0].Worker.Owner != "a:1" || read[1].Worker.Owner != "b:2" || read[1].Worker.Counts.Sent != 10 {
		t.Fatalf("after the flushes: %+v %+v %+v", got, read[0].Worker, read[1].Worker)
	}
	// b is done with partition 1 and releases it; partition 0 is not done: not completed.
	if done, err := st.ReleaseReplayPartitions(ctx, "w-1", "b:2"); err != nil || done {
		t.Fatalf("release b: %v %v", done, err)
	}
	if err := flush("a:1", 0, 99, 100, "a#3"); err != nil {
		t.Fatal(err)
	}
	if done, err := st.ReleaseReplayPartitions(ctx, "w-1", "a:1"); err != nil || !done {
		t.Fatalf("release a: %v %v", done, err)
	}
	got, read, _ = st.ReplayRun(ctx, "w-1")
	if got.Status != dedup.RunCompleted || got.FinishedAt == nil || got.Sent != 110 || read[0].Worker.Owner != "" || read[1].Worker.Owner != "" {
		t.Fatalf("completed: %+v %+v %+v", got, read[0].Worker, read[1].Worker)
	}
	if tc, _ := st.ReplayTargetCounts(ctx, "w-1"); len(tc) != 1 || tc[0].Records != 4 {
		t.Fatalf("every send journaled, the refused flush's too: %+v", tc)
	}
}
