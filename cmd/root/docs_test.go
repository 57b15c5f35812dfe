package root

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/docs"
	"github.com/fieldwork/fieldwork/internal/output"
)

// TestDocsAreCurrent fails when docs/reference or docs/man no longer match the command tree:
// run `make docs` (fieldwork docs) and commit the result.
func TestDocsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	s, _, _, _ := output.Test()
	f := &cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }}
	opts := &docs.DocsOptions{MarkdownDir: filepath.Join(dir, "reference"), ManDir: filepath.Join(dir, "man")}
	if err := docs.GenerateDocs(NewCmdRoot(f), opts); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"reference", "man"} {
		want := readDir(t, filepath.Join(dir, sub))
		got := readDir(t, filepath.Join("..", "..", "docs", sub))
		for name, body := range want {
			if got[name] != body {
				t.Errorf("docs/%s/%s is out of date: run make docs", sub, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("docs/%s/%s documents a command that no longer exists: run make docs", sub, name)
			}
		}
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]string{}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}
