package replay

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/timespec"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// The guards' notices (warnings; with Spec.Strict an executed plan that has any is refused).
const (
	// NoticePastHorizon: selected dead letters are older than their target's replay horizon
	// (processed.PastHorizon): the markers that made their event idempotent may be pruned.
	NoticePastHorizon NoticeKind = "past_horizon"
	// NoticeNewerProcessed: the consumer already processed newer versions of the aggregates
	// of selected dead letters: a stale version is a no-op for a consumer with a version
	// guard, an overwrite for one without.
	NoticeNewerProcessed NoticeKind = "newer_processed"
)

// maxGuardAggregates bounds the records whose aggregate a plan checks (decoded, and looked
// up with the others of their consumer in one read of its markers): past it the rest are not
// checked, and the notice says so.
const maxGuardAggregates = 1000

// guard looks at each record to send, before it is sent (Scan) or as it is (a single pass),
// and says what it found afterwards (notices).
type guard struct {
	c    *kafka.Cluster
	st   *dedup.Store
	spec *Spec
	now  time.Time

	retention map[string]kafka.Retention // per target topic, asked once
	past      int64
	pastEx    string
	pastTopic string

	// unknown are the targets whose retention could not be read (why), in the order met.
	unknown []string
	// lastTarget's retention, and whether lastConsumer's markers can be asked (a valid name):
	// consecutive records mostly share both, which add would otherwise look up and check
	// again for every record.
	lastTarget, lastConsumer string
	lastRet                  kafka.Retention
	consumerOK               bool
	aggs                     map[aggKey]aggCheck
	checked                  int64
	aggsCut                  int64
}

type aggKey struct{ consumer, aggregate string }

// aggCheck is the oldest version of an aggregate selected, and the record that has it.
type aggCheck struct {
	version int64
	example string
}

func newGuard(c *kafka.Cluster, st *dedup.Store, spec *Spec) *guard {
	return &guard{c: c, st: st, spec: spec, now: time.Now(), retention: map[string]kafka.Retention{}, aggs: map[aggKey]aggCheck{}}
}

// add looks at one record to send.
func (g *guard) add(ctx context.Context, d *decision) error {
	r, err := g.retentionOf(ctx, d.target)
	if err != nil {
		return err
	}
	// The dead letter's own age: its record's timestamp, when the consumer gave up.
	if processed.PastHorizon(r, g.now.Sub(d.rec.Timestamp)) {
		g.past++
		if g.pastEx == "" {
			g.pastEx, g.pastTopic = addr(d.rec), d.target
		}
	}
	consumer := g.spec.ForGroup
	if consumer == "" {
		consumer = d.group
	}
	if consumer != g.lastConsumer { // "" at first, which consumerOK false already says
		g.lastConsumer, g.consumerOK = consumer, consumer != "" && dedup.ValidateConsumer(consumer) == nil
	}
	if g.st == nil || !g.consumerOK {
		return nil
	}
	if g.checked >= maxGuardAggregates {
		g.aggsCut++
		return nil
	}
	g.checked++
	rec := d.sendSource() // the original record, for a dead letter that holds only coordinates
	if e := g.spec.Edit; e != nil && e.Value != nil {
		rec = &kgo.Record{Key: rec.Key, Value: e.Value, Headers: rec.Headers}
	}
	ev, err := envelope.DecodeRecord(rec)
	if err != nil || ev.AggregateID == "" || !ev.HasVersion {
		return nil
	}
	k := aggKey{consumer, ev.AggregateID}
	if a, ok := g.aggs[k]; ok {
		if ev.Version < a.version {
			g.aggs[k] = aggCheck{ev.Version, addr(d.rec)}
		}
		return nil
	}
	g.aggs[k] = aggCheck{ev.Version, addr(d.rec)}
	return nil
}

// retentionOf is target's retention, asked of the cluster once per target.
func (g *guard) retentionOf(ctx context.Context, target string) (kafka.Retention, error) {
	if target == g.lastTarget && target != "" {
		return g.lastRet, nil
	}
	r, ok := g.retention[target]
	if !ok {
		m, err := g.c.Retention(ctx, []string{target})
		if err != nil {
			return kafka.Retention{}, err
		}
		r = m[target]
		g.retention[target] = r
		if r.State == kafka.RetentionUnknown {
			why := r.Why
			if why == "" {
				why = "its retention is unknown"
			}
			g.unknown = append(g.unknown, target+": "+why)
		}
	}
	g.lastTarget, g.lastRet = target, r
	return r, nil
}

// notices looks the aggregates up, one read of the markers per consumer, and says what the
// guard found.
func (g *guard) notices(ctx context.Context) []Notice {
	var out []Notice
	if g.past > 0 {
		r := g.retention[g.pastTopic]
		out = append(out, Notice{Kind: NoticePastHorizon, Text: fmt.Sprintf(
			"selected dead letters older than the replay horizon of their target: %d (%s keeps records %s; e.g. %s): markers that old may be pruned (processed prune), so a consumer may process these events a second time",
			g.past, g.pastTopic, timespec.Format(r.Horizon), g.pastEx)})
	}
	for _, u := range g.unknown {
		out = append(out, Notice{Kind: NoticeGuardPartial, Text: "the replay-horizon check could not read the retention of " + u})
	}
	keys := make([]aggKey, 0, len(g.aggs))
	for k := range g.aggs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].consumer != keys[j].consumer {
			return keys[i].consumer < keys[j].consumer
		}
		return keys[i].aggregate < keys[j].aggregate
	})
	var newer int64
	var example string
	aggregates := map[string][]string{}     // by consumer, the aggregates checked
	newest := map[string]map[string]int64{} // by consumer, the versions its markers reached
	for _, k := range keys {
		aggregates[k.consumer] = append(aggregates[k.consumer], k.aggregate)
	}
	for _, k := range keys {
		a := g.aggs[k]
		top, asked := newest[k.consumer]
		if !asked {
			var err error
			if top, err = g.st.NewestVersions(ctx, k.consumer, aggregates[k.consumer]); err != nil {
				// A store that cannot answer (not migrated, someone else's table) leaves the
				// check undone, which the notice says; it is no reason to refuse the plan.
				out = append(out, Notice{Kind: NoticeGuardPartial, Text: fmt.Sprintf("the newer-version check could not read the markers of %s: %v", k.consumer, err)})
				break
			}
			newest[k.consumer] = top
		}
		if top, ok := top[k.aggregate]; ok && top > a.version {
			newer++
			if example == "" {
				example = fmt.Sprintf("%s: version %d of %s, %s processed version %d", a.example, a.version, k.aggregate, k.consumer, top)
			}
		}
	}
	if newer > 0 {
		out = append(out, Notice{Kind: NoticeNewerProcessed, Text: fmt.Sprintf(
			"aggregates of selected dead letters whose consumer already processed a newer version: %d (e.g. %s): the replayed stale version is a no-op for a consumer that guards versions, an overwrite for one that does not",
			newer, example)})
	}
	if g.aggsCut > 0 {
		out = append(out, Notice{Kind: NoticeGuardPartial, Text: fmt.Sprintf("the newer-version check looked at the first %d records to send; %s not checked",
			maxGuardAggregates, wording.Plural(g.aggsCut, "record"))})
	}
	return out
}
