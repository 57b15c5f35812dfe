// Package cmdtest holds what the commands' tests share and that needs no command tree: a
// parent carrying the store-naming flags and the broker environment. The tree itself is run
// by package roottest; golden files are testenv/golden's.
package cmdtest

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// InGroup puts a leaf command, built by newLeaf, under a parent carrying the store-naming
// flags, as the processed and db groups do: the parent binds them and hands the leaf the
// factory derived for them, so that tests parse --schema, --table and --column-* too.
func InGroup(f *cmdutil.Factory, newLeaf func(*cmdutil.Factory) *cobra.Command, args ...string) *cobra.Command {
	naming := new(dedup.Options)
	g := &cobra.Command{Use: "group"}
	cmdutil.RegisterStoreFlags(g, g.PersistentFlags(), naming)
	leaf := newLeaf(f.WithStoreNaming(naming))
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

// Parse builds a leaf with newCmd on f, under InGroup, executes it with args and returns the
// options its run would have got; nothing runs, and an error of parsing fails the test.
func Parse[O any](t *testing.T, f *cmdutil.Factory, newCmd func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, args ...string) *O {
	t.Helper()
	var got *O
	cmd := InGroup(f, func(f *cmdutil.Factory) *cobra.Command {
		return newCmd(f, func(_ context.Context, o *O) error { got = o; return nil })
	}, args...)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return got
}

// CSVColumnsAreJSONFields fails t when a CSV column of a listing of item, rendered with
// columns, is not a field of item's JSON (omitted empty fields aside: item should set them):
// CSV names its columns as JSON names the fields (docs/design.md §4), so that a script reads
// run_id from either.
func CSVColumnsAreJSONFields[T any](t *testing.T, columns []output.Column[T], item T) {
	t.Helper()
	s, _, out, _ := output.Test()
	if err := output.List(output.NewPrinter(s, output.FormatCSV), []T{item}, columns, ""); err != nil {
		t.Fatal(err)
	}
	header, err := csv.NewReader(strings.NewReader(out.String())).Read()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(item)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		if _, ok := fields[h]; !ok {
			t.Errorf("CSV column %q is no JSON field (fields: %s)", h, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
	}
}
