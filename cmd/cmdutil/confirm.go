package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// ErrNotConfirmed is returned when the person at the terminal answers anything but yes: a
// cancellation (fwerr.KindCancelled, exit 6), printed as "cancelled: nothing was changed".
var ErrNotConfirmed = fwerr.Wrap(fwerr.KindCancelled, errors.New("nothing was changed"))

// Prompt is what a confirmation shows above its question on a terminal (docs/design.md §4:
// every prompt names where the action goes and what it does): the context and the cluster,
// the store, the plan's counts per target, and the reason. The context, brokers and store's
// DSN (redacted) come from the connection; the rest from the command.
type Prompt struct {
	// Question is the action as a phrase that completes "refusing to …".
	Question string
	// Kafka and Store say which of the connections the action touches, to be shown.
	Kafka bool
	Store string // the store's table ("" when the action does not touch the store)
	// Counts are the plan's counts, one per target ("300000 to orders.retry").
	Counts []string
	// Reason is the --reason given, "" when none.
	Reason string
}

// ConfirmPrompt asks before a destructive or large action (docs/design.md §4: "Destructive or large actions
// ask for confirmation on a terminal unless --yes").
//
// p.Question is the action as a phrase that completes "refusing to …", for example "delete
// 1,204 markers of consumer billing processed before 2025-05-01T00:00:00Z". The rule:
//
//   - yes (--yes) skips the question: nil.
//   - On an interactive terminal (stdin and stderr are terminals) it asks "Delete …? [y/N] "
//     on stderr and reads one line from stdin: y or yes (any case) is nil; anything else,
//     an empty line or end of input is ErrNotConfirmed ("cancelled", exit 6). SIGINT or SIGTERM while
//     waiting is an interruption (exit 130).
//   - Anywhere else (a script, a pipe, CI) it refuses with a usage error (exit 2): "refusing
//     to … without --yes". Proceeding silently would make a script's first run destructive;
//     failing makes the script's author choose --yes deliberately.
//
// Above the question, on a terminal, it shows the lines of p (promptLines). Actions reach it
// through RunAction.
func ConfirmPrompt(f *Factory, yes bool, p Prompt) error {
	if yes {
		return nil
	}
	question := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p.Question), "?"))
	if !f.Streams.Interactive() {
		return fwerr.Usagef("refusing to %s without --yes: this is not an interactive terminal, so nobody can confirm (pass --yes in scripts)", question)
	}
	w := f.Streams.ErrText()
	// Each line is wrapped to the terminal (docs/design.md §4.1): a confirmation shows what
	// it is about whole, and a line that wraps by itself would break the label column.
	const indent = "           " // "  %-8s " of the labels
	for _, l := range promptLines(f, p) {
		for i, part := range output.Wrap(l[1], max(f.Streams.ErrWidth-len(indent), 0)) {
			if i == 0 {
				fmt.Fprintf(w, "  %-8s %s\n", l[0], part)
			} else {
				fmt.Fprintf(w, "%s%s\n", indent, part)
			}
		}
	}
	ask := output.Wrap(capitalize(question)+"? [y/N]", max(f.Streams.ErrWidth-1, 0))
	fmt.Fprintf(w, "%s ", strings.Join(ask, "\n"))

	// The root command catches SIGINT for a clean shutdown, so a blocked read would outlive
	// Ctrl-C: wait for the answer or a signal, whichever comes first.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	answer := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(f.Streams.In).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			line = ""
		}
		answer <- line
	}()
	select {
	case <-sig:
		fmt.Fprintln(f.Streams.ErrOut)
		return fwerr.Wrap(fwerr.KindInterrupted, errors.New("interrupted at the confirmation prompt"))
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(f.Streams.ErrOut)
		}
		return ErrNotConfirmed
	}
}

