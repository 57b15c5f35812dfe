package devstack

import (
	"slices"

	"context"
	"fmt"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/sample"
)

// Seeded says what Start produced. JSON names are snake_case.
type Seeded struct {
	Topics []TopicSeed `json:"topics"`
	// Manifest describes the stream produced into TopicTasks; its indexes are positions in
	// Positions.
	Manifest sample.Manifest `json:"manifest"`
	// Sample is the options the stream was generated with (sample.Generate(Sample) gives it
	// again).
	Sample sample.Options `json:"-"`
	// Positions holds where each record of the stream landed in TopicTasks, by index.
	Positions []Position `json:"-"`
	// Poison lists the poison records of TopicTasks with their partition and offset.
	Poison []PoisonRecord `json:"poison"`
	// Share is what the share group ShareGroup did over TopicTasks (its dead letters are in
	// Topics too).
	Share *ShareSeed `json:"share_group"`
}

// TopicSeed counts the records produced into one topic.
type TopicSeed struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Records    int    `json:"records"`
	Events     int    `json:"events"`
	Duplicates int    `json:"duplicates"`
	Stale      int    `json:"stale"`
	Poison     int    `json:"poison"`
	// DeadLetters are records in fieldwork's dead-letter convention (docs/design.md §3.2).
	DeadLetters int `json:"dead_letters"`
	// PerPartition is the number of records produced into each partition.
	PerPartition []int `json:"per_partition"`
}

