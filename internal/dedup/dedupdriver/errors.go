package dedupdriver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fieldwork/fieldwork/internal/redact"
)

// ErrNotMigrated means the marker table (or its schema, or the migrations
// table) does not exist. Its text tells the operator what to do.
var ErrNotMigrated = errors.New("the dedup store is not migrated: run `fieldwork db migrate`")

// ErrNoOutcome means the marker table has no outcome column (a table not migrated to the
// marker-outcome migration, or another library's table): no marker records an outcome.
var ErrNoOutcome = errors.New("the marker table has no outcome column")

// NotMigrated wraps ErrNotMigrated with the table that is missing.
func NotMigrated(table string, cause error) error {
	return &notMigratedError{table: table, cause: cause}
}

type notMigratedError struct {
	table string
	cause error
}

func (e *notMigratedError) Error() string {
	return fmt.Sprintf("table %s does not exist; %v", e.table, ErrNotMigrated)
}

func (e *notMigratedError) Is(target error) bool { return target == ErrNotMigrated }
func (e *notMigratedError) Unwrap() error        { return e.cause }

// ConnectError means the database could not be reached or refused the
// credentials: the host is down, the port refuses, the name does not
// resolve, the password is wrong (SQLSTATE 28P01), or opening the SQLite
// file failed. Error names the address and the cause and never contains a
// password. Callers map it to exit code 4.
type ConnectError struct {
	Driver string // "postgres" or "sqlite"
	Addr   string // host:port (Postgres) or the file path (SQLite)
	Err    error
	// Secrets are scrubbed from Err's text (the DSN's password, as redact.Secrets finds it):
	// a driver's message may quote parts of the connection string.
	Secrets []string
}

func (e *ConnectError) Error() string {
	cause := "unknown error"
	if e.Err != nil {
		cause = redact.Scrub(e.Err.Error(), e.Secrets...)
	}
	return redact.Scrub(fmt.Sprintf("cannot connect to %s at %s: %s", e.Driver, e.Addr, cause), e.Secrets...)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// NoStoreError means an SQLite DSN names a file that does not exist, and the store was not
// opened to create one (dedup.Options.Create): nothing was created. Callers map it to a
// connect error (exit 4), as they do a PostgreSQL database that does not exist.
type NoStoreError struct {
	Path string
}

func (e *NoStoreError) Error() string {
	return fmt.Sprintf("no such store: the SQLite file %s does not exist", e.Path)
}

// AmbiguousTableError means several tables of a schema may be a library's table named after an
// endpoint (Names.Prefixed): --table must choose one. Callers map it to a usage error.
type AmbiguousTableError struct {
	Library, Schema, Table string
	Candidates             []string
}

func (e *AmbiguousTableError) Error() string {
	return fmt.Sprintf("%d tables of schema %s may be %s's %s: %s; name one with --table", len(e.Candidates), e.Schema, e.Library, e.Table, strings.Join(e.Candidates, ", "))
}

// MissingTableError means another library's table does not exist where the store looked for it
// (Names.Library): fieldwork never creates it, so nothing here advises `fieldwork db migrate`.
type MissingTableError struct {
	Library string
	// Table is the qualified table looked for; Find, when set, says how it was looked for.
	Table, Find string
}

func (e *MissingTableError) Error() string {
	what := "table " + e.Table
	if e.Find != "" {
		what = e.Find
	}
	return fmt.Sprintf("%s's %s does not exist: check --schema and --table (%s creates it; fieldwork db migrate creates only fieldwork's own tables)", e.Library, what, e.Library)
}

// InvalidDSNError means a DSN could not be parsed or names no known driver.
// The DSN it carries is already redacted. Callers map it to a usage error.
type InvalidDSNError struct {
	DSN    string // redacted
	Reason string
}

func (e *InvalidDSNError) Error() string {
	if e.DSN == "" {
		return "invalid DSN: " + e.Reason
	}
	return fmt.Sprintf("invalid DSN %q: %s", e.DSN, e.Reason)
}

// MissingColumnError means a table named by a column mapping lacks a column the queries need
// (the event id, the processed time, or a column a preset reads). It is a usage error.
type MissingColumnError struct {
	Table, Column string
	// Flag is the flag that maps the column, when one does.
	Flag string
}

func (e *MissingColumnError) Error() string {
	msg := fmt.Sprintf("table %s has no column %q", e.Table, e.Column)
	if e.Flag != "" {
		msg += fmt.Sprintf(": name the column that holds it with %s", e.Flag)
	}
	return msg
}
