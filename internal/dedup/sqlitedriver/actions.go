package sqlitedriver

import (
	"context"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.ActionJournal = (*Driver)(nil)

func (d *Driver) RecordMarkerAction(ctx context.Context, a dedupdriver.MarkerAction) error {
	j := d.journal()
	_, err := d.db.ExecContext(ctx, `INSERT INTO `+j.actions+` (action, marker_table, operator, reason, selection, counts, deleted, error)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''))`, a.Action, a.MarkerTable, a.Operator, a.Reason, a.Selection, a.Counts, a.Deleted, a.Error)
	return j.classifyActions(err)
}

func (d *Driver) ListMarkerActions(ctx context.Context, limit int) ([]dedupdriver.MarkerAction, error) {
	j := d.journal()
	rows, err := d.db.QueryContext(ctx, `SELECT id, action, marker_table, operator, reason, selection, counts, deleted, COALESCE(error, ''), created_at
FROM `+j.actions+` ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, j.classifyActions(err)
	}
	defer rows.Close()
	var out []dedupdriver.MarkerAction
	for rows.Next() {
		var a dedupdriver.MarkerAction
		var at any
		if err := rows.Scan(&a.ID, &a.Action, &a.MarkerTable, &a.Operator, &a.Reason, &a.Selection, &a.Counts, &a.Deleted, &a.Error, &at); err != nil {
			return nil, err
		}
		var err error
		if a.At, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, j.classifyActions(rows.Err())
}
