package consumer

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Defaults of the options.
const (
	DefaultMaxAttempts = 5
	// DefaultBatchMax: a batch pays a fixed cost besides its rows' (its statement's parse and
	// plan, its round trip, its commit), so larger batches spend less a record. Against
	// claims of 500 alone (the marker ceiling of docs/benchmarks.md), the projection reached
	// 0.44–0.57 of the ceiling with batches of 500 and 0.62–0.80 with 1,000; the audit
	// 0.57–0.70 and 0.81–0.86.
	DefaultBatchMax        = 1000
	DefaultShutdownTimeout = 30 * time.Second
	DefaultRetryBackoff    = 200 * time.Millisecond
	DefaultRetryBackoffMax = 10 * time.Second
	DefaultInfraBackoff    = 250 * time.Millisecond
	DefaultInfraBackoffMax = 30 * time.Second
)

// An Opt configures a Runner (New).
type Opt interface{ apply(*config) }

type optFunc func(*config)

func (f optFunc) apply(c *config) { f(c) }

// Topics are the source topics. Required.
func Topics(topics ...string) Opt {
	return optFunc(func(c *config) { c.Topics = append(c.Topics, topics...) })
}

// Group is the Kafka consumer group. Required, unless ShareGroup is given instead.
func Group(group string) Opt { return optFunc(func(c *config) { c.Group = group }) }

// ShareGroup makes the runner a member of the share group name (KIP-932, Kafka 4.2 and later)
// instead of a consumer group: the members of a share group read every partition together,
// each record acquired by one member at a time, with no order within a partition. It excludes
// Group. The dedup core, the batches, the handler chain and the breaker are the same; what
// changes is how a record is settled (the acknowledgement rule, docs/design.md §3.8):
//
//   - accepted only once its batch's transaction (marker and effects) has committed and its
//     dead letter, when fieldwork writes one, is acknowledged;
//   - released (delivered again by the broker, its delivery count one more) when the chain
//     gives up on a retryable failure before the group's delivery limit
//     (share.delivery.count.limit); on the last delivery it is dead-lettered as exhausted.
//     MaxAttempts counts the attempts within one delivery and defaults to 1 here: the
//     delivery count is the attempt count;
//   - dead-lettered by the broker when the group has a dead-letter topic
//     (errors.deadletterqueue.topic.name; the record is rejected, or released on its last
//     delivery so that the broker writes it as exhausted), else by fieldwork's own writer,
//     as for a consumer group, and then accepted.
//
// A record acquired by a member that crashes returns to the group once its acquisition lock
// times out (share.record.lock.duration.ms, 30 s by default) and is delivered again: its
// marker, if its batch committed, makes it a duplicate. StopWhenIdle, for a share group, waits
// for the group's share partitions to have nothing left to deliver (no lag).
func ShareGroup(name string) Opt { return optFunc(func(c *config) { c.ShareGroup = name }) }

// ShareStartEarliest makes a share group that has no share.auto.offset.reset of its own start
// from the earliest records: the runner sets that group config at start, and logs it. A group
// that has the config keeps it. Without this option a new share group starts at the latest
// records (Kafka's default), so records produced before its first member joined are never
// delivered. Only with ShareGroup.
func ShareStartEarliest() Opt { return optFunc(func(c *config) { c.ShareStartEarliest = true }) }

// Consumer is the consumer name written in the markers (default: the group). Two runners
// with one consumer name share their markers: an event one of them handled is a duplicate
// for the other.
func Consumer(name string) Opt { return optFunc(func(c *config) { c.Consumer = name }) }

// Name names a handler that is not a Namer, in dead letters (fw.dlq.handler) and logs
// (default "handler").
func Name(name string) Opt { return optFunc(func(c *config) { c.Name = name }) }

// Kafka are the Kafka client's options: seeds, TLS, SASL (default: none, which reaches no
// broker: give at least kgo.SeedBrokers). The runner adds the group's options itself.
func Kafka(opts ...kgo.Opt) Opt {
	return optFunc(func(c *config) { c.Kafka = append(c.Kafka, opts...) })
}

// DeadLetterTopic is the dead-letter topic of every source topic (default
// <source topic>.dlq). The runner never creates it: Run fails at start when it is missing.
func DeadLetterTopic(topic string) Opt { return optFunc(func(c *config) { c.DLQTopic = topic }) }

// MaxAttempts is how many times a retryable handler error is tried in all before the event
// is dead-lettered as exhausted (default DefaultMaxAttempts, 5; 1 means no retry). With
// ShareGroup it counts the attempts within one delivery, before the record is released, and
// defaults to 1.
func MaxAttempts(n int) Opt { return optFunc(func(c *config) { c.MaxAttempts = n }) }

