package handlers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestMissingTableIsTheDriversCode: a table is missing when the driver's own error says so
// (PostgreSQL's SQLSTATE 42P01 and 3F000), not when a message merely reads "does not exist"
// (an undefined column, function or role) or quotes a code.
func TestMissingTableIsTheDriversCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "42P01", Message: `relation "fieldwork.task_state" does not exist`}, true},
		{fmt.Errorf("check: %w", &pgconn.PgError{Code: "3F000", Message: `schema "x" does not exist`}), true},
		{&pgconn.PgError{Code: "42703", Message: `column "version" does not exist`}, false},
		{&pgconn.PgError{Code: "42883", Message: `function nosuch() does not exist`}, false},
		{errors.New("webhook: 404 from https://example.invalid/42P01: page does not exist"), false},
	} {
		if got := isMissingTable("postgres", tc.err); got != tc.want {
			t.Errorf("isMissingTable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if isMissingTable("sqlite", errors.New("no such table: x")) {
		t.Error("a text that is not SQLite's error was taken for a missing table")
	}
}
