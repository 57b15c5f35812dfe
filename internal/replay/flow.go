package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// FlowOptions configure a replay's flow (Flow) beyond what every action is asked
// (action.Options: Execute, Yes, and the Record a new run is journaled with).
type FlowOptions struct {
	// Editor is asked for the new value of a record the plan edits interactively (Edit,
	// --edit): given the value as the operator edits it (EditableValue), it returns the new
	// one. Without it such a plan is refused.
	Editor func(value []byte) ([]byte, error)
	// Rate caps records sent per second; 0: no cap. A resumed run sends at the rate it was
	// journaled with unless RateGiven: Rate was given explicitly (and is journaled in place of
	// the old).
	Rate      float64
	RateGiven bool
	// Sample is how many selected records a scan's report shows (ScanOptions.Sample: 0 the
	// default, negative none).
	Sample int
	// Schemas decodes the sample's registry-framed payloads (ScanOptions.Schemas).
	Schemas *schema.Decoder
	// Workers records an executed plan as a run shared by workers (CreateWorkerRun) instead
	// of sending it: its workers are `replay resume RUN --worker --execute`. The plan is scanned and
	// checked first, as any executed plan whose records are counted.
	Workers bool
	// Force starts an executed plan even while another run that reads the same topic is
	// running (Concurrent): each would send the dead letters both select.
	Force bool
}

// Check is what the person asked to confirm an executed plan is shown: the scan's report
// (the selection, every filter, the counts and the targets) and the notices so far (the
// warnings about what will be sent).
type Check struct {
	Report  *Report
	Notices []Notice
}

// Stage is the part of the flow a progress report is about.
type Stage string

// The stages of a flow.
const (
	StageScan Stage = "scan"
	StageSend Stage = "send"
)

// FlowProgress is how far a flow has come: read of total offsets in the stage; for StageSend
// also the send's figures, and ToSend, the records the scan counted to send (-1 after no
// scan: a single pass).
type FlowProgress struct {
	Stage       Stage
	Read, Total int64
	Send        Progress
	ToSend      int64
}

// NoticeKind names what a notice is about. Its values are stable.
type NoticeKind string

// The kinds of notice.
const (
	// NoticeMalformed (a warning): records to send, or sent, were dead-lettered as
	// malformed; their bytes will fail the same way again.
	NoticeMalformed NoticeKind = "malformed"
	// NoticeLostOffsets (a warning): retention deleted records of a resumed run's remaining
	// ranges since it stopped.
	NoticeLostOffsets NoticeKind = "lost_offsets"
	// NoticeQuarantine: a dry run's records that the loop guard would hold back.
	NoticeQuarantine NoticeKind = "quarantine"
	// NoticeIncomplete: records a plan would not send because they are bounded copies (their
	// value is not whole); an executed run exits 3 when there are any.
	NoticeIncomplete NoticeKind = "incomplete"
	// NoticeDryRun: a dry run sent nothing.
	NoticeDryRun NoticeKind = "dry_run"
	// NoticeNothingSelected: an executed plan selected nothing: nothing was sent and no run
	// recorded.
	NoticeNothingSelected NoticeKind = "nothing_selected"
	// NoticeResume: the run stopped (interrupted or failed) and can be resumed.
	NoticeResume NoticeKind = "resume"
	// NoticeForGroup: which consumer groups the records are for (fw.replay.for).
	NoticeForGroup NoticeKind = "for_group"
	// NoticeGuardPartial: a guard checked only part of the selection.
	NoticeGuardPartial NoticeKind = "guard_partial"
	// NoticeStopped: the run stopped because its own records were dead-lettered again
	// (--stop-on-redeadletter); it can be resumed once the cause is fixed.
	NoticeStopped NoticeKind = "stopped"
	// NoticeWorkers: the run was recorded for workers (--workers), nothing sent yet: how to
	// start them.
	NoticeWorkers NoticeKind = "workers"
	// NoticeConcurrent (a warning): another run is replaying from the same topic now; an
	// executed plan is refused unless forced.
	NoticeConcurrent NoticeKind = "concurrent"
)

// Notice is something the person who ran the flow should read, beside the report or the
// summary: the flow returns notices as data and never prints.
type Notice struct {
	Kind NoticeKind `json:"kind"`
	Text string     `json:"text"`
}

