package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// flowFixture is a dead-letter topic of 13 records of src: 10 exhausted, 2 malformed and 1
// exhausted that was already replayed --max-replays times (quarantined).
func flowFixture(t *testing.T) (c *kafka.Cluster, st *dedup.Store, src, dlqTopic string) {
	t.Helper()
	c, st = cluster(t), store(t)
	cl := testenv.Client(t)
	src, dlqTopic = testenv.Topic(t, 2, nil), testenv.Topic(t, 2, nil)
	origs := originals(t, cl, src, 13)
	origs[12].Headers = append(origs[12].Headers, kgo.RecordHeader{Key: dlq.ReplayHeaderCount, Value: []byte("3")})
	deadLetters(t, cl, dlqTopic, origs[:10], dlq.Meta{Reason: dlq.ReasonExhausted, Group: "billing"})
	deadLetters(t, cl, dlqTopic, origs[10:12], dlq.Meta{Reason: dlq.ReasonMalformed, Group: "billing"})
	deadLetters(t, cl, dlqTopic, origs[12:], dlq.Meta{Reason: dlq.ReasonExhausted, Group: "billing"})
	return c, st, src, dlqTopic
}

func newPlan(t *testing.T, c *kafka.Cluster, spec Spec) *Plan {
	t.Helper()
	p, err := NewPlan(t.Context(), c, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func kinds(ns []Notice) []NoticeKind {
	out := []NoticeKind{}
	for _, n := range ns {
		out = append(out, n.Kind)
	}
	return out
}

// stages records the stages a flow reported progress for, in order, and the ToSend of its
// send.
type stages struct {
	mu     sync.Mutex
	seen   []Stage
	toSend int64
}

func (s *stages) progress(fp FlowProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 || s.seen[len(s.seen)-1] != fp.Stage {
		s.seen = append(s.seen, fp.Stage)
	}
	if fp.Stage == StageSend {
		s.toSend = fp.ToSend
	}
}

func runs(t *testing.T, st *dedup.Store) []dedup.ReplayRun {
	t.Helper()
	rs, err := st.ReplayRuns(t.Context(), dedup.ReplayRunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestFlowDryRun: a dry run scans, sends nothing, records nothing, and says what an executed
// plan would do: the loop guard's records, the malformed ones, and that nothing was sent.
func TestFlowDryRun(t *testing.T) {
	c, st, src, dlqTopic := flowFixture(t)
	before := endOffsets(t, c, src)
	res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), testFlow{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != nil || res.Report == nil || res.Report.Counts.Selected != 13 || res.Report.Counts.ToSend != 12 || res.Report.Counts.Quarantined != 1 {
		t.Fatalf("dry run: %+v", res)
	}
	if got := kinds(res.Notices); !slices.Equal(got, []NoticeKind{NoticeForGroup, NoticeQuarantine, NoticeMalformed, NoticeDryRun}) {
		t.Fatalf("notices %v", got)
	}
	if res.Report.ForGroup != "billing" || !res.Report.ForGroupDefault {
		t.Fatalf("the plan is for %q (default %v), want billing, the group every dead letter names", res.Report.ForGroup, res.Report.ForGroupDefault)
	}
	res.Notices = res.Notices[1:]
	if n := res.Notices[1]; !n.Warning() || !strings.HasPrefix(n.String(), "warning: 2 records to send were dead-lettered as malformed") {
		t.Fatalf("malformed notice %q", n.String())
	}
	if res.Notices[0].Warning() || res.Notices[0].String() != "1 record would be quarantined (fw.replay.count reached --max-replays 3): --execute would send the rest and exit 3" {
		t.Fatalf("quarantine notice %q", res.Notices[0].String())
	}
	if after := endOffsets(t, c, src); !slices.Equal(before, after) {
		t.Fatalf("a dry run sent: %v → %v", before, after)
	}
	if rs := runs(t, st); len(rs) != 0 {
		t.Fatalf("a dry run was journaled: %+v", rs)
	}

	// A plan that cannot be sent is the report's error, with the report to show.
	missing := testenv.Name(t, "gone")
	res, err = runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic, To: missing}), testFlow{})
	var mt *MissingTargetError
	if !errors.As(err, &mt) || res.Report == nil || len(res.Report.Missing) != 1 || len(res.Notices) != 0 {
		t.Fatalf("missing target: %v %+v", err, res)
	}
}

// TestFlowConfirm: without Yes the plan is scanned and checked, then Confirm is asked with the
// report and the warnings; a refusal sends nothing and records nothing, a yes sends.
func TestFlowConfirm(t *testing.T) {
	c, st, src, dlqTopic := flowFixture(t)
	before := endOffsets(t, c, src)
	exec := testFlow{Execute: true, Operator: "tester", Reason: "test " + t.Name()}

	if _, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), exec); err == nil || !strings.Contains(err.Error(), "needs a Confirm") {
		t.Fatalf("no Confirm: %v", err)
	}
	if _, err := runFlow(t.Context(), c, nil, newPlan(t, c, Spec{From: dlqTopic}), exec); err == nil || !strings.Contains(err.Error(), "needs the store") {
		t.Fatalf("no store: %v", err)
	}
	refused := errors.New("not confirmed")
	var asked []Check
	o := exec
	o.Confirm = func(ch Check) error { asked = append(asked, ch); return refused }
	res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), o)
	if !errors.Is(err, refused) || res.Summary != nil || len(asked) != 1 {
		t.Fatalf("refused: %v %+v", err, res)
	}
	if ch := asked[0]; ch.Report.Counts.ToSend != 12 || ch.Report.RunID != "" || !slices.Equal(kinds(ch.Notices), []NoticeKind{NoticeForGroup, NoticeMalformed}) {
		t.Fatalf("asked %+v", ch)
	}
	if after := endOffsets(t, c, src); !slices.Equal(before, after) || len(runs(t, st)) != 0 {
		t.Fatalf("a refused replay sent %v → %v, or was journaled", before, after)
	}

	var seen stages
	o.Confirm = func(Check) error { return nil }
	o.Progress = seen.progress
	res, err = runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), o)
	if fwerr.KindOf(err) != fwerr.KindCheck || res.Summary == nil || res.Summary.Status != dedup.RunCompleted ||
		res.Summary.Counts != (dedup.RunCounts{Selected: 13, Sent: 12, Quarantined: 1}) || res.Report == nil {
		t.Fatalf("confirmed: %v %+v", err, res)
	}
	if !slices.Equal(seen.seen, []Stage{StageScan, StageSend}) || seen.toSend != 12 {
		t.Fatalf("progress stages %v, to send %d", seen.seen, seen.toSend)
	}
	if got := replayed(readTopic(t, c, src), res.Summary.RunID); len(got) != 12 {
		t.Fatalf("%d records replayed, want 12", len(got))
	}
}

