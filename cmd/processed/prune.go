package processed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
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
	Yes       bool

	olderThan cmdutil.DayDuration
	Confirm   func(yes bool, question string) error
	Now       func() time.Time
}

// NewCmdProcessedPrune builds `processed prune`.
func NewCmdProcessedPrune(f *cmdutil.Factory, runF func(context.Context, *ProcessedPruneOptions) error) *cobra.Command {
	opts := &ProcessedPruneOptions{
		StoreDeps: cmdutil.NewStoreDeps(f), kafkaDeps: kafkaDeps{Kafka: f.Kafka}, Now: time.Now,
		Confirm: func(yes bool, q string) error { return cmdutil.Confirm(f, yes, q) },
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
given. When no brokers are configured it refuses (exit 2), and when they cannot be reached it
fails (exit 4): it cannot tell the horizon. --force skips all of this, saying on stderr what
it did not check.

Confirmation. On a terminal it says how many markers it will delete and asks y/N. Without a
terminal (scripts, CI, cron) it refuses (exit 2) unless --yes is given: a script must choose
to delete. Then it prints how many markers it deleted.

DURATION is a Go duration (36h, 90m) or a number of days (30d, 1d12h).`,
		Example: `  fieldwork processed prune --older-than 30d --brokers kafka:9092
  fieldwork processed prune --older-than 14d --consumer billing --yes
  fieldwork processed prune --older-than 2d --topic tasks --force --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("older-than") {
				return fwerr.Usagef("--older-than is required: markers processed more than that long ago are deleted (e.g. --older-than 30d)")
			}
			opts.OlderThan = time.Duration(opts.olderThan)
			if opts.OlderThan <= 0 {
				return fwerr.Usagef("--older-than %s: must be positive", opts.olderThan.String())
			}
			if cmd.Flags().Changed("consumer") {
				if err := cmdutil.CheckConsumer(opts.Consumer); err != nil {
					return err
				}
			}
			if opts.BatchSize < 1 {
				return fwerr.Usagef("--batch-size %d: must be at least 1", opts.BatchSize)
			}
			if err := cmdutil.CheckTopics(opts.Topics); err != nil {
				return err
			}
			return cmdutil.Run(cmd, opts, runF, processedPruneRun)
		},
	}
	fl := cmd.Flags()
	fl.Var(&opts.olderThan, "older-than", "delete markers processed more than this long ago: 30d, 36h (required)")
	fl.StringVar(&opts.Consumer, "consumer", "", "only this consumer's markers (default every consumer's)")
	fl.IntVar(&opts.BatchSize, "batch-size", dedup.DefaultPruneBatch, "markers deleted per transaction")
	fl.StringSliceVar(&opts.Topics, "topic", nil, "source topic whose retention bounds the replay horizon (repeatable; default the topics the markers recorded)")
	fl.BoolVar(&opts.Force, "force", false, "prune even inside a replay horizon, or without checking it")
	fl.BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation (required when not on a terminal)")
	return cmd
}

// topicHorizon is one source topic's replay horizon as prune checked it.
type topicHorizon struct {
	Topic string `json:"topic"`
	// Markers is how many of the markers to delete recorded this topic.
	Markers       int64  `json:"markers"`
	RetentionMs   *int64 `json:"retention_ms,omitempty"`
	CleanupPolicy string `json:"cleanup_policy,omitempty"`
	// Horizon is the retention as a duration, "forever", or "unknown" when not checked.
	Horizon string `json:"replay_horizon"`
	// Problem says why pruning this window is unsafe for the topic; empty when it is safe.
	Problem string `json:"problem,omitempty"`
}

// pruneReport is what `processed prune` prints.
type pruneReport struct {
	Table           string    `json:"table"`
	Consumer        string    `json:"consumer,omitempty"`
	OlderThan       string    `json:"older_than"`
	ProcessedBefore time.Time `json:"processed_before"`
	Candidates      int64     `json:"candidates"`
	// NoTopic counts the candidates that recorded no source topic (NULL).
	NoTopic        int64          `json:"candidates_without_topic"`
	Deleted        int64          `json:"deleted"`
	HorizonChecked bool           `json:"horizon_checked"`
	Forced         bool           `json:"forced"`
	Topics         []topicHorizon `json:"topics"`
}

