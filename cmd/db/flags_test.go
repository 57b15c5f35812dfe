package db

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestDBMigrateFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdDBMigrate, "--dry-run", "--schema", "billing")
	if !got.DryRun || got.Names().Schema != "billing" || got.Names().Table != "processed_events" {
		t.Fatalf("options = %+v, names %+v", got, got.Names())
	}
	if cmdutil.NameFlags(got.Names()) != " --schema billing" {
		t.Errorf("hint flags = %q", cmdutil.NameFlags(got.Names()))
	}

	// A column mapping is refused before anything opens.
	f = cmdutil.TestFactory()
	called := false
	cmd := cmdtest.InGroup(f, func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdDBMigrate(f, func(context.Context, *DBMigrateOptions) error { called = true; return nil })
	}, "--column-event-id", "id")
	err := cmd.Execute()
	if called || fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "--column-* flags") {
		t.Fatalf("mapping: called %v, %v", called, err)
	}
}

func TestDBStatusFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdDBStatus, "--table", "seen", "--column-consumer", "svc")
	if n := got.Names(); n.Table != "seen" || n.Columns.Consumer != "svc" || n.Schema != "fieldwork" {
		t.Fatalf("names = %+v", n)
	}
}