// TestFlowYesSinglePass: with Yes a plan is sent in one pass (no scan, no report); one that
// selects nothing says so and records no run; the malformed records sent are warned of.
func TestFlowYesSinglePass(t *testing.T) {
	c, st, src, dlqTopic := flowFixture(t)
	var seen stages
	o := testFlow{Execute: true, Yes: true, Operator: "tester", Reason: "test " + t.Name(), Progress: seen.progress,
		Confirm: func(Check) error { t.Fatal("asked with Yes"); return nil }}

	// Nothing selected: no run recorded, and the notice says so.
	res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic, FilterSpec: dlq.FilterSpec{Reasons: []string{dlq.ReasonUnsupported}}}), o)
	if err != nil || res.Summary != nil || res.Report != nil || !slices.Equal(kinds(res.Notices), []NoticeKind{NoticeNothingSelected}) {
		t.Fatalf("nothing selected: %v %+v", err, res)
	}
	if want := "nothing selected in " + dlqTopic + " (13 records read): nothing to send, no run recorded"; res.Notices[0].String() != want {
		t.Fatalf("notice %q, want %q", res.Notices[0].String(), want)
	}
	if rs := runs(t, st); len(rs) != 0 {
		t.Fatalf("runs recorded: %+v", rs)
	}

	seen = stages{}
	res, err = runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), o)
	if fwerr.KindOf(err) != fwerr.KindCheck || res.Report != nil || res.Summary == nil ||
		res.Summary.Counts != (dedup.RunCounts{Selected: 13, Sent: 12, Quarantined: 1}) {
		t.Fatalf("single pass: %v %+v", err, res)
	}
	if !slices.Equal(seen.seen, []Stage{StageSend}) || seen.toSend != -1 {
		t.Fatalf("progress stages %v, to send %d", seen.seen, seen.toSend)
	}
	if got := kinds(res.Notices); !slices.Equal(got, []NoticeKind{NoticeMalformed}) ||
		!strings.HasPrefix(res.Notices[0].String(), "warning: 2 records sent were dead-lettered as malformed") {
		t.Fatalf("notices %+v", res.Notices)
	}
	if got := replayed(readTopic(t, c, src), res.Summary.RunID); len(got) != 12 {
		t.Fatalf("%d records replayed, want 12", len(got))
	}
	if rs := runs(t, st); len(rs) != 1 || rs[0].ID != res.Summary.RunID {
		t.Fatalf("runs %+v", rs)
	}
}

