package pgdriver

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.ActionJournal = (*Driver)(nil)

func (d *Driver) RecordMarkerAction(ctx context.Context, a dedupdriver.MarkerAction) error {
	j := d.journal()
	_, err := d.pool.Exec(ctx, dedupdriver.InsertMarkerAction(j.actions, "now()"), dedupdriver.MarkerActionArgs(a)...)
	return j.classifyActions(err)
}

func (d *Driver) ListMarkerActions(ctx context.Context, limit int) ([]dedupdriver.MarkerAction, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, dedupdriver.ListMarkerActions(j.actions), limit)
	if err != nil {
		return nil, j.classifyActions(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.MarkerAction, error) {
		var a dedupdriver.MarkerAction
		err := r.Scan(dedupdriver.MarkerActionDest(&a, &a.At)...)
		a.At = a.At.UTC()
		return a, err
	})
	return out, j.classifyActions(err)
}
