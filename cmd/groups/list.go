package groups

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/output"
)

// GroupsListOptions are the inputs of `groups list`.
type GroupsListOptions struct{}

// NewCmdGroupsList builds `groups list`.
func NewCmdGroupsList(f *cmdutil.Factory, runF func(context.Context, *GroupsListOptions) error) *cobra.Command {
	opts := &GroupsListOptions{}
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "Every group: state, type, members, topics and total lag",
		Long: `List the cluster's groups by name: each one's state (Stable, Empty, …), type (classic,
consumer or share), member count, the topics it has committed offsets on, and its total lag
(committed offset to log end, summed over its partitions). A share group has start offsets
instead of commits: its topics are those it has start offsets on, its lag the broker's
(records from the start offset not yet acknowledged). A group whose offsets cannot be read
(no DESCRIBE on it) is listed with the error.`,
		Example: `  fieldwork groups list
  fieldwork groups list -o json | jq '.[] | select(.total_lag > 1000) | .group'
  fieldwork groups list -o json | jq '.[] | select(.type == "share") | .group'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, groupsListRun)
		},
	}
}

func groupsListRun(ctx context.Context, _ *GroupsListOptions, cl *cmdutil.Clients) error {
	gs, err := groups.List(ctx, cl.Kafka)
	if err != nil {
		return err
	}
	return output.List(cl.Printer, gs, summaryColumns(cl.Printer), "no consumer groups")
}
