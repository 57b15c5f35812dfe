package dlq

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

// DefaultDLQListLimit is how many dead letters `dlq list` shows unless told otherwise.
const DefaultDLQListLimit = 100

// DLQListOptions are the inputs of `dlq list`.
type DLQListOptions struct {
	dlqDeps
	dlqSelection
	Limit int
	// LimitGiven is whether --limit was given (else the default applies).
	LimitGiven bool
	// MarkTruncated is --mark-truncated: on when stdout is not a terminal, unless given.
	MarkTruncated cmdutil.TruncationFlag
	// Follow is --follow: after the listing, print new dead letters until interrupted.
	Follow bool

	// Set by parsing.
	Statuses []dlq.Status
}

// NewCmdDLQList builds `dlq list`. runF, when set, replaces the run (for tests of flag
// parsing).
func NewCmdDLQList(f *cmdutil.Factory, runF func(context.Context, *DLQListOptions) error) *cobra.Command {
	opts := &DLQListOptions{dlqDeps: newDLQDeps(f)}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "Dead letters of one or more dead-letter topics, filtered, with their status",
		Long: `List dead letters: where each one is, where its record failed (original topic, partition,
offset), the reason, error class and message, the event id, its age and convention, and its
status when a dedup store is configured.

Topics are read one partition at a time, in topic and partition order, each in offset order,
up to the end offsets taken when the command starts. JSON Lines and CSV are written while the
scan runs.

--limit (default 100) is shared fairly: evenly by the topics and, within a topic, by its
partitions; what a small topic or partition does not use goes to the others, so one full
topic never crowds out the others. Rows come in topic, partition and offset order, except
those a partition with fewer dead letters than offsets left room for, which follow. When a
topic has more than its share, stderr says what each topic gave and, for each one cut, at
most how many more it has (--limit 200 is shared by 2 topics: 168 from big.dlq (up to 2832
more), all 32 from tasks.dlq), and, when stdout is not a terminal, the output ends with the
truncation mark (--mark-truncated). A listing cut at the default limit and written to a pipe
or a file exits 7 (partial), so that a script never takes it for the whole answer; give
--limit N to ask for at most N (exit 0), or --limit 0 for everything.

A share group's dead letters of one record (the broker may write several) are listed once: the
table's DUPLICATES column and JSON's duplicates name the others.

A record whose dead-letter headers cannot be read is listed anyway: the table's PROBLEMS
column and JSON's header_problems say which header and why.

--follow goes on after the listing: every dead letter written to the topics from then on that
passes the filters is printed as it arrives, in the same format (JSON Lines for a script: one
line each, at once), until interrupted (Ctrl-C ends it with exit 130). --limit then bounds only
the listing of what is already there (--limit 0 with --since 10m: the last ten minutes, then
new ones). Without --topic, topics the pattern matches that are created while it follows are
followed too, from their first record, and so are partitions added to a followed topic: each
shows up within a few seconds.`,
		Example: `  fieldwork dlq list
  fieldwork dlq list --topic tasks.dlq --dlq-reason malformed --since 2h
  fieldwork dlq list --original-topic orders --error 'timeout|refused' -o jsonl
  fieldwork dlq list --dsn postgres://… --consumer billing --status pending
  fieldwork dlq list --topic tasks.dlq --follow --limit 10 -o jsonl | jq -c '{reason, error_message}'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, dlqListRun)
		},
	}
	opts.dlqSelection.register(cmd, cmdutil.DLQWindow|cmdutil.DLQFields|cmdutil.DLQEventID, cmdutil.DLQStatusFilter|cmdutil.DLQNoStatus)
	fs := cmd.Flags()
	cmdutil.LimitVar(fs, &opts.Limit, DefaultDLQListLimit, "dead letters", 0, "")
	fs.BoolVarP(&opts.Follow, "follow", "f", false, "after the listing, print new dead letters as they arrive, until interrupted")
	opts.MarkTruncated.Register(fs, opts.Streams)
	return cmd
}

func (opts *DLQListOptions) parse(cmd *cobra.Command) error {
	if err := opts.dlqSelection.parse(cmd, opts.Now()); err != nil {
		return err
	}
	var err error
	if opts.Statuses, err = opts.StatusFlags.Statuses(); err != nil {
		return err
	}
	if err := opts.StatusFlags.Validate(cmd, opts.lookup(), len(opts.Statuses) > 0); err != nil {
		return err
	}
	if opts.Follow && !opts.Filter.Until.IsZero() {
		return fwerr.Usagef("--follow prints dead letters as they arrive: --until would end the window before them")
	}
	opts.LimitGiven = cmd.Flags().Changed("limit")
	return nil
}

func dlqListRun(ctx context.Context, opts *DLQListOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	rd, err := opts.dlqSelection.open(ctx, c, opts.dlqDeps, "scanning", nil)
	if err != nil {
		return err
	}
	defer rd.close()
	topics, lookup, progress := rd.topics, rd.lookup, rd.progress
	scan, err := dlq.PlanScan(ctx, c, topics, dlq.ScanOptions{
		Selection: opts.Filter.Selection(), InOrder: true, Progress: progress.Update,
		SkipDeleted: opts.TopicFlags.Discovered(), Schemas: cl.Schemas, Ahead: true,
	})
	if err != nil {
		return err
	}
	stream := output.NewStream(p, dlqListColumns(p, lookup.Enabled(), opts.Now()), output.StreamOptions[dlq.Entry]{
		CSV: dlqCSVColumns, JSON: dlq.Entry.AppendJSON, Noun: "dead letters", MoreHint: "raise --limit, 0 for no limit, or narrow the filters",
		MarkTruncated: opts.MarkTruncated.On(), Progress: progress,
	})
	// A follow marks a later dead letter of a record listed as its duplicate (dlq.Folder).
	seen := dlq.NewFolder()
	res, err := dlq.List(ctx, scan, dlq.ListOptions{
		Filter: opts.Filter, Lookup: lookup, Statuses: opts.Statuses, Limit: opts.Limit,
		JSON: p.Format == output.FormatJSON || p.Format == output.FormatJSONL,
	}, func(e dlq.Entry) error {
		if opts.Follow {
			seen.Remember(&e.DeadLetter)
		}
		return stream.Write(e)
	})
	progress.Stop()
	cmdutil.WarnDeleted(opts.Streams, scan)
	if err != nil {
		_ = stream.Flush() // the rows found before the error
		return err
	}
	if opts.Follow {
		return followDLQ(ctx, opts, scan, rd.pattern, lookup, stream, res, seen)
	}
	if res.More {
		stream.Truncated(opts.Limit)
	}
	if err := stream.Close(); err != nil {
		return err
	}
	if res.More && len(res.Shares) > 1 {
		fmt.Fprintln(opts.Streams.ErrText(), limitShares(opts.Limit, res.Shares))
	}
	if res.More && !opts.Streams.OutTTY && !opts.LimitGiven {
		return fwerr.Partialf("the output stops at the default --limit %d and more dead letters remain: pass --limit N to ask for at most N, or --limit 0 for all", opts.Limit)
	}
	if res.Listed == 0 && p.Format == output.FormatTable && len(topics) > 0 {
		fmt.Fprintln(opts.Streams.ErrText(), dlqNothingFound(topics, res.ScanResult))
	}
	return nil
}

// limitShares is the note on a limit shared by several topics and cut: what each topic had
// listed and, for every topic cut, at most how many more it has.
// --limit 200 is shared by 2 topics: 168 from big.dlq (up to 2832 more), all 32 from tasks.dlq
func limitShares(limit int, shares []dlq.TopicShare) string {
	parts := make([]string, 0, len(shares))
	for _, t := range shares {
		switch {
		case t.More:
			parts = append(parts, fmt.Sprintf("%d from %s (up to %d more)", t.Listed, t.Topic, t.Left))
		case t.Listed > 0:
			parts = append(parts, fmt.Sprintf("all %d from %s", t.Listed, t.Topic))
		}
	}
	return fmt.Sprintf("--limit %d is shared by %d topics: %s", limit, len(shares), strings.Join(parts, ", "))
}

// followDLQ goes on from where the listing's scan was planned to end: new dead letters are
// written to stream as they arrive, until ctx is done. A listing cut at its limit says so
// on stderr only: the stream goes on, so no mark ends it.
func followDLQ(ctx context.Context, opts *DLQListOptions, scan *dlq.Scan, pattern *regexp.Regexp, lookup dlq.StatusLookup, stream *output.Stream[dlq.Entry], res dlq.ListResult, seen *dlq.Folder) error {
	if res.More {
		fmt.Fprintf(opts.Streams.ErrText(), "showing the first %d dead letters already there (more remain: raise --limit); following new ones\n", res.Listed)
	}
	if err := stream.Release(); err != nil {
		return err
	}
	err := dlq.Follow(ctx, scan, dlq.FollowOptions{Filter: opts.Filter, Lookup: lookup, Statuses: opts.Statuses, Pattern: pattern, Seen: seen}, stream.Write)
	if cerr := stream.Close(); err == nil {
		err = cerr
	}
	return err
}
