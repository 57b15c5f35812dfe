package db

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
)

// DBStatusOptions are the inputs of `db status`.
type DBStatusOptions struct {
	cmdutil.StoreDeps
}

// NewCmdDBStatus builds `db status`.
func NewCmdDBStatus(f *cmdutil.Factory, runF func(context.Context, *DBStatusOptions) error) *cobra.Command {
	opts := &DBStatusOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The dedup store's migration version beside this binary's, and what is pending",
		Long: `Report the dedup store's migration version, the version this binary embeds, the applied
migrations and the pending ones. The state is one of:

  up_to_date     the store is at this binary's version
  not_migrated   nothing is applied yet: run fieldwork db migrate
  pending        the store is older than this binary: run fieldwork db migrate
  newer          the store was migrated by a newer fieldwork: upgrade this binary

Exit code 0 for the first three (the report says what to do) and 1 for newer, where this
binary must not be used against the store.`,
		Example: `  fieldwork db status --dsn sqlite:./fieldwork.db
  fieldwork db status -o json | jq -r .state`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, dbStatusRun)
		},
	}
	return cmd
}

func dbStatusRun(ctx context.Context, opts *DBStatusOptions, cl *cmdutil.Clients) error {
	ms, err := cl.Store.Status(ctx)
	if err != nil {
		return err
	}
	rep := newStatusReport(ms, "run `fieldwork db migrate"+cmdutil.NameFlags(opts.Names())+"`")
	if err := cl.Printer.Object(rep, statusSections(cl.Printer, rep)); err != nil {
		return err
	}
	if rep.State == dedup.StateNewer {
		return fmt.Errorf("%s %s", ms.Table, rep.Message)
	}
	return nil
}
