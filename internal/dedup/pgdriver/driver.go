// Package pgdriver is the PostgreSQL driver of the dedup store, on pgx/v5 and
// pgxpool. Callers use package dedup; this package holds the Postgres SQL and
// the Postgres migrations (migrations/NNN_name.sql, embedded).
package pgdriver

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
	"github.com/fieldwork/fieldwork/internal/redact"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Name is the driver's name.
const Name = "postgres"

// migrationsTable is the base name of the migrations table in the schema.
// It is prefixed so that it never collides with another tool's
// schema_migrations in a shared schema such as public.
const migrationsTable = "fieldwork_migrations"

// Driver is the Postgres implementation of dedupdriver.Driver.
type Driver struct {
	pool   *pgxpool.Pool
	names  dedupdriver.Names
	table  string // "schema"."table"
	migTab string // "schema"."fieldwork_migrations"
	// versions is the version guard's table, "schema"."table_versions" (migration 011).
	versions string
	sql      statements
	// claimWith caches ClaimWith's statements (claimWithKey → string).
	claimWith sync.Map
}

var _ dedupdriver.Driver = (*Driver)(nil)

// Open parses the pgx connection string, applies cfg.ConnectTimeout when the
// DSN sets no connect_timeout, creates the pool and pings.
//
// A DSN pgx cannot parse is a *dedupdriver.InvalidDSNError; a failed ping
// (refused, unknown host, timeout, authentication failure) is a
// *dedupdriver.ConnectError naming host:port. Neither carries the password.
func Open(ctx context.Context, cfg dedupdriver.Config) (*Driver, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, &dedupdriver.InvalidDSNError{DSN: redact.DSN(cfg.DSN), Reason: parseReason(err, cfg.DSN)}
	}
	// pgx's messages may quote the connection string or parts of it: every one is scrubbed of
	// the password as written in the DSN and as pgx read it (docs/design.md §4.2).
	secrets := append(redact.Secrets(cfg.DSN), pcfg.ConnConfig.Password, cfg.Password)
	// A password given apart from the DSN (a context's dsn_password_env or dsn_password_file)
	// beats PGPASSWORD and PGPASSFILE, which pgx has read when the DSN holds none.
	if cfg.Password != "" && len(redact.Secrets(cfg.DSN)) == 0 {
		pcfg.ConnConfig.Password = cfg.Password
	}
	// A password holding an unencoded '@' makes pgx read its tail as part of the host: refused,
	// as the shape of a DSN that cannot be told apart (docs/design.md §4.2).
	for _, h := range append([]string{pcfg.ConnConfig.Host}, fallbackHosts(pcfg.ConnConfig.Config)...) {
		if strings.Contains(h, "@") {
			return nil, &dedupdriver.InvalidDSNError{DSN: redact.DSN(cfg.DSN), Reason: "the user info holds an unencoded '@': percent-encode it in the password as %40"}
		}
	}
	timeout := pcfg.ConnConfig.ConnectTimeout
	if timeout == 0 {
		timeout = cfg.ConnectTimeout
		pcfg.ConnConfig.ConnectTimeout = timeout
	}
	addr := address(pcfg.ConnConfig.Config)
	pcfg.AfterConnect = registerArrays
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, &dedupdriver.ConnectError{Driver: Name, Addr: addr, Err: connectCause(err, addr), Secrets: secrets}
	}
	// The connect timeout covers dialling and authenticating one host; a
	// little more allows for the ping and for a fallback host.
	pingCtx, cancel := context.WithTimeout(ctx, 2*timeout+time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, &dedupdriver.ConnectError{Driver: Name, Addr: addr, Err: connectCause(err, addr), Secrets: secrets}
	}
	if cfg.Names.Columns == dedupdriver.DefaultColumns {
		return New(pool, cfg.Names), nil
	}
	d, err := openShaped(ctx, pool, cfg.Names)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

