package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Kinds of Validate findings. Each is a problem: a clean stream has none.
const (
	// KindMalformed: the record is not a recognisable event (no event id, bad JSON, a version
	// that is not an integer, …). Consumers dead-letter it.
	KindMalformed = "malformed"
	// KindMissingVersion: the event carries no aggregate version, so a projection cannot order it.
	KindMissingVersion = "missing_version"
	// KindMissingAggregate: neither the envelope nor the Kafka key names an aggregate.
	KindMissingAggregate = "missing_aggregate_id"
	// KindConflictingPayload: an event id seen before arrives with a different payload; the
	// consumers' dedup will silently drop one of the two.
	KindConflictingPayload = "conflicting_payload"
	// KindVersionRegression: an aggregate's version is lower than the highest seen before it
	// in the same partition.
	KindVersionRegression = "version_regression"
	// KindDuplicateVersion: two different events claim the same version of an aggregate.
	KindDuplicateVersion = "duplicate_version"
	// KindSplitAggregate: one aggregate's events are in several partitions, so their order is
	// lost: the partition key is not the aggregate id.
	KindSplitAggregate = "split_aggregate"
)

// FindingKinds lists the kinds in the order reports show them, with what each means.
var FindingKinds = []struct{ Kind, Description string }{
	{KindMalformed, "records with no recognisable event (no event id, invalid JSON, bad field)"},
	{KindMissingVersion, "events with no aggregate version"},
	{KindMissingAggregate, "events with no aggregate id and no key"},
	{KindConflictingPayload, "event ids seen again with a different payload"},
	{KindVersionRegression, "aggregate versions lower than one seen before"},
	{KindDuplicateVersion, "aggregate versions claimed by two different events"},
	{KindSplitAggregate, "aggregates spread over several partitions (broken partition key)"},
}

// DefaultMaxExamples is how many findings of each kind Validate keeps.
const DefaultMaxExamples = 10

// ValidateOptions tune Validate.
type ValidateOptions struct {
	// MaxExamples is how many findings of each kind are kept (DefaultMaxExamples when 0);
	// every finding is counted.
	MaxExamples int
	// MemoryEntries bounds the fingerprints each table keeps in memory before it spills to a
	// temporary file (DefaultMemoryEntries when 0).
	MemoryEntries int
	// TempDir is where the spill files are made (os.TempDir() when empty).
	TempDir  string
	Progress ProgressFunc
	// Schemas decodes registry-framed values before the envelope is read (docs/design.md
	// §3.6); nil detects their framing only.
	Schemas *schema.Decoder
}

// ValidateReport is the result of the lint.
type ValidateReport struct {
	Topic          string                 `json:"topic"`
	Ranges         []kafka.PartitionRange `json:"ranges"`
	RecordsScanned int64                  `json:"records_read"`
	Events         int64                  `json:"events"`
	// Redeliveries counts events whose id and payload were seen before: ordinary under
	// at-least-once delivery, not a problem.
	Redeliveries int64 `json:"redeliveries"`
	// Aggregates is the number of distinct aggregate ids seen (64-bit fingerprints).
	Aggregates int64       `json:"aggregates"`
	Problems   int64       `json:"problems"`
	Summary    []KindCount `json:"summary"`
	// Findings holds up to MaxExamples findings of each kind, kind by kind in Summary's order,
	// each kind in scan order (partition by partition, offset order).
	Findings      []Finding `json:"findings"`
	MaxExamples   int       `json:"max_examples"`
	SpilledToDisk bool      `json:"spilled_to_disk"`
}

// Clean reports whether the lint found no problem.
func (r *ValidateReport) Clean() bool { return r.Problems == 0 }

// Result is the lint's verdict as an error: a check error (exit 3) that counts the problems
// by kind, "9 in tasks (3 malformed, 1 missing_version, …)"; nil when the stream is clean.
func (r *ValidateReport) Result() error {
	if r.Clean() {
		return nil
	}
	var parts []string
	for _, k := range r.Summary {
		if k.Count > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k.Count, k.Kind))
		}
	}
	return fwerr.Checkf("%d in %s (%s)", r.Problems, r.Topic, strings.Join(parts, ", "))
}

