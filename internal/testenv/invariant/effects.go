// Package invariant checks, after a test has run fieldwork on a generated sample stream, what
// must hold whatever faults the run went through: every event's effect there exactly once,
// every poison record dead-lettered, nothing else dead-lettered, and a replay's journal in
// agreement with what reached its target. Each check returns its figures and the problems it
// found (empty when the invariant holds), for the test to log and fail on.
package invariant

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// maxExamples bounds the examples of one kind of problem.
const maxExamples = 5

// Problems collects what an invariant check found wrong.
type Problems []string

func (p *Problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// examples adds up to maxExamples of bad, then a count of the rest.
func (p *Problems) examples(what string, bad []string) {
	for i, b := range bad {
		if i == maxExamples {
			p.add("… %d %s in all", len(bad), what)
			return
		}
		p.add("%s", b)
	}
}

// ProjectionFigures are what the projection handler's table holds for one consumer, against
// the stream: one row per task, each first send applied once, each stale re-emit counted
// once as stale, the last version and type current.
type ProjectionFigures struct {
	Tasks, WantTasks     int
	Applied, WantApplied int64
	Stale, WantStale     int64
}

func (f ProjectionFigures) String() string {
	return fmt.Sprintf("tasks %d (want %d), applied_events %d (want %d), stale_events %d (want %d)",
		f.Tasks, f.WantTasks, f.Applied, f.WantApplied, f.Stale, f.WantStale)
}

// Projection checks the projection table (schema's task_state) of consumer against the
// stream man describes: every effect exactly once.
func Projection(ctx context.Context, st *dedup.Store, schema, consumer string, man sample.Manifest) (ProjectionFigures, Problems, error) {
	f := ProjectionFigures{WantTasks: len(man.Aggregates), WantApplied: int64(man.Events), WantStale: int64(len(man.Stale))}
	var probs Problems
	stalePer := map[string]int64{}
	for _, s := range man.Stale {
		stalePer[s.AggregateID]++
	}
	table, err := handlers.Table(st.Driver(), schema, handlers.TableTaskState)
	if err != nil {
		return f, nil, err
	}
	type row struct {
		version, applied, stale, gaps int64
		typ, status                   string
	}
	got := map[string]row{}
	err = st.InTx(ctx, func(tx *dedup.Tx) error {
		rows, err := tx.Query(ctx, `SELECT aggregate_id, version, applied_events, stale_events, version_gaps, event_type, status FROM `+table+` WHERE consumer = $1`, consumer)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var r row
			if err := rows.Scan(&id, &r.version, &r.applied, &r.stale, &r.gaps, &r.typ, &r.status); err != nil {
				return err
			}
			got[id] = r
		}
		return rows.Err()
	})
	if err != nil {
		return f, nil, fmt.Errorf("read the projection of %s: %w", consumer, err)
	}
	f.Tasks = len(got)
	var bad []string
	for _, a := range man.Aggregates {
		r, ok := got[a.ID]
		f.Applied += r.applied
		f.Stale += r.stale
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("task %s: no row (its %d events have no effect)", a.ID, a.Events))
		case r.version != a.LastVersion || r.applied != int64(a.Events) || r.stale != stalePer[a.ID] || r.gaps != 0 || r.typ != a.LastType || r.status == "":
			bad = append(bad, fmt.Sprintf("task %s: version %d, applied %d, stale %d, gaps %d, type %s; want version %d, applied %d, stale %d, no gaps, type %s",
				a.ID, r.version, r.applied, r.stale, r.gaps, r.typ, a.LastVersion, a.Events, stalePer[a.ID], a.LastType))
		}
	}
	if f.Tasks != f.WantTasks {
		probs.add("%d tasks in the projection, want %d", f.Tasks, f.WantTasks)
	}
	probs.examples("tasks wrong", bad)
	return f, probs, nil
}

