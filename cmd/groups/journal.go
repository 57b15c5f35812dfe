package groups

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/groups"
)

// readGroupActions reads the journal's actions, each one's offsets in today's names
// (groups.JournalOffsets: rows journaled with old_offset say committed_offset).
func readGroupActions(st *dedup.Store, ctx context.Context, limit int) ([]dedup.GroupAction, error) {
	as, err := st.GroupActions(ctx, limit)
	for i := range as {
		as[i].Offsets = groups.JournalOffsets(as[i].Offsets)
	}
	return as, err
}

// NewCmdGroupsJournal builds `groups journal`.
func NewCmdGroupsJournal(f *cmdutil.Factory, runF func(context.Context, *cmdutil.JournalOptions) error) *cobra.Command {
	return cmdutil.NewCmdJournal(f, runF, cmdutil.Journal[dedup.GroupAction]{
		Use:   "journal",
		Short: "The executed skips, resets and undos, newest first: who, why, which offsets",
		Long: `List the executed groups skip, groups reset and --undo runs the store journaled, newest
first: the run id (what --undo takes), when, which action, the group and topics, who
(--operator, $USER or $LOGNAME), why (--reason), each partition's committed offset before and its new offset (none
where the group had no commit), the records a skip parked and where, and for a skip or reset
the undo that restored it. Dry runs change nothing and are not journaled.`,
		Example: `  fieldwork groups journal
  fieldwork groups journal -o json | jq '.[] | select(.action == "skip" and .undone_by == null)'`,
		Need:    cmdutil.NeedJournal,
		Read:    readGroupActions,
		Columns: groupActionColumns,
		Noun:    "skips, resets and undos",
		Empty:   "no skip, reset or undo in the journal",
	})
}
