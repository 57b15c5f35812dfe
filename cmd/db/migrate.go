package db

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// DBMigrateOptions are the inputs of `db migrate`.
type DBMigrateOptions struct {
	cmdutil.StoreDeps
	DryRun bool
}

// NewCmdDBMigrate builds `db migrate`. runF, when set, replaces the run (for tests of flag
// parsing).
func NewCmdDBMigrate(f *cmdutil.Factory, runF func(context.Context, *DBMigrateOptions) error) *cobra.Command {
	opts := &DBMigrateOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the pending migrations of the dedup store (--dry-run prints their SQL)",
		Long: `Apply the migrations this binary embeds that the store does not have yet, in one
transaction under a lock, so that concurrent runs apply each migration once and a failure
leaves the store as it was. Each step is printed with its version and name; --dry-run prints
the SQL instead and changes nothing. Running it again says the store is up to date.

An SQLite file that does not exist is created (without --dry-run): every other command
refuses it as "no such store" (exit 4), so that a mistyped path never becomes an empty store.

A store newer than this binary is refused (exit 1): upgrade fieldwork. The --column-* flags
are refused (exit 2): they name an existing table for the read-only queries, and migrations
create fieldwork's own columns.`,
		Example: `  fieldwork db migrate --dsn postgres://app@db/app --dry-run
  fieldwork db migrate --dsn sqlite:./fieldwork.db
  FIELDWORK_DSN=postgres://app@db/app fieldwork db migrate --schema billing`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Names().CustomColumns() {
				return fwerr.Usagef("db migrate creates fieldwork's own columns: the --column-* flags are for querying an existing table")
			}
			// The one command that creates an SQLite store; a dry run creates nothing.
			need := cmdutil.NeedNewStore
			if opts.DryRun {
				need = cmdutil.NeedStore
			}
			return cmdutil.RunWith(cmd, f, need, opts, runF, dbMigrateRun)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the pending migrations' SQL and change nothing")
	return cmd
}

func dbMigrateRun(ctx context.Context, opts *DBMigrateOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	before, err := st.Status(ctx)
	if err != nil {
		return err
	}
	steps, err := st.Migrate(ctx, opts.DryRun)
	if err != nil {
		return err
	}
	rep := migrateReport{Driver: st.Driver(), Table: st.TableLabel(), DryRun: opts.DryRun, FromVersion: before.Current,
		ToVersion: before.Current, UpToDate: len(steps) == 0, Steps: []migrateStep{}}
	for _, s := range steps {
		ms := migrateStep{Version: s.Version, Name: s.Name}
		if opts.DryRun {
			ms.SQL = s.SQL
		}
		rep.Steps = append(rep.Steps, ms)
		rep.ToVersion = max(rep.ToVersion, s.Version)
	}
	if !opts.DryRun && len(steps) > 0 {
		after, err := st.Status(ctx)
		if err != nil {
			return err
		}
		rep.ToVersion = after.Current
	}
	return p.Object(rep, migrateSections(p, rep))
}