// Warning reports whether the notice warns (of something that will not go as hoped).
func (n Notice) Warning() bool {
	switch n.Kind {
	case NoticeMalformed, NoticeLostOffsets, NoticePastHorizon, NoticeNewerProcessed, NoticeStopped, NoticeConcurrent:
		return true
	}
	return false
}

// String is the notice as a line: warnings start with "warning: ".
func (n Notice) String() string {
	if n.Warning() {
		return "warning: " + n.Text
	}
	return n.Text
}

// FlowResult is what a Flow did (its plan and its result). It is returned with the error too: render what it holds, then
// report the error.
type FlowResult struct {
	// Report is the scan: a dry run's result, or the check an executed plan passed. nil when
	// the plan was executed in a single pass (no scan), or the scan itself failed.
	Report *Report
	// Summary is the executed run. nil for a dry run, and when nothing was sent and no run
	// recorded (nothing selected, the check or the confirmation refused, a single pass that
	// stopped at its first record).
	Summary *Summary
	// Notices are what the person should read beside them, in the order they arose.
	Notices []Notice
}

func (r *FlowResult) notice(kind NoticeKind, format string, args ...any) {
	r.Notices = append(r.Notices, Notice{Kind: kind, Text: fmt.Sprintf(format, args...)})
}

// Check is what the person asked to confirm the flow's plan is shown.
func (r *FlowResult) Check() Check { return Check{Report: r.Report, Notices: r.Notices} }

// Flow is the replay as an action (action.Run), for a new plan (NewPlan) as for a resumed run
// (LoadRun): plan → check → confirm → execute. `fieldwork replay`, `fieldwork replay resume`,
// triage and the demo all run it. Its plan and its result are the one FlowResult, returned
// with every error: render what it holds, then report the error.
//
//   - A dry run (not Execute) scans the plan and sends nothing. Its error is the report's
//     (Report.Err: records that cannot be routed, targets that do not exist); records the loop
//     guard would hold back, and bounded copies (incomplete, never sent), do not fail it.
//   - An executed plan with Yes whose targets can be checked record by record is sent in one
//     pass (ExecOptions.SinglePass): nothing is asked, so nothing needs counting first; its
//     plan has no Report.
//   - Otherwise the plan is scanned and checked first: a report error stops it, nothing
//     sent. A new plan that selects nothing records no run (action.ErrNothingToDo). Without
//     Yes the action's Confirm is asked. Then it is executed, journaled under the action's
//     Record (a resumed run keeps its own).
//
// st is the journal (needed to execute) and the marker store of the spec's lookups. The
// error of an executed run is its outcome as an exit code: a check failure (exit 3) when
// records were quarantined or incomplete, an interruption (exit 130) when ctx was cancelled
// (the notices then say how to resume), the failure itself otherwise. Progress goes to the
// action's Progress hook, Of a FlowProgress; the notices are returned as data
// (FlowResult.Notices).
func Flow(c *kafka.Cluster, st *dedup.Store, p *Plan, o FlowOptions) action.Steps[*FlowResult, *FlowResult] {
	f := &flow{c: c, st: st, p: p, o: o, res: &FlowResult{}}
	return action.Steps[*FlowResult, *FlowResult]{Plan: f.plan, Check: f.check, Execute: f.execute}
}

// flow is one run of Flow.
type flow struct {
	c   *kafka.Cluster
	st  *dedup.Store
	p   *Plan
	o   FlowOptions
	res *FlowResult
	// single is set when the plan is executed in one pass, without a scan.
	single bool
	ex     Execution
	exRep  ExecutionReport
}