func processedPruneRun(ctx context.Context, opts *ProcessedPruneOptions) error {
	p, st, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	before := opts.Now().Add(-opts.OlderThan).UTC()
	rep := &pruneReport{Table: st.Table(), Consumer: opts.Consumer, OlderThan: cmdutil.CompactDuration(opts.OlderThan),
		ProcessedBefore: before, Forced: opts.Force, Topics: []topicHorizon{}}

	// Through the store's own query first: a missing table is reported as such.
	page, err := st.List(ctx, dedup.ListFilter{Consumer: opts.Consumer, Until: before, Limit: 1})
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	if len(page.Rows) == 0 {
		return p.Object(rep, pruneSections(p, rep))
	}
	counts, err := st.PruneCandidates(ctx, opts.Consumer, before)
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	for _, c := range counts {
		rep.Candidates += c.Markers
	}

	if err := checkReplayHorizon(ctx, opts, rep, counts); err != nil {
		return err
	}

	question := fmt.Sprintf("delete %s%s processed before %s (older than %s) from %s",
		cmdutil.Plural(rep.Candidates, "marker"), forConsumer(opts.Consumer), cmdutil.FormatTime(before), rep.OlderThan, rep.Table)
	if err := opts.Confirm(opts.Yes, question); err != nil {
		return err
	}

	progress, done := cmdutil.CountProgress(opts.Streams, "pruning", rep.Candidates)
	rep.Deleted, err = st.Prune(ctx, opts.Consumer, before, opts.BatchSize, progress)
	done()
	if err != nil {
		fmt.Fprintf(opts.Streams.ErrOut, "deleted %s before the failure\n", cmdutil.Plural(rep.Deleted, "marker"))
		return cmdutil.StoreError(err, opts.Names())
	}
	return p.Object(rep, pruneSections(p, rep))
}

func forConsumer(c string) string {
	if c == "" {
		return ""
	}
	return " of consumer " + c
}

