// Package cmdtest holds what the commands' tests share and that needs no command tree: a
// parent carrying the store-naming flags, golden files, the broker environment. The tree
// itself is run by package roottest.
package cmdtest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// Update is -update: rewrite the golden files instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata")

// InGroup puts a leaf command under a parent carrying the store-naming flags, as the
// processed and db groups do, so that tests parse --schema, --table and --column-* too.
func InGroup(f *cmdutil.Factory, leaf *cobra.Command, args ...string) *cobra.Command {
	g := &cobra.Command{Use: "group"}
	cmdutil.RegisterStoreFlags(g.PersistentFlags(), &f.Dedup)
	g.AddCommand(leaf)
	g.SetArgs(append([]string{leaf.Name()}, args...))
	g.SetOut(f.Streams.Out)
	g.SetErr(f.Streams.ErrOut)
	g.SilenceErrors, g.SilenceUsage = true, true
	return g
}

// BrokerEnv is an environment naming the test broker (FIELDWORK_BROKERS).
func BrokerEnv(t *testing.T) map[string]string {
	return map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t)}
}

// Golden compares got with the file at path, or rewrites the file with -update. Callers
// normalise got first.
func Golden(t *testing.T, path, got string) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -run '%s' -update rewrites it)\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
}