// BatchMax is the most records of one partition handled in one transaction (default
// DefaultBatchMax, 1,000). With ShareGroup it is also about how many records a fetch
// acquires.
func BatchMax(n int) Opt { return optFunc(func(c *config) { c.BatchMax = n }) }

// RetryBackoff is the wait before retrying a failed event: initial, doubling up to max,
// each wait drawn between its half and its whole (default DefaultRetryBackoff, 200ms, to
// DefaultRetryBackoffMax, 10s).
func RetryBackoff(initial, max time.Duration) Opt {
	return optFunc(func(c *config) { c.RetryBackoff = backoff{Initial: initial, Max: max} })
}

// InfraBackoff is the wait before retrying a whole batch after an infrastructure failure
// (the database, the schema registry, the dead-letter topic's brokers): initial, doubling
// up to max, each wait drawn between its half and its whole (default DefaultInfraBackoff,
// 250ms, to DefaultInfraBackoffMax, 30s).
func InfraBackoff(initial, max time.Duration) Opt {
	return optFunc(func(c *config) { c.InfraBackoff = backoff{Initial: initial, Max: max} })
}

// MaxInfraRetries bounds the consecutive infrastructure retries of one step; past it Run
// returns an error, committing nothing unfinished (default 0: retry forever).
func MaxInfraRetries(n int) Opt { return optFunc(func(c *config) { c.MaxInfraRetries = n }) }

// Breaker sets the dead-letter breaker's rules (see the package documentation): more than
// consecutive records dead-lettered in a row, or more than ratio × window of the consumer's
// last window records, stop the runner. A zero argument keeps its default
// (DefaultBreakerConsecutive, DefaultBreakerRatio, DefaultBreakerWindow: the breaker is on
// with these unless NoBreaker is given). ratio is in (0, 1]; 1 never trips.
func Breaker(consecutive int, ratio float64, window int) Opt {
	return optFunc(func(c *config) {
		c.Breaker = breakerConfig{Consecutive: consecutive, Ratio: ratio, Window: window}
	})
}

// NoBreaker turns the dead-letter breaker off: every failing record is dead-lettered,
// however many.
func NoBreaker() Opt { return optFunc(func(c *config) { c.Breaker.Off = true }) }

// StopWhenIdle, when positive, makes Run return once no record has arrived for d (counted
// from the last assignment change), nothing is in flight, and the group's committed offsets
// have reached the end of every partition of the source topics (see the package
// documentation). Default 0: run until the context is cancelled.
func StopWhenIdle(d time.Duration) Opt { return optFunc(func(c *config) { c.StopWhenIdle = d }) }

// ShutdownTimeout bounds the drain when Run's context is cancelled (default
// DefaultShutdownTimeout, 30s); past it the batches in flight are abandoned (rolled back,
// not committed).
func ShutdownTimeout(d time.Duration) Opt {
	return optFunc(func(c *config) { c.ShutdownTimeout = d })
}

// InstanceID makes the member static (KIP-345): a restart with the same id takes its
// partitions back without a rebalance (default: a dynamic member).
func InstanceID(id string) Opt { return optFunc(func(c *config) { c.InstanceID = id }) }

// SessionTimeout is the group session timeout (default Kafka's, 45s).
func SessionTimeout(d time.Duration) Opt {
	return optFunc(func(c *config) { c.SessionTimeout = d })
}

// VersionGuard makes the claim the version guard too (inbox.GuardVersions): an event whose
// aggregate already has its version or a newer one for this consumer is marked stale and
// never reaches the handler (Stats.Stale counts it). Events without a version, or without an
// aggregate id, are never stale. Default: off, every fresh event reaches the handler, which
// may answer Stale itself.
func VersionGuard() Opt { return optFunc(func(c *config) { c.VersionGuard = true }) }

// Logger receives the runner's structured logs (default: discarded).
func Logger(l *slog.Logger) Opt { return optFunc(func(c *config) { c.Logger = l }) }

// Registerer receives the runner's Prometheus metrics (fieldwork_consume_*; default: not
// registered).
func Registerer(r prometheus.Registerer) Opt {
	return optFunc(func(c *config) { c.Registerer = r })
}

