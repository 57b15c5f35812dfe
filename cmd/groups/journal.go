package groups

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
)

// GroupsJournalOptions are the inputs of `groups journal`.
type GroupsJournalOptions struct {
	Limit int
}

// NewCmdGroupsJournal builds `groups journal`.
func NewCmdGroupsJournal(f *cmdutil.Factory, runF func(context.Context, *GroupsJournalOptions) error) *cobra.Command {
	opts := &GroupsJournalOptions{}
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "The executed skips and undos, newest first: who, why, which offsets",
		Long: `List the executed groups skip and groups skip --undo runs the store journaled, newest first:
the run id (what --undo takes), when, which action, the group and topic, who (--operator,
$USER or $LOGNAME), why (--reason), each partition's old and new offset, the records parked
and where, and for a skip the undo that restored it. Dry runs change nothing and are not
journaled.`,
		Example: `  fieldwork groups journal
  fieldwork groups journal -o json | jq '.[] | select(.action == "skip" and .undone_by == null)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunWith(cmd, f, cmdutil.NeedJournal, opts, runF, groupsJournalRun)
		},
	}
	cmdutil.CountVar(cmd.Flags(), &opts.Limit, "limit", dedup.DefaultRunsLimit, "at most this many actions")
	return cmd
}

func groupsJournalRun(ctx context.Context, opts *GroupsJournalOptions, cl *cmdutil.Clients) error {
	actions, err := cl.Store.GroupActions(ctx, opts.Limit)
	if err != nil {
		return err
	}
	return output.List(cl.Printer, actions, groupActionColumns, "no skip or undo in the journal")
}
