package processed

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
)

// ProcessedJournalOptions are the inputs of `processed journal`.
type ProcessedJournalOptions struct {
	cmdutil.StoreDeps
	Limit int
}

// NewCmdProcessedJournal builds `processed journal`.
func NewCmdProcessedJournal(f *cmdutil.Factory, runF func(context.Context, *ProcessedJournalOptions) error) *cobra.Command {
	opts := &ProcessedJournalOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.AtLeastOne("limit", opts.Limit); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedJournalRun)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", dedup.DefaultRunsLimit, "at most this many actions")
	return cmd
}

func processedJournalRun(ctx context.Context, opts *ProcessedJournalOptions, cl *cmdutil.Clients) error {
	actions, err := cl.Store.MarkerActions(ctx, opts.Limit)
	if err != nil {
		return err
	}
	views := make([]markerActionView, len(actions))
	for i, a := range actions {
		views[i] = markerActionView{MarkerAction: a, Selection: cmdutil.RawJSON(a.Selection), Counts: cmdutil.RawJSON(a.Counts)}
	}
	return output.List(cl.Printer, views, markerActionColumns, "no prune or forget in the journal")
}

// markerActionView prints the selection and counts as the JSON they are.
type markerActionView struct {
	dedup.MarkerAction
	Selection json.RawMessage `json:"selection"`
	Counts    json.RawMessage `json:"counts"`
}

var markerActionColumns = []output.Column[markerActionView]{
	{Name: "id", Value: func(a markerActionView) string { return strconv.FormatInt(a.ID, 10) }},
	{Name: "at", Value: func(a markerActionView) string { return cmdutil.FormatTime(a.At) }},
	{Name: "action", Value: func(a markerActionView) string { return a.Action }},
	{Name: "operator", Value: func(a markerActionView) string { return a.Operator }},
	{Name: "table", Value: func(a markerActionView) string { return a.MarkerTable }, WideOnly: true},
	{Name: "deleted", Value: func(a markerActionView) string { return strconv.FormatInt(a.Deleted, 10) }},
	{Name: "reason", Value: func(a markerActionView) string { return a.Reason }},
	{Name: "error", Value: func(a markerActionView) string { return a.Error }, Optional: true},
	{Name: "selection", Value: func(a markerActionView) string { return string(a.Selection) }, WideOnly: true},
}
