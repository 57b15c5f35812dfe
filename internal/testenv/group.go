package testenv

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// HoldRebalance joins group as a member reading topic, polls until the group assigns it
// partitions (within a minute), and polls no more: with BlockRebalanceOnPoll it cannot give
// them up, so the group's next rebalance waits for it (up to two minutes), as for a member
// killed without leaving. Closing the client it returns (the test's cleanup does too) leaves
// the group and lets the rebalance complete.
func HoldRebalance(t testing.TB, group, topic string) *kgo.Client {
	t.Helper()
	var assigned atomic.Bool
	cl := Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.BlockRebalanceOnPoll(), kgo.RebalanceTimeout(2*time.Minute),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			if len(ps) > 0 {
				assigned.Store(true)
			}
		}))
	WaitUntil(t, time.Minute, nil, "the group assigns the holder partitions", func() bool {
		PollOnce(cl)
		return assigned.Load()
	})
	return cl
}

// PollOnce polls cl once, for a second at most (a topic may be empty), and lets a rebalance
// that waited on the poll go on.
func PollOnce(cl *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cl.PollRecords(ctx, 1)
	cl.AllowRebalance()
}
