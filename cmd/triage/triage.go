// Package triage is `fieldwork triage`, the interactive dead-letter console (internal/tui).
package triage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	dlqcmd "github.com/fieldwork/fieldwork/cmd/dlq"
	processedcmd "github.com/fieldwork/fieldwork/cmd/processed"
	replaycmd "github.com/fieldwork/fieldwork/cmd/replay"
	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/tui"
)

// TriageOptions are the inputs of `fieldwork triage`.
type TriageOptions struct {
	cmdutil.StoreDeps
	StoreConfigured func() (bool, error)
	// DLQPattern is the configured dead-letter topic pattern (environment or context).
	DLQPattern cmdutil.DLQPattern
	Now        func() time.Time
	Getenv     func(string) string

	Topics   cmdutil.DLQTopicFlags
	Status   cmdutil.DLQStatusFlags
	ReadOnly bool
	// Action holds --operator (who replays, for the journal); the reasons are typed in the console.
	Action cmdutil.ActionFlags
	Poll   time.Duration
	Rate   cmdutil.RateFlag

	// Set by parsing.
	Pattern *regexp.Regexp
}

// NewCmdTriage builds `fieldwork triage`.
func NewCmdTriage(f *cmdutil.Factory, runF func(context.Context, *TriageOptions) error) *cobra.Command {
	// The store-naming flags are this command's: bound here, read by the store its commands open.
	naming := new(dedup.Options)
	f = f.WithStoreNaming(naming)
	opts := &TriageOptions{StoreDeps: cmdutil.NewStoreDeps(f), StoreConfigured: f.StoreConfigured, DLQPattern: f.DLQPattern, Now: f.Now, Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "triage",
		Short: "An interactive dead-letter console: look, then replay a chosen set",
		Long: `Open an interactive console on the dead-letter topics, in the terminal.

Screens: the dead-letter topics with their dead letters by status (and by reason, for the
topic under the cursor) and how many arrived since the console opened; one topic's dead
letters grouped by failure cause (error class and message), with counts, first and last seen
and the original topics; one group's dead letters; one dead letter in full, as dlq show
prints it. New dead letters appear as they arrive, and statuses are looked up again as they
change (every --poll).

Actions: mark dead letters (space), and replay the marked ones, the one under the cursor or
a whole group (r): the plan is shown as replay's dry run prints it, and sent once a reason
is typed (the same flow as fieldwork replay --execute, journaled the same way). q or Ctrl-C
stops a replay in flight as Ctrl-C stops fieldwork replay's (resume it with the replay
resume line printed on exit). y copies a dead letter's address, Y a ready-made command line
(through the terminal's clipboard, OSC 52), p shows the event's markers (processed get),
/ filters the list, s cycles the status filter, ? shows every key.

Statuses need the dedup store (--dsn or FIELDWORK_DSN), as in dlq list; so do replays.
--read-only hides every action, for principals with read ACLs only. triage needs a terminal:
in scripts use fieldwork dlq list, dlq stats and replay.`,
		Example: `  fieldwork triage
  fieldwork triage --topic tasks.dlq --consumer billing
  fieldwork triage --read-only`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, triageRun)
		},
	}
	opts.Topics.Register(cmd.Flags())
	opts.Status.Register(cmd.Flags(), 0)
	cmdutil.RegisterStoreFlags(cmd, cmd.Flags(), naming)
	opts.Action.RegisterOperator(cmd.Flags(), "who replays")
	cmd.Flags().BoolVar(&opts.ReadOnly, "read-only", false, "hide every action (replay, marking): look only")
	opts.Rate.Register(cmd.Flags())
	cmd.Flags().DurationVar(&opts.Poll, "poll", tui.DefaultPoll, "how often new dead letters and statuses are read")
	return cmd
}

