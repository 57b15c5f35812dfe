// Package demo is `fieldwork demo`, the whole story in one process.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/demo"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// DemoOptions are the inputs of `fieldwork demo`.
type DemoOptions struct {
	Streams *output.Streams
	Getenv  func(string) string
	// Format is the -o value as given ("" when not given).
	Format string
	Keep   bool
	Port   int
	Dir    string
	Seed   uint64
}

// NewCmdDemo builds `fieldwork demo`; runF, when set, replaces the run (for tests of flag
// parsing).
func NewCmdDemo(f *cmdutil.Factory, runF func(context.Context, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{Streams: f.Streams, Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole story in one process with no setup",
		Long: `Tell the whole story of an at-least-once event system in one process, with nothing to
install or configure: an in-process Kafka broker (as fieldwork dev serves) on a free loopback
port and an SQLite store in a temporary directory (or --dir).

  1. task events are produced, with producer-retry duplicates, stale versions and poison;
  2. the reference consumer (projection handler, release 1.4, which rejects task.reopened by
     mistake) absorbs the duplicates, ignores the stale versions and dead-letters the poison
     and the rejected events, and every partition keeps moving;
  3. dlq list and dlq stats show the dead letters and their status;
  4. a replay of the rejected dead letters is planned (dry run), the fix is deployed and the
     replay is executed and journaled;
  5. the fixed consumer handles the replayed events; dlq list --status shows them resolved,
     and the malformed records still there (no replay can fix broken bytes: the producer must);
  6. processed stats counts one marker per distinct event.

Each step calls the same code as the command it stands for and prints that command line.
The demo checks its own outcome and exits 1 if it is not what it says.

Output: on a terminal the story goes to stdout. With -o json (or jsonl, or when stdout is
piped) the story goes to stderr and stdout gets one summary object: events_produced,
duplicates_absorbed, stale_ignored, dead_lettered (by reason), replayed, resolved,
still_pending, processed_markers, elapsed_ms, steps (with their command lines), and more.

--keep leaves the broker and the store running after the story, prints how to point other
fieldwork commands at them, and stops at Ctrl-C. The broker keeps everything in memory; the
temporary directory is removed when the demo ends (a --dir is left as it is).`,
		Example: `  fieldwork demo
  fieldwork demo -o json | jq '{duplicates_absorbed, resolved, still_pending}'
  fieldwork demo --keep --port 19092 --dir ./demo`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(f.Settings().Conn.Brokers) > 0 || f.Settings().Conn.DSN != "" {
				return fwerr.Usagef("fieldwork demo runs on its own embedded broker and store: drop --brokers and --dsn (choose the port with --port and the store's directory with --dir)")
			}
			if opts.Dir != "" {
				fi, err := os.Stat(opts.Dir)
				if err != nil || !fi.IsDir() {
					return fwerr.Usagef("--dir %s: not an existing directory", opts.Dir)
				}
				// Absolute, so that the command lines it prints work from any directory.
				if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
					return fwerr.Usagef("--dir: %v", err)
				}
			}
			opts.Format = f.Settings().OutputFormat
			return cmdutil.Run(cmd, opts, runF, demoRun)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Keep, "keep", false, "leave the broker and store running after the story, until Ctrl-C")
	cmdutil.PortVar(fl, &opts.Port, 0)
	fl.StringVar(&opts.Dir, "dir", "", "existing directory for the store file (default: a temporary directory, removed at the end)")
	fl.Uint64Var(&opts.Seed, "seed", demo.DefaultSeed, "seed of the sample events")
	return cmd
}

