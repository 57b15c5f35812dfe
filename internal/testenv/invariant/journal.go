package invariant

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
)

// JournalFigures compare a replay run's journal with the records that reached its target.
type JournalFigures struct {
	Status                string
	Selected, Sent        int64
	Checkpoints, AtTheEnd int // partitions of the run, and those acknowledged through their end
	// Journaled are the selected dead letters with a journaled send of this run whose target
	// record is there, with this run's provenance.
	Journaled int
	// InTarget are the distinct selected dead letters found in the target with this run's
	// id; Copies the target records beyond the first of one dead letter (sent again by a
	// resume: the run's duplicate window bounds them).
	InTarget, Copies int
	// TargetCounts is the sum of the journal's per-target counts.
	TargetCounts int64
}

func (f JournalFigures) String() string {
	return fmt.Sprintf("run %s: selected %d, sent %d, checkpoints at their end %d of %d, journaled sends found in the target %d, distinct dead letters in the target %d, copies %d, per-target counts %d",
		f.Status, f.Selected, f.Sent, f.AtTheEnd, f.Checkpoints, f.Journaled, f.InTarget, f.Copies, f.TargetCounts)
}

// Journal checks run runID against what reached the target: it selected and sent every one of
// selected (the dead letters of its range, all meant to be sent), each partition's checkpoint
// is at its end, each dead letter's journaled send names a target record that carries this
// run's id and that dead letter as its source, every record of target with this run's id came
// from a selected dead letter, and no dead letter reached the target more than window+1 times.
func Journal(ctx context.Context, st *dedup.Store, runID string, selected, target []*kgo.Record, window int) (JournalFigures, Problems, error) {
	var f JournalFigures
	var probs Problems
	if err := journalRun(ctx, st, runID, len(selected), &f, &probs); err != nil {
		return f, nil, err
	}
	// What reached the target, by source.
	at := map[string]*kgo.Record{} // target address → record
	copies := map[string]int{}     // source → records of this run in the target
	for _, r := range target {
		at[Addr(r.Topic, r.Partition, r.Offset)] = r
		if header(r, dlq.ReplayHeaderID) == runID {
			copies[header(r, dlq.ReplayHeaderSource)]++
		}
	}
	want := map[string]bool{}
	for _, d := range selected {
		want[Addr(d.Topic, d.Partition, d.Offset)] = true
	}
	var strays, over []string
	for src, n := range copies {
		switch {
		case !want[src]:
			strays = append(strays, fmt.Sprintf("%d records in the target name %s as their source, which the run did not select", n, src))
		default:
			f.InTarget++
			f.Copies += n - 1
			if n > window+1 {
				over = append(over, fmt.Sprintf("%s reached the target %d times", src, n))
			}
		}
	}
	probs.examples("strays", strays)
	probs.examples("dead letters sent too often", over)
	if f.InTarget != len(selected) {
		probs.add("%d of the %d selected dead letters reached the target", f.InTarget, len(selected))
	}
	if err := journaledSends(ctx, st, runID, selected, at, &f, &probs); err != nil {
		return f, nil, err
	}
	return f, probs, nil
}

// journalRun checks the run's row, its checkpoints and its per-target counts: completed, every
// one of the selected dead letters selected and sent, every checkpoint at its range's end, the
// counts adding up to the sends.
func journalRun(ctx context.Context, st *dedup.Store, runID string, selected int, f *JournalFigures, probs *Problems) error {
	run, cps, err := st.ReplayRun(ctx, runID)
	if err != nil {
		return err
	}
	f.Status, f.Selected, f.Sent, f.Checkpoints = run.Status, run.Selected, run.Sent, len(cps)
	if run.Status != dedup.RunCompleted {
		probs.add("run %s is %s, not completed (error %q)", runID, run.Status, run.Error)
	}
	if run.Selected != int64(selected) || run.Sent != int64(selected) || run.Quarantined != 0 || run.Skipped != 0 {
		probs.add("run counts %+v, want %d selected and sent", run.RunCounts, selected)
	}
	for _, cp := range cps {
		if cp.AckedThrough == cp.End {
			f.AtTheEnd++
		} else {
			probs.add("checkpoint %s/%d acknowledged through %d, its range ends at %d", cp.Topic, cp.Partition, cp.AckedThrough, cp.End)
		}
	}
	counts, err := st.ReplayTargetCounts(ctx, runID)
	if err != nil {
		return err
	}
	for _, c := range counts {
		f.TargetCounts += c.Records
	}
	if f.TargetCounts != run.Sent {
		probs.add("the journal's per-target counts add up to %d, the run says %d sent", f.TargetCounts, run.Sent)
	}
	return nil
}

// journaledSends checks that each selected dead letter's journaled send names a record of the
// target (at, by address) that carries this run's id and that dead letter as its source.
func journaledSends(ctx context.Context, st *dedup.Store, runID string, selected []*kgo.Record, at map[string]*kgo.Record, f *JournalFigures, probs *Problems) error {
	if len(selected) == 0 {
		return nil
	}
	recs := make([]dedup.SourceRecord, len(selected))
	for i, d := range selected {
		ref := dedup.SourceRef{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset}
		recs[i] = dedup.SourceRecord{SourceRef: ref, EventID: dlq.Parse(d).EventID, Timestamp: d.Timestamp}
	}
	replayed, err := st.ReplayedSources(ctx, selected[0].Topic, recs)
	if err != nil {
		return err
	}
	var bad []string
	for _, rec := range recs {
		ref := rec.SourceRef
		src := Addr(ref.Topic, ref.Partition, ref.Offset)
		rr, ok := replayed[ref]
		if !ok || rr.RunID != runID {
			bad = append(bad, fmt.Sprintf("%s: no send of run %s in the journal (%+v)", src, runID, rr))
			continue
		}
		r := at[Addr(rr.TargetTopic, rr.TargetPartition, rr.TargetOffset)]
		if r == nil || header(r, dlq.ReplayHeaderID) != runID || header(r, dlq.ReplayHeaderSource) != src {
			bad = append(bad, fmt.Sprintf("%s: the journal says it went to %s, which holds no copy of it",
				src, Addr(rr.TargetTopic, rr.TargetPartition, rr.TargetOffset)))
			continue
		}
		f.Journaled++
	}
	probs.examples("journaled sends wrong", bad)
	return nil
}
