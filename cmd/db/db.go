// Package db is the db command group: the dedup store's schema migrations.
package db

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

// NewCmdDB is the db group: the dedup store's schema migrations.
func NewCmdDB(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db <command>",
		Short: "Migrate and report on the dedup store's schema",
		Long: `Create and upgrade the dedup store's tables, and report which migrations are applied.

  db migrate [--dry-run]   apply the pending migrations (or print their SQL); idempotent
  db status                the store's migration version beside this binary's

The store is --dsn (postgres://… or sqlite:PATH; env FIELDWORK_DSN, or the context's dsn).
--schema and --table name the marker table (default fieldwork.processed_events; on SQLite
the schema is a table-name prefix: fieldwork_processed_events). Migrations are recorded in
the table fieldwork_migrations of the schema.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmdutil.RegisterStoreFlags(cmd.PersistentFlags(), &f.Dedup)
	cmd.AddCommand(NewCmdDBMigrate(f, nil), NewCmdDBStatus(f, nil))
	return cmd
}

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

A store newer than this binary is refused (exit 1): upgrade fieldwork. The --column-* flags
are refused (exit 2): they name an existing table for the read-only queries, and migrations
create fieldwork's own columns.`,
		Example: `  fieldwork db migrate --dsn postgres://app@db/app --dry-run
  fieldwork db migrate --dsn sqlite:./fieldwork.db
  FIELDWORK_DSN=postgres://app@db/app fieldwork db migrate --schema billing`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmdutil.CustomColumns(opts.Names()) {
				return fwerr.Usagef("db migrate creates fieldwork's own columns: the --column-* flags are for querying an existing table")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dbMigrateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the pending migrations' SQL and change nothing")
	return cmd
}

// migrateStep is one migration in the output; SQL only with --dry-run.
type migrateStep struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	SQL     string `json:"sql,omitempty"`
}

// migrateReport is what `db migrate` prints.
type migrateReport struct {
	Driver      string        `json:"driver"`
	Table       string        `json:"table"`
	DryRun      bool          `json:"dry_run"`
	FromVersion int           `json:"from_version"`
	ToVersion   int           `json:"to_version"`
	UpToDate    bool          `json:"up_to_date"`
	Steps       []migrateStep `json:"steps"`
}

func dbMigrateRun(ctx context.Context, opts *DBMigrateOptions) error {
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	st, err := opts.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	before, err := st.Status(ctx)
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	steps, err := st.Migrate(ctx, opts.DryRun)
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
	}
	rep := migrateReport{Driver: st.Driver(), Table: st.Table(), DryRun: opts.DryRun, FromVersion: before.Current,
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
			return cmdutil.StoreError(err, opts.Names())
		}
		rep.ToVersion = after.Current
	}
	return p.Object(rep, migrateSections(p, rep))
}

func migrateSections(p *output.Printer, rep migrateReport) []output.Section {
	st := p.Styles
	where := fmt.Sprintf("%s (%s)", rep.Table, rep.Driver)
	if rep.UpToDate {
		return []output.Section{{Text: st.OK.Render(fmt.Sprintf("%s is up to date at migration version %d: nothing to apply", where, rep.FromVersion))}}
	}
	n := cmdutil.Plural(int64(len(rep.Steps)), "migration")
	steps := output.Section{Header: []string{"version", "name"}}
	for _, s := range rep.Steps {
		steps.Rows = append(steps.Rows, []string{fmt.Sprintf("%03d", s.Version), s.Name})
	}
	if !rep.DryRun {
		steps.Title = fmt.Sprintf("Applied %s to %s: version %d → %d", n, where, rep.FromVersion, rep.ToVersion)
		return []output.Section{steps}
	}
	steps.Title = fmt.Sprintf("Dry run: %s would apply %s, version %d → %d (nothing changed)", where, n, rep.FromVersion, rep.ToVersion)
	sections := []output.Section{steps}
	for _, s := range rep.Steps {
		sections = append(sections, output.Section{Title: fmt.Sprintf("-- %03d_%s", s.Version, s.Name), Text: strings.TrimSpace(s.SQL)})
	}
	return sections
}

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
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dbStatusRun(cmd.Context(), opts)
		},
	}
	return cmd
}

// Migration states in `db status`.
const (
	stateUpToDate    = "up_to_date"
	stateNotMigrated = "not_migrated"
	statePending     = "pending"
	stateNewer       = "newer"
)

type appliedMigration struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	AppliedAt time.Time `json:"applied_at"`
}

// statusReport is what `db status` prints.
type statusReport struct {
	Driver         string             `json:"driver"`
	Table          string             `json:"table"`
	State          string             `json:"state"`
	CurrentVersion int                `json:"current_version"`
	LatestVersion  int                `json:"latest_version"`
	Applied        []appliedMigration `json:"applied"`
	Pending        []migrateStep      `json:"pending"`
	Message        string             `json:"message"`
}

func dbStatusRun(ctx context.Context, opts *DBStatusOptions) error {
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	st, err := opts.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ms, err := st.Status(ctx)
	if err != nil {
		return cmdutil.StoreError(err, opts.Names())
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
	switch {
	case ms.Current > ms.Latest:
		rep.State = stateNewer
		rep.Message = fmt.Sprintf("the store is at migration version %d, newer than this fieldwork binary knows (%d): upgrade fieldwork", ms.Current, ms.Latest)
	case ms.Current == 0:
		rep.State = stateNotMigrated
		rep.Message = fmt.Sprintf("the store has no migrations applied (%s is missing): %s", ms.Table, migrate)
	case len(ms.Pending) > 0:
		rep.State = statePending
		rep.Message = fmt.Sprintf("%s pending: %s", cmdutil.Plural(int64(len(ms.Pending)), "migration"), migrate)
	default:
		rep.State = stateUpToDate
		rep.Message = fmt.Sprintf("up to date at migration version %d", ms.Current)
	}
	if err := p.Object(rep, statusSections(p, rep)); err != nil {
		return err
	}
	if rep.State == stateNewer {
		return fmt.Errorf("%s %s", ms.Table, rep.Message)
	}
	return nil
}

func statusSections(p *output.Printer, rep statusReport) []output.Section {
	st := p.Styles
	state := st.OK.Render(rep.State)
	switch rep.State {
	case stateNewer:
		state = st.Bad.Render(rep.State)
	case stateNotMigrated, statePending:
		state = st.Warn.Render(rep.State)
	}
	overview := output.Section{Title: "Dedup store " + rep.Table, Fields: [][2]string{
		{"driver", rep.Driver},
		{"state", state},
		{"store version", strconv.Itoa(rep.CurrentVersion)},
		{"binary version", strconv.Itoa(rep.LatestVersion)},
		{"status", rep.Message},
	}}
	applied := output.Section{Title: "Applied migrations", Header: []string{"version", "name", "applied at"}}
	for _, a := range rep.Applied {
		applied.Rows = append(applied.Rows, []string{fmt.Sprintf("%03d", a.Version), a.Name, cmdutil.FormatTime(a.AppliedAt)})
	}
	pending := output.Section{Title: "Pending migrations", Header: []string{"version", "name"}}
	for _, s := range rep.Pending {
		pending.Rows = append(pending.Rows, []string{fmt.Sprintf("%03d", s.Version), s.Name})
	}
	return []output.Section{overview, applied, pending}
}
