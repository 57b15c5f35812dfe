package consume

import (
	"context"
	"fmt"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// Prepare readies the store for h before consuming. With migrate it applies the store's
// pending migrations and then h.Migrate, in one transaction; without, it checks that the
// store is at this binary's version (dedup.Store.Verify: ErrNotMigrated tells the operator
// to migrate) and, when h is a Checker, that h's tables exist. It returns the migration
// steps applied to the store.
func Prepare(ctx context.Context, st *dedup.Store, h Handler, migrate bool) ([]dedup.MigrationStep, error) {
	if !migrate {
		if err := st.Verify(ctx); err != nil {
			return nil, err
		}
		if c, ok := h.(Checker); ok {
			if err := st.InTx(ctx, func(tx *dedup.Tx) error { return c.Check(ctx, tx) }); err != nil {
				return nil, fmt.Errorf("handler %s: %w", h.Name(), err)
			}
		}
		return nil, nil
	}
	steps, err := st.Migrate(ctx, false)
	if err != nil {
		return nil, err
	}
	if err := st.InTx(ctx, func(tx *dedup.Tx) error { return h.Migrate(ctx, tx) }); err != nil {
		return steps, fmt.Errorf("migrate the tables of handler %s: %w", h.Name(), err)
	}
	return steps, nil
}
