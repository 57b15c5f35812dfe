package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// ReadInOrder hands on every record once, one partition after another in the order of the
// ranges given, each in offset order: over many small partitions (fetched together), a large
// one (read alone, the next ones paused) and empty ones, more than it may hold ahead in all,
// so that partitions are paused and resumed on the way. ErrSkipPartition ends a partition's
// read; any other error of the callback stops it.
func TestReadInOrder(t *testing.T) {
	c := testenv.Cluster(t)
	const partitions = 40
	topic := testenv.Topic(t, partitions, nil)
	prod := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pad := strings.Repeat("x", 3000)
	counts := make([]int, partitions)
	var recs []*kgo.Record
	for p := range partitions {
		counts[p] = p * 37 % 120 // partition 0 empty
		if p == 7 {
			counts[p] = 2500 // 7.5 MB alone
		}
		for i := range counts[p] {
			recs = append(recs, &kgo.Record{Partition: int32(p), Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%d/%d/%s", p, i, pad))})
		}
	}
	testenv.Produce(t, prod, recs...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ranges, err := c.Plan(ctx, topic, kafka.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(ranges) // the order given is the order read
	var (
		want []string
		got  []string
	)
	for _, r := range ranges {
		for i := range counts[r.Partition] {
			want = append(want, fmt.Sprintf("%d/%d/%d", r.Partition, i, i))
		}
	}
	err = c.ReadInOrder(ctx, ranges, func(r *kgo.Record) error {
		v, _, _ := strings.Cut(string(r.Value[strings.IndexByte(string(r.Value), '/')+1:]), "/")
		got = append(got, fmt.Sprintf("%d/%s/%d", r.Partition, v, r.Offset))
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d is %s (partition/value/offset), want %s", i, got[i], want[i])
		}
	}

	// Each partition's read ended after its tenth record, whether that partition's records
	// came straight from a fetch or were held for its turn.
	want = want[:0]
	for _, r := range ranges {
		for i := range min(counts[r.Partition], 10) {
			want = append(want, fmt.Sprintf("%d/%d", r.Partition, i))
		}
	}
	got = got[:0]
	taken := map[int32]int{}
	err = c.ReadInOrder(ctx, ranges, func(r *kgo.Record) error {
		if taken[r.Partition] == 10 {
			return kafka.ErrSkipPartition
		}
		taken[r.Partition]++
		got = append(got, fmt.Sprintf("%d/%d", r.Partition, r.Offset))
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read with each partition skipped after ten records:\n%v\nwant\n%v", got, want)
	}

	stop := errors.New("stop")
	n := 0
	err = c.ReadInOrder(ctx, ranges, func(*kgo.Record) error {
		if n++; n == 3000 {
			return stop
		}
		return nil
	}, nil)
	if !errors.Is(err, stop) || n != 3000 {
		t.Fatalf("stopped read: %v after %d records, want %v after 3000", err, n, stop)
	}

	// A read whose context ends stops at its next fetch (the poller's, taken ahead, is not
	// handed on), as an interruption.
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	n = 0
	err = c.ReadInOrder(cctx, ranges, func(*kgo.Record) error {
		if n++; n == 3000 {
			ccancel()
		}
		return nil
	}, nil)
	if !errors.Is(err, context.Canceled) || fwerr.KindOf(err) != fwerr.KindInterrupted || n >= len(recs) {
		t.Fatalf("read cancelled after 3000 records: %v (kind %v) after %d records, want an interruption before all %d", err, fwerr.KindOf(err), n, len(recs))
	}
}
