// Package consume is `fieldwork consume`, the reference idempotent consumer.
package consume

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consume/serve"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// DefaultMetricsAddr is where `fieldwork consume` serves Prometheus metrics by default:
// nowhere, so that the members of a group started on one host never collide on a port
// (docs/design.md §3.5); --metrics-addr turns them on.
const DefaultMetricsAddr = ""

// ConsumeOptions are the inputs of `fieldwork consume`: its flags. What it connects to comes
// with the run's cmdutil.Clients.
type ConsumeOptions struct {
	// Signals delivers SIGINT/SIGTERM to the run, which aborts at the second one (the
	// first cancels the command's context in Main). Nil in tests.
	Signals func() (<-chan os.Signal, func())

	// Naming is --schema and --table: the marker table, and the schema of the handler's.
	Naming dedup.Options

	Topics []string
	Group  string
	// ShareGroup is --share-group: a share group member instead of a consumer group's.
	ShareGroup string
	// StartEarliest is --start-earliest: a share group without a start of its own starts
	// from the earliest records.
	StartEarliest bool
	// VersionGuard is --version-guard (consumer.VersionGuard).
	VersionGuard    bool
	Consumer        string
	Handler         string
	Migrate         bool
	DLQTopic        string
	MaxAttempts     int
	MaxInfraRetries int
	BatchMax        int
	TxPerEvent      bool
	PerEvent        bool
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
	StopWhenIdle    time.Duration
	ShutdownTimeout time.Duration
	InstanceID      string
	SessionTimeout  time.Duration
	MetricsAddr     string
	LogFormat       string
	LogLevel        string
	WebhookURL      string
	WebhookTimeout  time.Duration
	// The dead-letter breaker: --breaker-consecutive, --breaker-ratio, --breaker-window,
	// --no-breaker.
	BreakerConsecutive int
	BreakerRatio       float64
	BreakerWindow      int
	NoBreaker          bool
}

