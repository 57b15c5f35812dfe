package dedup

import (
	"fmt"
	"regexp"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// Defaults for Options.
const (
	DefaultSchema         = "fieldwork"
	DefaultTable          = "processed_events"
	DefaultConnectTimeout = 5 * time.Second
)

// ColumnNames maps the logical marker columns to the columns of the table.
// Empty fields take the default names of docs/design.md §3.4 (consumer, event_id,
// processed_at, topic, partition, offset, aggregate_id, aggregate_version).
type ColumnNames = dedupdriver.Columns

// Absent, as a column name, says the table has no such column (read as NULL).
const Absent = dedupdriver.Absent

// DefaultColumns are the column names that Migrate creates.
var DefaultColumns = dedupdriver.DefaultColumns

// Options configure a Store. The zero value is the default store:
// fieldwork.processed_events on Postgres, fieldwork_processed_events in an
// SQLite file (see the package documentation for SQLite naming).
type Options struct {
	// Schema is the Postgres schema (default "fieldwork"). On SQLite it is a
	// table-name prefix; "main" means no prefix.
	Schema string
	// Table is the marker table (default "processed_events").
	Table string
	// Columns maps column names so that the queries work on an existing
	// table of the same shape. Migrate refuses a non-default mapping.
	Columns ColumnNames
	// Preset names another library's table (Presets): its schema, table and columns, where
	// Schema, Table and Columns still hold the defaults.
	Preset string
	// ConnectTimeout bounds connecting and the first ping when the DSN sets
	// no connect_timeout of its own (default 5s).
	ConnectTimeout time.Duration
	// Password is the PostgreSQL password to use when the DSN holds none (it then beats
	// PGPASSWORD and PGPASSFILE). Never printed.
	Password string `json:"-"`
	// Create lets Open create an SQLite file that does not exist: only what creates a store
	// sets it (`db migrate`, `consume --migrate`, `dev`, `demo`). Without it a missing file is
	// a *NoStoreError and nothing is created.
	Create bool `json:"-"`
}

// identifierRE is what a schema, table, column or savepoint name must match.
// Identifiers are also double-quoted wherever they appear in SQL.
var identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// InvalidIdentifierError means a schema, table, column or savepoint name is
// not a plain SQL identifier. It is returned before any SQL runs; callers map
// it to a usage error (exit 2).
type InvalidIdentifierError struct {
	Kind  string // "schema", "table", "column event_id", "savepoint", …
	Name  string
	Cause string // empty for a pattern mismatch
}

func (e *InvalidIdentifierError) Error() string {
	if e.Cause != "" {
		return fmt.Sprintf("invalid %s name %q: %s", e.Kind, e.Name, e.Cause)
	}
	return fmt.Sprintf("invalid %s name %q: must match %s", e.Kind, e.Name, identifierRE)
}

// ValidateIdentifier returns an *InvalidIdentifierError unless name matches
// ^[A-Za-z_][A-Za-z0-9_]{0,62}$. kind names the thing in the message.
func ValidateIdentifier(kind, name string) error {
	if !identifierRE.MatchString(name) {
		return &InvalidIdentifierError{Kind: kind, Name: name}
	}
	return nil
}

// withDefaults fills the empty fields.
func (o Options) withDefaults() Options {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	c, d := &o.Columns, DefaultColumns
	for _, f := range []struct {
		v   *string
		def string
	}{
		{&c.Consumer, d.Consumer}, {&c.EventID, d.EventID}, {&c.ProcessedAt, d.ProcessedAt},
		{&c.Topic, d.Topic}, {&c.Partition, d.Partition}, {&c.Offset, d.Offset},
		{&c.AggregateID, d.AggregateID}, {&c.AggregateVersion, d.AggregateVersion},
	} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return o
}

// CustomColumns reports whether o, after its preset and defaults, names a marker table's columns
// other than fieldwork's own (the rule a Store applies: db migrate creates only its own table).
// Options whose names are invalid report false: opening the store reports them.
func (o Options) CustomColumns() bool {
	n, err := o.names()
	return err == nil && n.Columns != DefaultColumns
}

// names validates every identifier of o (after its preset and defaults) and returns them.
func (o Options) names() (dedupdriver.Names, error) {
	o, journal, prefixed, err := o.applyPreset()
	if err != nil {
		return dedupdriver.Names{}, err
	}
	o = o.withDefaults()
	if err := ValidateIdentifier("schema", o.Schema); err != nil {
		return dedupdriver.Names{}, err
	}
	if err := ValidateIdentifier("table", o.Table); err != nil {
		return dedupdriver.Names{}, err
	}
	c := o.Columns
	seen := map[string]string{}
	for _, f := range []struct{ logical, name string }{
		{"consumer", c.Consumer}, {"event_id", c.EventID}, {"processed_at", c.ProcessedAt},
		{"topic", c.Topic}, {"partition", c.Partition}, {"offset", c.Offset},
		{"aggregate_id", c.AggregateID}, {"aggregate_version", c.AggregateVersion},
	} {
		kind := "column " + f.logical
		if f.name == dedupdriver.Absent && f.logical != "event_id" && f.logical != "processed_at" {
			continue // a column the table lacks
		}
		if err := ValidateIdentifier(kind, f.name); err != nil {
			return dedupdriver.Names{}, err
		}
		if other, dup := seen[f.name]; dup {
			return dedupdriver.Names{}, &InvalidIdentifierError{Kind: kind, Name: f.name,
				Cause: "already used for column " + other}
		}
		seen[f.name] = f.logical
	}
	if err := validateShape(c); err != nil {
		return dedupdriver.Names{}, err
	}
	// Another library's table: the journal is in fieldwork's own schema.
	n := dedupdriver.Names{Schema: o.Schema, Table: o.Table, Columns: c, Journal: journal, Prefixed: prefixed}
	if p, _ := presetOf(o.Preset); p != nil {
		n.Library = p.Library
	}
	return n, nil
}