func demoRun(ctx context.Context, opts *DemoOptions) error {
	s := opts.Streams
	format, err := output.ParseFormat(opts.Format, s.OutTTY)
	if err != nil {
		return fwerr.Wrap(fwerr.KindUsage, err)
	}
	// The story goes where a person reads it: stdout for a table, else stderr, so that stdout
	// carries only the summary.
	story, color := s.ErrOut, s.ErrColor()
	if format == output.FormatTable {
		story, color = s.Out, s.OutTTY && !s.NoColor
	}
	width := s.ErrWidth
	if format == output.FormatTable {
		width = s.Width
	}
	n := newDemoNarrator(story, color, width)

	dir, tmp := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "fieldwork-demo-"); err != nil {
			return err
		}
		tmp = true
		defer os.RemoveAll(dir)
	}
	d, err := demo.New(demo.Options{
		Dir: dir, Port: opts.Port, Seed: opts.Seed, Narrator: n,
		Operator: action.Operator("", opts.Getenv),
	})
	var exists *demo.StoreExistsError
	if errors.As(err, &exists) {
		return fwerr.Usagef("--dir %s: %s exists from an earlier demo: remove it or choose another --dir", opts.Dir, demo.StoreFile)
	}
	if err != nil {
		return err
	}
	defer d.Close()

	n.intro()
	sum, runErr := d.Run(ctx)
	if ctx.Err() != nil || sum == nil || len(sum.Steps) == 0 {
		return runErr // interrupted (Main says so and exits 130), or nothing to summarise
	}
	sum.Kept = opts.Keep && runErr == nil
	// The summary is printed even when the story failed: it holds the steps that ran.
	if format == output.FormatTable {
		n.blank()
	}
	if err := output.NewPrinter(s, format).Object(sum, demoSummarySections(sum)); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	if !opts.Keep {
		n.closing(sum)
		return nil
	}
	n.explore(d, dir, tmp)
	return cmdutil.WaitAndClose(ctx, s, "demo", d.Close)
}

// demoWidth is the width prose is wrapped to, at most: a narrower terminal's width.
const demoWidth = 96

// demoNarrator renders the story: step titles, command lines, results as compact tables, and
// prose wrapped for a terminal.
type demoNarrator struct {
	w     io.Writer
	p     *output.Printer
	st    output.Styles
	width int
}

// newDemoNarrator tells the story on w, every line fitted to width columns when it is a
// terminal's (0: not a terminal): prose wrapped, commands broken as a shell reads them, tables
// fitted.
func newDemoNarrator(w io.Writer, color bool, width int) *demoNarrator {
	p := output.NewPrinter(&output.Streams{Out: w, ErrOut: w, OutTTY: color, Width: width}, output.FormatTable)
	prose := demoWidth
	if width > 0 {
		prose = min(prose, width)
	}
	return &demoNarrator{w: output.WrappingTextWriter(w, color, width), p: p, st: p.Styles, width: prose}
}

func (n *demoNarrator) blank() { fmt.Fprintln(n.w) }

func (n *demoNarrator) intro() {
	fmt.Fprintln(n.w, n.st.Title.Render("fieldwork demo")+": an at-least-once event system, its poison and a handler bug, from produce to resolved")
	n.Say("Everything runs in this process on the embedded defaults: an in-process Kafka broker and an SQLite store. " +
		"Each step prints the fieldwork command it stands for and runs the same code.")
}

func (n *demoNarrator) Step(num int, title string) {
	fmt.Fprintln(n.w)
	fmt.Fprintln(n.w, n.st.Title.Render(fmt.Sprintf("── %d. %s", num, title)))
}

func (n *demoNarrator) Command(line string) {
	fmt.Fprintln(n.w)
	fmt.Fprintln(n.w, n.st.Header.Render("$ "+line))
}

func (n *demoNarrator) Say(text string) {
	fmt.Fprintln(n.w)
	for _, line := range output.Wrap(text, n.width) {
		fmt.Fprintln(n.w, line)
	}
}

func (n *demoNarrator) table(header []string, rows [][]string) {
	if len(rows) == 0 {
		fmt.Fprintln(n.w, n.st.Dim.Render("(none)"))
		return
	}
	_ = n.p.Table(header, rows)
}

func (n *demoNarrator) note(text string) { fmt.Fprintln(n.w, n.st.Dim.Render(text)) }

func (n *demoNarrator) Result(r demo.Result) {
	switch r := r.(type) {
	case *demo.SeedResult:
		n.seed(r)
	case *demo.ConsumeResult:
		n.consume(r)
	case *demo.DeadLettersResult:
		n.deadLetters(r)
	case *demo.DeadLetterStatsResult:
		n.deadLetterStats(r)
	case *demo.ReplayPlanResult:
		n.replayPlan(r)
	case *demo.ReplayRunResult:
		n.replayRun(r)
	case *demo.ProcessedStatsResult:
		n.processed(r)
	}
}