// openShaped reads the column types of a table named by a column mapping (an existing table,
// maybe another library's) and builds the statements for them: a column it lacks among the
// optional ones is read as absent (dedupdriver.Absent); a table that lacks the event id or
// the processed time is refused, naming the flag that maps it.
func openShaped(ctx context.Context, pool *pgxpool.Pool, names dedupdriver.Names) (*Driver, error) {
	if names.Prefixed {
		found, err := findPrefixed(ctx, pool, names)
		if err != nil {
			return nil, err
		}
		names.Table = found
	}
	rows, err := pool.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`,
		names.Schema, names.Table)
	if err != nil {
		return nil, err
	}
	ty := types{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return nil, err
		}
		ty[name] = typ
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	table := qualify(names.Schema, names.Table)
	if len(ty) == 0 {
		if names.Library != "" {
			return nil, &dedupdriver.MissingTableError{Library: names.Library, Table: table}
		}
		return nil, dedupdriver.NotMigrated(table, nil)
	}
	c := &names.Columns
	for _, col := range []struct {
		v        *string
		flag     string
		optional bool
	}{
		{&c.Consumer, "consumer", true}, {&c.EventID, "event-id", false}, {&c.ProcessedAt, "processed-at", false},
		{&c.Topic, "topic", true}, {&c.Partition, "partition", true}, {&c.Offset, "offset", true},
		{&c.AggregateID, "aggregate-id", true}, {&c.AggregateVersion, "aggregate-version", true},
	} {
		if *col.v == dedupdriver.Absent {
			continue
		}
		if _, ok := ty[*col.v]; !ok {
			if !col.optional {
				return nil, &dedupdriver.MissingColumnError{Table: table, Column: *col.v, Flag: "--column-" + col.flag}
			}
			*col.v = dedupdriver.Absent
		}
	}
	for _, col := range []string{c.Done, c.Status, c.Removable} {
		if _, ok := ty[col]; col != "" && !ok {
			return nil, &dedupdriver.MissingColumnError{Table: table, Column: col}
		}
	}
	d := &Driver{pool: pool, names: names, table: table, migTab: qualify(names.JournalSchema(), migrationsTable), versions: versionsTable(names)}
	d.sql = buildStatements(d.table, names.Table, d.versions, names.Columns, ty)
	return d, nil
}

// findPrefixed finds the table of names.Schema that is named names.Table or ends in
// "_"+names.Table (an endpoint's prefix, names.Prefixed): the one there is, else a
// *dedupdriver.AmbiguousTableError naming them, or a *dedupdriver.MissingTableError. Only
// names that are plain identifiers are candidates (--table takes no other).
func findPrefixed(ctx context.Context, pool *pgxpool.Pool, names dedupdriver.Names) (string, error) {
	rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_name ~ '^[A-Za-z_][A-Za-z0-9_]{0,62}$'
		  AND (table_name = $2 OR (length(table_name) > length($2) + 1 AND right(table_name, length($2) + 1) = '_' || $2))
		ORDER BY 1`, names.Schema, names.Table)
	if err != nil {
		return "", err
	}
	found, err := dedupdriver.ScanStrings(rows)
	rows.Close()
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", &dedupdriver.MissingTableError{Library: names.Library, Table: qualify(names.Schema, names.Table),
			Find: fmt.Sprintf("table %s or *_%s in schema %s", names.Table, names.Table, names.Schema)}
	case 1:
		return found[0], nil
	}
	return "", &dedupdriver.AmbiguousTableError{Library: names.Library, Schema: names.Schema, Table: names.Table, Candidates: found}
}

// Columns are the columns the driver reads, dedupdriver.Absent for those the table lacks.
func (d *Driver) Columns() dedupdriver.Columns { return d.names.Columns }

// New wraps an existing pool. names must have been validated (package dedup
// does that). Close closes the pool.
func New(pool *pgxpool.Pool, names dedupdriver.Names) *Driver {
	d := &Driver{
		pool:     pool,
		names:    names,
		table:    qualify(names.Schema, names.Table),
		migTab:   qualify(names.JournalSchema(), migrationsTable),
		versions: versionsTable(names),
	}
	d.sql = buildStatements(d.table, names.Table, d.versions, names.Columns, nil)
	return d
}

