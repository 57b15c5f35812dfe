package sqlitedriver

import (
	"context"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.ActionJournal = (*Driver)(nil)

func (d *Driver) RecordMarkerAction(ctx context.Context, a dedupdriver.MarkerAction) error {
	j := d.journal()
	_, err := d.db.ExecContext(ctx, dedupdriver.InsertMarkerAction(j.actions, nowExpr), dedupdriver.MarkerActionArgs(a)...)
	return j.classifyActions(err)
}

func (d *Driver) ListMarkerActions(ctx context.Context, limit int) ([]dedupdriver.MarkerAction, error) {
	j := d.journal()
	rows, err := d.db.QueryContext(ctx, dedupdriver.ListMarkerActions(j.actions), limit)
	if err != nil {
		return nil, j.classifyActions(err)
	}
	defer rows.Close()
	var out []dedupdriver.MarkerAction
	for rows.Next() {
		var a dedupdriver.MarkerAction
		var at any
		if err := rows.Scan(dedupdriver.MarkerActionDest(&a, &at)...); err != nil {
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
