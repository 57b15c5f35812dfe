package consumersuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

func addr(r *kgo.Record) string { return invariant.Addr(r.Topic, r.Partition, r.Offset) }

// fail logs what an invariant check found and fails the test when it found anything.
func (w *world) fail(what string, probs invariant.Problems) {
	w.t.Helper()
	for _, p := range probs {
		w.t.Errorf("%s: %s", what, p)
	}
}

// wantEffects are the effects the stream must leave: every task at its last version with each
// first send applied once, each stale re-emit counted as stale, plus the events fixed and
// replayed (applied once, at their version).
func (w *world) wantEffects(fixedEvents []entry) invariant.Effects {
	want := invariant.Effects{Versions: map[string]int64{}, Applied: map[string]int64{}, Stale: w.s.stale, PerEvent: map[string]int64{}}
	for _, a := range w.s.man.Aggregates {
		want.Versions[a.ID], want.Applied[a.ID] = a.LastVersion, int64(a.Events)
	}
	for _, e := range w.s.entries {
		if e.kind == sample.KindEvent {
			want.PerEvent[e.eventID] = 1
		}
	}
	for _, e := range fixedEvents {
		want.Versions[e.aggregate] = max(want.Versions[e.aggregate], e.version)
		want.Applied[e.aggregate]++
		want.PerEvent[e.eventID] = 1
	}
	return want
}

// markerIDs returns the event ids the consumer has markers for.
func (w *world) markerIDs() map[string]bool { return markerIDs(w.t, w.st, w.consumer()) }