func (opts *TriageOptions) parse(cmd *cobra.Command) error {
	s := opts.Streams
	if !s.OutTTY || !s.InTTY {
		return fwerr.Usagef("triage is interactive and needs a terminal (stdin and stdout): in scripts use fieldwork dlq list (or dlq stats, replay)")
	}
	if opts.Poll <= 0 {
		return fwerr.Usagef("--poll %s: must be positive", opts.Poll)
	}
	if err := opts.Rate.Check(); err != nil {
		return err
	}
	var err error
	if opts.Pattern, err = opts.Topics.Compile(); err != nil {
		return err
	}
	return opts.Status.Validate(cmd, opts.lookupDeps(nil), false)
}

// lookupDeps are the status flags' dependencies; warnings go to errOut when set (the console
// owns the terminal while it runs).
func (opts *TriageOptions) lookupDeps(errOut *bytes.Buffer) cmdutil.DLQStoreDeps {
	s := opts.Streams
	if errOut != nil {
		es := *s
		es.ErrOut, es.ErrTTY = errOut, false
		s = &es
	}
	return cmdutil.DLQStoreDeps{Streams: s, Store: opts.Store, StoreConfigured: opts.StoreConfigured}
}

func triageRun(ctx context.Context, opts *TriageOptions, cl *cmdutil.Clients) error {
	s := opts.Streams
	pattern, _, err := opts.Topics.Effective(opts.Pattern, opts.DLQPattern)
	if err != nil {
		return err
	}
	var warnings bytes.Buffer
	lookup, closeStore, err := opts.Status.Open(ctx, opts.lookupDeps(&warnings))
	if err != nil {
		return err
	}
	defer closeStore()
	defer func() { fmt.Fprint(s.ErrText(), warnings.String()) }()

	backend := tui.NewBackend(tui.BackendOptions{
		Cluster: cl.Kafka, Store: lookup.Store, Lookup: lookup,
		Topics: opts.Topics.Topics, Pattern: pattern,
		Operator: action.Operator(opts.Action.Operator, opts.Getenv),
		NewRunID: func() string { return action.NewRunID(opts.Now()) },
		Rate:     float64(opts.Rate),
	})
	m := tui.New(ctx, tui.Options{
		Backend:  backend,
		Views:    views(s, opts.Now),
		ReadOnly: opts.ReadOnly,
		NoColor:  s.NoColor,
		Poll:     opts.Poll,
		Now:      opts.Now,
		Consumer: opts.Status.Consumer,
	})
	prog := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(s.In), tea.WithOutput(s.Out))
	_, err = prog.Run()
	for _, l := range m.Final {
		fmt.Fprintln(s.ErrText(), l)
	}
	switch {
	case m.Err != nil:
		return m.Err
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
	case err != nil:
		return fmt.Errorf("triage: %w", err)
	}
	return nil
}

// views are the commands' own renderers (dlq show, replay's plan, processed get), written for
// a terminal as wide as the console.
func views(s *output.Streams, now func() time.Time) tui.Views {
	render := func(width int, fn func(p *output.Printer) error) string {
		var b bytes.Buffer
		out := &output.Streams{Out: &b, ErrOut: &b, OutTTY: true, NoColor: s.NoColor, Width: width}
		if err := fn(output.NewPrinter(out, output.FormatTable)); err != nil {
			fmt.Fprintf(output.TextWriter(&b, false), "\nerror: %v\n", err)
		}
		return b.String()
	}
	return tui.Views{
		Record: func(det dlq.Detail, width int) string {
			return render(width, func(p *output.Printer) error { return dlqcmd.RenderShow(p, det, now) })
		},
		Plan: func(rep *replay.Report, width int) string {
			return render(width, func(p *output.Printer) error { return replaycmd.RenderPlan(p, rep) })
		},
		Question: replaycmd.PlanQuestion,
		Processed: func(eventID, consumer string, rows []dedup.MarkerRow, width int) string {
			return render(width, func(p *output.Printer) error { return processedcmd.RenderGet(p, eventID, consumer, rows) })
		},
	}
}