// versionsTable is the version guard's table of the marker table names (migration 011): in
// its schema, named after it (cut, as PostgreSQL would, to 63 bytes).
func versionsTable(names dedupdriver.Names) string {
	return qualify(names.Schema, indexName(names.Table, "_versions"))
}

// Dialect is what PostgreSQL's SQL writes its own way for the tables beside the markers.
var Dialect = dedupdriver.Dialect{
	Timestamp:      "timestamptz",
	UpdatedInPlace: " WITH (fillfactor = 70)",
	Arrays:         true,
	IsMissingTable: IsMissingTable,
}

func (d *Driver) Dialect() dedupdriver.Dialect { return Dialect }

// IsMissingTable reports an undefined table (SQLSTATE 42P01) or schema (3F000).
func IsMissingTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000")
}

// Adopt wraps the caller's own pgx transaction (pgx.Tx: of a pgx.Conn, a pgxpool.Pool).
func (d *Driver) Adopt(tx any) (dedupdriver.Tx, error) {
	t, ok := tx.(pgx.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("a PostgreSQL store adopts a pgx.Tx, not %T", tx)
	}
	return &pgTx{tx: t}, nil
}

// Pool is the driver's connection pool.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

func (d *Driver) Name() string  { return Name }
func (d *Driver) Table() string { return d.table }

// VersionsTable is the version guard's table.
func (d *Driver) VersionsTable() string { return d.versions }

func (d *Driver) Close() error {
	d.pool.Close()
	return nil
}

// quote double-quotes a validated identifier.
func quote(id string) string { return `"` + id + `"` }

func qualify(schema, name string) string { return quote(schema) + "." + quote(name) }

// address names the first host (and any fallbacks) as host:port.
func address(c pgconn.Config) string {
	hosts := []string{net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))}
	for _, f := range c.Fallbacks {
		hp := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))
		if hp != hosts[len(hosts)-1] {
			hosts = append(hosts, hp)
		}
	}
	return strings.Join(hosts, ",")
}

func fallbackHosts(c pgconn.Config) []string {
	var out []string
	for _, f := range c.Fallbacks {
		out = append(out, f.Host)
	}
	return out
}

// connectCause strips pgconn's "failed to connect to `user=… database=…`"
// prefix and, for a single host, the "host:port (host):" one: ConnectError
// says where, the cause says why.
func connectCause(err error, addr string) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		if inner := ce.Unwrap(); inner != nil {
			err = inner
		}
	}
	// pgconn joins the per-host errors; with one host there is one.
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) == 1 {
		err = j.Unwrap()[0]
	}
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), addr+" (") {
		return inner
	}
	return err
}

var parseErrPrefix = regexp.MustCompile("^cannot parse `[^`]*`: ")

// parseReason is pgx's reason for refusing dsn, without the DSN it quotes and scrubbed of
// every part of it that may be a password.
func parseReason(err error, dsn string) string {
	return redact.Scrub(parseErrPrefix.ReplaceAllString(err.Error(), ""), redact.Secrets(dsn)...)
}

// Begin starts a READ COMMITTED transaction on a pooled connection.
func (d *Driver) Begin(ctx context.Context) (dedupdriver.Tx, error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return nil, d.classify(err)
	}
	return &pgTx{tx: tx}, nil
}

// BeginMigration begins a transaction holding a transaction-scoped advisory
// lock on the store's name, released by commit or rollback.
func (d *Driver) BeginMigration(ctx context.Context) (dedupdriver.Tx, error) {
	tx, err := d.Begin(ctx)
	if err != nil {
		return nil, err
	}
	key := "fieldwork migrate " + d.names.Schema + "." + d.names.Table
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, key); err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("take migration lock: %w", d.classify(err))
	}
	return tx, nil
}