// config is what the options set.
type config struct {
	// Schemas decodes registry-framed values before their envelope is read (docs/design.md
	// §3.6); nil detects the framing only (a framed value is then dead-lettered as
	// unsupported: no registry). Set through internal/consumerlink.
	Schemas *schema.Decoder
	Topics  []string
	Group   string
	// ShareGroup is the share group (the option ShareGroup); Group then holds its name too,
	// once validated, for the dead letters, logs and replay targets that name the group.
	ShareGroup string
	// ShareStartEarliest sets share.auto.offset.reset=earliest on a share group without it.
	ShareStartEarliest bool
	// Consumer is the consumer name written in the markers.
	Consumer string
	// Name is the handler's name when it is not a Namer.
	Name    string
	Handler Handler
	Store   *dedup.Store
	Kafka   []kgo.Opt

	DLQTopic    string
	MaxAttempts int
	BatchMax    int
	// TxPerEvent runs one database transaction per event instead of one per batch (the
	// benchmark's baseline). Dead letters and the offset commit stay per batch. Set through
	// internal/consumerlink.
	TxPerEvent bool
	// PerEvent applies each fresh event with Handler.Handle under its own savepoint even
	// when the handler is a BatchHandler (the comparison to the batch path; with TxPerEvent
	// events are always applied one by one). Set through internal/consumerlink.
	PerEvent bool

	RetryBackoff    backoff
	InfraBackoff    backoff
	MaxInfraRetries int

	Breaker breakerConfig
	// VersionGuard claims with the version guard (the option VersionGuard).
	VersionGuard bool

	StopWhenIdle    time.Duration
	ShutdownTimeout time.Duration

	InstanceID     string
	SessionTimeout time.Duration

	Logger     *slog.Logger
	Registerer prometheus.Registerer

	// Middleware is the handler chain, outermost first, when MiddlewareSet (the option
	// Chain); else DefaultMiddleware().
	Middleware    []Middleware
	MiddlewareSet bool
}

func (o config) withDefaults() config {
	if o.Consumer == "" {
		o.Consumer = cmp.Or(o.Group, o.ShareGroup)
	}
	o.Name = handlerName(o.Handler, o.Name)
	if !o.MiddlewareSet {
		o.Middleware = DefaultMiddleware()
	}
	if o.MaxAttempts <= 0 && o.ShareGroup != "" {
		o.MaxAttempts = 1 // the broker's delivery count is the attempt count
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BatchMax <= 0 {
		o.BatchMax = DefaultBatchMax
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.RetryBackoff.Initial <= 0 {
		o.RetryBackoff.Initial = DefaultRetryBackoff
	}
	if o.RetryBackoff.Max <= 0 {
		o.RetryBackoff.Max = DefaultRetryBackoffMax
	}
	if o.InfraBackoff.Initial <= 0 {
		o.InfraBackoff.Initial = DefaultInfraBackoff
	}
	if o.InfraBackoff.Max <= 0 {
		o.InfraBackoff.Max = DefaultInfraBackoffMax
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if !o.Breaker.Off {
		o.Breaker = o.Breaker.withDefaults()
	}
	return o
}

func (o config) validate() error {
	var errs []error
	if len(o.Topics) == 0 {
		errs = append(errs, errors.New("no source topic"))
	}
	seen := map[string]bool{}
	for _, t := range o.Topics {
		switch {
		case t == "":
			errs = append(errs, errors.New("empty topic name"))
		case seen[t]:
			errs = append(errs, fmt.Errorf("topic %q given twice", t))
		case t == o.dlqTopic(t):
			errs = append(errs, fmt.Errorf("topic %q is also the dead-letter topic", t))
		}
		seen[t] = true
	}
	switch {
	case o.Group == "" && o.ShareGroup == "":
		errs = append(errs, errors.New("no consumer group"))
	case o.Group != "" && o.ShareGroup != "":
		errs = append(errs, fmt.Errorf("consumer group %q and share group %q: a runner is a member of one group, give one or the other", o.Group, o.ShareGroup))
	case o.ShareStartEarliest && o.ShareGroup == "":
		errs = append(errs, errors.New("ShareStartEarliest applies to a share group only"))
	}
	if err := dedup.ValidateConsumer(o.Consumer); err != nil {
		errs = append(errs, err)
	}
	if o.Handler == nil {
		errs = append(errs, errors.New("no handler"))
	}
	if o.Store == nil {
		errs = append(errs, errors.New("no inbox store"))
	}
	if o.MaxInfraRetries < 0 {
		errs = append(errs, fmt.Errorf("max infra retries %d is negative", o.MaxInfraRetries))
	}
	if err := o.Breaker.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// dlqTopic is the dead-letter topic of source.
func (o config) dlqTopic(source string) string {
	if o.DLQTopic != "" {
		return o.DLQTopic
	}
	return source + dlq.DefaultTopicSuffix
}
