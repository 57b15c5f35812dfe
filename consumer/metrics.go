package consumer

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Event outcomes, the values of the outcome label of fieldwork_consume_events_total.
const (
	OutcomeProcessed    = "processed"     // applied and marked
	OutcomeDuplicate    = "duplicate"     // already marked (or repeated inside its batch): skipped
	OutcomeStale        = "stale"         // an older version: not applied, still marked
	OutcomeDeadLettered = "dead_lettered" // sent to the dead-letter topic, not marked
	OutcomeRetried      = "retried"       // one more attempt of a handler after a retryable error
	OutcomeOtherGroup   = "other_group"   // a replayed record for another group (fw.replay.for): skipped, not marked
)

// Stats are the runner's running totals since it started. Processed counts Applied events
// only; Stale ones are counted apart (both are marked).
type Stats struct {
	Records      int64 `json:"records"`
	Processed    int64 `json:"processed"`
	Duplicates   int64 `json:"duplicates"`
	Stale        int64 `json:"stale"`
	DeadLettered int64 `json:"dead_lettered"`
	// DeadLettersBounded counts the dead letters (among DeadLettered) written as bounded
	// copies, their value cut or left out (fw.dlq.value_omitted).
	DeadLettersBounded int64 `json:"dead_letters_bounded"`
	Retried            int64 `json:"retried"`
	// OtherGroup counts the replayed records aimed at another group (fw.replay.for): skipped
	// without a marker.
	OtherGroup   int64 `json:"other_group"`
	Batches      int64 `json:"batches"`
	InfraRetries int64 `json:"infra_retries"`
	// BatchFallbacks counts the batches whose HandleBatch failed as a whole (not on
	// infrastructure) and that were applied again event by event.
	BatchFallbacks int64 `json:"batch_fallbacks"`
	// Released counts a share group's records released for another delivery (a retryable
	// failure before the delivery limit, a batch not started when the member stopped); 0 for
	// a consumer group.
	Released int64 `json:"released,omitempty"`
	// Redelivered counts a share group's records delivered to this member with a delivery
	// count above 1 (released, or returned after a member's lock timed out); 0 for a consumer
	// group.
	Redelivered int64 `json:"redelivered,omitempty"`
	// BrokerDeadLettered counts the dead letters (among DeadLettered) left to the broker to
	// write into a share group's dead-letter topic (rejected, or released on their last
	// delivery); 0 when fieldwork writes them.
	BrokerDeadLettered int64 `json:"broker_dead_lettered,omitempty"`
}

type counters struct {
	records, processed, duplicates, stale, deadLettered, deadLettersBounded, retried, otherGroup, batches, infraRetries, batchFallbacks atomic.Int64
	released, redelivered, brokerDeadLettered                                                                                           atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Records: c.records.Load(), Processed: c.processed.Load(), Duplicates: c.duplicates.Load(),
		Stale: c.stale.Load(), DeadLettered: c.deadLettered.Load(), DeadLettersBounded: c.deadLettersBounded.Load(), Retried: c.retried.Load(),
		OtherGroup: c.otherGroup.Load(),
		Batches:    c.batches.Load(), InfraRetries: c.infraRetries.Load(), BatchFallbacks: c.batchFallbacks.Load(),
		Released: c.released.Load(), Redelivered: c.redelivered.Load(), BrokerDeadLettered: c.brokerDeadLettered.Load(),
	}
}