func (n *demoNarrator) seed(r *demo.SeedResult) {
	var rows [][]string
	for _, t := range r.Seeded.Topics {
		rows = append(rows, []string{t.Topic, strconv.Itoa(t.Partitions), strconv.Itoa(t.Records), strconv.Itoa(t.Events),
			strconv.Itoa(t.Duplicates), strconv.Itoa(t.Stale), strconv.Itoa(t.Poison)})
	}
	n.table([]string{"topic", "partitions", "records", "events", "duplicates", "stale", "poison"}, rows)
	if len(r.Seeded.Poison) > 0 {
		fmt.Fprintln(n.w)
		var rows [][]string
		for _, pr := range r.Seeded.Poison {
			rows = append(rows, []string{kafka.RecordAddress{Topic: pr.Topic, Partition: pr.Partition, Offset: pr.Offset}.String(), pr.Key, string(pr.Kind), pr.Reason})
		}
		n.table([]string{"poison record", "key", "kind", "what is wrong"}, rows)
	}
}

func (n *demoNarrator) consume(r *demo.ConsumeResult) {
	dl := strconv.FormatInt(r.DeadLettered, 10)
	if r.DeadLettered > 0 {
		dl += " (" + demoReasons(r.DeadLetteredByReason) + ")"
	}
	n.table([]string{"records", "applied", "duplicates", "stale", "dead-lettered", "batches", "elapsed"}, [][]string{{
		strconv.FormatInt(r.Records, 10), strconv.FormatInt(r.Applied, 10), strconv.FormatInt(r.Duplicates, 10),
		strconv.FormatInt(r.Stale, 10), dl, strconv.FormatInt(r.Batches, 10), demoMillis(r.ElapsedMS),
	}})
}

// demoShownRejected is how many rejected dead letters a listing shows; the others (all
// alike) are counted.
const demoShownRejected = 5

func (n *demoNarrator) deadLetters(r *demo.DeadLettersResult) {
	var rows [][]string
	hidden := 0
	shownRejected := 0
	for _, e := range r.Entries {
		if e.Reason == dlq.ReasonRejected {
			if shownRejected >= demoShownRejected {
				hidden++
				continue
			}
			shownRejected++
		}
		reason := e.Reason
		if reason == dlq.ReasonMalformed {
			reason = n.st.Bad.Render(reason)
		}
		rows = append(rows, []string{
			e.DeadLetter.Address().String(), demoOriginal(e.DeadLetter), reason,
			output.Truncate(cmdutil.OrDash(e.EventID), 13), cmdutil.StatusText(n.st, e.Status.Status),
			output.Truncate(strings.Join(strings.Fields(e.ErrorMessage), " "), 56),
		})
	}
	n.table([]string{"dead letter", "original", "reason", "event id", "status", "message"}, rows)
	if hidden > 0 {
		n.note(fmt.Sprintf("… and %d more rejected dead letters like these (the demo shortens the list; dlq list shows every one, in full)", hidden))
	}
}

func (n *demoNarrator) deadLetterStats(r *demo.DeadLetterStatsResult) {
	rep := r.Report
	var rows [][]string
	for _, g := range rep.Groups {
		c := g.Statuses
		if c == nil {
			c = &dlq.StatusCounts{}
		}
		rows = append(rows, []string{cmdutil.OrDash(g.Reason), strconv.FormatInt(g.Count, 10),
			strconv.FormatInt(c.Pending, 10), strconv.FormatInt(c.Replayed, 10), strconv.FormatInt(c.Resolved, 10), strconv.FormatInt(c.Stale, 10), strconv.FormatInt(c.Unknown, 10)})
	}
	n.table([]string{"reason", "count", "pending", "replayed", "resolved", "stale", "unknown"}, rows)
	for _, t := range rep.Topics {
		line := fmt.Sprintf("%s: %d dead letters", t.Topic, t.Count)
		if t.Retention != nil {
			line += ", retention " + t.Retention.Describe()
			if in, ok := t.DeletableIn(rep.Now); ok {
				line += ", the oldest is deletable in " + dlq.FormatAge(in)
			}
		}
		n.note(line)
	}
}

func (n *demoNarrator) replayPlan(r *demo.ReplayPlanResult) {
	rep := r.Report
	c := rep.Counts
	n.table([]string{"read", "selected", "to send", "quarantined", "target"}, [][]string{{
		strconv.FormatInt(c.Read, 10), strconv.FormatInt(c.Selected, 10), strconv.FormatInt(c.ToSend, 10),
		strconv.FormatInt(c.Quarantined, 10), demoTargets(rep.Targets),
	}})
	n.note("dry run: nothing was sent")
}

func demoTargets(ts []replay.TargetCount) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s/%d: %d", t.Topic, t.Partition, t.Records))
	}
	return cmdutil.OrDash(strings.Join(parts, ", "))
}

