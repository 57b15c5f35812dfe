package consumer

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/schema"
)

func init() {
	consumerlink.Schemas = func(d *schema.Decoder) any { return optFunc(func(c *config) { c.Schemas = d }) }
	consumerlink.TxPerEvent = func(on bool) any { return optFunc(func(c *config) { c.TxPerEvent = on }) }
	consumerlink.PerEvent = func(on bool) any { return optFunc(func(c *config) { c.PerEvent = on }) }
	consumerlink.Prepare = func(ctx context.Context, st *dedup.Store, h any, migrate bool) ([]dedup.MigrationStep, error) {
		return prepare(ctx, st, h.(Handler), migrate)
	}
	consumerlink.ApplyBatch = func(ctx context.Context, r any, recs []*kgo.Record) (int, error) {
		return r.(*Runner).applyAlone(ctx, recs)
	}
}

// Migrate creates or updates the store's tables (inbox.Store.Migrate) and then, when h is a
// Migrator, the handler's own tables, in one transaction. It is idempotent; run it before
// Run when the service deploys a new version, or at every start.
func Migrate(ctx context.Context, store *inbox.Store, h Handler) error {
	if store == nil {
		return fmt.Errorf("migrate: no inbox store")
	}
	_, err := prepare(ctx, inboxlink.Store(store), h, true)
	return err
}

// Check tells, before Run, whether the store is migrated to this version of fieldwork (else
// the error says to run Migrate or `fieldwork db migrate`) and, when h is a Checker, whether
// h's tables exist. A service that does not migrate at start calls it first, so that a missing
// table stops it with a clear message instead of dead-lettering every event.
func Check(ctx context.Context, store *inbox.Store, h Handler) error {
	if store == nil {
		return fmt.Errorf("check: no inbox store")
	}
	_, err := prepare(ctx, inboxlink.Store(store), h, false)
	return err
}

// handlerName is h's name: its own (Namer), else name, else "handler".
func handlerName(h Handler, name string) string {
	if n, ok := h.(Namer); ok && n.Name() != "" {
		return n.Name()
	}
	if name != "" {
		return name
	}
	return "handler"
}

// prepare readies the store for h before consuming (consumerlink.Prepare). With migrate it
// applies the store's pending migrations and then h's (Migrator), in one transaction;
// without, it checks that the store is at this binary's version (dedup.Store.Verify:
// ErrNotMigrated tells the operator to migrate) and, when h is a Checker, that h's tables
// exist. It returns the migration steps applied to the store.
func prepare(ctx context.Context, st *dedup.Store, h Handler, migrate bool) ([]dedup.MigrationStep, error) {
	inTx := func(fn func(tx *inbox.Tx) error) error {
		return st.InTx(ctx, func(tx *dedup.Tx) error { return fn(inboxlink.NewTx(tx).(*inbox.Tx)) })
	}
	if !migrate {
		if err := st.Verify(ctx); err != nil {
			return nil, err
		}
		if c, ok := h.(Checker); ok {
			if err := inTx(func(tx *inbox.Tx) error { return c.Check(ctx, tx) }); err != nil {
				return nil, fmt.Errorf("handler %s: %w", handlerName(h, ""), err)
			}
		}
		return nil, nil
	}
	steps, err := st.Migrate(ctx, false)
	if err != nil {
		return nil, err
	}
	if m, ok := h.(Migrator); ok {
		if err := inTx(func(tx *inbox.Tx) error { return m.Migrate(ctx, tx) }); err != nil {
			return steps, fmt.Errorf("migrate the tables of handler %s: %w", handlerName(h, ""), err)
		}
	}
	return steps, nil
}
