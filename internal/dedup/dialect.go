package dedup

import (
	"fmt"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/pgdriver"
	"github.com/fieldwork/fieldwork/internal/dedup/sqlitedriver"
)

// Dialect is what a driver's SQL writes its own way for the tables beside the markers: the
// column types of a time and of an auto-increment key, a table's storage clause, whether a
// batch binds arrays, an index for equality lookups, and which error says a table is missing.
// The drivers provide it.
type Dialect = dedupdriver.Dialect

// DialectOf is the dialect of driver ("postgres" or "sqlite", Store.Driver).
func DialectOf(driver string) (Dialect, error) {
	switch driver {
	case driverPostgres:
		return pgdriver.Dialect, nil
	case driverSQLite:
		return sqlitedriver.Dialect, nil
	}
	return Dialect{}, fmt.Errorf("unknown store driver %q", driver)
}

// Dialect is the dialect of the store's driver.
func (s *Store) Dialect() Dialect { return s.drv.Dialect() }

// Schema is the store's schema (on SQLite the prefix of its tables' names).
func (s *Store) Schema() string { return s.names.Schema }

// The naming and time rules of the stores, for tables that live beside the markers (the
// bundled handlers', a test's): one place each, the drivers' own.

// TableName is the quoted name of the table name in the store's schema on driver: "schema"."name"
// on PostgreSQL; on SQLite, which has no schemas, the table the schema's prefix names
// (sqlitedriver.TableName: "schema_name", "name" in the schema main). schema and name must be
// valid identifiers (ValidateIdentifier).
func TableName(driver, schema, name string) string {
	if driver == driverSQLite {
		return quote(sqlitedriver.TableName(schema, name))
	}
	return quote(schema) + "." + quote(name)
}

// IndexName is the quoted name of an index of the table name with suffix: in the table's schema
// on PostgreSQL (no schema part), prefixed as the table on SQLite (an index name is per file).
func IndexName(driver, schema, name, suffix string) string {
	if driver == driverSQLite {
		return quote(sqlitedriver.TableName(schema, name) + "_" + suffix)
	}
	return quote(name + "_" + suffix)
}

// TimeArg is t as a bind value a timestamp column of driver holds and compares correctly:
// the time itself on PostgreSQL (timestamptz), the one SQLite layout (sqlitedriver.TimeLayout,
// microseconds in UTC) on SQLite; nil for the zero time.
func TimeArg(driver string, t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if driver == driverSQLite {
		return sqlitedriver.FormatTime(t)
	}
	return t
}

// QualifiedIndexName is IndexName as DROP INDEX takes it: "schema"."name_suffix" on
// PostgreSQL, where an index lives in its table's schema and an unqualified name would be
// looked up along the search path; on SQLite, IndexName.
func QualifiedIndexName(driver, schema, name, suffix string) string {
	if driver == driverSQLite {
		return IndexName(driver, schema, name, suffix)
	}
	return quote(schema) + "." + quote(name+"_"+suffix)
}

func quote(id string) string { return `"` + id + `"` }

// unquoteTable is a quoted, possibly qualified table name ("s"."t", as Table gives it) as
// reports name it, without SQL's quotes: s.t. A name that is not quoted so is returned as
// it is.
func unquoteTable(q string) string {
	var parts []string
	for rest := q; rest != ""; {
		if rest[0] != '"' {
			return q
		}
		var part strings.Builder
		i := 1
		for ; i < len(rest); i++ {
			if rest[i] == '"' {
				if i+1 < len(rest) && rest[i+1] == '"' {
					part.WriteByte('"')
					i++
					continue
				}
				break
			}
			part.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return q
		}
		parts = append(parts, part.String())
		rest = rest[i+1:]
		if rest != "" {
			if rest[0] != '.' {
				return q
			}
			rest = rest[1:]
		}
	}
	return strings.Join(parts, ".")
}
