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
	_, err := d.pool.Exec(ctx, `INSERT INTO `+j.groups+` (id, action, group_name, topic, dead_letter_topic, operator, reason, offsets, parked, undoes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''))`, a.ID, a.Action, a.Group, a.Topic, a.DeadLetterTopic, a.Operator, a.Reason, a.Offsets, a.Parked, a.Undoes)
	return j.classifyGroups(err)
}

// groupActionSelect reads an action and the undo that names it.
func groupActionSelect(j journalTables) string {
	return `SELECT a.id, a.action, a.group_name, a.topic, a.dead_letter_topic, a.operator, a.reason, a.offsets, a.parked,
COALESCE(a.undoes, ''), COALESCE(u.id, ''), a.created_at
FROM ` + j.groups + ` a LEFT JOIN ` + j.groups + ` u ON u.undoes = a.id`
}

func scanGroupAction(r pgx.Row) (dedupdriver.GroupAction, error) {
	var a dedupdriver.GroupAction
	err := r.Scan(&a.ID, &a.Action, &a.Group, &a.Topic, &a.DeadLetterTopic, &a.Operator, &a.Reason, &a.Offsets, &a.Parked, &a.Undoes, &a.UndoneBy, &a.At)
	a.At = a.At.UTC()
	return a, err
}

func (d *Driver) GetGroupAction(ctx context.Context, id string) (*dedupdriver.GroupAction, error) {
	j := d.journal()
	a, err := scanGroupAction(d.pool.QueryRow(ctx, groupActionSelect(j)+` WHERE a.id = $1`, id))
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
	rows, err := d.pool.Query(ctx, groupActionSelect(j)+` ORDER BY a.created_at DESC, a.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, j.classifyGroups(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dedupdriver.GroupAction, error) { return scanGroupAction(r) })
	return out, j.classifyGroups(err)
}