// promptLines are the label/value lines above a question.
func promptLines(f *Factory, p Prompt) [][2]string {
	var lines [][2]string
	conn, err := f.Connection()
	if err == nil {
		ctx := conn.Context
		if ctx == "" {
			ctx = "none (flags and environment)"
		}
		lines = append(lines, [2]string{"context", ctx})
		if p.Kafka {
			lines = append(lines, [2]string{"cluster", OrDash(strings.Join(conn.Brokers, ","))})
		}
		if p.Store != "" {
			lines = append(lines, [2]string{"store", redact.DSN(conn.DSN) + " " + p.Store})
		}
	}
	for i, c := range p.Counts {
		label := ""
		if i == 0 {
			label = "plan"
		}
		lines = append(lines, [2]string{label, c})
	}
	if p.Reason != "" {
		lines = append(lines, [2]string{"reason", p.Reason})
	}
	return lines
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// ActionFlags are the inputs every action that changes something shares (replay, replay
// resume, processed prune, processed forget, groups skip, groups reset): a dry run unless
// --execute, --yes for scripts, the --reason that justifies it and the --operator who acts,
// both journaled (docs/design.md §3.3), with the confirmation and the environment that names
// the operator by default. RunAction runs an action with them.
//
// A dry run takes every flag the executed action takes, --reason and --yes included, and
// its plan shows the reason: the command previewed is the command executed, --execute added.
type ActionFlags struct {
	Execute  bool
	Yes      bool
	Reason   string
	Operator string

	Getenv  func(string) string
	Now     func() time.Time
	Confirm func(yes bool, p Prompt) error
}

// NewActionFlags is an ActionFlags that confirms on f's terminal.
func NewActionFlags(f *Factory) ActionFlags {
	return ActionFlags{Getenv: f.Getenv, Now: f.Now, Confirm: func(yes bool, p Prompt) error { return ConfirmPrompt(f, yes, p) }}
}

// Register adds --execute, --yes, --reason and --operator: act is what --execute does, why
// the help of --reason, who who acts.
func (a *ActionFlags) Register(fs *pflag.FlagSet, act, why, who string) {
	fs.BoolVar(&a.Execute, "execute", false, act+" (default: print the plan and change nothing)")
	fs.BoolVar(&a.Yes, "yes", false, "do not ask for confirmation (required with --execute when not on a terminal)")
	fs.StringVar(&a.Reason, "reason", "", why)
	a.RegisterOperator(fs, who)
}

// RegisterOperator adds --operator alone, for a command that asks for its reasons as it acts
// (triage).
func (a *ActionFlags) RegisterOperator(fs *pflag.FlagSet, who string) {
	fs.StringVar(&a.Operator, "operator", "", who+", for the journal (default $USER, else $LOGNAME, else the account running it)")
}

// Record is what the journal says of an action these flags ask for now: a new id, the
// operator (--operator, else looked up: action.Operator) and the --reason.
func (a *ActionFlags) Record() action.Record {
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	return action.NewRecord(now, a.Operator, a.Getenv, a.Reason)
}

// ActionView is how a command shows its action to the person who runs it.
type ActionView[P any] struct {
	// Prompt is the confirmation of plan: its question and counts (the context, the cluster,
	// the store's DSN and the --reason are filled in).
	Prompt func(plan P) Prompt
	// Show, when set, prints plan on a terminal before the question, so that whoever confirms
	// sees what the action will do.
	Show func(plan P) error
	// Progress, when set, shows how far the action has come.
	Progress func(action.Progress)
	// Notice, when set, shows a notice; by default a warning is written as Warn does, a note as
	// Note does.
	Notice func(action.Notice)
}

// RunAction runs the action steps describes (action.Run) as a asks: a dry run unless
// --execute; --yes asks nobody, otherwise the plan is confirmed (ConfirmPrompt, through
// a.Confirm), shown first on a terminal by v.Show; journaled with a.Record(). It is the one
// way a command runs an action: the command renders the outcome (the plan of a dry run or a
// refused plan, the result of an executed one).
func RunAction[P, R any](ctx context.Context, cl *Clients, a ActionFlags, steps action.Steps[P, R], v ActionView[P]) (action.Outcome[P, R], error) {
	h := action.Hooks[P]{
		Progress: v.Progress,
		Notice:   v.Notice,
		Confirm: func(plan P) error {
			if v.Show != nil && cl.Streams.Interactive() {
				if err := v.Show(plan); err != nil {
					return err
				}
			}
			p := v.Prompt(plan)
			p.Reason = a.Reason
			return a.Confirm(false, p)
		},
	}
	if h.Notice == nil {
		h.Notice = func(n action.Notice) {
			if n.Warning {
				Warn(cl.Streams, n.Text)
			} else {
				Note(cl.Streams, n.Text)
			}
		}
	}
	return action.Run(ctx, steps, action.Options{Execute: a.Execute, Yes: a.Yes, Record: a.Record()}, h)
}

// ReasonField is the "reason" line of a plan (the --reason it is asked with, dry run or not),
// none when it has none: every plan shows it the same way.
func ReasonField(reason *string) [][2]string {
	if reason == nil {
		return nil
	}
	return [][2]string{{"reason", *reason}}
}

// RegisterYes adds --yes alone, for an action whose reason is not asked for (replay resume
// keeps its run's).
func (a *ActionFlags) RegisterYes(fs *pflag.FlagSet) {
	fs.BoolVar(&a.Yes, "yes", false, "do not ask for confirmation (required with --execute when not on a terminal)")
}

// RequireReason refuses --execute without a --reason (blank counts as none), for the actions
// that must say why (replay, groups skip); why completes "say why (…)".
func (a *ActionFlags) RequireReason(why string) error {
	if a.Execute && strings.TrimSpace(a.Reason) == "" {
		return fwerr.Usagef("--execute needs --reason: say why (%s)", why)
	}
	return nil
}

// RateFlag is --rate of the commands that replay (replay, replay resume, triage): records sent
// per second at most, 0 for no cap.
type RateFlag float64

// Register adds --rate.
func (r *RateFlag) Register(fs *pflag.FlagSet) {
	fs.Float64Var((*float64)(r), "rate", 0, "send at most this many records per second (default: no cap)")
}

// minRate is the smallest --rate above 0: one record an hour. Below it a replay would sit on
// one record for longer than anyone watches it.
const minRate = 1.0 / 3600

// Check refuses a rate that is not a number of records per second (NaN, Inf, which pflag
// parses), a negative one and one below one record an hour.
func (r RateFlag) Check() error {
	f := float64(r)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fwerr.Usagef("--rate %g: want records per second (0 for no cap)", f)
	case f < 0:
		return fwerr.Usagef("--rate %g: must be positive (or 0 for no cap)", f)
	case f > 0 && f < minRate:
		return fwerr.Usagef("--rate %g: at least one record an hour (%.6f/s), or 0 for no cap", f, minRate)
	}
	return nil
}
