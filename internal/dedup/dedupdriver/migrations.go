package dedupdriver

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// Step is one version of the migration line: what the version changes, whatever the driver.
type Step struct {
	Version int
	Name    string
}

// Line is the one migration line every driver follows (docs/design.md §3.4): version N is
// the same schema change on every driver, and a store's version means the same thing on
// PostgreSQL and on SQLite. A driver has one migrations/NNN_name.sql file per step; a driver
// that needs nothing for a step says so in a file that holds only comments (why it needs
// nothing), which is recorded as applied like any other. A new step is added here and in
// every driver's migrations directory; RenderMigrations refuses a directory that does not
// follow the line.
var Line = []Step{
	{1, "processed_events"},
	{2, "replay_journal"},
	{3, "replay_send_batches"},
	{4, "replay_target_counts"},
	{5, "replay_packed_sends"},
	{6, "replay_record_identity"},
	{7, "marker_actions"},
	{8, "group_actions"},
	{9, "marker_outcome"},
	{10, "sqlite_microsecond_times"},
	{11, "aggregate_versions"},
	{12, "group_resets"},
	{13, "replay_workers"},
	{14, "replay_batch_widths"},
}

// migrationName is the name of a migration file: a zero-padded version and a name.
var migrationName = regexp.MustCompile(`^(\d+)_([a-z0-9_]+)\.sql$`)

// RenderMigrations reads a driver's migrations/NNN_name.sql files from fsys, checks them
// against Line (one file per step, named as the step, nothing else), and renders each as a
// text/template with data (the store's quoted names; a name the template uses and data lacks
// is an error): the one reader of every driver's migrations.
func RenderMigrations(fsys fs.FS, data map[string]string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for i, e := range entries { // ReadDir sorts by name; names are zero-padded
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s: name is not NNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if i >= len(Line) || Line[i] != (Step{v, m[2]}) {
			return nil, fmt.Errorf("migration file %s is not step %d of the migration line (dedupdriver.Line)", e.Name(), i+1)
		}
		src, err := fs.ReadFile(fsys, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		tpl, err := template.New(e.Name()).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		var b strings.Builder
		if err := tpl.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: b.String()})
	}
	if len(out) != len(Line) {
		return nil, fmt.Errorf("the migrations end at step %d of the migration line's %d (dedupdriver.Line)", len(out), len(Line))
	}
	return out, nil
}

// Empty reports whether sql holds nothing to run: only comments and blank lines, a step the
// driver needs nothing for.
func Empty(sql string) bool {
	for line := range strings.SplitSeq(sql, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}

// journalTables are the tables of the journals beside the markers (migrations 002–008), by the
// name the migrations' templates give them: they belong to the store's schema (on SQLite its
// prefix), shared by its marker tables.
var journalTables = []struct{ key, name string }{
	{"ReplayRuns", "replay_runs"},
	{"ReplayCheckpoints", "replay_checkpoints"},
	{"ReplaySends", "replay_sends"}, // of migration 002, which 003 drops
	{"ReplaySendBatches", "replay_send_batches"},
	{"ReplayTargetCounts", "replay_target_counts"},
	{"ReplayRunTopics", "replay_run_topics"},
	{"ReplaySendTimes", "replay_send_times"}, // SQLite's: PostgreSQL packs the timestamps
	{"MarkerActions", "marker_actions"},
	{"GroupActions", "group_actions"},
	{"GroupActionsNext", "group_actions_next"}, // SQLite's: migration 012 rebuilds group_actions through it
	{"ReplayWorkers", "replay_workers"},
}

// journalIndexes are the journal's indexes: the template's name, the table, the suffix.
var journalIndexes = []struct{ key, table, suffix string }{
	{"ReplayRunsCreatedIndex", "replay_runs", "_created_at_idx"},
	{"ReplaySendsSourceIndex", "replay_sends", "_source_idx"},
	{"ReplaySendBatchesRunIndex", "replay_send_batches", "_run_idx"},
	{"ReplaySendBatchesSourceIndex", "replay_send_batches", "_source_idx"},
	{"ReplaySendBatchesWidthIndex", "replay_send_batches", "_width_idx"},
}

// JournalTemplateData adds the journal's tables and indexes to a driver's migration template
// data m: each table as table(its base name), each index as index(its table's base name,
// suffix), the driver's quoted forms.
func JournalTemplateData(m map[string]string, table func(name string) string, index func(table, suffix string) string) {
	for _, t := range journalTables {
		m[t.key] = table(t.name)
	}
	for _, i := range journalIndexes {
		m[i.key] = index(i.table, i.suffix)
	}
}