func (f *flow) plan(ctx context.Context, r *action.Env) (*FlowResult, error) {
	res, p := f.res, f.p
	f.ex, f.exRep = f.o.execution(p)
	if f.st == nil && (r.Execute || p.Spec.NeedsStore()) {
		return res, errors.New("replay: an executed plan, or one that looks markers up, needs the store")
	}
	if p.Resume != nil && SharedByWorkers(p.Resume.Checkpoints) {
		id := p.Resume.Run.ID
		return res, fwerr.Usagef("run %s is shared by workers: continue it with `fieldwork replay resume %s --worker --execute` (on as many machines as you like)", id, id)
	}
	if err := f.concurrent(ctx, r.Execute); err != nil {
		return res, err
	}
	if p.LostOffsets > 0 && p.Resume != nil {
		res.notice(NoticeLostOffsets, "%s of run %s were deleted by retention since it stopped: they cannot be replayed",
			wording.Plural(p.LostOffsets, "offset"), p.Resume.Run.ID)
	}
	if p.Spec.Edit != nil && p.Resume == nil && p.edit == nil {
		read := func(ctx context.Context, fn func(*kgo.Record) error) error { return f.c.Read(ctx, p.Ranges, fn) }
		rep, err := prepareEdit(ctx, p, read, f.o.Editor)
		if err != nil {
			return res, err
		}
		p.edit = rep
	}
	if r.Execute && r.Yes && !p.Spec.Strict && !f.o.Workers && singlePass(ctx, f.c, p) {
		f.single = true
		return res, nil
	}
	rep, err := Scan(ctx, f.c, f.st, p, ScanOptions{Sample: f.o.Sample, Progress: scanProgress(r), Schemas: f.o.Schemas})
	if err != nil {
		return res, err
	}
	rep.Execution = &f.exRep
	rep.Reason = r.Reason()
	res.Report = rep
	if err := rep.Err(); err != nil {
		return res, err
	}
	res.aim(rep)
	res.Notices = append(res.Notices, rep.Guards...)
	res.incomplete(rep.Counts.Incomplete-rep.Counts.OriginalGone, rep.Counts.OriginalGone)
	if !r.Execute {
		if n := rep.Counts.Quarantined; n > 0 {
			res.notice(NoticeQuarantine, "%s would be quarantined (fw.replay.count reached --max-replays %d): --execute would send the rest and exit 3",
				wording.Plural(n, "record"), rep.MaxReplays)
		}
		res.malformed(rep.Counts.MalformedToSend, "to send")
		if r.Reason() == nil {
			res.notice(NoticeDryRun, "dry run: nothing was sent; add --execute --reason \"…\" to send")
		} else {
			res.notice(NoticeDryRun, "dry run: nothing was sent; add --execute to send")
		}
	}
	return res, nil
}

// concurrent refuses an executed plan, unless forced, while another run reads the same topic
// (Concurrent): two runs over one dead-letter topic each send what both select, every record
// twice. A dry run says so.
func (f *flow) concurrent(ctx context.Context, execute bool) error {
	if f.st == nil {
		return nil
	}
	self := ""
	if f.p.Resume != nil {
		self = f.p.Resume.Run.ID
	}
	others, err := Concurrent(ctx, f.st, f.p.Spec.From, self)
	if err != nil || len(others) == 0 {
		return err
	}
	switch {
	case !execute:
		f.res.notice(NoticeConcurrent, "%s: --execute would refuse to start another over the same dead letters (--force starts it anyway)", replaying(f.p.Spec.From, others))
	case !f.o.Force:
		return refuseConcurrent(f.p.Spec.From, others)
	}
	return nil
}

// replaying says which runs are replaying from topic now, the first named.
func replaying(topic string, others []dedup.ReplayRun) string {
	o := others[0]
	what := fmt.Sprintf("run %s is replaying from %s now (process %s, journal written %s ago)", o.ID, topic, o.Owner,
		time.Since(o.UpdatedAt).Round(time.Second))
	if len(others) > 1 {
		what += fmt.Sprintf(", and %s more", wording.Plural(int64(len(others)-1), "run"))
	}
	return what
}

// refuseConcurrent is the refusal of a run over topic while others replay from it.
func refuseConcurrent(topic string, others []dedup.ReplayRun) error {
	return fmt.Errorf("refusing to replay: %s; two runs at once would each send the dead letters both select. Wait for it (replay show %s), stop it (SIGINT), or pass --force if the selections do not overlap",
		replaying(topic, others), others[0].ID)
}