// markerIDs returns the event ids consumer has markers for in st.
func markerIDs(t testing.TB, st *dedup.Store, consumer string) map[string]bool {
	ctx := context.Background()
	ids := map[string]bool{}
	err := st.InTx(ctx, func(tx *dedup.Tx) error {
		rows, err := tx.Query(ctx, `SELECT event_id FROM `+st.Table()+` WHERE consumer = $1`, consumer)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids[id] = true
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("read the markers of %s: %v", consumer, err)
	}
	return ids
}

// checkMarkers: one marker per good event (and per fixed event), none for anything else;
// stale re-emits marked with the outcome stale, first sends without it.
func (w *world) checkMarkers(fixedEvents []entry) string {
	ctx := context.Background()
	want := w.s.good()
	for _, e := range fixedEvents {
		want[e.eventID] = sample.KindEvent
	}
	got := w.markerIDs()
	var probs invariant.Problems
	var missing, extra []string
	for id := range want {
		if !got[id] {
			missing = append(missing, "no marker for event "+id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, "a marker for event "+id+", which is not a good event of the stream")
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	probs = append(probs, head(missing)...)
	probs = append(probs, head(extra)...)
	outcomes, err := w.st.Outcomes(ctx, w.consumer(), slices.Collect(maps.Keys(want)))
	if err != nil {
		w.t.Fatal(err)
	}
	var stale, wrong []string
	for id, k := range want {
		switch {
		case k == sample.KindStale && outcomes[id] == dedup.OutcomeStale:
			stale = append(stale, id)
		case k == sample.KindStale:
			wrong = append(wrong, fmt.Sprintf("stale event %s: outcome %q, want %q", id, outcomes[id], dedup.OutcomeStale))
		case outcomes[id] != "":
			wrong = append(wrong, fmt.Sprintf("event %s: outcome %q, want none (applied)", id, outcomes[id]))
		}
	}
	slices.Sort(wrong)
	probs = append(probs, head(wrong)...)
	w.fail("markers", probs)
	return fmt.Sprintf("markers %d (want %d), missing %d, extra %d; stale outcomes %d (want %d)",
		len(got), len(want), len(missing), len(extra), len(stale), len(w.s.man.Stale))
}

// head keeps the first five problems of a list and says how many there were.
func head(bad []string) invariant.Problems {
	if len(bad) > 5 {
		return append(invariant.Problems(bad[:5]), fmt.Sprintf("… %d in all", len(bad)))
	}
	return invariant.Problems(bad)
}

// checkEffects reads the target's effects and compares them with the stream's.
func (w *world) checkEffects(fixedEvents []entry) string {
	got, err := w.target.Effects(context.Background(), w.st, w.proc)
	if err != nil {
		w.t.Fatalf("read the effects of %s: %v", w.target.Name, err)
	}
	figures, probs := invariant.CheckEffects(got, w.wantEffects(fixedEvents))
	w.fail("effects", probs)
	return figures
}

// checkDeadLetters: every poison record dead-lettered by the group with its reason, nothing
// else; it returns the group's dead letters.
func (w *world) checkDeadLetters() []*kgo.Record {
	dls := testenv.ReadTopic(w.t, w.proc.Brokers, w.proc.DeadLetterTopic)
	poison := w.s.poison()
	at := map[string]bool{}
	for a := range poison {
		at[a] = true
	}
	f, probs := invariant.DeadLetters(dls, w.proc.Group, at)
	var bad []string
	var mine []*kgo.Record
	for _, r := range dls {
		d := dlq.Parse(r)
		if d.Group != w.proc.Group || d.OriginalPartition == nil || d.OriginalOffset == nil {
			continue
		}
		mine = append(mine, r)
		e, ok := poison[invariant.Addr(d.OriginalTopic, *d.OriginalPartition, *d.OriginalOffset)]
		if ok && d.Reason != e.reason {
			bad = append(bad, fmt.Sprintf("dead letter of %s (%s): reason %q, want %q (%s)", e.eventID, addr(e.rec), d.Reason, e.reason, d.ErrorMessage))
		}
		if ok && e.eventID != "" && d.EventID != e.eventID {
			bad = append(bad, fmt.Sprintf("dead letter of %s: event id %q", addr(e.rec), d.EventID))
		}
	}
	probs = append(probs, head(bad)...)
	w.fail("dead letters", probs)
	w.report = append(w.report, f.String())
	return mine
}

// check runs every check of the state the runs left.
func (w *world) check() {
	ctx := context.Background()
	w.report = append(w.report, fmt.Sprintf("stream: %d records = %d events + %d duplicates + %d stale + %d malformed + %d rejected, %d partitions",
		len(w.s.entries), w.s.man.Events, len(w.s.man.Duplicates), len(w.s.man.Stale), len(w.s.man.Poison), w.o.Rejects, w.o.Partitions))
	w.report = append(w.report, w.checkMarkers(nil), w.checkEffects(nil))
	w.checkDeadLetters()
	prog, err := testenv.Progress(ctx, w.adm, w.proc.Group, w.proc.Topic)
	if err != nil {
		w.t.Fatal(err)
	}
	if !prog.CaughtUp() {
		w.t.Errorf("committed offsets behind the end after the final run: %v", prog.Behind)
	}
	// The processes' own account: no record skipped inside a run, no records the broker no
	// longer had (the engine logs both).
	var bad []string
	for _, p := range w.procs {
		for _, s := range []string{"offsets skipped between batches", `"fetch error"`, "OFFSET_OUT_OF_RANGE"} {
			bad = append(bad, p.Lines(s)...)
		}
	}
	w.fail("logs", head(bad))
}

// fieldwork runs the built fieldwork binary with the store's and the brokers' flags (and
// Options.Prepare's) and returns its stdout and exit code.
func (w *world) fieldwork(args ...string) (string, int) {
	w.t.Helper()
	args = append(append(args, "--brokers", w.proc.Brokers, "--dsn", w.proc.DSN, "--schema", w.proc.Schema), w.proc.Extra...)
	cmd := exec.Command(testenv.Fieldwork(w.t), args...)
	cmd.Env = testenv.CleanEnviron(w.t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("fieldwork %s: %v", strings.Join(args, " "), err)
	}
	if code != 0 && code != 3 {
		w.t.Fatalf("fieldwork %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return string(out), code
}

// fieldworkAgrees asks the built binary what an operator would: processed check and dlq list.
func (w *world) fieldworkAgrees() {
	t := w.t
	// processed check: every good event processed; the rejected ones (they have ids, and
	// no marker) missing, so the check exits 3; the malformed counted as such.
	out, code := w.fieldwork("processed", "check", "--topic", w.proc.Topic, "--consumer", w.consumer(), "-o", "json", "--max-missing", "100000")
	var rep processed.CheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("processed check: %v: %q", err, out)
	}
	wantMissing := map[string]bool{}
	for _, e := range w.s.entries {
		if e.kind == kindRejected {
			wantMissing[e.eventID] = true
		}
	}
	var bad []string
	for _, m := range rep.MissingRecords {
		if !wantMissing[m.EventID] {
			bad = append(bad, fmt.Sprintf("processed check: %s/%d/%d event %s missing", m.Topic, m.Partition, m.Offset, m.EventID))
		}
	}
	wantCode := 0
	if len(wantMissing) > 0 {
		wantCode = 3
	}
	if code != wantCode || rep.Missing != int64(len(wantMissing)) || len(bad) > 0 || rep.Records != int64(len(w.s.entries)) {
		bad = append(bad, fmt.Sprintf("processed check: exit %d, %d records, %d missing; want exit %d, %d records, the %d rejected events missing",
			code, rep.Records, rep.Missing, wantCode, len(w.s.entries), len(wantMissing)))
	}
	w.fail("processed check", head(bad))
	w.report = append(w.report, fmt.Sprintf("processed check: exit %d, %d records, %d events, %d with a marker, %d missing (the rejected), %d malformed",
		code, rep.Records, rep.Events, rep.WithMarker, rep.Missing, rep.Malformed))

	// dlq list: exactly the poison, each with its reason, none resolved.
	entries := w.dlqList()
	poison := w.s.poison()
	seen := map[string]bool{}
	bad = nil
	for _, d := range entries {
		e, ok := poison[d.original()]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("dlq list: %s, not poison (%s: %s)", d.original(), d.Reason, d.ErrorMessage))
		case d.Reason != e.reason:
			bad = append(bad, fmt.Sprintf("dlq list: %s: reason %s, want %s", d.original(), d.Reason, e.reason))
		case d.Status == string(dlq.StatusResolved) || d.Status == string(dlq.StatusStale):
			bad = append(bad, fmt.Sprintf("dlq list: %s: status %s", d.original(), d.Status))
		}
		seen[d.original()] = true
	}
	if len(seen) != len(poison) {
		bad = append(bad, fmt.Sprintf("dlq list: %d distinct poison records, want %d", len(seen), len(poison)))
	}
	w.fail("dlq list", head(bad))
	w.report = append(w.report, fmt.Sprintf("dlq list: %d dead letters, %d distinct records (want %d)", len(entries), len(seen), len(poison)))
}

// listed is the part of a `dlq list -o jsonl` line the suite reads.
type listed struct {
	Topic             string `json:"topic"`
	Partition         int32  `json:"partition"`
	Offset            int64  `json:"offset"`
	OriginalTopic     string `json:"original_topic"`
	OriginalPartition *int32 `json:"original_partition"`
	OriginalOffset    *int64 `json:"original_offset"`
	Reason            string `json:"reason"`
	ErrorMessage      string `json:"error_message"`
	EventID           string `json:"event_id"`
	Status            string `json:"status"`
}

func (d listed) original() string {
	if d.OriginalPartition == nil || d.OriginalOffset == nil {
		return d.OriginalTopic + "/?/?"
	}
	return invariant.Addr(d.OriginalTopic, *d.OriginalPartition, *d.OriginalOffset)
}

// dlqList lists the group's dead letters with their status for the consumer.
func (w *world) dlqList(filters ...string) []listed {
	args := append([]string{"dlq", "list", "--topic", w.proc.DeadLetterTopic, "--group", w.proc.Group,
		"--consumer", w.consumer(), "--limit", "0", "-o", "jsonl"}, filters...)
	out, code := w.fieldwork(args...)
	if code != 0 {
		w.t.Fatalf("dlq list: exit %d", code)
	}
	var ls []listed
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d listed
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			w.t.Fatalf("dlq list: %v: %q", err, sc.Text())
		}
		ls = append(ls, d)
	}
	return ls
}

