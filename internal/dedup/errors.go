package dedup

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
)

// ErrNotMigrated means the marker table, its schema or the migrations table
// does not exist. Its text tells the operator to run `fieldwork db migrate`.
// Queries on a missing table wrap it (Postgres SQLSTATE 42P01 or 3F000,
// SQLite "no such table").
var ErrNotMigrated = dedupdriver.ErrNotMigrated

// ConnectError means the database cannot be reached or refused the
// credentials. Its Error names host:port (or the SQLite path) and the cause
// and never contains a password. Callers map it to exit code 4.
type ConnectError = dedupdriver.ConnectError

// NoStoreError means an SQLite DSN names a file that does not exist and Options.Create was
// not set: nothing was created. Callers map it to exit code 4, like a database that does not
// exist.
type NoStoreError = dedupdriver.NoStoreError

// AmbiguousTableError means several tables may be a preset's table named after an endpoint
// (NServiceBus's <Endpoint>_OutboxData): --table must choose. Callers map it to exit 2.
type AmbiguousTableError = dedupdriver.AmbiguousTableError

// MissingTableError means a preset's table does not exist: fieldwork does not create another
// library's table (no advice to run db migrate).
type MissingTableError = dedupdriver.MissingTableError

// InvalidDSNError means the DSN is malformed or names no known driver. It
// carries the DSN redacted. Callers map it to a usage error (exit 2).
type InvalidDSNError = dedupdriver.InvalidDSNError

// MissingColumnError means a table named by a column mapping lacks a column the queries need;
// callers map it to a usage error (exit 2).
type MissingColumnError = dedupdriver.MissingColumnError

// VersionMismatchError means the store's migration version is not the one
// this binary knows: older (run `fieldwork db migrate`; errors.Is(err,
// ErrNotMigrated) is then true) or newer (upgrade fieldwork; Migrate refuses
// to touch it).
type VersionMismatchError struct {
	Table   string
	Current int // highest version applied in the store
	Latest  int // highest version this binary embeds
}

func (e *VersionMismatchError) Error() string {
	if e.Current > e.Latest {
		return fmt.Sprintf("the dedup store %s is at migration version %d, newer than this fieldwork binary knows (%d): upgrade fieldwork",
			e.Table, e.Current, e.Latest)
	}
	return fmt.Sprintf("the dedup store %s is at migration version %d, this fieldwork binary needs %d: run `fieldwork db migrate`",
		e.Table, e.Current, e.Latest)
}

// Is makes an older store match ErrNotMigrated.
func (e *VersionMismatchError) Is(target error) bool {
	return target == ErrNotMigrated && e.Current < e.Latest
}

// InvalidInputError means a consumer name or an event id cannot be stored:
// empty, not UTF-8, or holding a NUL byte (which PostgreSQL text refuses),
// or a consumer name longer than MaxConsumerBytes. It is returned before any
// SQL runs, so the transaction is untouched.
type InvalidInputError struct {
	Field  string // "consumer" or "event id"
	Index  int    // position in the batch, -1 when not in a batch
	Value  string // possibly truncated
	Reason string
}

func (e *InvalidInputError) Error() string {
	at := ""
	if e.Index >= 0 {
		at = fmt.Sprintf(" at index %d", e.Index)
	}
	return fmt.Sprintf("invalid %s%s (%q): %s", e.Field, at, e.Value, e.Reason)
}

// ErrForeignTx is returned when a transaction from another Store (or a nil
// one) is passed to Claim or Unclaim.
var ErrForeignTx = errors.New("the transaction does not belong to this store")

func checkText(field string, index int, s string, maxBytes int) error {
	short := s
	if len(short) > 64 {
		short = short[:64] + "…"
	}
	reason := ""
	switch {
	case s == "":
		reason = "empty"
	case !utf8.ValidString(s):
		reason = "not valid UTF-8"
	case containsNUL(s):
		reason = "contains a NUL byte"
	case maxBytes > 0 && len(s) > maxBytes:
		reason = fmt.Sprintf("longer than %d bytes", maxBytes)
	default:
		return nil
	}
	return &InvalidInputError{Field: field, Index: index, Value: short, Reason: reason}
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// IsTransient reports whether err is worth retrying with backoff: the
// database is unreachable or restarting, the connection broke, a
// serialization failure or deadlock, or SQLite is busy. Usage errors,
// refused credentials, ErrNotMigrated and version mismatches are not.
func IsTransient(err error) bool {
	if err == nil || pgdriver.IsAuthFailure(err) {
		return false
	}
	var ce *ConnectError
	if errors.As(err, &ce) {
		return true
	}
	return pgdriver.IsTransient(err) || sqlitedriver.IsTransient(err)
}

// IsDenied reports that the store refused an operation for want of a privilege: PostgreSQL's
// insufficient_privilege (a role without the grants it needs on the schema or table), or an
// SQLite file this process may not write. Callers map it to exit code 5, as a denied ACL.
func IsDenied(err error) bool {
	return pgdriver.IsDenied(err) || sqlitedriver.IsDenied(err)
}
