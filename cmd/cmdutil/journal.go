package cmdutil

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
)

// JournalOptions are the inputs of a command that lists one of the store's action journals
// (processed journal, groups journal).
type JournalOptions struct {
	Limit int
	// MarkTruncated is --mark-truncated: a journal cut at --limit says so (WriteAtMost).
	MarkTruncated TruncationFlag
}

// Journal describes such a command: its help, what it opens, how it reads the newest
// entries of its journal and how it prints them.
type Journal[T any] struct {
	Use, Short, Long, Example string
	Need                      Need
	// Read is a method expression of the store: (*dedup.Store).GroupActions.
	Read    func(st *dedup.Store, ctx context.Context, limit int) ([]T, error)
	Columns []output.Column[T]
	// Noun names the entries in the plural, for the note of a listing cut at --limit.
	Noun string
	// Empty is said when the journal holds nothing.
	Empty string
}

// NewCmdJournal builds the command j describes: newest first, at most --limit entries, in
// every output format.
func NewCmdJournal[T any](f *Factory, runF func(context.Context, *JournalOptions) error, j Journal[T]) *cobra.Command {
	opts := &JournalOptions{}
	cmd := &cobra.Command{
		Use: j.Use, Short: j.Short, Long: j.Long, Example: j.Example,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return RunWith(cmd, f, j.Need, opts, runF, func(ctx context.Context, opts *JournalOptions, cl *Clients) error {
				entries, err := j.Read(cl.Store, ctx, ReadLimit(opts.Limit))
				if err != nil {
					return err
				}
				return WriteAtMost(cl.Printer, entries, opts.Limit, &opts.MarkTruncated, j.Columns, j.Noun, j.Empty)
			})
		},
	}
	LimitVar(cmd.Flags(), &opts.Limit, dedup.DefaultRunsLimit, j.Noun, 0, "")
	opts.MarkTruncated.Register(cmd.Flags(), f.Streams)
	return cmd
}
