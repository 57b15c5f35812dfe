package processed

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/timespec"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// ProcessedPruneOptions are the inputs of `processed prune`.
type ProcessedPruneOptions struct {
	cmdutil.StoreDeps
	kafkaDeps
	OlderThan time.Duration
	Consumer  string
	BatchSize int
	Topics    []string
	Force     bool
	cmdutil.ActionFlags
	Now func() time.Time
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ProcessedPruneOptions) NamedConsumer() string { return o.Consumer }

// NewCmdProcessedPrune builds `processed prune`.
func NewCmdProcessedPrune(f *cmdutil.Factory, runF func(context.Context, *ProcessedPruneOptions) error) *cobra.Command {
	opts := &ProcessedPruneOptions{
		StoreDeps: cmdutil.NewStoreDeps(f), kafkaDeps: kafkaDeps{Kafka: f.Kafka}, Now: f.Now,
		ActionFlags: cmdutil.NewActionFlags(f),
	}
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete markers older than a window, never inside a topic's replay horizon",
		Long: `Delete the markers processed more than --older-than ago (only --consumer's, when given), in
batches of --batch-size rows, each its own transaction, with progress on a terminal.

The replay horizon. A record can be replayed for as long as its topic keeps it (retention.ms);
an event replayed after its marker was pruned is processed a second time. So before deleting,
prune finds the source topics of the markers concerned (the distinct topic values they
recorded, or the --topic flags) and reads their retention.ms and cleanup.policy from Kafka
(--brokers). It refuses (exit 2) when --older-than is shorter than any of those retentions,
when a topic keeps records forever (retention.ms -1, or cleanup.policy compact), when a topic
does not exist on the cluster, or when some markers recorded no topic and --topic is not
given. When no brokers are configured it refuses (exit 2), when they cannot be reached it
fails (exit 4), and when the cluster's ACLs deny DESCRIBE_CONFIGS on a source topic it fails
(exit 5, naming the topic): it cannot tell the horizon. --force skips all of this, saying on stderr what
it did not check.

A dry run by default. Without --execute it prints the plan, how many markers it would delete
per source topic and whether the horizon allows it, and deletes nothing. With --execute, on a
terminal it shows the plan (context, store, counts per topic, --reason) and asks y/N (a no
exits 6, "cancelled"); without a terminal (scripts, CI, cron) it refuses (exit 2) unless --yes
is given: a script must choose to delete. Then it prints how many markers it deleted, and
journals the prune (its operator, --reason, selection and counts; processed journal lists it).

DURATION is a number with a unit: s, m, h, d (24h) or w (7d), combined as in 1d12h.`,
		Example: `  fieldwork processed prune --older-than 30d --brokers kafka:9092
  fieldwork processed prune --older-than 30d --brokers kafka:9092 --execute --reason "quarterly cleanup"
  fieldwork processed prune --older-than 14d --consumer billing --execute --yes
  fieldwork processed prune --older-than 2d --topic tasks --force --execute --yes`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("older-than") {
				return fwerr.Usagef("--older-than is required: markers processed more than that long ago are deleted (e.g. --older-than 30d)")
			}
			if cmd.Flags().Changed("consumer") {
				if err := cmdutil.CheckConsumer(opts.Consumer); err != nil {
					return err
				}
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedPruneRun)
		},
	}
	fl := cmd.Flags()
	fl.Var(timespec.NewDurationValue(&opts.OlderThan, 0), "older-than", "delete markers processed more than this long ago: 30d, 36h, 2w (required)")
	fl.StringVar(&opts.Consumer, "consumer", "", "only this consumer's markers (default every consumer's)")
	cmdutil.CountVar(fl, &opts.BatchSize, "batch-size", dedup.DefaultPruneBatch, "markers deleted per transaction")
	cmdutil.TopicsVar(fl, &opts.Topics, "topic", "source topic whose retention bounds the replay horizon (repeatable; default the topics the markers recorded)", true)
	fl.BoolVar(&opts.Force, "force", false, "prune even inside a replay horizon, or without checking it")
	opts.Register(fl, "delete the markers", "why you prune: shown in the confirmation and journaled (only with --execute)", "who prunes")
	return cmd
}

func processedPruneRun(ctx context.Context, opts *ProcessedPruneOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	// The progress line starts once the deletion is confirmed: drawn earlier, it would hide
	// the question.
	var progress *output.Progress
	out, err := cmdutil.RunAction(ctx, cl, opts.ActionFlags, processed.Prune(st, opts.Kafka, processed.PruneOptions{
		OlderThan: opts.OlderThan, Consumer: opts.Consumer, BatchSize: opts.BatchSize, Topics: opts.Topics,
		Force: opts.Force, Now: opts.Now(),
	}), cmdutil.ActionView[*processed.PruneReport]{
		Prompt: func(rep *processed.PruneReport) cmdutil.Prompt { return prunePrompt(rep, st.Table()) },
		Progress: func(pr action.Progress) {
			if progress == nil {
				progress = output.NewProgress(opts.Streams, output.ProgressOptions{Label: "pruning", Unit: "markers", Estimate: true})
			}
			progress.Update(pr.Done, pr.Total)
		},
	})
	progress.Stop()
	rep := out.Plan
	if err != nil {
		if rep != nil && rep.Deleted > 0 {
			fmt.Fprintf(opts.Streams.ErrOut, "deleted %s before %s\n", wording.Plural(rep.Deleted, "marker"), fwerr.Stopped(err))
		}
		return err
	}
	return p.Object(rep, pruneSections(p, rep))
}

// prunePrompt is the confirmation of a prune: the question and the candidates per source topic.
func prunePrompt(rep *processed.PruneReport, table string) cmdutil.Prompt {
	p := cmdutil.Prompt{Question: rep.Question(), Store: table, Kafka: rep.HorizonChecked}
	for _, t := range rep.Topics {
		p.Counts = append(p.Counts, fmt.Sprintf("%s recorded %s", wording.Plural(t.Markers, "marker"), t.Topic))
	}
	if rep.NoTopic > 0 {
		p.Counts = append(p.Counts, fmt.Sprintf("%s recorded no topic", wording.Plural(rep.NoTopic, "marker")))
	}
	if len(p.Counts) == 0 {
		p.Counts = []string{wording.Plural(rep.Candidates, "marker")}
	}
	return p
}
