package processed

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
)

// NewCmdProcessedJournal builds `processed journal`.
func NewCmdProcessedJournal(f *cmdutil.Factory, runF func(context.Context, *cmdutil.JournalOptions) error) *cobra.Command {
	return cmdutil.NewCmdJournal(f, runF, cmdutil.Journal[dedup.MarkerAction]{
		Use:   "journal",
		Short: "The executed prunes and forgets, newest first: who, why, what, how many",
		Long: `List the executed processed prune and processed forget runs the store journaled, newest
first: when, which action, who (--operator, $USER or $LOGNAME), how many markers it deleted,
why (--reason), and what it selected (the window, consumer and topics of a prune; the consumer
and event ids of a forget) with its counts. Dry runs change nothing and are not journaled.

The journal belongs to the schema, like the replay journal (replay runs): it lists the actions
on every marker table of the schema, each with its table.`,
		Example: `  fieldwork processed journal
  fieldwork processed journal --limit 5 -o json | jq '.[] | {action, operator, deleted}'`,
		Need:    cmdutil.NeedStore,
		Read:    (*dedup.Store).MarkerActions,
		Columns: markerActionColumns,
		Noun:    "prunes and forgets",
		Empty:   "no prune or forget in the journal",
	})
}

var markerActionColumns = []output.Column[dedup.MarkerAction]{
	{Name: "run id", Value: func(a dedup.MarkerAction) string { return strconv.FormatInt(a.ID, 10) }},
	{Name: "at", Value: func(a dedup.MarkerAction) string { return cmdutil.FormatTime(a.At) }},
	{Name: "action", Value: func(a dedup.MarkerAction) string { return a.Action }},
	{Name: "operator", Value: func(a dedup.MarkerAction) string { return a.Operator }},
	{Name: "marker table", Value: func(a dedup.MarkerAction) string { return a.MarkerTable }, WideOnly: true},
	{Name: "deleted", Value: func(a dedup.MarkerAction) string { return strconv.FormatInt(a.Deleted, 10) }},
	{Name: "reason", Value: func(a dedup.MarkerAction) string { return a.Reason }},
	{Name: "error", Value: func(a dedup.MarkerAction) string { return a.Error }, Optional: true},
	{Name: "selection", Value: func(a dedup.MarkerAction) string { return string(a.Selection) }, WideOnly: true},
}
