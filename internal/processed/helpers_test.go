package processed_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

var schemaSeq atomic.Int64

// pgStore opens a store on the real PostgreSQL in a schema of its own, migrated when
// migrate is set, dropped at cleanup.
func pgStore(t *testing.T, migrate bool) *dedup.Store {
	t.Helper()
	schema := fmt.Sprintf("fwp_%d_%d", time.Now().UnixNano()%1_000_000_000, schemaSeq.Add(1))
	ctx := context.Background()
	st, err := dedup.Open(ctx, testenv.DSN(t), dedup.Options{Schema: schema})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		defer st.Close()
		_ = st.InTx(context.Background(), func(tx *dedup.Tx) error {
			_, err := tx.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
			return err
		})
	})
	if migrate {
		if _, err := st.Migrate(ctx, false); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	return st
}

// mark writes consumer's markers for events, as a consumer would after handling them.
func mark(t *testing.T, st *dedup.Store, consumer string, events ...dedup.Marker) {
	t.Helper()
	err := st.InTx(context.Background(), func(tx *dedup.Tx) error {
		_, err := st.Claim(context.Background(), tx, consumer, events)
		return err
	})
	if err != nil {
		t.Fatalf("mark %d events for %s: %v", len(events), consumer, err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}
