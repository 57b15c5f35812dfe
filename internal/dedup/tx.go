package dedup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

// Rows are the rows of Tx.Query; Close them.
type Rows = dedupdriver.Rows

// Row is the row of Tx.QueryRow.
type Row = dedupdriver.Row

// Tx is an open transaction. The caller claims events in it, runs its own
// side effects in it (Exec, Query, or the driver's own transaction through
// Pgx or SQL) and commits or rolls back. A Tx is not safe for concurrent use.
//
// SQL passed to Exec, Query and QueryRow is the driver's dialect; both
// drivers accept $1-style positional placeholders.
type Tx struct {
	store *Store
	tx    dedupdriver.Tx
	// adopted is the caller's own transaction (Store.Adopt): the caller ends it.
	adopted bool
}

// ErrAdopted is returned by Commit and Rollback of an adopted transaction (Store.Adopt): the
// transaction is the caller's, and only the caller commits or rolls it back.
var ErrAdopted = errors.New("the transaction is the caller's own (adopted): commit or roll it back where it was begun")

// Adopt returns a Tx over the caller's own transaction, begun on the store's database: a
// pgx.Tx on a PostgreSQL store, a *sql.Tx on an SQLite store; anything else is an error. Claim,
// Unclaim and SetOutcome work in it as in a Tx of Begin, and its markers commit or roll back
// with the caller's transaction. Commit and Rollback of the returned Tx do nothing and return
// ErrAdopted: the caller ends its transaction itself, as it would without the store.
func (s *Store) Adopt(tx any) (*Tx, error) {
	dtx, err := s.drv.Adopt(tx)
	if err != nil {
		return nil, fmt.Errorf("adopt a transaction on %s: %w", s.Table(), err)
	}
	return &Tx{store: s, tx: dtx, adopted: true}, nil
}

// Adopted reports whether the transaction is the caller's own (Store.Adopt).
func (t *Tx) Adopted() bool { return t.adopted }

// Driver is "postgres" or "sqlite".
func (t *Tx) Driver() string { return t.store.Driver() }

// Exec runs a statement and returns the number of rows it affected.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return t.tx.Exec(ctx, sql, args...)
}

// Query runs a query; the caller closes the rows.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	return t.tx.Query(ctx, sql, args...)
}

// QueryRow runs a query expected to return at most one row.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

// Commit makes the transaction's claims and side effects durable together.
// When it returns an error the transaction is over and nothing in it is
// durable, except in the window where the commit reached the database and
// the connection broke before the acknowledgement.
func (t *Tx) Commit(ctx context.Context) error {
	if t.adopted {
		return ErrAdopted
	}
	if err := t.tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit transaction on %s: %w", t.store.Table(), err)
	}
	return nil
}

// Rollback discards the transaction. It returns nil when the transaction
// has already ended, so `defer tx.Rollback(ctx)` is safe after Commit. On an adopted
// transaction it does nothing and returns ErrAdopted.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.adopted {
		return ErrAdopted
	}
	if err := t.tx.Rollback(ctx); err != nil {
		return fmt.Errorf("roll back transaction on %s: %w", t.store.Table(), err)
	}
	return nil
}

// Savepoint sets a savepoint named name (a validated identifier). On
// Postgres, an error inside the savepoint aborts only up to it: RollbackTo
// makes the transaction usable again.
func (t *Tx) Savepoint(ctx context.Context, name string) error {
	return t.savepointStmt(ctx, "SAVEPOINT", name)
}

// RollbackTo undoes everything since the savepoint name (claims included)
// and keeps the savepoint, so it can be rolled back to again.
func (t *Tx) RollbackTo(ctx context.Context, name string) error {
	return t.savepointStmt(ctx, "ROLLBACK TO SAVEPOINT", name)
}

// Release forgets the savepoint name, keeping what was done since it.
func (t *Tx) Release(ctx context.Context, name string) error {
	return t.savepointStmt(ctx, "RELEASE SAVEPOINT", name)
}

func (t *Tx) savepointStmt(ctx context.Context, verb, name string) error {
	if err := ValidateIdentifier("savepoint", name); err != nil {
		return err
	}
	if _, err := t.tx.Exec(ctx, verb+` "`+name+`"`); err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	return nil
}

// Pgx returns the underlying pgx transaction on Postgres.
func (t *Tx) Pgx() (pgx.Tx, bool) {
	tx, ok := t.tx.Unwrap().(pgx.Tx)
	return tx, ok
}

// SQL returns the underlying database/sql transaction on SQLite.
func (t *Tx) SQL() (*sql.Tx, bool) {
	tx, ok := t.tx.Unwrap().(*sql.Tx)
	return tx, ok
}