// LaterGivesWay is ExecOptions.Recheck for a new run over topic: the check before a run is
// recorded (the flow's) passes for two runs started within the same instant; once both are
// recorded each sees the other, and the one recorded later (by its journal's time, then its
// id) is refused, so that exactly one of them sends.
func LaterGivesWay(st *dedup.Store, topic string) func(ctx context.Context, runID string) error {
	return func(ctx context.Context, runID string) error {
		others, err := Concurrent(ctx, st, topic, runID)
		if err != nil || len(others) == 0 {
			return err
		}
		mine, _, err := st.ReplayRun(ctx, runID)
		if err != nil {
			return err
		}
		earlier := slices.DeleteFunc(others, func(o dedup.ReplayRun) bool {
			return !o.CreatedAt.Before(mine.CreatedAt) && (!o.CreatedAt.Equal(mine.CreatedAt) || o.ID > mine.ID)
		})
		if len(earlier) == 0 {
			return nil
		}
		return refuseConcurrent(topic, earlier)
	}
}

// check refuses, before anybody is asked, a scanned plan that selects nothing new (no run is
// recorded) or, under --strict, one a guard warns about.
func (f *flow) check(_ context.Context, _ *action.Env, res *FlowResult) error {
	rep := res.Report
	if f.single {
		return nil
	}
	if rep.Counts.Selected == 0 && f.p.Resume == nil {
		res.notice(NoticeNothingSelected, "nothing selected in %s (%s read): nothing to send, no run recorded", rep.Source, wording.Plural(rep.Counts.Read, "record"))
		return action.ErrNothingToDo
	}
	res.malformed(rep.Counts.MalformedToSend, "to send")
	if f.p.Spec.Strict {
		if n := warnings(rep.Guards); n > 0 {
			return fwerr.Checkf("--strict: refusing to replay: %s; nothing was sent", wording.Plural(int64(n), "guard warning"))
		}
	}
	return nil
}

func (f *flow) execute(ctx context.Context, r *action.Env, res *FlowResult) (*FlowResult, error) {
	toSend := int64(-1)
	if !f.single {
		toSend = res.Report.Counts.ToSend
	}
	if f.o.Workers {
		sum, err := CreateWorkerRun(ctx, f.c, f.st, f.p, f.exec(r, toSend))
		if err != nil {
			return res, err
		}
		sum.Execution = &f.exRep
		res.Summary = sum
		res.notice(NoticeWorkers, "run %s is recorded for workers and nothing was sent yet: start any number of them, on any machines, with: fieldwork replay resume %s --worker --execute (consumer group %s)",
			sum.RunID, sum.RunID, GroupName(sum.RunID))
		return res, nil
	}
	eo := f.exec(r, toSend)
	if !f.o.Force && f.p.Resume == nil {
		eo.Recheck = LaterGivesWay(f.st, f.p.Spec.From)
	}
	sum, err := Execute(ctx, f.c, f.st, f.p, eo)
	if sum != nil {
		sum.Execution = &f.exRep
	}
	if f.single {
		if sum != nil {
			res.Notices = append(res.Notices, sum.guards...)
		}
		if err == nil && sum != nil && !sum.Recorded {
			res.notice(NoticeNothingSelected, "nothing selected in %s (%s read): nothing to send, no run recorded", sum.Source, wording.Plural(sum.Read, "record"))
			return res, nil
		}
		if sum != nil && sum.MalformedSent > 0 {
			res.malformed(sum.MalformedSent, "sent")
		}
	}
	res.Summary = sum
	return res, res.finish(err)
}

// singlePass tells whether an executed plan can be sent in one pass, without a scan first: a
// plan whose one target is known up front (Plan.TargetKnown) must have it (CheckTarget), and a
// missing --to topic takes the scan, which counts the records that would have gone there.
// Other plans check each record's target as it is read, and stop at the first that cannot be
// sent (ExecOptions.SinglePass).
func singlePass(ctx context.Context, c *kafka.Cluster, p *Plan) bool {
	return !p.TargetKnown() || CheckTarget(ctx, c, p) == nil
}

// exec is the ExecOptions of the flow's send, journaled under r's Record; toSend is what the
// scan counted (-1: none, a single pass).
func (f *flow) exec(r *action.Env, toSend int64) ExecOptions {
	rec := r.Record
	eo := f.ex.options(ExecOptions{RunID: rec.ID, Operator: rec.Operator, Reason: rec.Reason, SinglePass: f.single})
	if r.Reports() {
		eo.Progress = func(pr Progress) {
			fp := FlowProgress{Stage: StageSend, Read: pr.Read, Total: pr.Total, Send: pr, ToSend: toSend}
			r.Progress(action.Progress{Stage: string(StageSend), Done: pr.Read, Total: pr.Total, Of: fp})
		}
	}
	return eo
}

