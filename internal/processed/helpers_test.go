package processed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
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

// jsonFields is the sorted names of the fields v's JSON object holds, as a command prints it.
func jsonFields(v any) []string {
	b, _ := json.Marshal(v)
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields)
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkServices is what a gap-finder test reads and writes: the real cluster and a migrated
// store of its own.
func checkServices(t *testing.T) (*kafka.Cluster, *dedup.Store) {
	t.Helper()
	return testenv.Cluster(t), pgStore(t, true)
}