// KindCount is how many findings of Kind the lint made.
type KindCount struct {
	Kind        string `json:"kind"`
	Count       int64  `json:"count"`
	Description string `json:"description"`
}

// Finding is one problem at one record. Related, when set, is the earlier record it conflicts
// with (the first payload of an event id, the highest version of an aggregate, the aggregate
// in its other partition).
type Finding struct {
	Kind        string    `json:"kind"`
	Partition   int32     `json:"partition"`
	Offset      int64     `json:"offset"`
	EventID     string    `json:"event_id,omitempty"`
	AggregateID string    `json:"aggregate_id,omitempty"`
	Version     *int64    `json:"aggregate_version,omitempty"`
	Related     *Position `json:"related,omitempty"`
	Message     string    `json:"message"`
}

// Validate lints the records sel selects, bounded by the plan.
//
// Memory stays bounded whatever the topic's size. Per record it keeps nothing but two kinds
// of fixed-size fingerprints, each keyed by a 64-bit FNV-1a hash: per event id, the hash of
// its payload (type, aggregate, version and data, with JSON whitespace removed) and where it
// was first seen; per aggregate id, the highest version, the event at it, its partition and
// flags (32 bytes). Each table holds at most MemoryEntries entries in a Go map; past that,
// the whole map is written, sorted by key, as one run (a temporary file of TempDir, unlinked
// as soon as it is made, so that the system frees it when the lint ends however it ends;
// nothing synced) on a goroutine of its own while a new map
// fills, and every runFanIn runs of one level are merged into one of the next. A lookup that
// misses the maps reads the disk only when a fixed 8 MiB Bloom filter over the spilled keys
// says the key may be there, and then only the runs whose own filters say so, newest first,
// a span of a few KiB each. The envelopes are read on another goroutine, ahead of the lint
// (schema.Ahead). Findings are counted per kind and only MaxExamples of each are kept. So
// memory is about 2 × MemoryEntries × 50 bytes (and, while a spill is written, the map being
// written and its sorted copy), plus 16 MiB of filters once spilled and at most about 1 MiB
// of filter and samples per run, of which there are fewer than runFanIn a level (a billion
// fingerprints: a few dozen); disk grows with the fingerprints spilled (40 bytes each). Two
// ids whose hashes collide (for n distinct ids the chance of any collision is about n²/2⁶⁵)
// are treated as one, which can make or hide a finding about that pair only.
//
// Partitions are read one after another, so results are deterministic. An aggregate's
// version order is judged within the partition it was first seen in; its events in other
// partitions are reported as split_aggregate (once per aggregate) and not ordered against it.
func Validate(ctx context.Context, c *kafka.Cluster, topic string, sel kafka.Selection, opts ValidateOptions) (*ValidateReport, error) {
	ranges, err := c.Plan(ctx, topic, sel)
	if err != nil {
		return nil, err
	}
	v := newValidator(opts)
	defer v.close()
	v.rep.Topic, v.rep.Ranges = topic, ranges
	// The envelopes are read on a goroutine of their own, ahead of the judging, which takes
	// the records in the order of the scan.
	ahead := opts.Schemas.Ahead(ctx, func(r schema.Read) error { return v.record(ctx, r) })
	defer ahead.Stop()
	err = scan(ctx, c, ranges, opts.Progress, ahead.Add)
	if err == nil {
		err = ahead.Finish()
	}
	if err == nil {
		err = v.events.wait() // the spills still being written
	}
	if err == nil {
		err = v.aggs.wait()
	}
	if err != nil {
		return nil, err
	}
	return v.finish(), nil
}

// aggregate fingerprint fields and flags.
const (
	aggMaxVersion = 0 // highest version seen in the aggregate's partition
	aggEventAtMax = 1 // hash of the event id at that version
	aggPartFlags  = 2 // partition in the low 32 bits, flags above
	aggOffset     = 3 // offset of the event at the highest version (or the first event)

	flagHasVersion    = 1 << 32
	flagSplitReported = 1 << 33
)

// event fingerprint fields.
const (
	evPayload   = 0
	evPartition = 1
	evOffset    = 2
)

type validator struct {
	opts   ValidateOptions
	rep    ValidateReport
	counts map[string]int64
	kept   map[string]int
	spill  *spillStore
	// compact is payloadHash's buffer.
	compact bytes.Buffer
	events  *fingerprintTable
	aggs    *fingerprintTable
}

