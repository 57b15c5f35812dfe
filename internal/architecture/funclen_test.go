package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is how long a function of a domain or presentation package may be (its
// declaration to its closing brace) before its doc comment must say why it is longer, in a
// sentence holding "long because" (docs/design.md §2: functions a reader can hold).
const maxFuncLines = 80

// TestFunctionsAReaderCanHold fails for every function of a domain or presentation package
// (the layers of docs/architecture.md's table) longer than maxFuncLines whose doc comment does
// not say why.
func TestFunctionsAReaderCanHold(t *testing.T) {
	root, _, rows := documented(t)
	for _, r := range rows {
		if r.layer != layerDomain && r.layer != layerPresentation {
			continue
		}
		for _, long := range longFunctions(t, filepath.Join(root, r.path)) {
			t.Errorf("%s: %s (%s, layer %s): longer than %d lines: split it, or say why in its doc comment (a sentence holding \"long because\")",
				long.where, long.name, r.path, r.layer, maxFuncLines)
		}
	}
}

type longFunc struct{ where, name string }

// longFunctions returns the functions of the package in dir (its non-test files) longer than
// maxFuncLines whose doc comment gives no reason.
func longFunctions(t *testing.T, dir string) []longFunc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []longFunc
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if end.Line-start.Line+1 <= maxFuncLines || strings.Contains(strings.ToLower(fd.Doc.Text()), "long because") {
				continue
			}
			out = append(out, longFunc{fmt.Sprintf("%s:%d", filepath.Base(file), start.Line), fd.Name.Name})
		}
	}
	return out
}
