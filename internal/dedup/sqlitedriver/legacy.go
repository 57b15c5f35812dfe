package sqlitedriver

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// legacyVersions are the versions SQLite stores recorded before the one migration line
// (dedupdriver.Line): this driver had no step for PostgreSQL's replay_packed_sends, so each of
// its later steps was recorded one version lower. A row of the migrations table that has one
// of these versions with its name is that step of the line; no step of the line has such a
// version and name, so a row is never taken for another.
var legacyVersions = []struct {
	old  int
	name string
}{
	{5, "replay_record_identity"},
	{6, "marker_actions"},
	{7, "group_actions"},
	{8, "marker_outcome"},
}

// skippedStep is the step of the line the legacy numbering had no row for: SQLite needs nothing
// for it (migrations/005_replay_packed_sends.sql), and a legacy store that went past it has it.
var skippedStep = dedupdriver.Line[4]

// lineVersion is the version of the line's step named name.
func lineVersion(name string) int {
	for _, s := range dedupdriver.Line {
		if s.Name == name {
			return s.Version
		}
	}
	return 0
}

// legacy reports whether a is a row of the legacy numbering.
func legacy(a dedupdriver.AppliedMigration) bool {
	for _, l := range legacyVersions {
		if a.Version == l.old && a.Name == l.name {
			return true
		}
	}
	return false
}

// renumber returns the rows read from the migrations table in the line's numbering: a legacy
// row at its step's version, and the step the legacy numbering skipped applied (at the time
// of the first legacy row) when a legacy row is there. Rows of the line are as they are.
func renumber(applied []dedupdriver.AppliedMigration) []dedupdriver.AppliedMigration {
	out := make([]dedupdriver.AppliedMigration, 0, len(applied)+1)
	var first *dedupdriver.AppliedMigration
	for _, a := range applied {
		if legacy(a) {
			if first == nil || a.Version < first.Version {
				first = &a
			}
			a.Version = lineVersion(a.Name)
		}
		out = append(out, a)
	}
	if first != nil {
		out = append(out, dedupdriver.AppliedMigration{Version: skippedStep.Version, Name: skippedStep.Name, AppliedAt: first.AppliedAt})
	}
	slices.SortFunc(out, func(a, b dedupdriver.AppliedMigration) int { return cmp.Compare(a.Version, b.Version) })
	return out
}

// renumberLegacy rewrites the legacy rows of the store's line in tx (the migration
// transaction) to the line's numbering, highest first so that no two rows ever share a
// version, and records the step the legacy numbering skipped: from then on the table says
// what it means to every reader.
func (d *Driver) renumberLegacy(ctx context.Context, tx dedupdriver.Tx) error {
	rows, err := d.readApplied(ctx, tx)
	if err != nil || len(rows) == 0 {
		return err
	}
	var first string
	for i := len(legacyVersions) - 1; i >= 0; i-- {
		l := legacyVersions[i]
		n, err := tx.Exec(ctx, `UPDATE `+d.migTab+` SET version = $1 WHERE line = $2 AND version = $3 AND name = $4`,
			lineVersion(l.name), d.names.Table, l.old, l.name)
		if err != nil {
			return fmt.Errorf("renumber migration %d_%s: %w", l.old, l.name, d.classify(err))
		}
		if n > 0 {
			first = l.name
		}
	}
	if first == "" {
		return nil
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+d.migTab+` (line, version, name, applied_at)
SELECT line, $3, $4, applied_at FROM `+d.migTab+` WHERE line = $1 AND version = $2`,
		d.names.Table, lineVersion(first), skippedStep.Version, skippedStep.Name)
	if err != nil {
		return fmt.Errorf("record migration %03d_%s: %w", skippedStep.Version, skippedStep.Name, d.classify(err))
	}
	return nil
}
