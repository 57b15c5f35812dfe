package replay

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// How a target topic's partitioner was chosen (PartitionerChoice.By).
const (
	// ByFlag: --partitioner named it.
	ByFlag = "flag"
	// ByInferred: the target's keyed records all agree with it, and with no other one that is
	// not the default.
	ByInferred = "inferred"
	// ByDefault: nothing told it (no keyed record, one partition, the target not readable, or
	// the keyed records agree with the default as with others): kafka.PartitionerMurmur2.
	ByDefault = "default"
	// ByRun: an earlier attempt of the run chose it (inferred or by default), and the run's
	// journal keeps the choice: every attempt places a key where the first one did, whatever
	// the target's records say since.
	ByRun = "run"
)

// DefaultPartitioner is the partitioner of a replay that nothing tells otherwise: Kafka's Java
// client's.
const DefaultPartitioner = kafka.PartitionerMurmur2

// PartitionerChoice is the partitioner the keyed records sent to one target topic are placed
// by, and why: without --partitioner it is inferred from the newest records of the target
// (docs/design.md §3.3).
type PartitionerChoice struct {
	Topic       string `json:"topic"`
	Partitioner string `json:"partitioner"`
	By          string `json:"by"`
	// KeyedRecords, Agree and Matching are the evidence (null with --partitioner): the keyed
	// records sampled, how many of them Partitioner places where they are, and every
	// partitioner that places all of them. ReplayedRecords counts the keyed records sampled
	// that a replay wrote (dlq.WrittenByReplay), left out of the evidence: a replay placed
	// them by its own rule (their original partition), not the topic's producers.
	KeyedRecords    *int64   `json:"keyed_records"`
	Agree           *int64   `json:"agree"`
	Matching        []string `json:"matching"`
	ReplayedRecords *int64   `json:"replayed_records"`
	// Why says what the evidence was, in a sentence.
	Why string `json:"why"`
}

// String is the choice as the plan says it: "fnv1a (inferred: 412 of 412 keyed records of
// orders agree)".
func (c PartitionerChoice) String() string {
	return c.Partitioner + " (" + c.By + ": " + c.Why + ")"
}

// inferences holds a plan's partitioner per target topic, decided once (by its scan, or by the
// single pass that sends it) and reused by every later step of the plan.
type inferences struct {
	mu     sync.Mutex
	byName map[string]inferred
	order  []string
	// made counts the choices made (errors not counted), read without the lock: an executed
	// run asks it before every send whether a choice is still to be journaled.
	made atomic.Int32
}

type inferred struct {
	choice PartitionerChoice
	err    error
}

// choose is the partitioner of topic: the spec's when it names one (a flag), else inferred from
// the topic's keyed records. Evidence that disagrees is a usage error naming --partitioner.
func (in *inferences) choose(ctx context.Context, c *kafka.Cluster, topic string, given kafka.Partitioner) (PartitionerChoice, error) {
	if given != "" {
		return PartitionerChoice{Topic: topic, Partitioner: string(given), By: ByFlag, Matching: []string{}, Why: "--partitioner"}, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if got, ok := in.byName[topic]; ok {
		return got.choice, got.err
	}
	ev, err := c.SamplePartitioners(ctx, topic, kafka.DefaultEvidenceSample, dlq.WrittenByReplay)
	var got inferred
	switch {
	case err != nil && fwerr.KindOf(err) == fwerr.KindDenied:
		got.choice = defaultChoice(topic, nil, fmt.Sprintf("%s could not be read to infer from (%v)", topic, err))
	case err != nil:
		return PartitionerChoice{}, fmt.Errorf("infer the partitioner of %s: %w", topic, err)
	default:
		got.choice, got.err = decide(ev)
	}
	in.keep(topic, got)
	return got.choice, got.err
}

// keep records the choice for topic; in.mu is held.
func (in *inferences) keep(topic string, got inferred) {
	if in.byName == nil {
		in.byName = map[string]inferred{}
	}
	in.byName[topic] = got
	in.order = append(in.order, topic)
	if got.err == nil {
		in.made.Add(1)
	}
}

// seed takes the choices an earlier attempt of a run journaled (ByRun): they are the plan's,
// whatever the targets' records say now, so that a key is placed where that attempt placed
// it. Each says what the earlier attempt chose it by.
func (in *inferences) seed(choices []PartitionerChoice) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, ch := range choices {
		if ch.By != ByRun {
			ch.Why = ch.By + " by an earlier attempt: " + ch.Why
			ch.By = ByRun
		}
		in.keep(ch.Topic, inferred{choice: ch})
	}
}

