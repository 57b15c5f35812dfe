package dedupconformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
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
	if err := st.TakeReplayRun(ctx, "r", dedup.RunCompleted, "me", "me2"); err != nil {
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
	if err := st.TakeReplayRun(ctx, "r", dedup.RunInterrupted, "dead:1", "a:2"); err != nil {
		t.Fatalf("first taker: %v", err)
	}
	if err := st.TakeReplayRun(ctx, "r", dedup.RunInterrupted, "dead:1", "b:3"); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("second taker: %v, want ErrRunNotOwned", err)
	}
	run, _, _ := st.ReplayRun(ctx, "r")
	if run.Status != dedup.RunRunning || run.Owner != "a:2" || run.FinishedAt != nil {
		t.Fatalf("taken run: %+v", run)
	}
	// The old owner's late flush is refused.
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "r", Owner: "dead:1", Status: dedup.RunRunning}); !errors.Is(err, dedup.ErrRunNotOwned) {
		t.Fatalf("late flush of the old owner: %v", err)
	}
	if err := st.TakeReplayRun(ctx, "missing", dedup.RunInterrupted, "", "a:2"); !errors.Is(err, dedup.ErrRunNotOwned) {
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
	refs := []dedup.SourceRef{
		{Topic: "orders.dlq", Partition: 0, Offset: 5},
		{Partition: 1, Offset: 6}, // empty Topic: the topic argument
		{Topic: "orders.dlq", Partition: 0, Offset: 6},
		{Topic: "other.dlq", Partition: 0, Offset: 5},
		{Topic: "orders.dlq", Partition: 0, Offset: 5}, // twice
	}
	got, err := st.ReplayedSources(ctx, "orders.dlq", refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("replayed: %+v", got)
	}
	r := got[refs[0]]
	if r.RunID != "late" || !r.At.Equal(t0.Add(time.Minute)) || r.TargetTopic != "orders" || r.TargetPartition != 2 || r.TargetOffset != 101 {
		t.Fatalf("latest replay of orders.dlq/0/5: %+v", r)
	}
	if r := got[refs[1]]; r.RunID != "early" || r.TargetOffset != 50 {
		t.Fatalf("orders.dlq/1/6 by an empty-topic ref: %+v", r)
	}
	// One flush holding sends out of order, with gaps, to two target topics: a ref inside a
	// batch's range but not in it is absent.
	if err := st.CreateReplayRun(ctx, newRun("gaps", "o", t0), nil); err != nil {
		t.Fatal(err)
	}
	gap := []dedup.ReplaySend{send(3, 14, 1014, t0), send(3, 10, 1010, t0), send(3, 12, 1012, t0)}
	gap[1].TargetTopic, gap[1].TargetPartition = "audit", 7
	if err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: "gaps", Owner: "o", Status: dedup.RunCompleted, Sends: gap}); err != nil {
		t.Fatal(err)
	}
	gapRefs := []dedup.SourceRef{{Partition: 3, Offset: 10}, {Partition: 3, Offset: 11}, {Partition: 3, Offset: 12}, {Partition: 3, Offset: 14}, {Partition: 3, Offset: 15}}
	found, err := st.ReplayedSources(ctx, "orders.dlq", gapRefs)
	if err != nil || len(found) != 3 || found[gapRefs[0]].TargetTopic != "audit" || found[gapRefs[0]].TargetPartition != 7 ||
		found[gapRefs[2]].TargetOffset != 1012 || found[gapRefs[3]].TargetOffset != 1014 {
		t.Fatalf("refs in a batch with gaps: %+v %v", found, err)
	}
	counts, err := st.ReplayTargetCounts(ctx, "gaps")
	if err != nil || len(counts) != 2 || counts[0] != (dedup.TargetCount{Topic: "audit", Partition: 7, Records: 1}) || counts[1].Records != 2 {
		t.Fatalf("target counts of a mixed flush: %+v %v", counts, err)
	}
	if got, err := st.ReplayedSources(ctx, "orders.dlq", nil); err != nil || len(got) != 0 {
		t.Fatalf("no refs: %v %v", got, err)
	}
	// Many refs go in chunks.
	many := make([]dedup.SourceRef, 25_000)
	for i := range many {
		many[i] = dedup.SourceRef{Topic: "orders.dlq", Partition: 0, Offset: int64(i)}
	}
	if got, err := st.ReplayedSources(ctx, "orders.dlq", many); err != nil || len(got) != 1 || got[many[5]].RunID != "late" {
		t.Fatalf("25,000 refs: %d %v", len(got), err)
	}
}

func testJournalNotMigrated(t *testing.T, fresh Fresh) {
	ctx := ctxT(t)
	dsn, schema := fresh(t)
	st := Env{DSN: dsn, Schema: schema}.Open(t, dedup.Options{})
	if _, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{}); !errors.Is(err, dedup.ErrNotMigrated) {
		t.Fatalf("ReplayRuns on an unmigrated store: %v, want ErrNotMigrated", err)
	}
	if _, err := st.ReplayedSources(ctx, "t", []dedup.SourceRef{{Offset: 1}}); !errors.Is(err, dedup.ErrNotMigrated) {
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

	// A run journaled before migration 004: its sends in the arrays written then, no counts.
	if err := st.CreateReplayRun(ctx, newRun("old", "me", time.Time{}), twoCheckpoints()); err != nil {
		t.Fatal(err)
	}
	table := func(name string) string {
		if st.Driver() == "postgres" {
			return `"` + env.Schema + `"."` + name + `"`
		}
		return `"` + sqlitedriver.TableName(env.Schema, name) + `"`
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

	// The store as it was before migration 004: no counts table, version 3.
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		if _, err := tx.Exec(ctx, `DROP TABLE `+table("replay_target_counts")); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM `+migrationsTable(st, env)+` WHERE version >= 4`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
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
