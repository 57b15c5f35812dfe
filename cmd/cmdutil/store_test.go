package cmdutil

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestStoreErrorKinds(t *testing.T) {
	cases := []struct {
		err  error
		kind fwerr.Kind
		want string
	}{
		{&dedup.InvalidIdentifierError{Kind: "table", Name: "x;y"}, fwerr.KindUsage, ""},
		{&dedup.InvalidDSNError{DSN: "postgres://u:xxxxx@h/db", Reason: "bad"}, fwerr.KindUsage, ""},
		{&dedup.InvalidInputError{Field: "consumer", Index: -1, Reason: "empty"}, fwerr.KindUsage, ""},
		{fmt.Errorf("open: %w", &dedup.ConnectError{Driver: "postgres", Addr: "h:1", Err: errors.New("refused")}), fwerr.KindConnect, ""},
		{fmt.Errorf("list: %w", dedup.ErrNotMigrated), fwerr.KindError, "run `fieldwork db migrate --schema app --table seen` with the same --dsn"},
		{&dedup.VersionMismatchError{Table: "t", Current: 1, Latest: 2}, fwerr.KindError, "run `fieldwork db migrate --schema app --table seen`"},
		{&dedup.VersionMismatchError{Table: "t", Current: 9, Latest: 2}, fwerr.KindError, "upgrade fieldwork"},
		{errors.New("other"), fwerr.KindError, "other"},
	}
	names := dedup.Options{Schema: "app", Table: "seen"}
	for _, tc := range cases {
		err := StoreError(tc.err, names)
		if fwerr.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: kind %v, %q", tc.err, fwerr.KindOf(err), err)
		}
	}
	if StoreError(nil, names) != nil {
		t.Error("nil error mapped to non-nil")
	}
	mapped := StoreError(fmt.Errorf("x: %w", dedup.ErrNotMigrated), dedup.Options{Table: "seen", Columns: dedup.ColumnNames{EventID: "message_id"}})
	if !strings.Contains(mapped.Error(), "--column-* flags name an existing table") {
		t.Errorf("with a column mapping: %v", mapped)
	}
}

// TestStoreFlagsCompletePreset: every command given the store flags completes --preset with
// the presets' names, on a persistent or a local flag set.
func TestStoreFlagsCompletePreset(t *testing.T) {
	for _, persistent := range []bool{true, false} {
		cmd := &cobra.Command{Use: "x"}
		fs := cmd.Flags()
		if persistent {
			fs = cmd.PersistentFlags()
		}
		RegisterStoreFlags(cmd, fs, &dedup.Options{})
		complete, ok := cmd.GetFlagCompletionFunc("preset")
		if !ok {
			t.Fatalf("persistent=%v: --preset has no completion", persistent)
		}
		got, _ := complete(cmd, nil, "")
		if want := dedup.PresetNames(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("persistent=%v: --preset completes %v, want %v", persistent, got, want)
		}
	}
}

// TestCountFlags: a count flag refuses what is not a whole number of at least 1 where it is
// parsed, as a usage error, and keeps its default when not given.
func TestCountFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		err  string
	}{
		{nil, 50, ""},
		{[]string{"--batch-size", "3"}, 3, ""},
		{[]string{"--batch-size", "0"}, 0, "must be at least 1"},
		{[]string{"--batch-size", "-2"}, 0, "must be at least 1"},
		{[]string{"--batch-size", "many"}, 0, "want a whole number"},
	} {
		var n int
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		CountVar(fs, &n, "batch-size", 50, "at most this many")
		err := fs.Parse(tc.args)
		switch {
		case tc.err == "" && (err != nil || n != tc.want):
			t.Errorf("%v: %d, %v; want %d", tc.args, n, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v; want one saying %q", tc.args, err, tc.err)
		}
	}
}

// TestShareFlag: a share is more than 0 and at most 1 (ShareVar), or from 0 (ShareOrNoneVar),
// as a fraction or a percentage, refused where it is parsed otherwise.
func TestShareFlag(t *testing.T) {
	for _, tc := range []struct {
		zero bool
		args []string
		want float64
		err  string
	}{
		{false, nil, 0.5, ""},
		{false, []string{"--ratio", "0.25"}, 0.25, ""},
		{false, []string{"--ratio", "80%"}, 0.8, ""},
		{false, []string{"--ratio", "1"}, 1, ""},
		{false, []string{"--ratio", "0"}, 0, "must be more than 0 and at most 1"},
		{false, []string{"--ratio", "1.5"}, 0, "must be more than 0 and at most 1"},
		{false, []string{"--ratio", "150%"}, 0, "must be more than 0 and at most 1"},
		{false, []string{"--ratio", "NaN"}, 0, "must be more than 0 and at most 1"},
		{false, []string{"--ratio", "half"}, 0, "want a share"},
		{true, []string{"--ratio", "0"}, 0, ""},
		{true, []string{"--ratio", "0%"}, 0, ""},
		{true, []string{"--ratio", "0.1"}, 0.1, ""},
		{true, []string{"--ratio", "-0.1"}, 0, "must be from 0 and at most 1"},
		{true, []string{"--ratio", "1.5"}, 0, "must be from 0 and at most 1"},
		{true, []string{"--ratio", "NaN"}, 0, "must be from 0 and at most 1"},
	} {
		var f float64
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		if tc.zero {
			ShareOrNoneVar(fs, &f, "ratio", 0.5, "share")
		} else {
			ShareVar(fs, &f, "ratio", 0.5, "share")
		}
		err := fs.Parse(tc.args)
		switch {
		case tc.err == "" && (err != nil || f != tc.want):
			t.Errorf("zero %v %v: %g, %v; want %g", tc.zero, tc.args, f, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("zero %v %v: error %v; want one saying %q", tc.zero, tc.args, err, tc.err)
		}
	}
}

// TestLimitFlag: --limit is one rule in every listing: 0 is no limit and a negative is refused
// where it is parsed; a paged listing takes 1 to its page bound and says how to read on.
func TestLimitFlag(t *testing.T) {
	for _, tc := range []struct {
		maxPage int
		args    []string
		want    int
		err     string
	}{
		{0, nil, 50, ""},
		{0, []string{"--limit", "3"}, 3, ""},
		{0, []string{"--limit", "0"}, 0, ""},
		{0, []string{"--limit", "-2"}, 0, `invalid argument "-2" for "-n, --limit" flag: must be 0 (no limit) or more`},
		{0, []string{"--limit", "many"}, 0, "want a whole number"},
		{100, []string{"--limit", "100"}, 100, ""},
		{100, []string{"--limit", "0"}, 0, "must be between 1 and 100: this listing is read a page at a time (read on with --cursor)"},
		{100, []string{"--limit", "101"}, 0, "must be between 1 and 100"},
		{100, []string{"--limit", "-1"}, 0, "must be 0 (no limit) or more"},
	} {
		n := -7
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		LimitVar(fs, &n, 50, "rows", tc.maxPage, "read on with --cursor")
		err := fs.Parse(tc.args)
		switch {
		case tc.err == "" && (err != nil || n != tc.want):
			t.Errorf("page %d %v: %d, %v; want %d", tc.maxPage, tc.args, n, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("page %d %v: error %v; want one saying %q", tc.maxPage, tc.args, err, tc.err)
		}
	}
}
