package db

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/wording"
)

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

func migrateSections(p *output.Printer, rep migrateReport) []output.Section {
	st := p.Styles
	where := fmt.Sprintf("%s (%s)", rep.Table, rep.Driver)
	if rep.UpToDate {
		return []output.Section{{Text: st.OK.Render(fmt.Sprintf("%s is up to date at migration version %d: nothing to apply", where, rep.FromVersion))}}
	}
	n := wording.Plural(int64(len(rep.Steps)), "migration")
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

func statusSections(p *output.Printer, rep statusReport) []output.Section {
	st := p.Styles
	state := st.OK.Render(rep.State)
	switch rep.State {
	case dedup.StateNewer:
		state = st.Bad.Render(rep.State)
	case dedup.StateNotMigrated, dedup.StatePending:
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

// newStatusReport is what `db status` prints of the store's migration status; migrate is the
// command that brings the store up to date.
func newStatusReport(ms dedup.MigrationStatus, migrate string) statusReport {
	rep := statusReport{Driver: ms.Driver, Table: ms.Table, CurrentVersion: ms.Current, LatestVersion: ms.Latest,
		Applied: []appliedMigration{}, Pending: []migrateStep{}}
	for _, a := range ms.Applied {
		rep.Applied = append(rep.Applied, appliedMigration{Version: a.Version, Name: a.Name, AppliedAt: a.AppliedAt.UTC()})
	}
	for _, s := range ms.Pending {
		rep.Pending = append(rep.Pending, migrateStep{Version: s.Version, Name: s.Name})
	}
	rep.State = ms.State()
	switch rep.State {
	case dedup.StateNewer:
		rep.Message = fmt.Sprintf("the store is at migration version %d, newer than this fieldwork binary knows (%d): upgrade fieldwork", ms.Current, ms.Latest)
	case dedup.StateNotMigrated:
		rep.Message = fmt.Sprintf("the store has no migrations applied (%s is missing): %s", ms.Table, migrate)
	case dedup.StatePending:
		rep.Message = fmt.Sprintf("%s pending: %s", wording.Plural(int64(len(ms.Pending)), "migration"), migrate)
	default:
		rep.Message = fmt.Sprintf("up to date at migration version %d", ms.Current)
	}
	return rep
}
