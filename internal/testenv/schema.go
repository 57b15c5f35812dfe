package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGSchema returns a new schema name on the test PostgreSQL (DSN), prefix and random hex;
// the schema, once something creates it, is dropped at cleanup and a failure to drop it
// fails the test.
func PGSchema(t testing.TB, prefix string) string {
	t.Helper()
	dsn := DSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	t.Cleanup(func() {
		if err := DropSchema(dsn, schema); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// DropSchema drops a PostgreSQL schema and everything in it, bounded by 30 seconds; a schema
// that does not exist costs one connection.
func DropSchema(dsn, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
	return err
}
