package testenv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// GroupProgress is how far a consumer group has committed on some topics, as the brokers
// answer: the sum of its committed offsets (each capped at its partition's end), the sum of
// the end offsets, and the partitions still short of their end.
type GroupProgress struct {
	Committed, End int64
	Behind         []string // "topic/partition committed<end", sorted
}

// CaughtUp reports whether every partition is committed to its end.
func (g GroupProgress) CaughtUp() bool { return len(g.Behind) == 0 }

// Progress asks the brokers for group's commits and the end offsets of topics.
func Progress(ctx context.Context, adm *kadm.Client, group string, topics ...string) (GroupProgress, error) {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return GroupProgress{}, fmt.Errorf("end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	commits, err := adm.FetchOffsetsForTopics(ctx, group, topics...)
	if err == nil {
		err = commits.Error()
	}
	if err != nil {
		return GroupProgress{}, fmt.Errorf("offsets of group %s: %w", group, err)
	}
	var g GroupProgress
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(0)
		if c, ok := commits.Lookup(o.Topic, o.Partition); ok && c.At > 0 {
			at = c.At
		}
		g.End += o.Offset
		g.Committed += min(at, o.Offset)
		if at < o.Offset {
			g.Behind = append(g.Behind, fmt.Sprintf("%s/%d %d<%d", o.Topic, o.Partition, at, o.Offset))
		}
	})
	slices.Sort(g.Behind)
	return g, nil
}

// WaitProgress polls Progress every 100ms until cond holds, and fails the test when it does
// not within the bound (or when stop is closed first: a process the wait depends on exited),
// saying how far the group got. Errors while a broker is down are retried until the bound.
func WaitProgress(t testing.TB, adm *kadm.Client, within time.Duration, stop <-chan struct{}, what string, cond func(GroupProgress) bool, group string, topics ...string) GroupProgress {
	t.Helper()
	deadline := time.Now().Add(within)
	var last GroupProgress
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		g, err := Progress(ctx, adm, group, topics...)
		cancel()
		if err == nil {
			if cond(g) {
				return g
			}
			last, lastErr = g, nil
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: %s not reached within %s: committed %d of %d, behind %v (last error: %v)",
				group, what, within, last.Committed, last.End, last.Behind, lastErr)
		}
		select {
		case <-stop:
			t.Fatalf("group %s: waiting for %s, a process it needs exited: committed %d of %d", group, what, last.Committed, last.End)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitCaughtUp waits until group has committed every partition of topics to its end.
func WaitCaughtUp(t testing.TB, adm *kadm.Client, within time.Duration, stop <-chan struct{}, group string, topics ...string) GroupProgress {
	t.Helper()
	return WaitProgress(t, adm, within, stop, "every partition committed to its end", GroupProgress.CaughtUp, group, topics...)
}
