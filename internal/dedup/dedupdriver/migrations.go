package dedupdriver

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// migrationName is the name of a migration file: a zero-padded version and a name.
var migrationName = regexp.MustCompile(`^(\d+)_([a-z0-9_]+)\.sql$`)

// RenderMigrations reads a driver's migrations/NNN_name.sql files from fsys, in version
// order, and renders each as a text/template with data (the store's quoted names; a name
// the template uses and data lacks is an error): the one reader of every driver's
// migrations.
func RenderMigrations(fsys fs.FS, data map[string]string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries { // ReadDir sorts by name; names are zero-padded
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s: name is not NNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
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
	return out, nil
}
