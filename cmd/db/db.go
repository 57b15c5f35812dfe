// Package db is the db command group: the dedup store's schema migrations.
package db

import (
	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
)

// dbLong is the group's help.
const dbLong = `Create and upgrade the dedup store's tables, and report which migrations are applied.

  db migrate [--dry-run]   apply the pending migrations (or print their SQL); idempotent
  db status                the store's migration version beside this binary's

The store is --dsn (postgres://… or sqlite:PATH; env FIELDWORK_DSN, or the context's dsn).
--schema and --table name the marker table (default fieldwork.processed_events; on SQLite
the schema is a table-name prefix: fieldwork_processed_events). Migrations are recorded in
the table fieldwork_migrations of the schema.`

// NewCmdDB is the db group: the dedup store's schema migrations.
func NewCmdDB(f *cmdutil.Factory) *cobra.Command {
	// The store-naming flags are this command's: bound here, read by the store its commands open.
	naming := new(dedup.Options)
	f = f.WithStoreNaming(naming)
	cmd := cmdutil.NewGroup("db <command>", "Migrate and report on the dedup store's schema", dbLong,
		NewCmdDBMigrate(f, nil),
		NewCmdDBStatus(f, nil),
	)
	cmdutil.RegisterStoreFlags(cmd, cmd.PersistentFlags(), naming)
	return cmd
}
