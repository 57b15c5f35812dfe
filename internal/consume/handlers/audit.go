package handlers

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/consume"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
)

// audit is an append-only activity feed: one row in audit_log per event, of any type, with
// where it was read from. It has no unique constraint on the event id on purpose: the
// markers are what keeps an event from being recorded twice, and a second row for one
// event is the visible proof that they failed (the crash test counts them).
type audit struct {
	consumer string
	d        dialect
	table    string
}

func newAudit(cfg Config, d dialect) *audit {
	return &audit{consumer: cfg.Consumer, d: d, table: d.table(TableAuditLog)}
}

func (a *audit) Name() string { return NameAudit }

func (a *audit) Migrate(ctx context.Context, tx *dedup.Tx) error {
	ts := a.d.timestamp()
	return exec(ctx, tx, `CREATE TABLE IF NOT EXISTS `+a.table+` (
	id                `+a.d.serial()+`,
	consumer          text    NOT NULL,
	event_id          text    NOT NULL,
	event_type        text    NOT NULL DEFAULT '',
	source            text    NOT NULL DEFAULT '',
	aggregate_type    text    NOT NULL DEFAULT '',
	aggregate_id      text    NOT NULL DEFAULT '',
	aggregate_version bigint,
	topic             text    NOT NULL,
	"partition"       integer NOT NULL,
	"offset"          bigint  NOT NULL,
	occurred_at       `+ts+`,
	data              text    NOT NULL DEFAULT '',
	recorded_at       `+ts+` NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS `+a.d.index(TableAuditLog, "event_idx")+` ON `+a.table+` (consumer, event_id)`)
}

func (a *audit) Check(ctx context.Context, tx *dedup.Tx) error {
	return checkTables(ctx, tx, a.table)
}

func (a *audit) Handle(ctx context.Context, tx *dedup.Tx, ev envelope.Event, rec *kgo.Record) (consume.Outcome, error) {
	var version any
	if ev.HasVersion {
		version = ev.Version
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+a.table+` (consumer, event_id, event_type, source, aggregate_type, aggregate_id,
	aggregate_version, topic, "partition", "offset", occurred_at, data, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		a.consumer, ev.ID, ev.Type, ev.Source, ev.AggregateType, ev.AggregateID, version,
		rec.Topic, rec.Partition, rec.Offset, a.d.ts(ev.Time), string(ev.Data), a.d.ts(nowUTC()))
	if err != nil {
		return 0, err
	}
	return consume.Applied, nil
}
