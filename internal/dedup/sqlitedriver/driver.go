package sqlitedriver

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Name is the driver's name.
const Name = "sqlite"

const migrationsTable = "fieldwork_migrations"

// DefaultBusyTimeout is how long a writer waits for another writer.
const DefaultBusyTimeout = 5 * time.Second

// Driver is the SQLite implementation of dedupdriver.Driver.
type Driver struct {
	db       *sql.DB
	names    dedupdriver.Names
	rawTable string // unquoted
	table    string // quoted
	rawMig   string
	migTab   string
	// versions is the version guard's table, quoted: the marker table's name + _versions.
	versions string
	sql      statements
}

var _ dedupdriver.Driver = (*Driver)(nil)

// TableName is the SQLite table that stands for schema.name: name when
// schema is "main", else schema_name.
func TableName(schema, name string) string {
	if schema == "main" {
		return name
	}
	return schema + "_" + name
}

// Open opens the database file cfg.DSN (a path with an optional ?query of modernc.org/sqlite
// parameters) and pings it. A file that does not exist is a *dedupdriver.NoStoreError unless
// cfg.Create, and is then never created: the file is opened read-write without create
// (SQLite's mode=rw), so that a mistyped path cannot become an empty store. A file that cannot
// be opened or is not a database is a *dedupdriver.ConnectError naming the path.
func Open(ctx context.Context, cfg dedupdriver.Config) (*Driver, error) {
	path, query, _ := strings.Cut(cfg.DSN, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, &dedupdriver.InvalidDSNError{DSN: "sqlite:" + cfg.DSN, Reason: "query: " + err.Error()}
	}
	name := path
	if !cfg.Create {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, &dedupdriver.NoStoreError{Path: path}
		}
		// SQLite reads mode only from a file: URI; mode=rw never creates the file.
		q.Set("mode", "rw")
		name = fileURI(path)
	}
	has := func(word string) bool { return strings.Contains(strings.ToLower(query), word) }
	if !has("busy_timeout") && !has("_timeout") {
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", DefaultBusyTimeout.Milliseconds()))
	}
	if !has("journal_mode") && !has("_journal") {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	if !has("_txlock") {
		q.Set("_txlock", "immediate")
	}
	// Double-quoted names are identifiers, never string literals: without
	// this a mapped column the table lacks would silently read as its
	// own name.
	q.Set("_dqs", "0")
	db, err := sql.Open("sqlite", name+"?"+q.Encode())
	if err != nil {
		return nil, &dedupdriver.ConnectError{Driver: Name, Addr: path, Err: err}
	}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+DefaultBusyTimeout)
	defer cancel()
	// Ping opens the file; reading the schema proves it is a database.
	var n int
	if err := db.PingContext(pingCtx); err == nil {
		err = db.QueryRowContext(pingCtx, `SELECT count(*) FROM sqlite_master`).Scan(&n)
		if err != nil {
			_ = db.Close()
			return nil, &dedupdriver.ConnectError{Driver: Name, Addr: path, Err: err}
		}
	} else {
		_ = db.Close()
		return nil, &dedupdriver.ConnectError{Driver: Name, Addr: path, Err: err}
	}
	return New(db, cfg.Names), nil
}

// fileURI is path as an SQLite file: URI (https://www.sqlite.org/uri.html): the characters a
// URI gives a meaning to escaped, an absolute path after an empty authority.
func fileURI(path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if strings.HasPrefix(p, "/") {
		return "file://" + p
	}
	return "file:" + p
}

// New wraps an open database. names must have been validated (package
// dedup does that). Close closes db.
func New(db *sql.DB, names dedupdriver.Names) *Driver {
	d := &Driver{
		db:       db,
		names:    names,
		rawTable: TableName(names.Schema, names.Table),
		rawMig:   TableName(names.Schema, migrationsTable),
	}
	d.table, d.migTab, d.versions = quote(d.rawTable), quote(d.rawMig), quote(d.rawTable+"_versions")
	d.sql = buildStatements(d.table, d.versions, names.Columns)
	return d
}

// Dialect is what SQLite's SQL writes its own way for the tables beside the markers.
var Dialect = dedupdriver.Dialect{
	Timestamp:      "text",
	IsMissingTable: IsMissingTable,
}

func (d *Driver) Dialect() dedupdriver.Dialect { return Dialect }

// IsMissingTable reports SQLite's error for a table that does not exist. SQLite has no result
// code of its own for it: it is an SQLITE_ERROR of the driver's error type whose message is
// SQLite's "no such table".
func IsMissingTable(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR && strings.Contains(se.Error(), "no such table")
}

// Adopt wraps the caller's own transaction (a *sql.Tx of a database/sql handle of this driver,
// "sqlite"). Open the handle with _txlock=immediate, as the store's own are, so that the
// transaction takes the write lock at BEGIN: a deferred one that reads first may fail with
// SQLITE_BUSY when it comes to write while another holds the lock.
func (d *Driver) Adopt(tx any) (dedupdriver.Tx, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("an SQLite store adopts a *sql.Tx, not %T", tx)
	}
	return &sqlTx{tx: t}, nil
}

// DB is the driver's database handle.
func (d *Driver) DB() *sql.DB { return d.db }

func (d *Driver) Name() string  { return Name }
func (d *Driver) Table() string { return d.table }

// VersionsTable is the version guard's table.
func (d *Driver) VersionsTable() string { return d.versions }

// Columns are the mapping as given: SQLite reads no table of another shape.
func (d *Driver) Columns() dedupdriver.Columns { return d.names.Columns }
func (d *Driver) Close() error                 { return d.db.Close() }

func quote(id string) string { return `"` + id + `"` }