// NewCmdConsume builds `fieldwork consume`; runF, when set, replaces the run (for tests of
// flag parsing).
func NewCmdConsume(f *cmdutil.Factory, runF func(context.Context, *ConsumeOptions) error) *cobra.Command {
	opts := &ConsumeOptions{
		Signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
			return ch, func() { signal.Stop(ch) }
		},
	}
	// --schema and --table are this command's: the store its run opens reads them.
	f = f.WithStoreNaming(&opts.Naming)
	cmd := &cobra.Command{
		Use:   "consume --topic T (--group G | --share-group G) --handler H",
		Short: "Run the reference idempotent consumer",
		Long: `Run fieldwork's reference consumer: a Kafka consumer group member that applies each event
once, durably, through a bundled handler, with its markers in the dedup store (--dsn).

Per partition and fetched batch (at most --batch-max records): decode (a malformed record
is dead-lettered); dedupe by event id; in one transaction claim the batch's markers and
apply each fresh event under a savepoint, so that a failed event is rolled back alone and
left unmarked; commit; produce the dead letters and wait for their acknowledgements; only
then commit the Kafka offsets. Partitions run concurrently; one partition is strictly
ordered. A crash at any point is safe: what is read again is skipped by its marker.

Handlers (--handler):
  projection  current state of each task in <schema>.task_state; an event applies only
              when its version is newer than the stored one (older: no-op, still marked;
              a version gap is counted and logged)
  audit       append-only activity feed, one row per event in <schema>.audit_log, which
              has no key and no index (create the index your queries need)
  webhook     POST each event to --webhook-url with an Idempotency-Key header derived from
              (consumer, event id); the delivery is recorded in <schema>.webhook_deliveries
              in the same transaction; 5xx, 429 and timeouts are retried, other 4xx are not

Failures: a database or broker that is unavailable, a serialization failure or a deadlock
retries the whole batch with capped exponential backoff and jitter (forever, or up to
--max-infra-retries) and never dead-letters. A handler's retryable error is retried in
place up to --max-attempts, then dead-lettered as exhausted; a permanent one is
dead-lettered at once as rejected; an event type the handler has no code for, as
unsupported. Dead letters go to <topic>.dlq (or --dlq-topic) with the original key, value
and headers and the fw.dlq.* headers; fieldwork creates no topic: a missing dead-letter
topic stops it at start. A dead-lettered event has no marker, so a replay after a fix is
handled. Each dead-letter topic's max.message.bytes sizes the producer; a dead letter that
still does not fit goes out as a bounded copy (its value cut, or left out) with
fw.dlq.value_omitted saying why and fw.dlq.value_bytes the original length. If even that is
refused (the topic deleted, not authorized), that partition stops at the record with an
error naming it, the others go on, and fieldwork exits 1 when it stops: no record is lost.

The dead-letter breaker stops the consumer when records keep failing (a schema it cannot
read, a handler bug just deployed) instead of emptying the topics into their dead-letter
topics: when more than --breaker-consecutive records in a row would be dead-lettered (in one
partition, or in the consumer with no record handled in between), or more than
--breaker-ratio of its last --breaker-window records, it trips at that record. Nothing is
dead-lettered or committed from that record on (the dead letters before it stay written),
the batches in flight finish the same way, the member leaves the group, and fieldwork exits
8 naming the most common failure of the window and its count. Fix the cause and run again:
the records from the trip on are read again. --no-breaker dead-letters every failing record,
however many.

The store must be migrated (fieldwork db migrate, or --migrate here, which also creates
the handler's table, and an SQLite file that does not exist; without it such a file is
refused as "no such store"). --schema and --table name the marker table; the handler's
table is in the same schema.

SIGINT or SIGTERM drains: batches in flight finish (within --shutdown-timeout), offsets are
committed, the member leaves the group, and fieldwork exits 0 with a summary on stdout. A
second signal abandons the batches in flight and exits 130 at once (still safe: nothing is
committed that is not done). --stop-when-idle exits 0 once no record has arrived for that
long AND this member holds partitions AND the group's committed offsets have reached the end
of every partition of the topics (not only this member's): a member that lost its
partitions, or whose group still has lag, keeps waiting. For tests, demos and runbooks.

Logs go to stderr (text on a terminal, JSON otherwise; --log-format), from INFO up off a
terminal and from WARN up on one (--log-level info shows the rest). Prometheus metrics are off
by default; --metrics-addr host:port serves them at /metrics (give each member on one host its
own port, or port 0 for any free one, logged): fieldwork_consume_events_total by
outcome (processed, duplicate, stale, dead_lettered, retried), the batch latency histogram,
lag per partition, dead letters by reason and writer, infrastructure retries, and the breaker's
fieldwork_consume_breaker_consecutive_failures, _window_failures, _tripped and _trips_total.

Share groups (--share-group G, Kafka 4.2 and later, instead of --group): the members read
every partition together, each record acquired by one member at a time, with no order within
a partition. The batches, markers, handlers and breaker are the same; each record is
acknowledged only after its batch commits: accepted when done (or dead-lettered by
fieldwork); released, for another delivery, when the handler fails retryably
(--max-attempts counts the attempts per delivery there, default 1) before the group's
share.delivery.count.limit, and dead-lettered as exhausted on the last delivery; poison is
rejected to the broker when the group has a dead-letter topic (errors.deadletterqueue.topic.name:
the broker writes the dead letter; fieldwork refuses to start when that path would lose the
record), else dead-lettered by fieldwork to <topic>.dlq and accepted. A member killed with
records in hand leaves them locked until the group's lock duration passes (30s by default);
they are then delivered again and skipped by their markers. A new share group starts at the
latest records: --start-earliest sets share.auto.offset.reset=earliest on a group that has no
such setting (a group that has one keeps it; the log says which). Out of order, an older
version can arrive after a newer one: --version-guard marks it stale before it reaches the
handler (the projection also ignores older versions itself). --stop-when-idle waits for
nothing delivered for that long and nothing left to deliver in the group (its lag), as a share
group has no committed offsets; the summary adds released, redelivered and
broker_dead_lettered, and the metrics fieldwork_consume_share_delivery_count,
_share_acks_total by ack, _share_ack_failures_total and the writer label of dead letters.`,
		Example: `  fieldwork consume --topic tasks --group task-projection --handler projection --dsn postgres://app@db/app --migrate
  fieldwork consume --topic tasks --group audit --handler audit --dsn sqlite:./fieldwork.db --migrate --stop-when-idle 5s
  fieldwork consume --topic tasks --group notifier --handler webhook --webhook-url https://hooks.example.com/tasks --migrate
  fieldwork consume --topic tasks --share-group task-workers --start-earliest --version-guard --handler projection --dsn sqlite:./fieldwork.db --migrate --stop-when-idle 5s`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.NoBreaker {
				for _, n := range []string{"breaker-consecutive", "breaker-ratio", "breaker-window"} {
					if cmd.Flags().Changed(n) {
						return fwerr.Usagef("--%s and --no-breaker: the breaker is off, give one or the other", n)
					}
				}
			}
			if err := opts.validate(); err != nil {
				return err
			}
			if opts.ShareGroup != "" {
				for _, n := range []string{"instance-id", "session-timeout"} {
					if cmd.Flags().Changed(n) {
						return fwerr.Usagef("--%s applies to a consumer group (--group), not to --share-group", n)
					}
				}
				if !cmd.Flags().Changed("max-attempts") {
					opts.MaxAttempts = 0 // the runner's share-group default: one attempt per delivery
				}
			}
			// The cluster is connected once before the run, so that a broker that cannot be
			// reached fails at start, exit 4; --migrate creates the store, without it an SQLite
			// file that does not exist is refused. A payload the run cannot decode is dead-lettered
			// and logged by the engine, not warned of after the run.
			need := cmdutil.NeedKafka | cmdutil.NeedStore | cmdutil.OwnSchemaProblems
			if opts.Migrate {
				need = cmdutil.NeedKafka | cmdutil.NeedNewStore | cmdutil.OwnSchemaProblems
			}
			return cmdutil.RunWith(cmd, f, need, opts, runF, consumeRun)
		},
	}
	fl := cmd.Flags()
	cmdutil.TopicsVar(fl, &opts.Topics, "topic", "source `topic` (repeat for several)", false)
	fl.StringVarP(&opts.Group, "group", cmdutil.Shorthand("group"), "", "Kafka consumer group")
	fl.StringVar(&opts.ShareGroup, "share-group", "", "Kafka share group (KIP-932) to join instead of a consumer group")
	fl.BoolVar(&opts.StartEarliest, "start-earliest", false, "with --share-group: a group with no share.auto.offset.reset of its own starts from the earliest records (set on the group)")
	fl.BoolVar(&opts.VersionGuard, "version-guard", false, "mark an event stale, without calling the handler, when its aggregate already has its version or a newer one")
	fl.StringVar(&opts.Handler, "handler", "", "handler: "+strings.Join(handlers.Names, ", "))
	fl.StringVar(&opts.Consumer, "consumer", "", "consumer name in the markers (default: the group)")
	fl.BoolVar(&opts.Migrate, "migrate", false, "migrate the dedup store and create the handler's table before consuming")
	cmdutil.TopicVar(fl, &opts.DLQTopic, "dlq-topic", "dead-letter topic for every source topic (default <topic>.dlq)")
	cmdutil.CountVar(fl, &opts.MaxAttempts, "max-attempts", consumer.DefaultMaxAttempts, "attempts of an event whose handler fails retryably, before it is dead-lettered as exhausted")
	fl.IntVar(&opts.MaxInfraRetries, "max-infra-retries", 0, "retries of a batch after infrastructure failures before giving up (0: forever)")
	fl.IntVar(&opts.BatchMax, "batch-max", consumer.DefaultBatchMax, "most records of one partition handled in one transaction")
	fl.BoolVar(&opts.TxPerEvent, "tx-per-event", false, "one database transaction per event instead of per batch (for comparison)")
	fl.BoolVar(&opts.PerEvent, "per-event", false, "apply each event with its own statements under a savepoint instead of the handler's batch statements (for comparison)")
	cmdutil.CountVar(fl, &opts.BreakerConsecutive, "breaker-consecutive", consumer.DefaultBreakerConsecutive, "stop (exit 8) when more than this many records in a row would be dead-lettered")
	cmdutil.ShareVar(fl, &opts.BreakerRatio, "breaker-ratio", consumer.DefaultBreakerRatio, "stop (exit 8) when more than this share of the last --breaker-window records would be dead-lettered (0.5 or 50%)")
	cmdutil.CountVar(fl, &opts.BreakerWindow, "breaker-window", consumer.DefaultBreakerWindow, "records the --breaker-ratio is judged over (the consumer's last ones, all partitions)")
	fl.BoolVar(&opts.NoBreaker, "no-breaker", false, "never stop for dead letters: dead-letter every failing record, however many")
	fl.Var(timespec.NewDurationValue(&opts.RetryBackoff, consumer.DefaultRetryBackoff), "retry-backoff", "first wait before retrying an event; doubles up to --retry-backoff-max")
	fl.Var(timespec.NewDurationValue(&opts.RetryBackoffMax, consumer.DefaultRetryBackoffMax), "retry-backoff-max", "longest wait between retries of an event")
	fl.Var(timespec.NewDurationValue(&opts.StopWhenIdle, 0).AllowZero(), "stop-when-idle", "exit 0 once nothing arrived for this long and the group is committed to the end of every partition, or a share group has nothing left to deliver (0: run until interrupted)")
	fl.Var(timespec.NewDurationValue(&opts.ShutdownTimeout, consumer.DefaultShutdownTimeout), "shutdown-timeout", "how long SIGINT/SIGTERM waits for batches in flight")
	fl.StringVar(&opts.InstanceID, "instance-id", "", "static group membership id (KIP-345): a restart with the same id keeps its partitions without a rebalance")
	fl.Var(timespec.NewDurationValue(&opts.SessionTimeout, 0).AllowZero(), "session-timeout", "group session timeout (default Kafka's 45s)")
	fl.StringVar(&opts.MetricsAddr, "metrics-addr", DefaultMetricsAddr, `serve Prometheus metrics at /metrics on this host:port (default off; port 0: any free port)`)
	fl.StringVar(&opts.LogFormat, "log-format", "auto", "log format on stderr: text, json, or auto (text on a terminal, else json)")
	fl.StringVar(&opts.LogLevel, "log-level", "", "log level: debug, info, warn, error (default: info, warn on a terminal)")
	fl.StringVar(&opts.WebhookURL, "webhook-url", "", "URL the webhook handler POSTs events to")
	fl.Var(timespec.NewDurationValue(&opts.WebhookTimeout, handlers.DefaultWebhookTimeout), "webhook-timeout", "timeout of one webhook delivery attempt")
	fl.StringVar(&opts.Naming.Schema, "schema", dedup.DefaultSchema, `schema of the marker and handler tables (on SQLite a table-name prefix; "main" means none)`)
	fl.StringVar(&opts.Naming.Table, "table", dedup.DefaultTable, "marker table")
	_ = cmd.RegisterFlagCompletionFunc("handler", cobra.FixedCompletions(handlers.Names, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"auto", "text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// validate checks the flags before anything connects; every failure is a usage error.
func (o *ConsumeOptions) validate() error {
	switch {
	case len(o.Topics) == 0:
		return fwerr.Usagef("--topic is required")
	case o.Group == "" && o.ShareGroup == "":
		return fwerr.Usagef("--group or --share-group is required")
	case o.Group != "" && o.ShareGroup != "":
		return fwerr.Usagef("--group and --share-group: a consumer is a member of one group, give one or the other")
	case o.StartEarliest && o.ShareGroup == "":
		return fwerr.Usagef("--start-earliest applies to --share-group only (a new consumer group starts at the earliest records already)")
	case o.Handler == "":
		return fwerr.Usagef("--handler is required: one of %s", strings.Join(handlers.Names, ", "))
	case !slices.Contains(handlers.Names, o.Handler):
		return fwerr.Usagef("--handler %q: want one of %s", o.Handler, strings.Join(handlers.Names, ", "))
	case o.Handler == handlers.NameWebhook && o.WebhookURL == "":
		return fwerr.Usagef("--handler webhook needs --webhook-url")
	case o.Handler != handlers.NameWebhook && o.WebhookURL != "":
		return fwerr.Usagef("--webhook-url applies to --handler webhook only")
	case o.MaxInfraRetries < 0:
		return fwerr.Usagef("--max-infra-retries %d: must not be negative", o.MaxInfraRetries)
	case o.BatchMax < 1 || o.BatchMax > 100_000:
		return fwerr.Usagef("--batch-max %d: must be between 1 and 100000", o.BatchMax)
	case o.BreakerWindow > consumer.MaxBreakerWindow:
		return fwerr.Usagef("--breaker-window %d: must be at most %d", o.BreakerWindow, consumer.MaxBreakerWindow)
	case o.StopWhenIdle < 0:
		return fwerr.Usagef("--stop-when-idle must not be negative")
	case o.ShutdownTimeout <= 0:
		return fwerr.Usagef("--shutdown-timeout must be positive")
	case o.RetryBackoff <= 0 || o.RetryBackoffMax < o.RetryBackoff:
		return fwerr.Usagef("--retry-backoff must be positive and at most --retry-backoff-max")
	case o.SessionTimeout < 0 || o.WebhookTimeout <= 0:
		return fwerr.Usagef("--session-timeout must not be negative and --webhook-timeout must be positive")
	case !slices.Contains([]string{"auto", "text", "json"}, o.LogFormat):
		return fwerr.Usagef("--log-format %q: want text, json or auto", o.LogFormat)
	}
	if _, err := parseLevel(o.LogLevel); err != nil {
		return err
	}
	if o.MetricsAddr != "" {
		if _, port, err := net.SplitHostPort(o.MetricsAddr); err != nil || port == "" {
			return fwerr.Usagef("--metrics-addr %q: want host:port (\"\" to disable)", o.MetricsAddr)
		}
	}
	consumer := cmp.Or(o.Consumer, o.Group, o.ShareGroup)
	if err := dedup.ValidateConsumer(consumer); err != nil {
		return fwerr.Usagef("--consumer: %v", err)
	}
	if err := dedup.ValidateIdentifier("schema", cmp.Or(o.Naming.Schema, dedup.DefaultSchema)); err != nil {
		return fwerr.Usagef("--schema: %v", err)
	}
	if err := dedup.ValidateIdentifier("table", cmp.Or(o.Naming.Table, dedup.DefaultTable)); err != nil {
		return fwerr.Usagef("--table: %v", err)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return l, nil // info: the default off a terminal (consumeLogger chooses on one)
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fwerr.Usagef("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// consumeLogger is the structured logger on stderr: text on a terminal, JSON otherwise. Log
// lines carry record data (keys, event ids, errors): the text handler quotes and escapes
// every control character itself, and both go through the terminal rule (docs/design.md §4.1).
//
// A service's logs (stderr not a terminal) start at INFO; on a terminal, where a person reads
// the summary, they start at WARN unless --log-level says otherwise, and each line is wrapped
// to the terminal.
func consumeLogger(o *ConsumeOptions, s *output.Streams) *slog.Logger {
	level, _ := parseLevel(o.LogLevel)
	if o.LogLevel == "" && s.ErrTTY {
		level = slog.LevelWarn
	}
	ho := &slog.HandlerOptions{Level: level}
	if o.LogFormat == "json" || (o.LogFormat == "auto" && !s.ErrTTY) {
		return slog.New(slog.NewJSONHandler(output.JSONWriter(s.ErrOut), ho))
	}
	if s.ErrTTY {
		return slog.New(slog.NewTextHandler(output.WrappingTextWriter(s.ErrOut, false, s.ErrWidth), ho))
	}
	return slog.New(slog.NewTextHandler(output.TextWriter(s.ErrOut, false), ho))
}

// consumeSummary is what `fieldwork consume` prints on stdout when it stops.
type consumeSummary struct {
	Group      string `json:"group,omitempty"`
	ShareGroup string `json:"share_group,omitempty"`
	Consumer   string `json:"consumer"`
	Handler    string `json:"handler"`
	consumer.Stats
	ElapsedMS int64 `json:"elapsed_ms"`
}

func consumeRun(ctx context.Context, o *ConsumeOptions, c *cmdutil.Clients) error {
	name := cmp.Or(o.Consumer, o.Group, o.ShareGroup)
	var interrupts <-chan os.Signal
	if o.Signals != nil {
		sigs, stop := o.Signals()
		defer stop()
		interrupts = sigs
	}

	breaker := consumer.Breaker(o.BreakerConsecutive, o.BreakerRatio, o.BreakerWindow)
	if o.NoBreaker {
		breaker = consumer.NoBreaker()
	}
	group := consumer.Group(o.Group)
	if o.ShareGroup != "" {
		group = consumer.ShareGroup(o.ShareGroup)
	}
	var extra []consumer.Opt
	if o.StartEarliest {
		extra = append(extra, consumer.ShareStartEarliest())
	}
	if o.VersionGuard {
		extra = append(extra, consumer.VersionGuard())
	}
	started := time.Now()
	stats, err := serve.Run(ctx, c.Store, serve.Options{
		Runner: append([]consumer.Opt{
			consumerlink.Schemas(c.Schemas).(consumer.Opt),
			consumer.Topics(o.Topics...), group, consumer.Consumer(name), consumer.Kafka(c.Kafka.Options()...),
			consumer.DeadLetterTopic(o.DLQTopic), consumer.MaxAttempts(o.MaxAttempts), consumer.MaxInfraRetries(o.MaxInfraRetries),
			consumer.BatchMax(o.BatchMax),
			consumerlink.TxPerEvent(o.TxPerEvent).(consumer.Opt), consumerlink.PerEvent(o.PerEvent).(consumer.Opt),
			consumer.RetryBackoff(o.RetryBackoff, o.RetryBackoffMax),
			consumer.StopWhenIdle(o.StopWhenIdle), consumer.ShutdownTimeout(o.ShutdownTimeout),
			consumer.InstanceID(o.InstanceID), consumer.SessionTimeout(o.SessionTimeout),
			breaker,
		}, extra...),
		Consumer: name, Logger: consumeLogger(o, c.Streams),
		HandlerName: o.Handler, Schema: o.Naming.Schema, WebhookURL: o.WebhookURL, WebhookTimeout: o.WebhookTimeout,
		Migrate: o.Migrate, MetricsAddr: o.MetricsAddr, Interrupts: interrupts,
	})
	if err != nil {
		return consumeError(err, c.Naming)
	}
	sum := consumeSummary{Group: o.Group, ShareGroup: o.ShareGroup, Consumer: name, Handler: o.Handler, Stats: stats,
		ElapsedMS: time.Since(started).Milliseconds()}
	return c.Printer.Object(sum, summarySections(sum))
}

// consumeError gives a store error its exit code and hint (cmdutil.StoreError), a store that
// is not migrated the hint of --migrate too; a handler's missing table says so itself; a
// topic that does not exist is not found (exit 9), as in every command.
func consumeError(err error, names dedup.Options) error {
	if errors.Is(err, handlers.ErrTableMissing) {
		return err
	}
	if mt := (*consumer.MissingTopicError)(nil); errors.As(err, &mt) {
		return fwerr.Wrap(fwerr.KindNotFound, err)
	}
	err = cmdutil.StoreError(err, names)
	if errors.Is(err, dedup.ErrNotMigrated) {
		err = fmt.Errorf("%w\nhint: or pass --migrate to fieldwork consume", err)
	}
	return err
}

func summarySections(s consumeSummary) []output.Section {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	group := [2]string{"group", s.Group}
	if s.ShareGroup != "" {
		group = [2]string{"share_group", s.ShareGroup}
	}
	fields := [][2]string{
		group, {"consumer", s.Consumer}, {"handler", s.Handler},
		{"records", i(s.Records)}, {"processed", i(s.Processed)}, {"duplicates", i(s.Duplicates)},
		{"stale", i(s.Stale)}, {"dead_lettered", i(s.DeadLettered)}, {"retried", i(s.Retried)},
		{"other_group", i(s.OtherGroup)},
	}
	if s.ShareGroup != "" {
		fields = append(fields, [2]string{"broker_dead_lettered", i(s.BrokerDeadLettered)},
			[2]string{"released", i(s.Released)}, [2]string{"redelivered", i(s.Redelivered)})
	}
	fields = append(fields, [2]string{"infra_retries", i(s.InfraRetries)}, [2]string{"batches", i(s.Batches)},
		[2]string{"elapsed", (time.Duration(s.ElapsedMS) * time.Millisecond).String()})
	return []output.Section{{Fields: fields}}
}