// topicCount is how many markers to delete recorded a topic; Topic is "" for markers that
// recorded none (NULL).
// checkReplayHorizon fills rep.Topics and refuses, unless --force, to prune markers that a
// replay could still need.
func checkReplayHorizon(ctx context.Context, opts *ProcessedPruneOptions, rep *pruneReport, counts []dedup.TopicCount) error {
	byTopic := map[string]int64{}
	var noTopic int64
	for _, c := range counts {
		if c.Topic == "" {
			noTopic += c.Markers
			rep.NoTopic += c.Markers
		} else {
			byTopic[c.Topic] = c.Markers
		}
	}
	topics := slices.Clone(opts.Topics)
	if len(topics) == 0 {
		for t := range byTopic {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	for _, t := range topics {
		rep.Topics = append(rep.Topics, topicHorizon{Topic: t, Markers: byTopic[t], Horizon: "unknown"})
	}
	warn := func(format string, args ...any) {
		fmt.Fprintln(opts.Streams.ErrOut, output.NewStyles(opts.Streams.ErrOut, opts.Streams.ErrTTY && !opts.Streams.NoColor).Warn.Render("warning: ")+fmt.Sprintf(format, args...))
	}

	var problems []string
	if noTopic > 0 && len(opts.Topics) == 0 {
		problems = append(problems, fmt.Sprintf("%s recorded no source topic, so their replay horizon is unknown: name their topics with --topic",
			cmdutil.Plural(noTopic, "marker")))
	}
	if len(topics) > 0 {
		c, err := opts.Kafka(ctx)
		if err != nil {
			if !opts.Force {
				return fmt.Errorf("cannot check the replay horizon of %s (their retention.ms): %w\nhint: point --brokers (or FIELDWORK_BROKERS) at their cluster, or pass --force to prune without this check",
					strings.Join(topics, ", "), err)
			}
			warn("--force: not checking the replay horizon of %s: %v", strings.Join(topics, ", "), err)
			return nil
		}
		defer c.Close()
		if err := topicHorizons(ctx, c, rep.Topics, opts.OlderThan); err != nil {
			if !opts.Force {
				return fmt.Errorf("cannot check the replay horizon: %w\nhint: pass --force to prune without this check", err)
			}
			warn("--force: not checking the replay horizon: %v", err)
			return nil
		}
		rep.HorizonChecked = true
		for _, h := range rep.Topics {
			if h.Problem != "" {
				problems = append(problems, h.Topic+": "+h.Problem)
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if opts.Force {
		for _, pr := range problems {
			warn("--force: pruning anyway: %s", pr)
		}
		return nil
	}
	return fwerr.Usagef("refusing to prune markers older than %s: a replay could still deliver their events, and an event replayed after its marker is gone is processed a second time:\n  %s\nchoose a longer --older-than, or pass --force if no replay can reach these events",
		rep.OlderThan, strings.Join(problems, "\n  "))
}

// topicHorizons reads each topic's retention.ms and cleanup.policy and sets its Horizon and,
// when olderThan is inside it, its Problem.
func topicHorizons(ctx context.Context, c *kafka.Cluster, hs []topicHorizon, olderThan time.Duration) error {
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.Topic
	}
	rcs, err := c.Admin.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe the configs of %s: %w", strings.Join(names, ", "), err)
	}
	for i := range hs {
		h := &hs[i]
		rc, err := rcs.On(h.Topic, nil)
		if err == nil {
			err = rc.Err
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			h.Problem = fmt.Sprintf("the topic does not exist on %s (the wrong cluster?), so its horizon is unknown", strings.Join(c.Brokers, ","))
			continue
		}
		if err != nil {
			return fmt.Errorf("describe the configs of %s: %w", h.Topic, err)
		}
		retention := int64(-2) // not reported
		for _, cf := range rc.Configs {
			switch cf.Key {
			case "retention.ms":
				if v, err := strconv.ParseInt(cf.MaybeValue(), 10, 64); err == nil {
					retention = v
					h.RetentionMs = &v
				}
			case "cleanup.policy":
				h.CleanupPolicy = cf.MaybeValue()
			}
		}
		policies := strings.Split(strings.ReplaceAll(h.CleanupPolicy, " ", ""), ",")
		compactOnly := slices.Contains(policies, "compact") && !slices.Contains(policies, "delete")
		switch {
		case compactOnly:
			h.Horizon = "forever"
			h.Problem = "cleanup.policy is compact: the latest record of every key is kept forever and can be replayed"
		case retention == -2:
			h.Problem = "the broker did not report retention.ms"
		case retention < 0:
			h.Horizon = "forever"
			h.Problem = "retention.ms is -1: the topic keeps its records forever and any of them can be replayed"
		default:
			d := time.Duration(retention) * time.Millisecond
			h.Horizon = cmdutil.CompactDuration(d)
			if olderThan < d {
				h.Problem = fmt.Sprintf("retention.ms %d (%s) is longer than --older-than %s: use --older-than %s or more",
					retention, cmdutil.CompactDuration(d), cmdutil.CompactDuration(olderThan), cmdutil.CompactDuration(d))
			}
		}
	}
	return nil
}

func pruneSections(p *output.Printer, rep *pruneReport) []output.Section {
	st := p.Styles
	result := fmt.Sprintf("deleted %s%s processed before %s (older than %s)",
		cmdutil.Plural(rep.Deleted, "marker"), forConsumer(rep.Consumer), cmdutil.FormatTime(rep.ProcessedBefore), rep.OlderThan)
	if rep.Candidates == 0 {
		result = "nothing to prune: " + result
	}
	overview := output.Section{Title: "Prune " + rep.Table, Fields: [][2]string{{"result", st.OK.Render(result)}}}
	horizon := "checked"
	switch {
	case rep.Candidates == 0:
		horizon = "nothing to check"
	case len(rep.Topics) == 0:
		horizon = st.Warn.Render(fmt.Sprintf("unknown: %s recorded no source topic (--force)", cmdutil.Plural(rep.NoTopic, "marker")))
	case !rep.HorizonChecked:
		horizon = st.Warn.Render("not checked (--force)")
	case rep.Forced:
		horizon = st.Warn.Render("checked, overridden by --force")
	}
	overview.Fields = append(overview.Fields, [2]string{"replay horizon", horizon})
	sections := []output.Section{overview}
	if len(rep.Topics) > 0 {
		s := output.Section{Title: "Source topics", Header: []string{"topic", "markers", "retention.ms", "replay horizon", "problem"}}
		for _, h := range rep.Topics {
			ret := "-"
			if h.RetentionMs != nil {
				ret = strconv.FormatInt(*h.RetentionMs, 10)
			}
			problem := "-"
			if h.Problem != "" {
				problem = st.Warn.Render(h.Problem)
			}
			s.Rows = append(s.Rows, []string{h.Topic, strconv.FormatInt(h.Markers, 10), ret, h.Horizon, problem})
		}
		sections = append(sections, s)
	}
	return sections
}