func newValidator(opts ValidateOptions) *validator {
	if opts.MaxExamples <= 0 {
		opts.MaxExamples = DefaultMaxExamples
	}
	if opts.MemoryEntries <= 0 {
		opts.MemoryEntries = DefaultMemoryEntries
	}
	spill := &spillStore{dir: opts.TempDir}
	return &validator{
		opts: opts, counts: map[string]int64{}, kept: map[string]int{}, spill: spill,
		events: newFingerprintTable("events", opts.MemoryEntries, spill),
		aggs:   newFingerprintTable("aggregates", opts.MemoryEntries, spill),
		rep:    ValidateReport{Findings: []Finding{}, MaxExamples: opts.MaxExamples},
	}
}

// close waits for the spills being written and closes the spill files.
func (v *validator) close() {
	_ = v.events.wait()
	_ = v.aggs.wait()
	_ = v.spill.Close()
}

func (v *validator) find(f Finding) {
	v.counts[f.Kind]++
	if v.kept[f.Kind] < v.opts.MaxExamples {
		v.kept[f.Kind]++
		// The event's text is a view of its record (schema.Read): a kept finding copies it.
		f.EventID, f.AggregateID = strings.Clone(f.EventID), strings.Clone(f.AggregateID)
		v.rep.Findings = append(v.rep.Findings, f)
	}
}

// record judges one record whose envelope was read (a registry failure ends the scan before
// it comes here).
func (v *validator) record(ctx context.Context, r schema.Read) error {
	v.rep.RecordsScanned++
	rec, ev, err := r.Record, r.Event, r.Err
	if err != nil {
		m := schema.MalformedRecordOf(rec, err)
		v.find(Finding{Kind: KindMalformed, Partition: rec.Partition, Offset: rec.Offset, EventID: m.EventID, Message: m.Message})
		return nil
	}
	v.rep.Events++
	if !ev.HasVersion {
		v.find(findingAt(rec, ev, KindMissingVersion, fmt.Sprintf("event %s has no aggregate version", ev.ID)))
	}
	idKey, judged, err := v.eventID(ctx, rec, ev)
	if err != nil || judged {
		return err
	}
	return v.aggregate(ctx, rec, ev, idKey)
}

// findingAt is a finding of kind about the event ev read from rec.
func findingAt(rec *kgo.Record, ev envelope.Event, kind, msg string) Finding {
	f := Finding{Kind: kind, Partition: rec.Partition, Offset: rec.Offset, EventID: ev.ID, AggregateID: ev.AggregateID, Message: msg}
	if ev.HasVersion {
		ver := ev.Version
		f.Version = &ver
	}
	return f
}

// eventID judges ev's event id: a redelivery or a conflicting payload is judged here
// (judged true) and goes no further, so a redelivered old event is not also a version
// regression; a new id is remembered. idKey is the id's fingerprint.
func (v *validator) eventID(ctx context.Context, rec *kgo.Record, ev envelope.Event) (idKey uint64, judged bool, err error) {
	idKey = uint64(newFNV().addString(ev.ID))
	payload := int64(payloadHash(ev, &v.compact))
	seen, ok, err := v.events.Get(ctx, idKey)
	if err != nil {
		return idKey, false, err
	}
	if ok {
		first := &Position{Partition: int32(seen[evPartition]), Offset: seen[evOffset]}
		if seen[evPayload] == payload {
			v.rep.Redeliveries++
			return idKey, true, nil
		}
		f := findingAt(rec, ev, KindConflictingPayload, fmt.Sprintf("event %s has a different payload than at %s", ev.ID, first.In(rec.Topic)))
		f.Related = first
		v.find(f)
		return idKey, true, nil
	}
	return idKey, false, v.events.Put(ctx, idKey, fingerprint{payload, int64(rec.Partition), rec.Offset})
}

