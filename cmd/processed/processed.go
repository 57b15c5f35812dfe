// Package processed is the processed command group: queries on the processed-event markers,
// the gap finder, and the commands that remove markers.
package processed

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
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

The store is --dsn (postgres://… or sqlite:PATH; env FIELDWORK_DSN, or the context's dsn).
--schema and --table name the marker table; the --column-* flags let the queries read an
existing table of the same shape whose columns have other names.

prune and forget ask for confirmation on a terminal. Without a terminal (scripts, CI) they
refuse unless --yes is given: pass --yes in scripts.`

// NewCmdProcessed is the processed group: queries on the processed-event markers consumers
// write, the gap finder, and the two commands that remove markers.
func NewCmdProcessed(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroup("processed <command>", "Query and manage processed-event markers", processedLong,
		NewCmdProcessedGet(f, nil),
		NewCmdProcessedList(f, nil),
		NewCmdProcessedStats(f, nil),
		NewCmdProcessedCheck(f, nil),
		NewCmdProcessedPrune(f, nil),
		NewCmdProcessedForget(f, nil),
	)
	cmdutil.RegisterStoreFlags(cmd.PersistentFlags(), &f.Dedup)
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

// markerColumns are the columns of a marker in tables and CSV.
var markerColumns = []output.Column[dedup.MarkerRow]{
	{Name: "consumer", Value: func(m dedup.MarkerRow) string { return m.Consumer }},
	{Name: "event_id", Value: func(m dedup.MarkerRow) string { return m.EventID }},
	{Name: "processed_at", Value: func(m dedup.MarkerRow) string { return cmdutil.FormatTime(m.ProcessedAt) }},
	{Name: "topic", Value: func(m dedup.MarkerRow) string { return m.Topic }},
	{Name: "partition", Value: func(m dedup.MarkerRow) string { return optInt(m.Partition) }},
	{Name: "offset", Value: func(m dedup.MarkerRow) string { return optInt(m.Offset) }},
	{Name: "aggregate_id", Value: func(m dedup.MarkerRow) string { return m.AggregateID }},
	{Name: "aggregate_version", Value: func(m dedup.MarkerRow) string { return optInt(m.AggregateVersion) }},
}

func optInt[T int32 | int64](v *T) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(int64(*v), 10)
}

// markerList writes markers as a list: absent values are "-" in a table and empty elsewhere.
func markerList(p *output.Printer, ms []dedup.MarkerRow, empty string) error {
	cols := markerColumns
	if p.Format == output.FormatTable {
		cols = make([]output.Column[dedup.MarkerRow], len(markerColumns))
		for i, c := range markerColumns {
			value := c.Value
			cols[i] = output.Column[dedup.MarkerRow]{Name: c.Name, Value: func(m dedup.MarkerRow) string { return cmdutil.OrDash(value(m)) }}
		}
	}
	return output.List(p, ms, cols, empty)
}

// tableRows renders values as the header and rows of a section with the given columns, "-"
// for what is absent.
func tableRows[T any](vs []T, cols []output.Column[T]) (header []string, rows [][]string) {
	for _, c := range cols {
		header = append(header, c.Name)
	}
	for _, v := range vs {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = cmdutil.OrDash(c.Value(v))
		}
		rows = append(rows, row)
	}
	return header, rows
}
