package groups

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// DefaultDescribeInterval is how long `groups describe` watches the commits with lag, at
// most, to tell which move.
const DefaultDescribeInterval = 5 * time.Second

// GroupsDescribeOptions are the inputs of `groups describe`.
type GroupsDescribeOptions struct {
	Group string
	Watch cmdutil.WatchFlags
}

// NewCmdGroupsDescribe builds `groups describe G`.
func NewCmdGroupsDescribe(f *cmdutil.Factory, runF func(context.Context, *GroupsDescribeOptions) error) *cobra.Command {
	opts := &GroupsDescribeOptions{}
	cmd := &cobra.Command{
		Use:   "describe GROUP",
		Short: "A group's members, assignments, commits, lag, and which commits move",
		Long: `Describe one consumer group: its state, protocol and coordinator; its members (client id,
host, assigned partitions); and for each partition it is assigned or has committed on, the
committed offset, the log end (high watermark), the lag, the member that holds it, and
whether the commit moved.

Kafka does not say when a commit last moved, so describe reads the group again to say
which commits move: it answers from the first read when no partition has lag (none can be
stuck), else reads the commits with lag again a few times a second until each has moved, for
--interval at most (0: read once). A partition with lag whose commit stood still that long is
marked stuck: its consumer is not getting past a record (groups skip) or is not running. --watch reads again every --interval until interrupted, and tells how long each
commit has not moved since the watch began.

A share group (KIP-932) has no commits: describe shows its members, and per partition the
share-partition start offset, the log end, the broker's lag and the members holding it, says
what the admin API does not report (the records in flight, acquired, their delivery counts),
and checks its dead-letter path as groups check does: whether a rejected record reaches a
dead-letter topic or is archived and lost.`,
		Example: `  fieldwork groups describe task-projection
  fieldwork groups describe task-projection --interval 0 -o json | jq '.partitions[] | select(.lag > 0)'
  fieldwork groups describe task-projection --watch --interval 10s -o jsonl
  fieldwork groups describe task-workers`,
		Args: cmdutil.ExactArgs(1, "one consumer group"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Group = args[0]
			if err := cmdutil.CheckGroup(opts.Group); err != nil {
				return err
			}
			if err := opts.Watch.Check(); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, groupsDescribeRun)
		},
	}
	opts.Watch.Register(cmd.Flags(), DefaultDescribeInterval, "how long to watch the commits with lag, at most, to tell which move (0: read once), and between reads with --watch")
	return cmd
}

func groupsDescribeRun(ctx context.Context, opts *GroupsDescribeOptions, cl *cmdutil.Clients) error {
	p, c := cl.Printer, cl.Kafka
	if !opts.Watch.Watch {
		waiting := func() {
			if cl.Streams.ErrTTY {
				fmt.Fprintln(cl.Streams.ErrText(), cl.Streams.ErrStyles().Dim.Render("watching the commits with lag for up to "+timespec.Format(opts.Watch.Interval)+" to tell which move (--interval 0: read once)…"))
			}
		}
		rep, err := groups.Describe(ctx, c, opts.Group, opts.Watch.Interval, cl.Now, waiting)
		if err != nil {
			return err
		}
		return p.Object(rep, describeSections(p, rep))
	}
	w := groups.NewWatcher(c, opts.Group)
	return cmdutil.Watch(ctx, p, opts.Watch.Interval, cl.Now,
		func(ctx context.Context) (*groups.Report, error) { return w.Read(ctx, cl.Now()) },
		func(r *groups.Report) []output.Section { return describeSections(p, r) })
}