// aggregate judges ev against what its aggregate (the envelope's, else the record's key) has
// seen: a missing aggregate, a split over partitions, a duplicate version or a regression;
// and remembers the highest version. idKey is the event id's fingerprint.
func (v *validator) aggregate(ctx context.Context, rec *kgo.Record, ev envelope.Event, idKey uint64) error {
	aggID := ev.AggregateID
	if aggID == "" && len(rec.Key) > 0 {
		aggID = string(rec.Key)
	}
	if aggID == "" {
		v.find(findingAt(rec, ev, KindMissingAggregate, fmt.Sprintf("event %s names no aggregate and has no key", ev.ID)))
		return nil
	}
	aggKey := uint64(newFNV().addString(aggID))
	st, ok, err := v.aggs.Get(ctx, aggKey)
	if err != nil {
		return err
	}
	partBits := int64(uint32(rec.Partition))
	if !ok {
		v.rep.Aggregates++
		st = fingerprint{aggMaxVersion: 0, aggEventAtMax: int64(idKey), aggPartFlags: partBits, aggOffset: rec.Offset}
		if ev.HasVersion {
			st[aggMaxVersion] = ev.Version
			st[aggPartFlags] |= flagHasVersion
		}
		return v.aggs.Put(ctx, aggKey, st)
	}
	part := int32(uint32(st[aggPartFlags]))
	related := &Position{Partition: part, Offset: st[aggOffset]}
	if part != rec.Partition {
		if st[aggPartFlags]&flagSplitReported == 0 {
			f := findingAt(rec, ev, KindSplitAggregate, fmt.Sprintf("aggregate %s is in partitions %d and %d (also at %s)", aggID, part, rec.Partition, related.In(rec.Topic)))
			f.AggregateID, f.Related = aggID, related
			v.find(f)
			st[aggPartFlags] |= flagSplitReported
			return v.aggs.Put(ctx, aggKey, st)
		}
		return nil
	}
	if !ev.HasVersion {
		return nil
	}
	if st[aggPartFlags]&flagHasVersion == 0 || ev.Version > st[aggMaxVersion] {
		st[aggMaxVersion], st[aggEventAtMax], st[aggOffset] = ev.Version, int64(idKey), rec.Offset
		st[aggPartFlags] |= flagHasVersion
		return v.aggs.Put(ctx, aggKey, st)
	}
	maxV := st[aggMaxVersion]
	var f Finding
	if ev.Version == maxV {
		f = findingAt(rec, ev, KindDuplicateVersion, fmt.Sprintf("aggregate %s version %d again, from a different event than at %s", aggID, maxV, related.In(rec.Topic)))
	} else {
		f = findingAt(rec, ev, KindVersionRegression, fmt.Sprintf("aggregate %s version %d after version %d at %s", aggID, ev.Version, maxV, related.In(rec.Topic)))
	}
	f.AggregateID, f.Related = aggID, related
	v.find(f)
	return nil
}

func (v *validator) finish() *ValidateReport {
	order := map[string]int{}
	for i, k := range FindingKinds {
		order[k.Kind] = i
		n := v.counts[k.Kind]
		v.rep.Summary = append(v.rep.Summary, KindCount{Kind: k.Kind, Count: n, Description: k.Description})
		v.rep.Problems += n
	}
	sort.SliceStable(v.rep.Findings, func(i, j int) bool {
		return order[v.rep.Findings[i].Kind] < order[v.rep.Findings[j].Kind]
	})
	v.rep.SpilledToDisk = v.events.Spilled() || v.aggs.Spilled()
	return &v.rep
}

// payloadHash fingerprints what an event says: its type, aggregate, version and data (JSON
// with insignificant white space removed, so a re-serialised redelivery still matches; data
// without a white space byte is compact already). buf is a buffer to reuse.
func payloadHash(ev envelope.Event, buf *bytes.Buffer) uint64 {
	data := []byte(ev.Data)
	if hasJSONSpace(data) {
		buf.Reset()
		if json.Compact(buf, data) == nil {
			data = buf.Bytes()
		}
	}
	var num [20]byte
	ver := []byte("-")
	if ev.HasVersion {
		ver = strconv.AppendInt(num[:0], ev.Version, 10)
	}
	return uint64(newFNV().addString(ev.Type).addString(ev.AggregateType).addString(ev.AggregateID).add(ver).add(data))
}

// hasJSONSpace reports whether b holds a byte of JSON's white space.
func hasJSONSpace(b []byte) bool {
	for _, c := range b {
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			return true
		}
	}
	return false
}
