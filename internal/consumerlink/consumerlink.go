// Package consumerlink holds the consumer runner's knobs that only fieldwork itself uses
// (the CLI, its benchmark and its tests) without widening the public package consumer's
// API: consumer sets these functions in its init. An option they return is a consumer.Opt,
// given as any; nothing outside this module can import this package.
package consumerlink

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/schema"
)

var (
	// Schemas returns the option that decodes registry-framed values through d before their
	// envelope is read (docs/design.md §3.6). Without it a framed value is dead-lettered as
	// unsupported.
	Schemas func(d *schema.Decoder) any
	// TxPerEvent returns the option that runs one database transaction per event instead of
	// one per batch (the benchmark's baseline; --tx-per-event).
	TxPerEvent func(on bool) any
	// PerEvent returns the option that applies each fresh event with Handle under its own
	// savepoint even when the handler is a BatchHandler (--per-event).
	PerEvent func(on bool) any
	// Prepare readies st for the handler h (a consumer.Handler) before consuming: with
	// migrate it applies the store's pending migrations and then the handler's (Migrator),
	// in one transaction; without, it checks that the store is at this binary's version and,
	// when h is a Checker, that h's tables exist. It returns the migration steps applied.
	Prepare func(ctx context.Context, st *dedup.Store, h any, migrate bool) ([]dedup.MigrationStep, error)
	// ApplyBatch applies recs, records of one partition in offset order, through the runner r
	// (a *consumer.Runner that is not run) as one of its batches is applied, without Kafka:
	// decoded, then one transaction of the handler's batch path, the claim and the effects in
	// one statement where the handler writes one. It returns the events processed. The
	// benchmark's ceiling of a handler: what the database allows it with no client around it.
	ApplyBatch func(ctx context.Context, r any, recs []*kgo.Record) (int, error)
)