// Position is a record's place in a topic.
type Position struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// PoisonRecord is a seeded poison record and where it is.
type PoisonRecord struct {
	sample.Poison
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

const (
	// seededGroup and seededHandler name the consumer the seeded dead letters pretend to
	// come from.
	seededGroup   = "task-projection"
	seededHandler = "task-projection"
)

// sampleOptions returns the stream to seed, ending a minute before now so that it reads like
// the last few hours of a live system (and --since filters find it).
func sampleOptions(o Options) (sample.Options, error) {
	so := sample.DefaultOptions(o.Seed)
	if o.Sample != nil {
		so = *o.Sample
	}
	if !so.BaseTime.IsZero() {
		return so, nil
	}
	// Timestamps are BaseTime plus offsets that do not depend on BaseTime: measure the span
	// once, then place the stream.
	_, m, err := sample.Generate(so)
	if err != nil {
		return so, err
	}
	span := m.Last.Sub(sample.DefaultBaseTime)
	so.BaseTime = o.Now().Add(-span - time.Minute).Truncate(time.Second)
	return so, nil
}

// seed produces the sample stream into TopicTasks and (unless NoDeadLetters) a dead letter for
// each poison record into TopicDLQ, with one idempotent producer so that each partition keeps
// the stream's order; then the share group ShareGroup reads TopicTasks and rejects the poison
// (seedShare).
func seed(ctx context.Context, addr string, reg *srfake.Registry, o Options) (*Seeded, error) {
	so, err := sampleOptions(o)
	if err != nil {
		return nil, fmt.Errorf("sample events: %w", err)
	}
	recs, m, err := sample.Generate(so)
	if err != nil {
		return nil, fmt.Errorf("sample events: %w", err)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID("fieldwork-dev-seed"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return nil, fmt.Errorf("seed client: %w", err)
	}
	defer cl.Close()

	krs := sample.KgoRecords(TopicTasks, recs)
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("seed %s: %w", TopicTasks, err)
	}
	s := &Seeded{Manifest: m, Sample: so, Positions: make([]Position, len(krs)), Poison: []PoisonRecord{}}
	tasks := TopicSeed{Topic: TopicTasks, Partitions: o.Partitions, Records: len(krs), PerPartition: make([]int, o.Partitions),
		Events: m.Events, Duplicates: len(m.Duplicates), Stale: len(m.Stale), Poison: len(m.Poison)}
	for i, r := range krs {
		s.Positions[i] = Position{Partition: r.Partition, Offset: r.Offset}
		tasks.PerPartition[r.Partition]++
	}

	dlqSeed := TopicSeed{Topic: TopicDLQ, Partitions: o.Partitions, PerPartition: make([]int, o.Partitions)}
	var dead []*kgo.Record
	for _, p := range m.Poison {
		orig := krs[p.Index]
		s.Poison = append(s.Poison, PoisonRecord{Poison: p, Topic: TopicTasks, Partition: orig.Partition, Offset: orig.Offset})
		if !o.NoDeadLetters {
			dead = append(dead, deadLetter(orig, p))
		}
	}
	if len(dead) > 0 {
		if err := cl.ProduceSync(ctx, dead...).FirstErr(); err != nil {
			return nil, fmt.Errorf("seed %s: %w", TopicDLQ, err)
		}
	}
	for _, r := range dead {
		dlqSeed.PerPartition[r.Partition]++
	}
	dlqSeed.Records, dlqSeed.Poison, dlqSeed.DeadLetters = len(dead), len(dead), len(dead)
	avroSeed, err := seedAvro(ctx, cl, reg, krs, tasks)
	if err != nil {
		return nil, err
	}
	share, shareDLQ, err := seedShare(ctx, addr, len(krs), s.Poison, o.Partitions)
	if err != nil {
		return nil, err
	}
	s.Share = share
	s.Topics = []TopicSeed{tasks, dlqSeed, avroSeed, shareDLQ}
	return s, nil
}

// seedAvro registers sample.AvroSchema as the subject tasks.avro-value and produces the
// stream of TopicTasks into TopicAvro in Avro, in the Confluent wire format: each record's
// key and timestamp, its value encoded and framed with the schema's id, no headers (the
// framing says what the value is). A value that has no Avro form (the invalid-json poison)
// is framed bytes that are not Avro of the schema: poison there too.
func seedAvro(ctx context.Context, cl *kgo.Client, reg *srfake.Registry, krs []*kgo.Record, tasks TopicSeed) (TopicSeed, error) {
	id, _, err := reg.RegisterSchema(TopicAvro+"-value", sr.Schema{Schema: sample.AvroSchema, Type: sr.TypeAvro})
	if err != nil {
		return TopicSeed{}, fmt.Errorf("register the schema of %s: %w", TopicAvro, err)
	}
	schema := avro.MustParse(sample.AvroSchema)
	recs := make([]*kgo.Record, len(krs))
	for i, r := range krs {
		b, ok, err := sample.AvroValue(schema, r.Value)
		if err != nil {
			return TopicSeed{}, fmt.Errorf("seed %s: %w", TopicAvro, err)
		}
		if !ok {
			b = []byte{0xff, 0xff, 0xff, 0x01}
		}
		v, _ := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
		recs[i] = &kgo.Record{Topic: TopicAvro, Partition: r.Partition, Key: r.Key, Value: append(v, b...), Timestamp: r.Timestamp}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return TopicSeed{}, fmt.Errorf("seed %s: %w", TopicAvro, err)
	}
	seed := tasks
	seed.Topic, seed.PerPartition = TopicAvro, slices.Clone(tasks.PerPartition)
	return seed, nil
}

// deadLetter is the record a consumer that met poison p at orig writes to the dead-letter
// topic: the original key, value and headers, plus fieldwork's fw.dlq.* headers. It fails
// one to three seconds after the record was produced, on the first attempt (malformed
// records are not retried).
func deadLetter(orig *kgo.Record, p sample.Poison) *kgo.Record {
	failed := orig.Timestamp.Add(time.Second + time.Duration(p.Index%3)*time.Second).UTC()
	at := kafka.AddressOf(orig)
	msg := fmt.Sprintf("malformed event at %s: %s", at, p.Reason)
	if p.Field != "" {
		msg = fmt.Sprintf("malformed event at %s: field %q: %s", at, p.Field, p.Reason)
	}
	return dlq.NewDeadLetter(orig, dlq.Meta{
		Topic:    TopicDLQ,
		Group:    seededGroup,
		Handler:  seededHandler,
		EventID:  p.EventID,
		Reason:   dlq.ReasonMalformed,
		Error:    msg,
		Attempts: 1,
		FailedAt: failed,
	})
}