// Migrations renders the embedded migrations with the store's names.
func (d *Driver) Migrations() ([]dedupdriver.Migration, error) {
	data := map[string]string{
		"Schema":           quote(d.names.Schema),
		"Table":            d.table,
		"Versions":         d.versions,
		"Migrations":       d.migTab,
		"ProcessedAtIndex": quote(indexName(d.names.Table, "_processed_at_idx")),
	}
	d.journal().templateData(data)
	return dedupdriver.RenderMigrations(migrationFS, data)
}

// indexName appends suffix to table, cut (as Postgres would) to 63 bytes.
func indexName(table, suffix string) string {
	n := table + suffix
	if len(n) > 63 {
		n = n[:63]
	}
	return n
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func (d *Driver) on(tx dedupdriver.Tx) (querier, error) {
	if tx == nil {
		return d.pool, nil
	}
	t, ok := tx.(*pgTx)
	if !ok {
		return nil, fmt.Errorf("not a postgres transaction: %T", tx)
	}
	return t.tx, nil
}

func (d *Driver) AppliedMigrations(ctx context.Context, tx dedupdriver.Tx) ([]dedupdriver.AppliedMigration, error) {
	q, err := d.on(tx)
	if err != nil {
		return nil, err
	}
	var exists bool
	rows, err := q.Query(ctx, `SELECT to_regclass($1) IS NOT NULL`, d.migTab)
	if err == nil {
		exists, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	}
	if err != nil {
		return nil, d.classify(err)
	}
	if !exists {
		return nil, nil
	}
	rows, err = q.Query(ctx, `SELECT version, name, applied_at FROM `+d.migTab+` WHERE line = $1 ORDER BY version`, d.names.Table)
	if err != nil {
		return nil, d.classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.AppliedMigration, error) {
		var a dedupdriver.AppliedMigration
		err := r.Scan(&a.Version, &a.Name, &a.AppliedAt)
		a.AppliedAt = a.AppliedAt.UTC()
		return a, err
	})
	return out, d.classify(err)
}

func (d *Driver) RecordMigration(ctx context.Context, tx dedupdriver.Tx, m dedupdriver.Migration) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+d.migTab+` (line, version, name) VALUES ($1, $2, $3)`, d.names.Table, m.Version, m.Name)
	return d.classify(err)
}

// classify turns a missing table or schema into ErrNotMigrated and leaves
// every other error as it is.
func (d *Driver) classify(err error) error {
	if err == nil {
		return nil
	}
	if IsMissingTable(err) {
		return dedupdriver.NotMigrated(d.table, err)
	}
	return err
}

// IsTransient reports errors worth retrying: connection failures, a broken
// connection, serialization failures, deadlocks, lock timeouts, too many
// connections, server shutdown or start-up.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "40001", pe.Code == "40P01", // serialization failure, deadlock
			pe.Code == "55P03",                                         // lock not available
			strings.HasPrefix(pe.Code, "53"),                           // insufficient resources
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, crash, starting
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (d *Driver) IsTransient(err error) bool { return IsTransient(err) }

// IsAuthFailure reports a refused login (SQLSTATE class 28: wrong password,
// unknown role, pg_hba rejection): a configuration error, not worth
// retrying.
func IsAuthFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28")
}

// IsDenied reports that the database refused an operation for want of a privilege
// (insufficient_privilege, SQLSTATE 42501: permission denied for a schema, a table, the
// database): the role's grants, not worth retrying.
func IsDenied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// pgTx adapts pgx.Tx to dedupdriver.Tx.
type pgTx struct{ tx pgx.Tx }

func (t *pgTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (t *pgTx) Query(ctx context.Context, sql string, args ...any) (dedupdriver.Rows, error) {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

func (t *pgTx) QueryRow(ctx context.Context, sql string, args ...any) dedupdriver.Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

func (t *pgTx) Commit(ctx context.Context) error { return t.tx.Commit(ctx) }

func (t *pgTx) Rollback(ctx context.Context) error {
	if err := t.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

func (t *pgTx) Unwrap() any { return t.tx }

type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}
