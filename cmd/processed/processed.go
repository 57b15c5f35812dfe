// Package processed is the processed command group: queries on the processed-event markers,
// the gap finder, and the commands that remove markers.
package processed

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// processedLong is the group's help.
const processedLong = `Query the processed-event markers (consumer, event_id) that idempotent consumers write in
their own database, find the events of a Kafka range a consumer has no marker for, and remove
markers (by age, or by event id so that events are processed again).

  processed get EVENT_ID        whether, when and from where each consumer processed it
  processed list                markers newest first, by consumer, time and aggregate; paged
  processed stats               per consumer: count, first/last, rate; table size (Postgres)
  processed check --topic T     events of a Kafka range without a marker; exit 3 when any
  processed prune --older-than  delete old markers, never inside a topic's replay horizon
  processed forget EVENT_ID…    delete markers so the events are processed again
  processed journal             the executed prunes and forgets: who, why, what, how many

The store is --dsn (postgres://… or sqlite:PATH; env FIELDWORK_DSN, or the context's dsn).
--schema and --table name the marker table; the --column-* flags let the queries read an
existing table whose columns have other names, and --preset the processed-message table of
another library as its own DDL creates it on PostgreSQL: eventuate (received_messages),
masstransit (InboxState), cap (received; --status failed lists its Failed rows), nservicebus
(the endpoint's OutboxData). The column types are read from the table; columns it lacks
(topic, partition, offset, aggregate) are shown as - and said on stderr, and what needs them
refuses. forget and prune never delete a row whose outgoing messages are not yet delivered,
and forget is refused on CAP's table (CAP does not skip a message by its row).

prune and forget are dry runs unless --execute: they print what they would delete. With
--execute they ask for confirmation on a terminal; without a terminal (scripts, CI) they
refuse unless --yes is given: pass --execute --yes in scripts. Each executed one is journaled
with its operator (--operator, $USER or $LOGNAME), --reason, selection and counts: processed
journal lists them.`

// NewCmdProcessed is the processed group: queries on the processed-event markers consumers
// write, the gap finder, and the two commands that remove markers.
func NewCmdProcessed(f *cmdutil.Factory) *cobra.Command {
	// The store-naming flags are this command's: bound here, read by the store its commands open.
	naming := new(dedup.Options)
	f = f.WithStoreNaming(naming)
	cmd := cmdutil.NewGroup("processed <command>", "Query and manage processed-event markers", processedLong,
		NewCmdProcessedGet(f, nil),
		NewCmdProcessedList(f, nil),
		NewCmdProcessedStats(f, nil),
		NewCmdProcessedCheck(f, nil),
		NewCmdProcessedPrune(f, nil),
		NewCmdProcessedForget(f, nil),
		NewCmdProcessedJournal(f, nil),
	)
	cmdutil.RegisterStoreFlags(cmd, cmd.PersistentFlags(), naming)
	return cmd
}

// consumerText names a consumer in a sentence, after prefix: "consumer billing"; ifAll when
// the markers of every consumer are meant (no consumer given).
func consumerText(prefix, consumer, ifAll string) string {
	if consumer == "" {
		return ifAll
	}
	return prefix + "consumer " + consumer
}

// kafkaDeps adds the lazily connected cluster for the processed commands that read topics.
type kafkaDeps struct {
	Kafka func(context.Context) (*kafka.Cluster, error)
}
