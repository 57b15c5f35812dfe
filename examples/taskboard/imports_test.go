package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsPublicOnly: the service imports of fieldwork its public packages only, as a
// team's would (Go's internal rule goes by path, and this module's path is under
// fieldwork's, so the compiler would let it reach internal/), and besides them the standard
// library, franz-go and pgx.
func TestImportsPublicOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	allowed := []string{
		"github.com/fieldwork/fieldwork/consumer", "github.com/fieldwork/fieldwork/inbox",
		"github.com/twmb/franz-go/", "github.com/jackc/pgx/v5",
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
	imports:
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(strings.Split(path, "/")[0], ".") {
				continue // the standard library
			}
			for _, a := range allowed {
				if path == a || strings.HasPrefix(path, a) && (strings.HasSuffix(a, "/") || strings.HasPrefix(path[len(a):], "/")) {
					continue imports
				}
			}
			t.Errorf("%s imports %s: the example may import fieldwork's public packages (consumer, inbox), franz-go, pgx and the standard library only", name, path)
		}
	}
}
