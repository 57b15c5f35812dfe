package pgdriver

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/internal/dedup/dedupdriver"
)

var _ dedupdriver.GroupJournal = (*Driver)(nil)

func (d *Driver) RecordGroupAction(ctx context.Context, a dedupdriver.GroupAction) error {
	j := d.journal()
	_, err := d.pool.Exec(ctx, dedupdriver.InsertGroupAction(j.groups, "now()"), dedupdriver.GroupActionArgs(a)...)
	return j.classifyGroups(err)
}

func scanGroupAction(r pgx.Row) (dedupdriver.GroupAction, error) {
	var a dedupdriver.GroupAction
	err := r.Scan(dedupdriver.GroupActionDest(&a, &a.At)...)
	a.At = a.At.UTC()
	return a, err
}

func (d *Driver) GetGroupAction(ctx context.Context, id string) (*dedupdriver.GroupAction, error) {
	j := d.journal()
	a, err := scanGroupAction(d.pool.QueryRow(ctx, dedupdriver.GetGroupAction(j.groups), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, j.classifyGroups(err)
	}
	return &a, nil
}

func (d *Driver) ListGroupActions(ctx context.Context, limit int) ([]dedupdriver.GroupAction, error) {
	j := d.journal()
	rows, err := d.pool.Query(ctx, dedupdriver.ListGroupActions(j.groups), limit)
	if err != nil {
		return nil, j.classifyGroups(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.GroupAction, error) { return scanGroupAction(r) })
	return out, j.classifyGroups(err)
}