// choices are the choices made so far, in the order they were made.
func (in *inferences) choices() []PartitionerChoice {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := []PartitionerChoice{}
	for _, t := range in.order {
		if g := in.byName[t]; g.err == nil {
			out = append(out, g.choice)
		}
	}
	return out
}

// decide is the rule of inference: the one partitioner that places every sampled keyed record
// where it is; the default when there is no evidence (no keyed record, one partition) or when
// the default is among several that do; a usage error when none does, or several that are not
// the default do.
func decide(ev kafka.PartitionerEvidence) (PartitionerChoice, error) {
	c, err := decideOn(ev)
	if err != nil {
		return c, err
	}
	if c.KeyedRecords != nil {
		replayed := ev.Excluded
		c.ReplayedRecords = &replayed
	}
	if n := leftOut(ev); n != "" {
		c.Why += "; " + n
	}
	return c, nil
}

// decideOn is decide but for what the evidence left out.
func decideOn(ev kafka.PartitionerEvidence) (PartitionerChoice, error) {
	matching := ev.Matching()
	names := make([]string, len(matching))
	for i, p := range matching {
		names[i] = string(p)
	}
	keyed := ev.Keyed
	switch {
	case ev.Partitions < 2:
		return defaultChoice(ev.Topic, &ev, fmt.Sprintf("%s has one partition: every partitioner agrees there", ev.Topic)), nil
	case keyed == 0:
		return defaultChoice(ev.Topic, &ev, fmt.Sprintf("no keyed records in the newest %d of each partition of %s to infer from", kafka.DefaultEvidenceSample, ev.Topic)), nil
	case len(matching) == 1:
		agree := ev.AgreeWith(matching[0])
		return PartitionerChoice{Topic: ev.Topic, Partitioner: string(matching[0]), By: ByInferred, KeyedRecords: &keyed, Agree: &agree, Matching: names,
			Why: fmt.Sprintf("%d of %d keyed records of %s agree", agree, keyed, ev.Topic)}, nil
	case len(matching) > 1 && matching[0] == DefaultPartitioner:
		return defaultChoice(ev.Topic, &ev, fmt.Sprintf("the %s of %s agree with %s alike",
			wording.Plural(keyed, "keyed record"), ev.Topic, strings.Join(names, " and "))), nil
	case len(matching) > 1:
		alike := "alike"
		if n := leftOut(ev); n != "" {
			alike += " (" + n + ")"
		}
		return PartitionerChoice{}, fwerr.Usagef("cannot tell the partitioner of %s: its %s agree with %s %s; name it with --partitioner (%s)",
			ev.Topic, wording.Plural(keyed, "sampled keyed record"), strings.Join(names, " and "), alike, strings.Join(kafka.PartitionerNames(), ", "))
	}
	var agree []string
	for i, p := range kafka.Partitioners {
		agree = append(agree, fmt.Sprintf("%s %d", p, ev.Agree[i]))
	}
	evidence := strings.Join(agree, ", ") + " agree"
	if n := leftOut(ev); n != "" {
		evidence += "; " + n
	}
	return PartitionerChoice{}, fwerr.Usagef("cannot tell the partitioner of %s: no partitioner places all %d of its sampled keyed records where they are (%s): "+
		"several producers, or a custom placement; name it with --partitioner (%s)",
		ev.Topic, keyed, evidence, strings.Join(kafka.PartitionerNames(), ", "))
}

// leftOut says how many keyed records a replay wrote the evidence left out ("12 keyed records
// a replay wrote left out"), "" when none.
func leftOut(ev kafka.PartitionerEvidence) string {
	if ev.Excluded == 0 {
		return ""
	}
	return wording.Plural(ev.Excluded, "keyed record") + " a replay wrote left out"
}

func defaultChoice(topic string, ev *kafka.PartitionerEvidence, why string) PartitionerChoice {
	c := PartitionerChoice{Topic: topic, Partitioner: string(DefaultPartitioner), By: ByDefault, Matching: []string{}, Why: why}
	if ev != nil {
		keyed, agree := ev.Keyed, ev.AgreeWith(DefaultPartitioner)
		c.KeyedRecords, c.Agree = &keyed, &agree
		for _, p := range ev.Matching() {
			c.Matching = append(c.Matching, string(p))
		}
	}
	return c
}
