package pgdriver

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.ActionJournal = (*Driver)(nil)

func (d *Driver) RecordMarkerAction(ctx context.Context, a dedupdriver.MarkerAction) error {
	j := d.journal()
	_, err := d.pool.Exec(ctx, `INSERT INTO `+j.actions+` (action, marker_table, operator, reason, selection, counts, deleted, error)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''))`, a.Action, a.MarkerTable, a.Operator, a.Reason, a.Selection, a.Counts, a.Deleted, a.Error)
	return j.classifyActions(err)
}

func (d *Driver) ListMarkerActions(ctx context.Context, limit int) ([]dedupdriver.MarkerAction, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, `SELECT id, action, marker_table, operator, reason, selection, counts, deleted, COALESCE(error, ''), created_at
FROM `+j.actions+` ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, j.classifyActions(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.MarkerAction, error) {
		var a dedupdriver.MarkerAction
		err := r.Scan(&a.ID, &a.Action, &a.MarkerTable, &a.Operator, &a.Reason, &a.Selection, &a.Counts, &a.Deleted, &a.Error, &a.At)
		a.At = a.At.UTC()
		return a, err
	})
	return out, j.classifyActions(err)
}