// metrics are the runner's Prometheus collectors. With a nil Registerer they are created
// but not registered, so the code paths are the same.
type metrics struct {
	events      *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	// deadLettersBounded counts the dead letters written as bounded copies.
	deadLettersBounded *prometheus.CounterVec
	// halted is the number of partitions stopped at a dead letter that cannot be written.
	halted       prometheus.Gauge
	batchSeconds *prometheus.HistogramVec
	lag          *prometheus.GaugeVec
	infraRetries *prometheus.CounterVec
	// batchFallbacks counts the batches applied again event by event.
	batchFallbacks prometheus.Counter
	commitFailed   prometheus.Counter
	assigned       prometheus.Gauge
	handlerErrors  *prometheus.CounterVec
	// handlerSeconds times the handler's calls (the Metrics middleware).
	handlerSeconds prometheus.Histogram
	// The dead-letter breaker (breaker.go): trips by rule, whether it has tripped, the
	// longest run of failed records now (the consumer's or a partition's), and the failed
	// records among the window's.
	breakerTrips        *prometheus.CounterVec
	breakerTripped      prometheus.Gauge
	breakerConsecutive  prometheus.Gauge
	breakerWindowFailed prometheus.Gauge
	// A share group's (share.go): the delivery count of each record delivered, the
	// acknowledgements by type, and those the broker refused or that could not be sent.
	deliveries  *prometheus.HistogramVec
	acks        *prometheus.CounterVec
	ackFailures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fieldwork_consume_events_total",
			Help: "Records handled by the consumer, by topic and outcome (processed, duplicate, stale, dead_lettered, retried).",
		}, []string{"topic", "outcome"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fieldwork_consume_dead_letters_total",
			Help: "Dead letters, by source topic, reason (malformed, unsupported, rejected, exhausted) and writer (fieldwork: produced by the consumer; broker: a share group's record rejected into the group's DLQ, or released on its last delivery).",
		}, []string{"topic", "reason", "writer"}),
		deadLettersBounded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fieldwork_consume_dead_letters_bounded_total",
			Help: "Dead letters written as bounded copies (value cut or left out, fw.dlq.value_omitted says why), by source topic.",
		}, []string{"topic"}),
		halted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fieldwork_consume_halted_partitions",
			Help: "Partitions stopped at a record whose dead letter cannot be written at all (not committed past it; Run fails when it stops).",
		}),
		batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fieldwork_consume_batch_duration_seconds",
			Help:    "Time from the start of a batch to its Kafka offset commit, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12), // 1ms … ~60s
		}, []string{"topic"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fieldwork_consume_lag",
			Help: "Records in the partition after the last one this consumer finished (high watermark minus next offset).",
		}, []string{"topic", "partition"}),
		infraRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fieldwork_consume_infra_retries_total",
			Help: "Retries after an infrastructure failure, by stage (batch: the database transaction; dead_letter: producing dead letters; schema_registry: fetching a schema).",
		}, []string{"stage"}),
		batchFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fieldwork_consume_batch_fallbacks_total",
			Help: "Batches whose batch statements failed (not on infrastructure), rolled back and applied again event by event under savepoints.",
		}),
		commitFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fieldwork_consume_offset_commit_failures_total",
			Help: "Kafka offset commits that failed (the next commit, or the one at revoke or shutdown, covers them).",
		}),
		assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fieldwork_consume_assigned_partitions",
			Help: "Partitions currently assigned to this consumer.",
		}),
		handlerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fieldwork_consume_handler_errors_total",
			Help: "Errors returned by the handler, by class (retryable, permanent, unsupported, infra).",
		}, []string{"class"}),
		handlerSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fieldwork_consume_handler_duration_seconds",
			Help:    "Time of one call of the handler's Handle (one attempt at one event).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 0.1ms … ~15s
		}),
		breakerTrips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fieldwork_consume_breaker_trips_total",
			Help: "Trips of the dead-letter breaker, by rule (consecutive, ratio): the consumer stopped instead of dead-lettering on, and exits 8.",
		}, []string{"rule"}),
		breakerTripped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fieldwork_consume_breaker_tripped",
			Help: "1 once the dead-letter breaker has tripped (the consumer is stopping, nothing is committed past the trip), else 0.",
		}),
		breakerConsecutive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fieldwork_consume_breaker_consecutive_failures",
			Help: "The longest run of dead-lettered records now, in one partition or in the consumer with nothing handled in between (the breaker trips above --breaker-consecutive).",
		}),
		breakerWindowFailed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fieldwork_consume_breaker_window_failures",
			Help: "Dead-lettered records among the consumer's last --breaker-window records (the breaker trips above --breaker-ratio of the window).",
		}),
	}
	m.addShare()
	if reg != nil {
		reg.MustRegister(m.deliveries, m.acks, m.ackFailures)
		reg.MustRegister(m.events, m.deadLetters, m.deadLettersBounded, m.halted, m.batchSeconds, m.lag, m.infraRetries,
			m.batchFallbacks, m.commitFailed, m.assigned, m.handlerErrors, m.handlerSeconds,
			m.breakerTrips, m.breakerTripped, m.breakerConsecutive, m.breakerWindowFailed)
	}
	return m
}

// addShare creates the share group's collectors.
func (m *metrics) addShare() {
	m.deliveries = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fieldwork_consume_share_delivery_count",
		Help:    "Share groups: the delivery count of each record delivered to this member (1: first delivery; more: released, or returned after a member's acquisition lock timed out).",
		Buckets: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	}, []string{"topic"})
	m.acks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldwork_consume_share_acks_total",
		Help: "Share groups: records acknowledged, by source topic and type (accept: done, or dead-lettered by fieldwork; release: delivered again; reject: dead-lettered by the broker).",
	}, []string{"topic", "ack"})
	m.ackFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldwork_consume_share_ack_failures_total",
		Help: "Share groups: acknowledgements the broker refused or that could not be sent, by partition result (their records are delivered again once their lock times out).",
	}, []string{"topic"})
}

func (m *metrics) setLag(topic string, partition int32, lag int64) {
	m.lag.WithLabelValues(topic, strconv.Itoa(int(partition))).Set(float64(max(lag, 0)))
}

func (m *metrics) dropLag(topic string, partition int32) {
	m.lag.DeleteLabelValues(topic, strconv.Itoa(int(partition)))
}

func (c class) label() string {
	switch c {
	case classPermanent:
		return "permanent"
	case classUnsupported:
		return "unsupported"
	case classInfra:
		return "infra"
	}
	return "retryable"
}