func (n *demoNarrator) replayRun(r *demo.ReplayRunResult) {
	s := r.Summary
	var parts []string
	for _, t := range s.Targets {
		parts = append(parts, fmt.Sprintf("%s/%d: %d", t.Topic, t.Partition, t.Records))
	}
	n.table([]string{"run", "status", "operator", "selected", "sent", "quarantined", "target"}, [][]string{{
		s.RunID, s.Status, s.Operator, strconv.FormatInt(s.Counts.Selected, 10), strconv.FormatInt(s.Counts.Sent, 10),
		strconv.FormatInt(s.Counts.Quarantined, 10), cmdutil.OrDash(strings.Join(parts, ", ")),
	}})
}

func (n *demoNarrator) processed(r *demo.ProcessedStatsResult) {
	var rows [][]string
	for _, c := range r.Stats.Consumers {
		rows = append(rows, []string{c.Consumer, strconv.FormatInt(c.Count, 10), demoTime(c.First), demoTime(c.Last),
			strconv.FormatFloat(c.PerHour, 'f', 1, 64)})
	}
	n.table([]string{"consumer", "markers", "first processed at", "last processed at", "per hour"}, rows)
	n.note("markers in " + r.Table)
}

// closing ends a story that does not keep the stack.
func (n *demoNarrator) closing(sum *demo.Summary) {
	n.Say(fmt.Sprintf("Done in %s. The broker and its topics are gone with this process. "+
		"To explore the same stack with other commands, run fieldwork demo --keep; "+
		"to run the same commands against real Kafka and PostgreSQL, point --brokers and --dsn at them.", demoMillis(sum.ElapsedMS)))
}

// explore tells how to use the stack left running (--keep).
func (n *demoNarrator) explore(d *demo.Demo, dir string, tmp bool) {
	w := n.w
	fmt.Fprintln(w)
	fmt.Fprintln(w, n.st.Title.Render("The stack is still running")+". In another terminal:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  "+d.Export())
	for _, t := range d.Try() {
		fmt.Fprintln(w, "  "+n.st.Dim.Render("# "+t[1]))
		fmt.Fprintln(w, "  "+t[0])
	}
	fmt.Fprintln(w)
	gone := "the store stays in " + dir
	if tmp {
		gone = dir + " is removed"
	}
	fmt.Fprintf(w, "Press Ctrl-C to stop: the broker forgets its topics and %s.\n", gone)
}

func demoSummarySections(s *demo.Summary) []output.Section {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	p := s.Produced
	pending := i(s.StillPending)
	if s.StillPending > 0 {
		pending += " (" + demoReasons(s.StillPendingByReason) + "; " + demoStatuses(s.StillPendingByStatus) + ")"
	}
	return []output.Section{{Title: "The story in numbers", Fields: [][2]string{
		{"events produced", fmt.Sprintf("%d records: %d events, %d duplicates, %d stale, %d poison", s.EventsProduced, p.Events, p.Duplicates, p.Stale, p.Poison)},
		{"events processed", fmt.Sprintf("%d distinct events: %d applied, %d stale ignored", s.EventsProcessed, s.Applied, s.StaleIgnored)},
		{"duplicates absorbed", i(s.DuplicatesAbsorbed)},
		{"dead-lettered", fmt.Sprintf("%d (%s)", s.DeadLetteredTotal, demoReasons(s.DeadLettered))},
		{"replayed", fmt.Sprintf("%d (run %s)", s.Replayed, s.ReplayRunID)},
		{"resolved", i(s.Resolved)},
		{"stale", i(s.Stale)},
		{"still pending", pending},
		{"processed markers", i(s.ProcessedMarkers)},
		{"elapsed", demoMillis(s.ElapsedMS)},
	}}}
}

func demoReasons(m map[string]int64) string {
	var parts []string
	for _, r := range append(append([]string{}, dlq.Reasons...), dlq.ReasonUnknown) {
		if n := m[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func demoStatuses(m map[string]int64) string {
	var parts []string
	for _, st := range dlq.Statuses {
		if n := m[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

func demoOriginal(d dlq.DeadLetter) string {
	if d.OriginalTopic == "" || d.OriginalPartition == nil || d.OriginalOffset == nil {
		return "-"
	}
	return kafka.RecordAddress{Topic: d.OriginalTopic, Partition: *d.OriginalPartition, Offset: *d.OriginalOffset}.String()
}

func demoTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func demoMillis(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}
