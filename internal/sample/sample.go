// Package sample generates realistic task events for the sandbox, the demo, tests and
// benchmarks: CloudEvents 1.0 structured-mode JSON values keyed by aggregate id, with the
// faults an at-least-once system really sees mixed in (producer-retry duplicates, stale
// versions re-emitted later, poison records), and a Manifest that says exactly what was
// injected where, so a test can assert on it.
//
// Generation is pure and deterministic: the same Options (seed included) give the same
// records, byte for byte. Event ids, payloads and the order of the stream depend only on the
// seed and the sizes; BaseTime only shifts every timestamp by the same amount. Nothing here
// talks to a broker.
package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Constants of the events fieldwork produces.
const (
	SpecVersion     = "1.0"
	Source          = "/tasks-service"
	AggregateType   = "task"
	DataContentType = "application/json"
	// ContentType is the value of the content-type header on every record: CloudEvents
	// structured mode in its JSON format.
	ContentType = "application/cloudevents+json"
	// HeaderContentType is the record header that carries ContentType.
	HeaderContentType = "content-type"
)

// Event types, in the order a task usually goes through them.
const (
	TypeCreated   = "task.created"
	TypeAssigned  = "task.assigned"
	TypeStarted   = "task.started"
	TypeCompleted = "task.completed"
	TypeReopened  = "task.reopened"
)

// DefaultBaseTime is the time of the first event when Options.BaseTime is zero.
var DefaultBaseTime = time.Date(2025, time.March, 3, 9, 0, 0, 0, time.UTC)

// Options size the stream and choose its faults. Every count and fraction is used as given:
// zero means none. DefaultOptions gives a small realistic mix.
type Options struct {
	// Seed makes the stream reproducible.
	Seed uint64
	// Aggregates is the number of tasks (aggregate ids task-0001, task-0002, …).
	Aggregates int
	// EventsPerAggregate is the number of events of each task: versions 1..N.
	EventsPerAggregate int
	// DuplicateFraction is the fraction (0..1) of events that are sent a second time, byte
	// for byte (same key, value and headers), a little later, as a producer retry does.
	DuplicateFraction float64
	// Stale is the number of stale versions: an older event of a task re-emitted later,
	// after a newer version was already sent, with a new event id.
	Stale int
	// Poison is the number of poison records. Their kinds cycle through PoisonKinds
	// (invalid-json, missing-id, bad-version, invalid-json, …); each lands at a random place.
	Poison int
	// BaseTime is the time of the first event (DefaultBaseTime when zero).
	BaseTime time.Time
}

// DefaultOptions returns the stream the sandbox seeds: 24 tasks of 8 events, 5% duplicates,
// 4 stale versions and 3 poison records (one of each kind).
func DefaultOptions(seed uint64) Options {
	return Options{
		Seed:               seed,
		Aggregates:         24,
		EventsPerAggregate: 8,
		DuplicateFraction:  0.05,
		Stale:              4,
		Poison:             3,
	}
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record to produce. Key is the aggregate id.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// KgoRecord returns r as a franz-go record for topic. The slices are shared, not copied.
func (r Record) KgoRecord(topic string) *kgo.Record {
	hs := make([]kgo.RecordHeader, len(r.Headers))
	for i, h := range r.Headers {
		hs[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
}

// KgoRecords converts a whole stream for topic, in order.
func KgoRecords(topic string, rs []Record) []*kgo.Record {
	out := make([]*kgo.Record, len(rs))
	for i, r := range rs {
		out[i] = r.KgoRecord(topic)
	}
	return out
}

// Generate builds the stream that o describes. The records are in the order they should be
// produced (non-decreasing Timestamp); Manifest indexes refer to that order.
func Generate(o Options) ([]Record, Manifest, error) {
	if err := o.validate(); err != nil {
		return nil, Manifest{}, err
	}
	g := newGenerator(o)
	return g.run()
}

func (o Options) validate() error {
	var errs []error
	if o.Aggregates < 0 || o.Aggregates > 9999 {
		errs = append(errs, fmt.Errorf("aggregates must be between 0 and 9999, not %d", o.Aggregates))
	}
	if o.EventsPerAggregate < 0 {
		errs = append(errs, fmt.Errorf("events per aggregate must not be negative, not %d", o.EventsPerAggregate))
	}
	if math.IsNaN(o.DuplicateFraction) || o.DuplicateFraction < 0 || o.DuplicateFraction > 1 {
		errs = append(errs, fmt.Errorf("duplicate fraction must be between 0 and 1, not %v", o.DuplicateFraction))
	}
	if o.Stale < 0 {
		errs = append(errs, fmt.Errorf("stale count must not be negative, not %d", o.Stale))
	}
	if o.Stale > 0 && (o.Aggregates < 1 || o.EventsPerAggregate < 2) {
		errs = append(errs, errors.New("stale versions need at least one aggregate with two events or more"))
	}
	if o.Poison < 0 {
		errs = append(errs, fmt.Errorf("poison count must not be negative, not %d", o.Poison))
	}
	return errors.Join(errs...)
}

// AggregateID is the id of the i-th task (1-based): task-0001.
func AggregateID(i int) string { return fmt.Sprintf("task-%04d", i) }

// newRand returns the seeded source every generator draws from.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
