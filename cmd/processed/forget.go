package processed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// ProcessedForgetOptions are the inputs of `processed forget`.
type ProcessedForgetOptions struct {
	cmdutil.StoreDeps
	// EventIDs are the ids to forget, distinct, in the order given.
	EventIDs     []string
	FromFile     string
	Consumer     string
	AllConsumers bool
	cmdutil.ActionFlags
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ProcessedForgetOptions) NamedConsumer() string { return o.Consumer }

// NewCmdProcessedForget builds `processed forget`.
func NewCmdProcessedForget(f *cmdutil.Factory, runF func(context.Context, *ProcessedForgetOptions) error) *cobra.Command {
	opts := &ProcessedForgetOptions{StoreDeps: cmdutil.NewStoreDeps(f), ActionFlags: cmdutil.NewActionFlags(f)}
	cmd := &cobra.Command{
		Use:   "forget (EVENT_ID… | --from-file FILE) --consumer CONSUMER",
		Short: "Delete markers so that the events are processed again (after a bug fix)",
		Long: `Delete the markers of the given events for --consumer, so that the consumer processes them
again when they are redelivered or replayed: the step between fixing a handler's bug and
replaying what it got wrong. All the markers go in one transaction: either every listed one is
removed or, on error, none.

The ids come from the arguments or from --from-file (one id per line; blank lines and the
white space around an id are ignored; "-" reads stdin). --consumer is required: forgetting an
event for every consumer makes every consumer apply it again, so that takes --all-consumers.

A dry run by default: without --execute it prints the markers it would remove and the ids that
have none, and deletes nothing. With --execute, on a terminal it shows the plan (context,
store, counts, --reason) and asks y/N (a no exits 6, "cancelled"). Without a terminal
(scripts, CI) it refuses unless --yes is given; with --from-file - stdin holds the ids, so
--execute needs --yes.

It prints the markers it removed and the ids that had none, and journals the forget (its
operator, --reason, the consumer, the ids and the counts; processed journal lists it).`,
		Example: `  fieldwork processed forget evt-1 evt-2 --consumer billing
  fieldwork processed forget evt-1 evt-2 --consumer billing --execute --reason "fixed the tax rounding"
  fieldwork processed forget --from-file ids.txt --consumer billing --execute --yes
  jq -r .event_id missing.jsonl | fieldwork processed forget --from-file - --consumer billing --execute --yes`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args, f.Streams.In); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedForgetRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.FromFile, "from-file", "", `read the event ids from this file, one per line ("-": stdin)`)
	fl.StringVar(&opts.Consumer, "consumer", "", "the consumer whose markers to delete (required unless --all-consumers)")
	fl.BoolVar(&opts.AllConsumers, "all-consumers", false, "delete the markers of every consumer (every consumer processes the events again)")
	opts.Register(fl, "delete the markers", "why you forget: shown in the confirmation and journaled (only with --execute)", "who forgets")
	return cmd
}

func (opts *ProcessedForgetOptions) parse(cmd *cobra.Command, args []string, stdin io.Reader) error {
	consumerSet := cmd.Flags().Changed("consumer")
	switch {
	case consumerSet && opts.AllConsumers:
		return fwerr.Usagef("--consumer and --all-consumers exclude each other")
	case !consumerSet && !opts.AllConsumers:
		return fwerr.Usagef("--consumer is required: refusing to forget the events for every consumer unless --all-consumers is given")
	case consumerSet:
		if err := cmdutil.CheckConsumer(opts.Consumer); err != nil {
			return err
		}
	}
	var ids []string
	switch {
	case opts.FromFile != "" && len(args) > 0:
		return fwerr.Usagef("give the event ids either as arguments or with --from-file, not both")
	case opts.FromFile != "":
		if opts.FromFile == "-" && opts.Execute && !opts.Yes {
			return fwerr.Usagef("--from-file - reads the ids from stdin, so nobody can confirm there: pass --yes")
		}
		var err error
		if ids, err = readIDs(opts.FromFile, stdin); err != nil {
			return err
		}
	case len(args) > 0:
		for i, id := range args {
			if err := dedup.ValidateEventID(id); err != nil {
				return fwerr.Usagef("event id argument %d: %v", i+1, err)
			}
		}
		ids = args
	default:
		return fwerr.Usagef("no event ids: give them as arguments or with --from-file")
	}
	opts.EventIDs = distinct(ids)
	return nil
}

// maxIDLine is the longest line readIDs reads.
const maxIDLine = 16 << 20

// readIDs reads one event id per line from path ("-": stdin), skipping blank lines and
// trimming white space around each id.
func readIDs(path string, stdin io.Reader) ([]string, error) {
	name := path
	r := stdin
	if path == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fwerr.Usagef("--from-file: %v", err)
		}
		defer f.Close()
		r = f
	}
	var ids []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxIDLine)
	line := 0
	for sc.Scan() {
		line++
		id := strings.TrimSpace(sc.Text())
		if id == "" {
			continue
		}
		if err := dedup.ValidateEventID(id); err != nil {
			return nil, fwerr.Usagef("%s line %d: %v", name, line, err)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fwerr.Usagef("%s line %d: longer than %d MiB: not an event id (one id a line)", name, line+1, maxIDLine>>20)
	} else if err != nil {
		return nil, fwerr.Usagef("read %s: %v", name, err)
	}
	if len(ids) == 0 {
		return nil, fwerr.Usagef("no event ids in %s", name)
	}
	return ids, nil
}

func distinct(ids []string) []string {
	seen := make(map[string]struct{}, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

func processedForgetRun(ctx context.Context, opts *ProcessedForgetOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	// --all-consumers leaves Consumer empty: every consumer's markers.
	out, err := cmdutil.RunAction(ctx, cl, opts.ActionFlags, processed.Forget(st, opts.Consumer, opts.EventIDs), cmdutil.ActionView[*processed.ForgetReport]{
		Prompt: func(plan *processed.ForgetReport) cmdutil.Prompt { return forgetPrompt(plan, st.Table()) },
	})
	if err != nil {
		return err
	}
	if out.Result != nil {
		return renderForget(p, out.Result)
	}
	return renderForget(p, out.Plan)
}

// forgetPrompt is the confirmation of a forget: the question, and the markers found and the
// ids without one.
func forgetPrompt(plan *processed.ForgetReport, table string) cmdutil.Prompt {
	counts := []string{fmt.Sprintf("%s found of %s of %s", wording.Plural(int64(len(plan.Removed)), "marker"),
		wording.Plural(int64(plan.Requested), "event id"), consumerText("", plan.Consumer, "every consumer"))}
	if n := len(plan.NotFound); n > 0 {
		counts = append(counts, fmt.Sprintf("%s without a marker (nothing to forget)", wording.Plural(int64(n), "event id")))
	}
	return cmdutil.Prompt{Question: plan.Question(), Store: table, Counts: counts}
}