// TestFlowInterruptedThenResumed: a cancelled run is an interruption whose notices say how to
// resume it; the resume runs the same flow (asked, with the run's id in the report) and sends
// the rest, nothing twice.
func TestFlowInterruptedThenResumed(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 2, nil), testenv.Topic(t, 2, nil)
	const n = 1000
	dls := deadLetters(t, cl, dlqTopic, originals(t, cl, src, n), dlq.Meta{})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	o := testFlow{Execute: true, Yes: true, Operator: "tester", Reason: "test " + t.Name(), Rate: 2000,
		// Interrupted (as by SIGINT) once a few hundred records were read.
		Progress: func(fp FlowProgress) {
			if fp.Stage == StageSend && fp.Read >= 256 {
				cancel()
			}
		}}
	res, err := runFlow(ctx, c, st, newPlan(t, c, Spec{From: dlqTopic}), o)
	if fwerr.KindOf(err) != fwerr.KindInterrupted || res.Summary == nil || res.Summary.Status != dedup.RunInterrupted {
		t.Fatalf("interrupted: %v %+v", err, res)
	}
	// The summary says what happened, not what failed of it (context canceled).
	if res.Summary.Error != InterruptedText {
		t.Errorf("interrupted run's error %q, want %q", res.Summary.Error, InterruptedText)
	}
	id := res.Summary.RunID
	want := fmt.Sprintf("run %s is interrupted; continue it with: fieldwork replay resume %s --execute (it keeps --rate 2000, journaled with the run; --rate overrides)", id, id)
	if got := kinds(res.Notices); !slices.Equal(got, []NoticeKind{NoticeResume}) || res.Notices[0].String() != want {
		t.Fatalf("notices %+v, want %q", res.Notices, want)
	}

	p, err := LoadRun(t.Context(), c, st, id, false)
	if err != nil {
		t.Fatal(err)
	}
	var asked *Report
	res, err = runFlow(t.Context(), c, st, p, testFlow{Execute: true, Confirm: func(ch Check) error { asked = ch.Report; return nil }})
	if err != nil || asked == nil || asked.RunID != id || res.Summary == nil || !res.Summary.Resumed ||
		res.Summary.Counts != (dedup.RunCounts{Selected: n, Sent: n}) {
		t.Fatalf("resumed: %v %+v (asked about %+v)", err, res, asked)
	}
	// It resumed at the run's rate, and said so in the plan it asked about and its summary.
	for _, e := range []*ExecutionReport{asked.Execution, res.Summary.Execution} {
		if e == nil || e.Rate == nil || *e.Rate != 2000 || e.RateFrom != FromRun || e.RateLabel() != "2000/s (from the run)" {
			t.Fatalf("resumed execution %+v, want 2000/s from the run", e)
		}
	}
	got := replayed(readTopic(t, c, src), id)
	for _, d := range dls {
		if rs := got[addr(d)]; len(rs) != 1 {
			t.Fatalf("%s reached %s %d times", addr(d), src, len(rs))
		}
	}
}

// TestFlowEditsInteractively: an interactive edit asks the editor once, with the value as JSON
// indented, before anything is sent; only the edited copy goes out, compacted, marked
// fw.replay.edited; without an editor the plan is refused and nothing is sent.
func TestFlowEditsInteractively(t *testing.T) {
	c, st, src, dlqTopic := flowFixture(t)
	zero := int64(0)
	record := dlqTopic + "/0/0"
	spec := func() Spec {
		return Spec{From: dlqTopic, Record: record, Selection: kafka.Selection{Partitions: []int32{0}, StartOffset: &zero, EndOffset: &zero}, Edit: &Edit{Interactive: true}}
	}
	before := endOffsets(t, c, src)
	if _, err := runFlow(t.Context(), c, st, newPlan(t, c, spec()), testFlow{Execute: true, Yes: true, Reason: "x"}); fwerr.KindOf(err) != fwerr.KindUsage {
		t.Fatalf("without an editor: %v, want a usage error", err)
	}
	var asked [][]byte
	res, err := runFlow(t.Context(), c, st, newPlan(t, c, spec()), testFlow{Execute: true, Yes: true, Reason: "fixed by hand",
		Editor: func(v []byte) ([]byte, error) { asked = append(asked, v); return []byte("{\n  \"n\": 99\n}\n"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !strings.HasPrefix(string(asked[0]), "{\n  \"n\": ") {
		t.Fatalf("the editor was asked %q", asked)
	}
	if res.Summary == nil || res.Summary.Counts.Sent != 1 {
		t.Fatalf("summary %+v", res.Summary)
	}
	var sent []*kgo.Record
	for _, r := range readTopic(t, c, src) {
		if header(r, dlq.ReplayHeaderID) == res.Summary.RunID {
			sent = append(sent, r)
		}
	}
	if len(sent) != 1 || string(sent[0].Value) != `{"n":99}` || header(sent[0], dlq.ReplayHeaderEdited) != record || header(sent[0], "ce_id") == "" {
		t.Fatalf("sent %d records: %+v", len(sent), sent)
	}
	if after := endOffsets(t, c, src); sumInts(after)-sumInts(before) != 1 {
		t.Fatalf("the source grew by %d records, want 1", sumInts(after)-sumInts(before))
	}
}

func sumInts(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}
