package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.GroupJournal = (*Driver)(nil)

func (d *Driver) RecordGroupAction(ctx context.Context, a dedupdriver.GroupAction) error {
	j := d.journal()
	_, err := d.db.ExecContext(ctx, dedupdriver.InsertGroupAction(j.groups, nowExpr), dedupdriver.GroupActionArgs(a)...)
	return j.classifyGroups(err)
}

type scanner interface{ Scan(dest ...any) error }

func scanGroupAction(r scanner) (dedupdriver.GroupAction, error) {
	var a dedupdriver.GroupAction
	var at any
	if err := r.Scan(dedupdriver.GroupActionDest(&a, &at)...); err != nil {
		return a, err
	}
	var err error
	a.At, err = parseTime(at)
	return a, err
}

func (d *Driver) GetGroupAction(ctx context.Context, id string) (*dedupdriver.GroupAction, error) {
	j := d.journal()
	a, err := scanGroupAction(d.db.QueryRowContext(ctx, dedupdriver.GetGroupAction(j.groups), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, j.classifyGroups(err)
	}
	return &a, nil
}

func (d *Driver) ListGroupActions(ctx context.Context, limit int) ([]dedupdriver.GroupAction, error) {
	j := d.journal()
	rows, err := d.db.QueryContext(ctx, dedupdriver.ListGroupActions(j.groups), limit)
	if err != nil {
		return nil, j.classifyGroups(err)
	}
	defer rows.Close()
	var out []dedupdriver.GroupAction
	for rows.Next() {
		a, err := scanGroupAction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, j.classifyGroups(rows.Err())
}