// fixAndReplay is the operator's work on a rejected dead letter: its data fixed, the copy
// replayed back to the source topic for the group (replay --value-file), and one more run
// of the target to idle. The fixed event must be applied once, at its version, marked, and
// its dead letter resolved; nothing else may change.
func (w *world) fixAndReplay() {
	t := w.t
	var target entry
	for _, e := range w.s.entries {
		if e.kind == kindRejected && e.reason == dlq.ReasonRejected {
			target = e
			break
		}
	}
	var dl *listed
	for _, d := range w.dlqList("--event-id", target.eventID) {
		if d.original() == addr(target.rec) {
			dl = &d
			break
		}
	}
	if dl == nil {
		t.Fatalf("no dead letter of %s (%s)", target.eventID, addr(target.rec))
	}
	v, err := fixed(target, w.s.lastValue(target.aggregate))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fixed.json")
	if err := os.WriteFile(file, v, 0o600); err != nil {
		t.Fatal(err)
	}
	one := invariant.Addr(dl.Topic, dl.Partition, dl.Offset)
	if _, code := w.fieldwork("replay", one, "--value-file", file, "--reason", "data fixed by the operator",
		"--execute", "--yes", "-o", "json"); code != 0 {
		t.Fatalf("replay %s: exit %d", one, code)
	}
	w.cleanRun("after-replay")
	w.report = append(w.report, "after the fix and replay of "+target.eventID+": "+w.checkMarkers([]entry{target})+"; "+w.checkEffects([]entry{target}))
	// No new dead letter; the fixed one resolved.
	w.checkDeadLetters()
	for _, d := range w.dlqList("--event-id", target.eventID) {
		if d.Status != string(dlq.StatusResolved) {
			t.Errorf("dlq list: the dead letter of the fixed event %s is %s, want resolved", target.eventID, d.Status)
		}
	}
}
