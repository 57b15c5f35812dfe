package devstack

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// The sandbox's share group (KIP-932) and its dead-letter topic.
const (
	// ShareGroup is the seeded share group: it read TopicTasks, accepted every record but the
	// poison, and rejected those.
	ShareGroup = "task-workers"
	// TopicShareDLQ is ShareGroup's dead-letter topic, named with the broker's default prefix
	// and marked errors.deadletterqueue.group.enable=true, as a 4.4 broker needs it.
	TopicShareDLQ = kafka.DefaultShareDLQPrefix + ShareGroup
)

// ShareSeed says what the share group did in the sandbox.
type ShareSeed struct {
	Group    string `json:"group"`
	Topic    string `json:"topic"`
	DLQTopic string `json:"dlq_topic"`
	Accepted int    `json:"accepted"`
	Rejected int    `json:"rejected"`
	// DeadLetters were written by the seeding, not the broker: kfake archives a rejected
	// record and writes no dead letter, nor does it take a group's DLQ configs.
	DeadLetters int `json:"dead_letters"`
}

// seedShare has ShareGroup read TopicTasks from the start as a share consumer: it accepts
// every record but the poison ones (at), which it rejects. kfake serves the share-group APIs
// (heartbeat, fetch, acknowledge, start offsets) but writes no dead letter and refuses the
// errors.deadletterqueue.* group configs, so seedShare writes into TopicShareDLQ what a 4.4
// broker with the group's DLQ set and copy off would: one record per rejected record, key and
// value null, the six __dlq.errors.* headers, in partition original % partitions.
func seedShare(ctx context.Context, addr string, total int, poison []PoisonRecord, partitions int) (*ShareSeed, TopicSeed, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("fieldwork-dev-seed"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, TopicSeed{}, fmt.Errorf("seed client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	enable := "true"
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, map[string]*string{kafka.ConfigShareDLQTopicEnable: &enable}, TopicShareDLQ)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, TopicSeed{}, fmt.Errorf("create %s: %w", TopicShareDLQ, err)
	}
	if err := kafka.SetShareGroupConfig(ctx, cl, ShareGroup, map[string]string{kafka.ConfigShareAutoOffsetReset: "earliest"}); err != nil {
		return nil, TopicSeed{}, err
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("fieldwork-dev-share"), kgo.ConsumeTopics(TopicTasks), kgo.ShareGroup(ShareGroup))
	if err != nil {
		return nil, TopicSeed{}, fmt.Errorf("share consumer: %w", err)
	}
	defer sc.Close()
	isPoison := map[kafka.RecordAddress]bool{}
	for _, p := range poison {
		isPoison[kafka.RecordAddress{Topic: p.Topic, Partition: p.Partition, Offset: p.Offset}] = true
	}
	s := &ShareSeed{Group: ShareGroup, Topic: TopicTasks, DLQTopic: TopicShareDLQ}
	seen := map[kafka.RecordAddress]bool{}
	var dead []*kgo.Record
	for len(seen) < total {
		fs := sc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, TopicSeed{}, fmt.Errorf("share group %s read %d of %d records of %s: %w", ShareGroup, len(seen), total, TopicTasks, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			at := kafka.AddressOf(r)
			if seen[at] {
				r.Ack(kgo.AckAccept)
				return
			}
			seen[at] = true
			if !isPoison[at] {
				r.Ack(kgo.AckAccept)
				s.Accepted++
				return
			}
			r.Ack(kgo.AckReject)
			s.Rejected++
			dead = append(dead, shareDeadLetter(r, partitions))
		})
	}
	if err := sc.FlushAcks(ctx); err != nil {
		return nil, TopicSeed{}, fmt.Errorf("share group %s: acknowledge: %w", ShareGroup, err)
	}
	if len(dead) > 0 {
		if err := cl.ProduceSync(ctx, dead...).FirstErr(); err != nil {
			return nil, TopicSeed{}, fmt.Errorf("seed %s: %w", TopicShareDLQ, err)
		}
	}
	s.DeadLetters = len(dead)
	ts := TopicSeed{Topic: TopicShareDLQ, Partitions: partitions, Records: len(dead), Poison: len(dead), DeadLetters: len(dead), PerPartition: make([]int, partitions)}
	for _, r := range dead {
		ts.PerPartition[r.Partition]++
	}
	return s, ts, nil
}

// shareDeadLetter is the dead letter a 4.4 broker writes for r, rejected on its first
// delivery by a member of ShareGroup, with copy off: coordinates only.
func shareDeadLetter(r *kgo.Record, partitions int) *kgo.Record {
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	return &kgo.Record{Topic: TopicShareDLQ, Partition: r.Partition % int32(partitions), Headers: []kgo.RecordHeader{
		h(kafka.ShareDLQHeaderTopic, r.Topic),
		h(kafka.ShareDLQHeaderPartition, strconv.Itoa(int(r.Partition))),
		h(kafka.ShareDLQHeaderOffset, strconv.FormatInt(r.Offset, 10)),
		h(kafka.ShareDLQHeaderGroup, ShareGroup),
		h(kafka.ShareDLQHeaderDeliveryCount, "1"),
		h(kafka.ShareDLQHeaderMessage, kafka.ShareDLQMessageRejected),
	}}
}
