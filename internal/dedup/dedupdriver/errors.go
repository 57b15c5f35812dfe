package dedupdriver

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNotMigrated means the marker table (or its schema, or the migrations
// table) does not exist. Its text tells the operator what to do.
var ErrNotMigrated = errors.New("the dedup store is not migrated: run `fieldwork db migrate`")

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
}

func (e *ConnectError) Error() string {
	cause := "unknown error"
	if e.Err != nil {
		cause = RedactText(e.Err.Error())
	}
	return fmt.Sprintf("cannot connect to %s at %s: %s", e.Driver, e.Addr, cause)
}

func (e *ConnectError) Unwrap() error { return e.Err }

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

// Redacted stands in for every password.
const Redacted = "xxxxx"

var (
	kvPassword    = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
	queryPassword = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)([^&#]*)`)
	urlPassword   = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)([^@\s]*)(@)`)
)

// RedactText replaces every password that appears in text, in URL userinfo
// (scheme://user:PASSWORD@host), in a URL query (?password=VALUE) or as a
// password=VALUE pair, with xxxxx. It errs on the side of hiding too much.
func RedactText(text string) string {
	text = urlPassword.ReplaceAllString(text, "${1}"+Redacted+"${3}")
	text = queryPassword.ReplaceAllString(text, "${1}"+Redacted)
	return kvPassword.ReplaceAllString(text, "${1}"+Redacted)
}

// RedactDSN returns dsn with its password, in URL or key=value form,
// replaced by xxxxx. A DSN without a password is returned unchanged.
func RedactDSN(dsn string) string {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL {
		return kvPassword.ReplaceAllString(dsn, "${1}"+Redacted)
	}
	query := ""
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest, query = rest[:q], rest[q:]
	}
	// The userinfo ends at the last '@', so that a password holding '@',
	// ':' or '/' is still hidden whole.
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if user, _, hasPW := strings.Cut(rest[:at], ":"); hasPW {
			rest = user + ":" + Redacted + rest[at:]
		}
	}
	return scheme + "://" + rest + queryPassword.ReplaceAllString(query, "${1}"+Redacted)
}
