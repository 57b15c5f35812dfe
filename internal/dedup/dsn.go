package dedup

import (
	"strings"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/redact"
)

const (
	driverPostgres = "postgres"
	driverSQLite   = "sqlite"
)

// splitDSN picks the driver for dsn and returns the driver's own part:
//
//	sqlite:PATH, sqlite://PATH        → SQLite, PATH (with an optional ?query)
//	postgres://…, postgresql://…      → Postgres, the URL as it is
//	host=… user=… (key=value pairs)   → Postgres, the string as it is
func splitDSN(dsn string) (driver, rest string, err error) {
	d := strings.TrimSpace(dsn)
	bad := func(reason string) (string, string, error) {
		return "", "", &dedupdriver.InvalidDSNError{DSN: redact.DSN(dsn), Reason: reason}
	}
	lower := strings.ToLower(d)
	switch {
	case d == "":
		return bad("empty; want postgres://…, a key=value connection string, or sqlite:PATH")
	case strings.HasPrefix(lower, "sqlite://"):
		rest = d[len("sqlite://"):]
	case strings.HasPrefix(lower, "sqlite:"):
		rest = d[len("sqlite:"):]
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return driverPostgres, d, nil
	case strings.Contains(d, "://"):
		scheme, _, _ := strings.Cut(d, "://")
		return bad("unknown scheme " + scheme + "; want postgres://…, postgresql://… or sqlite:PATH")
	case strings.Contains(d, "="):
		return driverPostgres, d, nil
	default:
		return bad("want postgres://…, a key=value connection string, or sqlite:PATH")
	}
	path, _, _ := strings.Cut(rest, "?")
	switch path {
	case "":
		return bad("sqlite: needs a file path, as in sqlite:./fieldwork.db")
	case ":memory:":
		return bad("an in-memory SQLite database is not supported (each connection would see its own); use a file")
	}
	return driverSQLite, rest, nil
}

// SQLitePath is the file an SQLite DSN (sqlite:PATH, sqlite://PATH, with or without a query)
// names; ok is false for any other DSN.
func SQLitePath(dsn string) (path string, ok bool) {
	driver, rest, err := splitDSN(dsn)
	if err != nil || driver != driverSQLite {
		return "", false
	}
	path, _, _ = strings.Cut(rest, "?")
	return path, true
}
