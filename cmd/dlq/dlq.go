// Package dlq is the dlq command group: list, show and stats of dead-letter topics.
package dlq

import (
	"context"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// dlqLong is the group's help; the conventions it names are dlq's declarations.
var dlqLong = strings.Join(output.Wrap("Read dead-letter topics of every convention an operator meets ("+
	strings.Join(dlq.ConventionTitles(), ", ")+") as one view: where the record failed (original topic, "+
	"partition, offset), why (reason, error class, message), and which consumer gave up on it.", 95), "\n") + `

  dlq list                      dead letters, filtered; status with a store
  dlq show T/P/O                one dead letter: metadata, headers, event, value, replay command
  dlq stats                     per topic and per (original topic, reason, error class)

Without --topic or --pattern the commands read every topic the configured pattern matches
(FIELDWORK_DLQ_PATTERN, else the context's dlq_pattern), else the default: names ending in
.dlq, -dlq, _dlq, .dlt, -dlt, .deadletter, -dead-letter-queue, _poison (and the other
separators), starting with dlq-, dlq_, dlt- or deadletter- (Kafka Connect's dlq-s3-sink), and
Spring's retry topics (-retry, -retry-N), case ignored. stderr says which pattern was used
and how many topics it matched. Scans read the offsets fixed when they start and never wait for new records, except
dlq list --follow, which goes on printing new dead letters until interrupted.

With a dedup store (--dsn, FIELDWORK_DSN or the context's dsn) each dead letter has a status
for --consumer (default: the consumer group the dead letter names):
  pending    the consumer has no marker for the event: it still needs work
  replayed   a journaled replay sent it back and there is no marker yet
  resolved   the consumer has a marker for the event: it was processed since
  stale      the consumer has a marker but ignored the event as stale: it had a newer
             version of the aggregate, so the fix changed nothing
  unknown    no event id (or no consumer) to look up
--no-status skips the store.`

// NewCmdDLQ is the dlq group: list, show and summarise dead-letter topics of every convention.
func NewCmdDLQ(f *cmdutil.Factory) *cobra.Command {
	// The store-naming flags are this command's: bound here, read by the store its commands open.
	naming := new(dedup.Options)
	f = f.WithStoreNaming(naming)
	cmd := cmdutil.NewGroup("dlq <command>", "List, show and summarise dead-letter topics", dlqLong,
		NewCmdDLQList(f, nil),
		NewCmdDLQShow(f, nil),
		NewCmdDLQStats(f, nil),
	)
	cmdutil.RegisterStoreFlags(cmd, cmd.PersistentFlags(), naming)
	return cmd
}

// dlqDeps are what the dlq commands need from the factory, built lazily so that parsing,
// --help and usage errors never dial a broker or open a database.
type dlqDeps struct {
	cmdutil.StoreDeps
	// StoreConfigured reports whether a DSN is configured (flag, environment or context).
	StoreConfigured func() (bool, error)
	Now             func() time.Time
	// DLQPattern is the configured dead-letter topic pattern (environment or context).
	DLQPattern cmdutil.DLQPattern
}

func newDLQDeps(f *cmdutil.Factory) dlqDeps {
	return dlqDeps{StoreDeps: cmdutil.NewStoreDeps(f), StoreConfigured: f.StoreConfigured, Now: f.Now, DLQPattern: f.DLQPattern}
}

// lookup is what the status flags need to look statuses up.
func (d dlqDeps) lookup() cmdutil.DLQStoreDeps {
	return cmdutil.DLQStoreDeps{Streams: d.Streams, Store: d.Store, StoreConfigured: d.StoreConfigured}
}

// dlqSelection are the flags that choose dead letters, shared by list, show and stats: the
// topics (--topic, --pattern), the filters and the status lookup, and what parsing makes of
// them.
type dlqSelection struct {
	TopicFlags  cmdutil.DLQTopicFlags
	FilterFlags cmdutil.DLQFilterFlags
	StatusFlags cmdutil.DLQStatusFlags

	// Set by parsing.
	Pattern *regexp.Regexp
	Filter  dlq.Filter
}

// reading is the start of a read of dead letters by dlq list or stats: the topics the
// selection resolved to, the status lookup, and the progress line; close ends both.
type reading struct {
	topics []string
	// pattern found the topics (nil when they were named with --topic).
	pattern  *regexp.Regexp
	lookup   dlq.StatusLookup
	progress *output.Progress
	close    func()
}

// open resolves the selection's topics on c, then calls before with them (a read that needs
// more of the cluster first, such as retention), opens the status lookup, paces the
// collector for the read (gcpace: a read that looks statuses up holds a batch of dead letters
// while it does) and starts the progress line, labelled verb.
func (s *dlqSelection) open(ctx context.Context, c *kafka.Cluster, d dlqDeps, verb string, before func([]string) error) (*reading, error) {
	topics, pattern, err := s.TopicFlags.Resolve(ctx, c, s.Pattern, d.DLQPattern, d.Streams)
	if err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(topics); err != nil {
			return nil, err
		}
	}
	lookup, closeStore, err := s.StatusFlags.Open(ctx, d.lookup())
	if err != nil {
		return nil, err
	}
	floor := uint64(gcpace.ReadFloor)
	if lookup.Enabled() {
		floor = gcpace.StatusFloor
	}
	gcpace.Floor(os.Getenv, floor)
	progress := dlqProgress(d.Streams, verb, topics)
	return &reading{topics: topics, pattern: pattern, lookup: lookup, progress: progress, close: func() { progress.Stop(); closeStore() }}, nil
}

// register registers the topic flags, the filters of filters and the status flags of status.
func (s *dlqSelection) register(cmd *cobra.Command, filters cmdutil.DLQFilterSet, status cmdutil.DLQStatusSet) {
	s.TopicFlags.Register(cmd.Flags())
	s.FilterFlags.Register(cmd, filters)
	s.StatusFlags.Register(cmd.Flags(), status)
}

// parse compiles the topic pattern and the filters, relative to now.
func (s *dlqSelection) parse(cmd *cobra.Command, now time.Time) error {
	var err error
	if s.Pattern, err = s.TopicFlags.Compile(); err != nil {
		return err
	}
	s.Filter, err = s.FilterFlags.Filter(cmd, now)
	return err
}