// Markers checks that consumer has one processed-event marker per distinct event id of the
// stream, and returns how many it has.
func Markers(ctx context.Context, st *dedup.Store, consumer string, man sample.Manifest) (int64, Problems, error) {
	var n int64
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM `+st.Table()+` WHERE consumer = $1`, consumer).Scan(&n)
	})
	if err != nil {
		return 0, nil, fmt.Errorf("count the markers of %s: %w", consumer, err)
	}
	var probs Problems
	if want := int64(man.UniqueEventIDs()); n != want {
		probs.add("%d markers, want %d (one per distinct event id)", n, want)
	}
	return n, probs, nil
}

// Addr names a record by topic, partition and offset, as dead-letter headers do.
func Addr(topic string, partition int32, offset int64) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10) + "/" + strconv.FormatInt(offset, 10)
}

// PoisonAt returns the addresses of the poison records of a stream once produced: produced
// holds the records in the stream's order, with the partitions and offsets the broker gave.
func PoisonAt(produced []*kgo.Record, man sample.Manifest) map[string]bool {
	at := map[string]bool{}
	for _, p := range man.Poison {
		r := produced[p.Index]
		at[Addr(r.Topic, r.Partition, r.Offset)] = true
	}
	return at
}

// DeadLetterFigures count the dead letters of one group against the poison records.
type DeadLetterFigures struct {
	Records int // dead letters the group wrote
	// Poison is how many distinct poison records were dead-lettered, of WantPoison.
	Poison, WantPoison int
	// Copies are dead letters beyond the first of one record: a batch dead-lettered again
	// after a crash between producing its dead letters and committing its offsets (dead
	// letters are at least once).
	Copies int
	// Strays are dead letters of records that are not poison.
	Strays int
}

func (f DeadLetterFigures) String() string {
	return fmt.Sprintf("dead letters %d: poison %d of %d, copies %d, strays %d", f.Records, f.Poison, f.WantPoison, f.Copies, f.Strays)
}

// DeadLetters checks the dead letters that group wrote (dls is the dead-letter topic's
// records; those of other groups are ignored): every poison record at least once, no other
// record.
func DeadLetters(dls []*kgo.Record, group string, poison map[string]bool) (DeadLetterFigures, Problems) {
	f := DeadLetterFigures{WantPoison: len(poison)}
	var probs Problems
	seen := map[string]int{}
	var strays []string
	for _, d := range dls {
		if header(d, dlq.HeaderGroup) != group {
			continue
		}
		f.Records++
		p, _ := strconv.ParseInt(header(d, dlq.HeaderPartition), 10, 32)
		o, _ := strconv.ParseInt(header(d, dlq.HeaderOffset), 10, 64)
		at := Addr(header(d, dlq.HeaderTopic), int32(p), o)
		if !poison[at] {
			f.Strays++
			strays = append(strays, fmt.Sprintf("dead letter %s of %s, not poison: %s: %s",
				Addr(d.Topic, d.Partition, d.Offset), at, header(d, dlq.HeaderReason), header(d, dlq.HeaderError)))
			continue
		}
		if seen[at]++; seen[at] > 1 {
			f.Copies++
		}
	}
	f.Poison = len(seen)
	if f.Poison != f.WantPoison {
		var missing []string
		for at := range poison {
			if seen[at] == 0 {
				missing = append(missing, "poison record "+at+" was not dead-lettered")
			}
		}
		probs.add("%d of the %d poison records dead-lettered", f.Poison, f.WantPoison)
		probs.examples("poison records missing", missing)
	}
	probs.examples("strays", strays)
	return f, probs
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Effects are what a consumer's own tables say it did: per aggregate the version its row
// holds and the events it applied, and, for a consumer that records each side effect, how
// many each event had. Two consumers that keep different tables (the projection handler's
// task_state, a team's own) are compared against the stream through it.
type Effects struct {
	Versions map[string]int64 // aggregate → the version applied
	Applied  map[string]int64 // aggregate → events applied
	// Stale is, per aggregate, the stale events the consumer counted itself (nil: it counts
	// none; stale events are then only seen in the markers' outcome).
	Stale map[string]int64
	// PerEvent is, per event id, the side effects performed (nil: not counted per event).
	PerEvent map[string]int64
	// Problems are what the reading itself found wrong (a side effect under the wrong
	// idempotency key, a version gap).
	Problems Problems
}

// CheckEffects compares got with want, the effects the stream must have left: every
// aggregate of want at its version with its applied count (and stale count, when got counts
// them), no other aggregate, and when got counts side effects per event, exactly want's: each
// event of want.PerEvent as often as it says, no other event at all.
func CheckEffects(got, want Effects) (string, Problems) {
	probs := append(Problems(nil), got.Problems...)
	var bad []string
	var applied, wantApplied, perEvent int64
	for agg, v := range want.Versions {
		wantApplied += want.Applied[agg]
		gv, ok := got.Versions[agg]
		applied += got.Applied[agg]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("aggregate %s: no row (want version %d, %d applied)", agg, v, want.Applied[agg]))
		case gv != v || got.Applied[agg] != want.Applied[agg]:
			bad = append(bad, fmt.Sprintf("aggregate %s: version %d, %d applied; want version %d, %d applied", agg, gv, got.Applied[agg], v, want.Applied[agg]))
		case got.Stale != nil && got.Stale[agg] != want.Stale[agg]:
			bad = append(bad, fmt.Sprintf("aggregate %s: %d stale events counted, want %d", agg, got.Stale[agg], want.Stale[agg]))
		}
	}
	for agg := range got.Versions {
		if _, ok := want.Versions[agg]; !ok {
			bad = append(bad, fmt.Sprintf("aggregate %s: a row, but the stream has no event of it to apply", agg))
		}
	}
	probs.examples("aggregates wrong", bad)
	bad = nil
	if got.PerEvent != nil {
		for id, n := range want.PerEvent {
			if got.PerEvent[id] != n {
				bad = append(bad, fmt.Sprintf("event %s: %d side effects, want %d", id, got.PerEvent[id], n))
			}
		}
		for id, n := range got.PerEvent {
			perEvent += n
			if _, ok := want.PerEvent[id]; !ok {
				bad = append(bad, fmt.Sprintf("event %s: %d side effects, want none", id, n))
			}
		}
		probs.examples("events with wrong side effects", bad)
	}
	figures := fmt.Sprintf("aggregates %d (want %d), applied %d (want %d)", len(got.Versions), len(want.Versions), applied, wantApplied)
	if got.PerEvent != nil {
		figures += fmt.Sprintf(", side effects %d over %d events (want one each for %d)", perEvent, len(got.PerEvent), len(want.PerEvent))
	}
	return figures, probs
}
