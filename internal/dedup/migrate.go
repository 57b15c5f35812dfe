package dedup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// MigrationStep is one migration: its version, name and the SQL it runs,
// rendered with the store's (validated) schema and table names.
type MigrationStep struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	SQL     string `json:"sql"`
}

// AppliedMigration is a migration recorded in the store.
type AppliedMigration = dedupdriver.AppliedMigration

// MigrationStatus is what `fieldwork db status` reports.
type MigrationStatus struct {
	Driver  string             `json:"driver"`
	Table   string             `json:"table"`
	Current int                `json:"current_version"` // 0: nothing applied
	Latest  int                `json:"latest_version"`  // the binary's newest
	Applied []AppliedMigration `json:"applied"`
	Pending []MigrationStep    `json:"pending"`
}

// Err is nil when the store is at the binary's version, or lacks only steps its driver
// needs nothing for (dedupdriver.Empty: they would change nothing, so an upgraded binary does
// not hold a consumer back for them; `db migrate` records them); ErrNotMigrated when nothing
// is applied; a *VersionMismatchError when it is older (which also matches ErrNotMigrated) or
// newer.
func (st MigrationStatus) Err() error {
	switch {
	case st.Current == 0:
		return fmt.Errorf("%s: %w", st.Table, ErrNotMigrated)
	case st.Current > st.Latest || slices.ContainsFunc(st.Pending, func(m MigrationStep) bool { return !dedupdriver.Empty(m.SQL) }):
		return &VersionMismatchError{Table: st.Table, Current: st.Current, Latest: st.Latest}
	}
	return nil
}

// The states of a store's migrations, as `db status` shows them (stable: they are in its JSON).
const (
	StateUpToDate    = "up_to_date"
	StateNotMigrated = "not_migrated"
	StatePending     = "pending"
	StateNewer       = "newer"
)

// State says where the store stands against the binary: newer than the binary knows (upgrade
// fieldwork), not migrated at all, migrations pending, or up to date. A store newer than the
// binary is newer even when it also lacks one of the binary's migrations.
func (st MigrationStatus) State() string {
	switch {
	case st.Current > st.Latest:
		return StateNewer
	case st.Current == 0:
		return StateNotMigrated
	case len(st.Pending) > 0:
		return StatePending
	}
	return StateUpToDate
}

// errCustomColumns: migrations create the default columns only.
var errCustomColumns = errors.New("a column mapping is for querying an existing table; migrations create the default column names and refuse a mapping")

func (s *Store) migrations() ([]dedupdriver.Migration, error) {
	ms, err := s.drv.Migrations()
	if err != nil {
		return nil, fmt.Errorf("load embedded migrations: %w", err)
	}
	return ms, nil
}

// plan compares the embedded migrations with the applied ones.
func plan(table string, all []dedupdriver.Migration, applied []AppliedMigration) (current, latest int, pending []MigrationStep, err error) {
	done := map[int]bool{}
	for _, a := range applied {
		done[a.Version] = true
		current = max(current, a.Version)
	}
	for _, m := range all {
		latest = max(latest, m.Version)
		if !done[m.Version] {
			pending = append(pending, MigrationStep{Version: m.Version, Name: m.Name, SQL: m.SQL})
		}
	}
	if current > latest {
		return current, latest, nil, &VersionMismatchError{Table: table, Current: current, Latest: latest}
	}
	return current, latest, pending, nil
}

// Migrate applies the pending embedded migrations and returns them, or with
// dryRun returns what it would apply without changing anything. Running it
// again is a no-op returning no steps.
//
// All pending migrations run in one transaction holding the store's
// migration lock (a Postgres advisory lock; SQLite's write lock), so
// concurrent migrators apply each migration once, and a failed Migrate
// leaves the store at the version it had. A store newer than this binary
// is refused with a *VersionMismatchError and left untouched.
func (s *Store) Migrate(ctx context.Context, dryRun bool) ([]MigrationStep, error) {
	if s.customColumns {
		return nil, fmt.Errorf("migrate %s: %w", s.Table(), errCustomColumns)
	}
	all, err := s.migrations()
	if err != nil {
		return nil, err
	}
	if dryRun {
		applied, err := s.drv.AppliedMigrations(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("read migration state of %s: %w", s.Table(), err)
		}
		_, _, pending, err := plan(s.Table(), all, applied)
		return pending, err
	}
	tx, err := s.drv.BeginMigration(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", s.Table(), err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	applied, err := s.drv.AppliedMigrations(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("read migration state of %s: %w", s.Table(), err)
	}
	_, _, pending, err := plan(s.Table(), all, applied)
	if err != nil {
		return nil, err
	}
	for _, step := range pending {
		i := slices.IndexFunc(all, func(m dedupdriver.Migration) bool { return m.Version == step.Version })
		if dedupdriver.Empty(step.SQL) {
			// A step this driver needs nothing for: recorded, nothing run.
		} else if _, err := tx.Exec(ctx, step.SQL); err != nil {
			return nil, fmt.Errorf("apply migration %03d_%s to %s: %w", step.Version, step.Name, s.Table(), err)
		}
		if err := s.drv.RecordMigration(ctx, tx, all[i]); err != nil {
			return nil, fmt.Errorf("record migration %03d_%s in %s: %w", step.Version, step.Name, s.Table(), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit migrations of %s: %w", s.Table(), err)
	}
	return pending, nil
}

// Status reports the store's migration version beside the binary's. It
// succeeds for an empty database (Current 0) and for a store newer than the
// binary; MigrationStatus.Err tells those apart. Status refuses no column
// mapping: it reads only the migrations table.
func (s *Store) Status(ctx context.Context) (MigrationStatus, error) {
	all, err := s.migrations()
	if err != nil {
		return MigrationStatus{}, err
	}
	applied, err := s.drv.AppliedMigrations(ctx, nil)
	if err != nil {
		return MigrationStatus{}, fmt.Errorf("read migration state of %s: %w", s.Table(), err)
	}
	st := MigrationStatus{Driver: s.Driver(), Table: s.TableLabel(), Applied: applied}
	var perr error
	st.Current, st.Latest, st.Pending, perr = plan(s.Table(), all, applied)
	var vm *VersionMismatchError
	if perr != nil && !errors.As(perr, &vm) {
		return MigrationStatus{}, perr
	}
	if st.Applied == nil {
		st.Applied = []AppliedMigration{}
	}
	if st.Pending == nil {
		st.Pending = []MigrationStep{}
	}
	return st, nil
}

// Verify returns nil when the store is at this binary's migration version,
// else ErrNotMigrated or a *VersionMismatchError (see MigrationStatus.Err).
// Long-running writers (the consumer) call it once at start.
func (s *Store) Verify(ctx context.Context) error {
	st, err := s.Status(ctx)
	if err != nil {
		return err
	}
	return st.Err()
}
