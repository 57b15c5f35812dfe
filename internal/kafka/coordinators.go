package kafka

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// retryTimeout bounds how long a request is retried while the brokers answer with a retriable
// error (kgo.RetryTimeout), and how long a group call waits for its coordinator
// (AwaitGroupCoordinators).
const retryTimeout = 15 * time.Second

// AwaitGroupCoordinators waits until the brokers name a coordinator for each of groups, while
// they answer that none is available yet: the first group lookup of a new cluster has the
// broker create __consumer_offsets (COORDINATOR_NOT_AVAILABLE until its partitions have
// leaders), and a coordinator that moved loads its groups first. The client retries such an
// answer to a request, but not to the coordinator's lookup, which fails the call at once. It
// asks again after 100 ms, then twice as long each time up to a second, for at most
// retryTimeout or until ctx ends; any other answer ends the wait, and the call that follows
// reports it (a denial, an unreachable broker). Every call of a group's coordinator
// (offsets, descriptions, commits, share-group starts) waits first; a group whose coordinator
// the brokers named once is not asked about again (Cluster.named).
func (c *Cluster) AwaitGroupCoordinators(ctx context.Context, groups ...string) {
	groups = slices.DeleteFunc(slices.Clone(groups), func(g string) bool { _, ok := c.named.Load(g); return ok })
	if len(groups) == 0 {
		return
	}
	deadline := time.Now().Add(retryTimeout)
	wait := 100 * time.Millisecond
	for {
		pending := false
		for _, r := range c.Admin.FindGroupCoordinators(ctx, groups...) {
			if r.Err == nil {
				c.named.Store(r.Name, true)
			}
			pending = pending || coordinatorPending(r.Err)
		}
		if !pending || time.Now().Add(wait).After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// coordinatorPending is whether err says that a group's coordinator is not there yet.
func coordinatorPending(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.NotCoordinator)
}
