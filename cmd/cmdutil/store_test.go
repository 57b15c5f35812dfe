package cmdutil

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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
