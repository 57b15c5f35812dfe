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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, dbStatusRun)
		},
	}
	return cmd
}

func dbStatusRun(ctx context.Context, opts *DBStatusOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	ms, err := st.Status(ctx)
	if err != nil {
		return err
	}
	rep := statusReport{Driver: ms.Driver, Table: ms.Table, CurrentVersion: ms.Current, LatestVersion: ms.Latest,
		Applied: []appliedMigration{}, Pending: []migrateStep{}}
	for _, a := range ms.Applied {
		rep.Applied = append(rep.Applied, appliedMigration{Version: a.Version, Name: a.Name, AppliedAt: a.AppliedAt.UTC()})
	}
	for _, s := range ms.Pending {
		rep.Pending = append(rep.Pending, migrateStep{Version: s.Version, Name: s.Name})
	}
	migrate := "run `fieldwork db migrate" + cmdutil.NameFlags(opts.Names()) + "`"
	rep.State = ms.State()
	switch rep.State {
	case dedup.StateNewer:
		rep.Message = fmt.Sprintf("the store is at migration version %d, newer than this fieldwork binary knows (%d): upgrade fieldwork", ms.Current, ms.Latest)
	case dedup.StateNotMigrated:
		rep.Message = fmt.Sprintf("the store has no migrations applied (%s is missing): %s", ms.Table, migrate)
	case dedup.StatePending:
		rep.Message = fmt.Sprintf("%s pending: %s", cmdutil.Plural(int64(len(ms.Pending)), "migration"), migrate)
	default:
		rep.Message = fmt.Sprintf("up to date at migration version %d", ms.Current)
	}
	if err := p.Object(rep, statusSections(p, rep)); err != nil {
		return err
	}
	if rep.State == dedup.StateNewer {
		return fmt.Errorf("%s %s", ms.Table, rep.Message)
	}
	return nil
}
