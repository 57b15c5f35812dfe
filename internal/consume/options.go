package consume

import (
	"errors"
	"fmt"
	"github.com/fieldwork/fieldwork/internal/schema"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
)

// Defaults of Options.
const (
	DefaultMaxAttempts     = 5
	DefaultBatchMax        = 500
	DefaultShutdownTimeout = 30 * time.Second
	DefaultRetryBackoff    = 200 * time.Millisecond
	DefaultRetryBackoffMax = 10 * time.Second
	DefaultInfraBackoff    = 250 * time.Millisecond
	DefaultInfraBackoffMax = 30 * time.Second
)

// Options configure an Engine. Topics, Group, Handler, Store and Kafka are required.
type Options struct {
	// Schemas decodes registry-framed values before their envelope is read (docs/design.md
	// §3.6); nil detects the framing only (a framed value then stops the engine: no registry).
	Schemas *schema.Decoder
	// Topics are the source topics.
	Topics []string
	// Group is the Kafka consumer group.
	Group string
	// Consumer is the consumer name written in the markers (default Group).
	Consumer string
	// Handler applies the events.
	Handler Handler
	// Store is the dedup store the markers and the handler's tables live in.
	Store *dedup.Store
	// Kafka are the base client options: seeds, TLS, SASL (kafka.ClientOptions). The engine
	// adds the group options itself.
	Kafka []kgo.Opt

	// DLQTopic is the dead-letter topic for every source topic; "" means
	// <source topic>.dlq. The engine never creates it: Run fails at start when it is missing.
	DLQTopic string
	// MaxAttempts is how many times a retryable handler error is tried in all before the
	// event is dead-lettered as exhausted (default 5; 1 means no retry).
	MaxAttempts int
	// BatchMax is the most records of one partition handled in one transaction (default 500).
	BatchMax int
	// TxPerEvent runs one database transaction per event instead of one per batch (the
	// benchmark's baseline). Dead letters and the offset commit stay per batch.
	TxPerEvent bool
	// PerEvent applies each fresh event with Handler.Handle under its own savepoint even
	// when the handler is a BatchHandler (the comparison to the batch path; with TxPerEvent
	// events are always applied one by one).
	PerEvent bool

	// RetryBackoff is the handler-retry backoff (default 200ms doubling to 10s).
	RetryBackoff Backoff
	// InfraBackoff is the backoff of whole-batch retries after infrastructure failures
	// (default 250ms doubling to 30s).
	InfraBackoff Backoff
	// MaxInfraRetries bounds consecutive infrastructure retries of one step; 0 retries
	// forever. When exceeded, Run returns an error (nothing unfinished is committed).
	MaxInfraRetries int

	// Breaker is the dead-letter breaker: the zero value is on, with the defaults
	// (docs/design.md §3.5); Breaker.Off turns it off.
	Breaker Breaker

	// StopWhenIdle, when positive, makes Run return once no record has arrived for that long
	// (counted from the last assignment change), nothing is in flight, and the group's
	// committed offsets have reached the end of every partition of the source topics (see
	// the package documentation).
	StopWhenIdle time.Duration
	// ShutdownTimeout bounds the drain when ctx is cancelled (default 30s); past it the
	// in-flight batches are abandoned (rolled back, not committed).
	ShutdownTimeout time.Duration

	// InstanceID makes the member static (KIP-345): a restart with the same id takes its
	// partitions back without a rebalance.
	InstanceID string
	// SessionTimeout overrides the group session timeout (Kafka's default 45s) when positive.
	SessionTimeout time.Duration

	// Logger receives structured logs (default: discard).
	Logger *slog.Logger
	// Registerer receives the Prometheus metrics (nil: not registered).
	Registerer prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.Consumer == "" {
		o.Consumer = o.Group
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

func (o Options) validate() error {
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
	if o.Group == "" {
		errs = append(errs, errors.New("no consumer group"))
	}
	if err := dedup.ValidateConsumer(o.Consumer); err != nil {
		errs = append(errs, err)
	}
	if o.Handler == nil {
		errs = append(errs, errors.New("no handler"))
	}
	if o.Store == nil {
		errs = append(errs, errors.New("no dedup store"))
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
func (o Options) dlqTopic(source string) string {
	if o.DLQTopic != "" {
		return o.DLQTopic
	}
	return source + dlq.DefaultTopicSuffix
}