// Begin starts a transaction; with _txlock=immediate it holds the write lock
// from the start, waiting up to the busy timeout for it.
func (d *Driver) Begin(ctx context.Context) (dedupdriver.Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, d.classify(err)
	}
	return &sqlTx{tx: tx}, nil
}

// BeginMigration is Begin (the write lock taken at BEGIN IMMEDIATE is the migration lock),
// with the migrations table of a store made before the one migration line renumbered to it in
// the transaction (renumberLegacy).
func (d *Driver) BeginMigration(ctx context.Context) (dedupdriver.Tx, error) {
	tx, err := d.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.renumberLegacy(ctx, tx); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

func (d *Driver) Migrations() ([]dedupdriver.Migration, error) {
	return dedupdriver.RenderMigrations(migrationFS, d.templateData())
}

// templateData are the names the migrations are rendered with.
func (d *Driver) templateData() map[string]string {
	data := map[string]string{
		"Table":            d.table,
		"Versions":         d.versions,
		"Migrations":       d.migTab,
		"ProcessedAtIndex": quote(d.rawTable + "_processed_at_idx"),
	}
	d.journal().templateData(data)
	return data
}

// querier is *sql.DB or *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (d *Driver) on(tx dedupdriver.Tx) (querier, error) {
	if tx == nil {
		return d.db, nil
	}
	t, ok := tx.(*sqlTx)
	if !ok {
		return nil, fmt.Errorf("not an sqlite transaction: %T", tx)
	}
	return t.tx, nil
}

// AppliedMigrations reads the migrations table in the line's numbering, also that of a store
// made before the one migration line (renumber).
func (d *Driver) AppliedMigrations(ctx context.Context, tx dedupdriver.Tx) ([]dedupdriver.AppliedMigration, error) {
	rows, err := d.readApplied(ctx, tx)
	if err != nil {
		return nil, err
	}
	return renumber(rows), nil
}

// readApplied reads the rows of the store's line as they are recorded.
func (d *Driver) readApplied(ctx context.Context, tx dedupdriver.Tx) ([]dedupdriver.AppliedMigration, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`, d.rawMig).Scan(&n); err != nil {
		return nil, d.classify(err)
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT version, name, applied_at FROM `+d.migTab+` WHERE line = $1 ORDER BY version`, d.names.Table)
	if err != nil {
		return nil, d.classify(err)
	}
	defer rows.Close()
	var out []dedupdriver.AppliedMigration
	for rows.Next() {
		var a dedupdriver.AppliedMigration
		var at any
		if err := rows.Scan(&a.Version, &a.Name, &at); err != nil {
			return nil, err
		}
		if a.AppliedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, d.classify(rows.Err())
}

func (d *Driver) RecordMigration(ctx context.Context, tx dedupdriver.Tx, m dedupdriver.Migration) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+d.migTab+` (line, version, name, applied_at) VALUES ($1, $2, $3, `+nowExpr+`)`, d.names.Table, m.Version, m.Name)
	return d.classify(err)
}

// classify turns "no such table" into ErrNotMigrated.
func (d *Driver) classify(err error) error {
	if err == nil {
		return nil
	}
	if IsMissingTable(err) {
		return dedupdriver.NotMigrated(d.table, err)
	}
	return err
}

// IsTransient reports SQLITE_BUSY and SQLITE_LOCKED: another writer held
// the database longer than the busy timeout.
func IsTransient(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

func (d *Driver) IsTransient(err error) bool { return IsTransient(err) }

// IsDenied reports that SQLite refused to write: the file or its directory is read-only to
// this process (SQLITE_READONLY), or access was refused (SQLITE_PERM, SQLITE_AUTH).
func IsDenied(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
			return true
		}
	}
	return false
}

// sqlTx adapts *sql.Tx to dedupdriver.Tx.
type sqlTx struct{ tx *sql.Tx }

func (t *sqlTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *sqlTx) Query(ctx context.Context, query string, args ...any) (dedupdriver.Rows, error) {
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t *sqlTx) QueryRow(ctx context.Context, query string, args ...any) dedupdriver.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (t *sqlTx) Commit(context.Context) error { return t.tx.Commit() }

func (t *sqlTx) Rollback(context.Context) error {
	if err := t.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

func (t *sqlTx) Unwrap() any { return t.tx }

// TimeLayout is how SQLite holds a time, in every table of the store and of the bundled
// handlers: UTC text with microseconds, which keeps what PostgreSQL's timestamptz keeps and
// sorts and compares in time order. Stores made before migration 010 held milliseconds
// (2006-01-02T15:04:05.000Z): that migration rewrites them, and parseTime still reads them.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime formats a time to store, truncated to the microsecond.
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(TimeLayout) }

// nowExpr is the current time in TimeLayout, in SQL (strftime gives milliseconds).
const nowExpr = `strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')`

// formatBound formats t for a comparison, rounded up to the microsecond:
// for a stored value s (whole microseconds), s < t ⇔ s < ceil(t), and
// s >= t ⇔ s >= ceil(t).
func formatBound(t time.Time) string {
	t = t.UTC()
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		t = r.Add(time.Microsecond)
	}
	return t.Format(TimeLayout)
}

var parseLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999 -0700 MST",
}

// parseTime reads a timestamp column: this driver's text, the other common
// SQLite text forms, or a time.Time that modernc.org/sqlite converted from a
// DATETIME-typed column of an existing table.
func parseTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, nil
	case time.Time:
		return x.UTC(), nil
	case []byte:
		return parseTime(string(x))
	case string:
		for _, l := range parseLayouts {
			if t, err := time.Parse(l, x); err == nil {
				return t.UTC(), nil
			}
		}
		return time.Time{}, fmt.Errorf("cannot read %q as a timestamp", x)
	case int64:
		return time.Unix(x, 0).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("cannot read %T as a timestamp", v)
}
