// Package apicheck holds the test that keeps the exported API of fieldwork's public packages
// from changing by accident. Each public package (every package of the module that is not a
// command and not under internal/, cmd/, examples/ or testdata) has a snapshot of its
// exported API in api/<package>.txt, one line per exported feature in the form of Go's own
// api/*.txt files (go/types, loaded with golang.org/x/tools/go/packages). The test fails when
// the code's API differs from the snapshot, naming per package the lines removed or changed
// (a breaking change) and the lines added, and when a public package has no snapshot or a
// snapshot has no package. `make api` rewrites the snapshots (this test with -update): run
// it when the change is on purpose, and commit the snapshot with the change.
package apicheck

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// snapshotDir is where the snapshots are, relative to the module's root.
const snapshotDir = "api"

// buildFlags are the go command's flags for loading the packages: the race detector's when
// this test is built with it (race_test.go), so that the export data of their dependencies
// is what the test's own build left in the build cache, not a second compilation.
var buildFlags []string

func TestAPI(t *testing.T) {
	root := testenv.ModuleRoot(t)
	got := publicAPI(t, root)
	want := snapshots(t, root)
	if golden.Update() {
		update(t, root, got, want)
		return
	}
	for _, rel := range slices.Sorted(maps.Keys(got)) {
		file := snapshotFile(rel)
		text, ok := want[rel]
		switch {
		case !ok:
			t.Errorf("%s: public package without a snapshot of its API (%s). A new public package is a promise to keep its API: "+
				"if it is meant to be public, run `make api` and commit %s; if not, move it under internal/",
				rel, file, file)
		case text != render(got[rel]):
			t.Errorf("%s: the exported API differs from %s:\n%s", rel, file, report(rel, parse(text), got[rel]))
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[rel]; !ok {
			t.Errorf("%s: snapshot without a public package: package %s is gone or no longer public (a breaking change). "+
				"If that is on purpose, run `make api` (it removes %s)", snapshotFile(rel), rel, snapshotFile(rel))
		}
	}
}

// publicAPI loads the module's public packages and returns the features of each, by its
// path in the module.
func publicAPI(t *testing.T, root string) map[string][]string {
	t.Helper()
	all, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedModule, Dir: root}, "./...")
	if err != nil {
		t.Fatalf("listing the module's packages: %v", err)
	}
	rels := map[string]string{} // import path → path in the module
	for _, p := range all {
		if p.Module == nil {
			t.Fatalf("package %s: not in a module", p.PkgPath)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, p.Module.Path), "/")
		if public(rel, p.Name) {
			rels[p.PkgPath] = rel
		}
	}
	return loadAPI(t, root, slices.Sorted(maps.Keys(rels)), func(path string) string { return rels[path] })
}

// loadAPI type-checks the packages the patterns name (from dir) and returns the features of
// each, by the name that name gives its import path.
func loadAPI(t *testing.T, dir string, patterns []string, name func(importPath string) string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	if len(patterns) == 0 { // Load with no pattern would load the current directory
		return out
	}
	cfg := &packages.Config{
		Mode:       packages.NeedName | packages.NeedTypes | packages.NeedSyntax,
		Dir:        dir,
		BuildFlags: buildFlags,
	}
	loaded, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatalf("loading %s: %v", strings.Join(patterns, " "), err)
	}
	for _, p := range loaded {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		if len(p.Errors) == 0 {
			out[name(p.PkgPath)] = features(name(p.PkgPath), p.Types, p.Syntax)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// public reports whether a package of the module (its path in the module and its name) is
// one that other modules import: not a command, not internal, not an example or test data.
func public(rel, name string) bool {
	if name == "main" {
		return false
	}
	elems := strings.Split(rel, "/")
	if slices.Contains(elems, "internal") || slices.Contains(elems, "testdata") {
		return false
	}
	return elems[0] != "cmd" && elems[0] != "examples"
}

// snapshotFile is the snapshot of a package: api/inbox.txt, api/consumer/x.txt.
func snapshotFile(rel string) string { return snapshotDir + "/" + rel + ".txt" }

// snapshots reads every api/**/*.txt, by the package it is of.
func snapshots(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := filepath.Join(root, snapshotDir)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txt") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[strings.TrimSuffix(filepath.ToSlash(rel), ".txt")] = string(b)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// update writes every public package's snapshot and removes those of packages that are gone.
func update(t *testing.T, root string, got map[string][]string, old map[string]string) {
	t.Helper()
	for rel, fs := range got {
		golden.Write(t, filepath.Join(root, filepath.FromSlash(snapshotFile(rel))), []byte(render(fs)))
	}
	for rel := range old {
		if _, ok := got[rel]; !ok {
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(snapshotFile(rel)))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// render is a snapshot's text: the features, one a line.
func render(features []string) string {
	if len(features) == 0 {
		return ""
	}
	return strings.Join(features, "\n") + "\n"
}

// parse is the features of a snapshot's text, its lines but empty ones.
func parse(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return r == '\n' })
}

// report says how the features of a package (got) differ from its snapshot (want): the
// features removed and those changed (the same name, said differently: a new signature, type
// or value), both breaking a caller, then those added, and how to accept the change.
func report(rel string, want, got []string) string {
	removed, added := minus(want, got), minus(got, want)
	var b strings.Builder
	var changed []string
	byKey := map[string][]string{}
	for _, f := range added {
		byKey[featureKey(f)] = append(byKey[featureKey(f)], f)
	}
	var gone []string
	for _, f := range removed {
		if news := byKey[featureKey(f)]; len(news) > 0 {
			changed = append(changed, "  - "+f, "  + "+news[0])
			added = slices.DeleteFunc(added, func(a string) bool { return a == news[0] })
			byKey[featureKey(f)] = news[1:]
			continue
		}
		gone = append(gone, "  - "+f)
	}
	section := func(title string, lines []string) {
		if len(lines) > 0 {
			fmt.Fprintf(&b, "%s:\n%s\n", title, strings.Join(lines, "\n"))
		}
	}
	section("removed (a breaking change)", gone)
	section("changed (a breaking change)", changed)
	for i, f := range added {
		added[i] = "  + " + f
	}
	section("added", added)
	if len(gone)+len(changed)+len(added) == 0 {
		b.WriteString("the same features, not written as `make api` writes them (sorted, one a line)\n")
	}
	fmt.Fprintf(&b, "A change of %s's exported API must be on purpose: if it is, run `make api` and commit %s with it; "+
		"a removed or changed feature breaks the code of those who import the package.", rel, snapshotFile(rel))
	return b.String()
}

// minus is the features of a that b lacks, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, f := range a {
		if !slices.Contains(b, f) {
			out = append(out, f)
		}
	}
	return out
}

// keyRE matches a feature up to the end of what it names: the package, the type it is
// inside, the kind of feature and its name ("pkg inbox, method (*Store) Claim").
var keyRE = regexp.MustCompile(`^pkg [^,]+, (type [^ \[]+(\[[^\]]*\])? (struct|interface), )?` +
	`(func |method \([^)]*\) |const |var |type |embedded )?[\pL\pN_.*]+`)

// featureKey is the part of a feature that names it, so that a removed feature and an added
// one with the same key are one feature changed.
func featureKey(f string) string {
	if k := keyRE.FindString(f); k != "" {
		return k
	}
	return f
}
