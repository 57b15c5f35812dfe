package apicheck

import (
	"path"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// TestFeatures writes the features of testdata/p, a package with a feature of each kind
// (constants typed and untyped, variables, functions, methods of values and pointers,
// promoted ones, struct fields and embedded types, interfaces complete, sealed and empty,
// constraints, generic types and functions, aliases, deprecated names), and compares them
// with testdata/p.txt (-update rewrites it).
func TestFeatures(t *testing.T) {
	got := loadAPI(t, ".", []string{"./testdata/p"}, path.Base)
	golden.Check(t, "testdata/p.txt", []byte(render(got["p"])))
}

// TestReport checks how a difference is told: a removed feature and a changed one as
// breaking changes, an added one apart, and the command that accepts the change.
func TestReport(t *testing.T) {
	want := []string{
		"pkg inbox, func IsTransient(error) bool",
		"pkg inbox, func Open(context.Context, string, ...Option) (*Store, error)",
		"pkg inbox, type Event struct, ID string",
	}
	got := []string{
		"pkg inbox, func Open(context.Context, string, int, ...Option) (*Store, error)",
		"pkg inbox, func Open2(context.Context) error",
		"pkg inbox, type Event struct, ID string",
	}
	r := report("inbox", want, got)
	for _, line := range []string{
		"removed (a breaking change):\n  - pkg inbox, func IsTransient(error) bool\n",
		"changed (a breaking change):\n  - pkg inbox, func Open(context.Context, string, ...Option) (*Store, error)\n" +
			"  + pkg inbox, func Open(context.Context, string, int, ...Option) (*Store, error)\n",
		"added:\n  + pkg inbox, func Open2(context.Context) error\n",
		"run `make api` and commit api/inbox.txt",
	} {
		if !strings.Contains(r, line) {
			t.Errorf("the report lacks %q:\n%s", line, r)
		}
	}
	if strings.Contains(r, "Event") {
		t.Errorf("the report names a feature that did not change:\n%s", r)
	}
}