func scanProgress(r *action.Env) ProgressFunc {
	if !r.Reports() {
		return nil
	}
	return func(read, total int64) {
		fp := FlowProgress{Stage: StageScan, Read: read, Total: total, ToSend: -1}
		r.Progress(action.Progress{Stage: string(StageScan), Done: read, Total: total, Of: fp})
	}
}

// warnings counts the notices that warn.
func warnings(ns []Notice) int {
	n := 0
	for _, x := range ns {
		if x.Warning() {
			n++
		}
	}
	return n
}

// aim says which groups the records of rep are for (fw.replay.for).
func (r *FlowResult) aim(rep *Report) {
	switch {
	case rep.Counts.ToSend == 0:
	case rep.AllGroups:
		r.notice(NoticeForGroup, "the records are for every consumer group reading their target (--all-groups: no fw.replay.for)")
	case rep.ForGroupDefault:
		r.notice(NoticeForGroup, "the records are for consumer group %s only, the one every selected dead letter names (fw.replay.for): other groups reading the target skip them; --all-groups sends them to every group", rep.ForGroup)
	case rep.ForGroup != "":
		r.notice(NoticeForGroup, "the records are for consumer group %s only (--for-group, fw.replay.for): other groups reading the target skip them", rep.ForGroup)
	case len(rep.Groups) > 0:
		r.notice(NoticeForGroup, "each record is for the consumer group its dead letter names (fw.replay.for: %s); dead letters that name none are for every group", strings.Join(rep.Groups, ", "))
	}
}

// incomplete says that n selected records are bounded copies, and gone are dead letters
// holding only coordinates whose original record is gone, which are never sent.
func (r *FlowResult) incomplete(n, gone int64) {
	if gone > 0 {
		r.notice(NoticeIncomplete, "%s incomplete: dead letters that hold only their record's coordinates (a share group's DLQ without record copies) whose original record is gone "+
			"from its source topic (expired, compacted, or the topic recreated or deleted; each is listed with why): they are never sent: --execute sends the rest and exits 3", wording.Plural(gone, "record"))
	}
	if n > 0 {
		r.notice(NoticeIncomplete, "%s incomplete: bounded copies the consumer wrote when the whole dead letter did not fit its topic (fw.dlq.value_omitted); "+
			"their value is cut or empty, so they are never sent: --execute sends the rest and exits 3", wording.Plural(n, "record"))
	}
}

// malformed warns that n records (to send, or sent) were dead-lettered as malformed:
// replaying them cannot help, their bytes are what failed.
func (r *FlowResult) malformed(n int64, what string) {
	if n > 0 {
		r.notice(NoticeMalformed, "%s %s were dead-lettered as malformed: the same bytes will fail again; "+
			"fix the producer, or leave them out with --dlq-reason exhausted,rejected,unsupported", wording.Plural(n, "record"), what)
	}
}

// finish turns an executed run's error into its outcome: nil, a check failure when records
// were quarantined or incomplete (Summary.Err), or the run's error, an interruption when ctx was cancelled; a run that
// stopped says how to resume it.
func (r *FlowResult) finish(err error) error {
	sum := r.Summary
	if sum == nil {
		return err
	}
	if err == nil {
		return sum.Err()
	}
	if sum.Status == dedup.RunInterrupted || sum.Status == dedup.RunFailed {
		keeps := ""
		if e := sum.Execution; e != nil && e.Rate != nil {
			keeps = fmt.Sprintf(" (it keeps --rate %g, journaled with the run; --rate overrides)", *e.Rate)
		}
		r.notice(NoticeResume, "run %s is %s; continue it with: fieldwork replay resume %s --execute%s", sum.RunID, sum.Status, sum.RunID, keeps)
	}
	if errors.Is(err, context.Canceled) && fwerr.KindOf(err) == fwerr.KindError {
		err = fwerr.Wrap(fwerr.KindInterrupted, err)
	}
	return err
}
