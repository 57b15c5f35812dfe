// Package action is the one shape of every action that changes something and is journaled
// (docs/design.md §3.3): replay, replay resume, processed prune, processed forget, groups skip,
// groups reset and their undo. An action supplies its plan and its execute (Steps); Run is the one flow
// around them: plan → check → confirm → execute, the execute journaling under the Record Run
// hands it (the run id, the operator, the reason).
//
// It never prints and knows no terminal: the person who asked is reached through the Hooks
// the command layer gives (cmdutil.RunAction), or a program's own (the demo, triage).
package action

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os/user"
	"strings"
	"time"
)

// NewRunID returns an action's id, one that sorts by time and is unique:
// 20250102-150405-3f9a1c. Replay runs and groups skips are journaled under it.
func NewRunID(at time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return at.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// Operator is who acts, for the journal: explicit (--operator) when given, else $USER, else
// $LOGNAME, else the account the process runs as (a container or a cron job often sets
// neither variable), else "unknown".
func Operator(explicit string, getenv func(string) string) string {
	for _, v := range []string{explicit, getenv("USER"), getenv("LOGNAME")} {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil && strings.TrimSpace(u.Username) != "" {
		return strings.TrimSpace(u.Username)
	}
	return "unknown"
}

// Record is what the journal says of every executed action, whatever its table: its id, when
// it was asked for, who acted and why.
type Record struct {
	// ID names the action (NewRunID): a replay run's id, a groups skip's. A resumed replay
	// keeps its own.
	ID string
	// At is when the action was asked for (the id's time).
	At       time.Time
	Operator string
	Reason   string
}

// NewRecord is the Record of an action asked for at at: a new id, the operator looked up
// (Operator) and the reason as given.
func NewRecord(at time.Time, operator string, getenv func(string) string, reason string) Record {
	return Record{ID: NewRunID(at), At: at, Operator: Operator(operator, getenv), Reason: reason}
}

// Stage is the step of Run an outcome reached.
type Stage string

// The steps of Run, in order.
const (
	StagePlan    Stage = "plan"
	StageCheck   Stage = "check"
	StageConfirm Stage = "confirm"
	StageExecute Stage = "execute"
)

// ErrNothingToDo, returned by a Check, stops Run there without an error: the plan selects
// nothing to change, so nothing is asked, executed or journaled.
var ErrNothingToDo = errors.New("nothing to do")

// Steps are what an action supplies: its plan and its execute, and the checks an executed
// plan must pass before anybody is asked. Each step gets the Env, for what was asked and to
// report through its hooks (Env).
type Steps[P, R any] struct {
	// Plan says what the action would do: a dry run ends with it, and it is what is
	// confirmed. A plan that is refused comes back with its error (the caller may show both).
	Plan func(ctx context.Context, r *Env) (P, error)
	// Check, when set, refuses an executed plan before anybody is asked (a journal that
	// cannot be written, a strict guard); ErrNothingToDo ends Run with nothing done.
	Check func(ctx context.Context, r *Env, plan P) error
	// Execute does what plan says and journals it under r.Record.
	Execute func(ctx context.Context, r *Env, plan P) (R, error)
}

// Hooks reach the person who asked. Confirm is required for an executed action without
// Yes; the others are optional.
type Hooks[P any] struct {
	// Confirm is asked, when an executed action is not Yes, once its plan passed the checks
	// and before anything is changed: nil goes on; an error stops Run with that error, nothing
	// changed or journaled.
	Confirm func(plan P) error
	// Notice is told, as it arises, what the person should read beside the output.
	Notice func(Notice)
	// Progress is told how far a long step has come.
	Progress func(Progress)
}

// Notice is something the person who acts should read: a warning (what does not go as
// hoped, or what was let through) or a note.
type Notice struct {
	Text    string
	Warning bool
}

// Progress is how far a step has come: Done of Total (0: not known) in Stage, and the step's
// own figures in Of (replay's: replay.FlowProgress), nil when it has none.
type Progress struct {
	Stage       string
	Done, Total int64
	Of          any
}

// Options are what was asked: a dry run unless Execute; Yes means nobody is asked; Record is
// journaled with the executed action.
type Options struct {
	Execute, Yes bool
	Record       Record
}

// Env is one run of an action as its steps see it: what was asked, and the hooks to report
// through.
type Env struct {
	Options
	notice   func(Notice)
	progress func(Progress)
}

// Warn reports a warning through the Notice hook.
func (r *Env) Warn(text string) { r.Notify(Notice{Text: text, Warning: true}) }

// Notify reports n through the Notice hook, if any.
func (r *Env) Notify(n Notice) {
	if r.notice != nil {
		r.notice(n)
	}
}

// Progress reports p through the Progress hook, if any.
func (r *Env) Progress(p Progress) {
	if r.progress != nil {
		r.progress(p)
	}
}

// Reason is the reason the action is asked with, for its plan to show (nil without one). A
// dry run takes the reason too, so that the command previewed is the command executed, with
// --execute added.
func (r *Env) Reason() *string {
	if strings.TrimSpace(r.Record.Reason) == "" {
		return nil
	}
	reason := r.Record.Reason
	return &reason
}

// Reports says whether a Progress hook listens (a step may skip the work of its figures).
func (r *Env) Reports() bool { return r.progress != nil }

// Outcome is what Run did: the plan (nil-able P's zero when planning failed), the result
// (R's zero unless executed) and the last step it reached.
type Outcome[P, R any] struct {
	Plan   P
	Result R
	Stage  Stage
}

// Run is the one flow of an action: plan; a dry run (not Execute) ends there; then the checks,
// the confirmation (unless Yes) and the execute, which journals. Whatever the outcome, it
// comes back with how far it got, with the error of the step that stopped it.
func Run[P, R any](ctx context.Context, s Steps[P, R], o Options, h Hooks[P]) (Outcome[P, R], error) {
	r := &Env{Options: o, notice: h.Notice, progress: h.Progress}
	var out Outcome[P, R]
	out.Stage = StagePlan
	plan, err := s.Plan(ctx, r)
	out.Plan = plan
	if err != nil || !o.Execute {
		return out, err
	}
	out.Stage = StageCheck
	if s.Check != nil {
		if err := s.Check(ctx, r, plan); err != nil {
			if errors.Is(err, ErrNothingToDo) {
				err = nil
			}
			return out, err
		}
	}
	if !o.Yes {
		out.Stage = StageConfirm
		if h.Confirm == nil {
			return out, errors.New("action: an executed action without Yes needs a Confirm")
		}
		if err := h.Confirm(plan); err != nil {
			return out, err
		}
	}
	out.Stage = StageExecute
	out.Result, err = s.Execute(ctx, r, plan)
	return out, err
}
