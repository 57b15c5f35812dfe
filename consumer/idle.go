package consumer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// idleCheck decides when StopWhenIdle stops the runner. All of these must hold:
//
//   - the runner holds an assignment (a member that holds no partition, because it has not
//     joined yet or lost its partitions, knows nothing about being done);
//   - no record has arrived for StopWhenIdle since the last assignment change, and no
//     partition has anything queued or in flight;
//   - asked of the broker, because a quiet client proves nothing (a resumed partition is
//     fetched a little later; a member that lost its partitions receives nothing): the
//     group's committed offset of every partition of every source topic, assigned to this
//     member or not, has reached the partition's last stable offset (records deleted by
//     retention count as done). So a member does not stop while a partition it lost, or
//     never had, still has lag;
//   - the assignment did not change and no record arrived while the broker was asked.
//
// The committed offset, not what the runner finished, is what counts: a worker whose last
// commit failed commits again while it waits (worker.take). Transaction markers are
// delivered to the workers and committed past, so a log that ends in one is reached too.
// Partitions this member stopped at a dead letter it cannot write (HaltedError) are the
// exception: they never reach their end, so once every other partition has, the runner stops
// and Run returns their errors.
type idleCheck struct {
	lastAsked time.Time
	gen       uint64 // the assignment generation behind and loggedAt belong to
	behind    string // the partitions found behind at the last check, for the log
	loggedAt  time.Time
}

// idleState is what the runner knows without asking the broker.
type idleState struct {
	ready    bool // holds an assignment, quiet long enough, nothing queued or in flight
	gen      uint64
	lastRecv time.Time
	halted   map[tp]bool // assigned partitions whose worker is halted
}

func (e *Runner) idleState(d time.Duration) idleState {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := idleState{gen: e.gen, lastRecv: e.lastRecv, halted: map[tp]bool{}}
	s.ready = len(e.workers) > 0 && time.Since(e.lastRecv) >= d
	for k, w := range e.workers {
		idle, halted := w.idle()
		if !idle {
			s.ready = false
		}
		if halted {
			s.halted[k] = true
		}
	}
	return s
}

// done reports whether the runner should stop now, and logs why when it should.
func (c *idleCheck) done(ctx context.Context, e *Runner) bool {
	d := e.o.StopWhenIdle
	if d <= 0 {
		return false
	}
	s := e.idleState(d)
	if s.gen != c.gen {
		c.gen, c.behind, c.loggedAt = s.gen, "", time.Time{}
	}
	if !s.ready || time.Since(c.lastAsked) < time.Second {
		return false
	}
	c.lastAsked = time.Now()
	behind, halted, err := e.behind(ctx, s.halted)
	if err != nil {
		e.log.Warn("idle check: cannot read offsets from the broker", "error", err)
		return false
	}
	if again := e.idleState(d); !again.ready || again.gen != s.gen || !again.lastRecv.Equal(s.lastRecv) {
		return false
	}
	switch {
	case behind == "" && halted == "":
		e.log.Info("no records for a while, nothing in flight, the group's committed offsets at the end of every partition: stopping",
			"stop_when_idle", d.String())
		return true
	case behind == "":
		e.log.Error("every partition at its end but those stopped at a dead letter that cannot be written: stopping",
			"stop_when_idle", d.String(), "stopped", halted)
		return true
	}
	if behind != c.behind || time.Since(c.loggedAt) >= time.Minute {
		e.log.Info("quiet, but partitions are behind their end offsets: waiting", "behind", behind)
		c.behind, c.loggedAt = behind, time.Now()
	}
	return false
}

// behind lists the partitions of the source topics whose committed offset (at least the log
// start) is before their last stable offset, as "topic/partition@committed<end" separated by
// spaces, "" when none is: those in halted apart, in stopped.
func (e *Runner) behind(ctx context.Context, halted map[tp]bool) (behind, stopped string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &kafka.Cluster{Client: e.cl, Admin: kadm.NewClient(e.cl)}
	c.AwaitGroupCoordinators(ctx, e.o.Group)
	committed, err := c.Admin.FetchOffsets(ctx, e.o.Group)
	if err != nil {
		return "", "", fmt.Errorf("committed offsets of group %s: %w", e.o.Group, err)
	}
	var b, s []string
	for _, topic := range e.o.Topics {
		bounds, err := c.Bounds(ctx, topic)
		if err != nil {
			return "", "", err
		}
		for _, pb := range bounds {
			pos := pb.LogStart
			if o, ok := committed.Lookup(topic, pb.Partition); ok && o.Err == nil {
				pos = max(pos, o.At)
			}
			if pos >= pb.LastStable {
				continue
			}
			at := fmt.Sprintf("%s (end %d)", kafka.RecordAddress{Topic: topic, Partition: pb.Partition, Offset: pos}, pb.LastStable)
			if halted[tp{topic, pb.Partition}] {
				s = append(s, at)
			} else {
				b = append(b, at)
			}
		}
	}
	slices.Sort(b)
	slices.Sort(s)
	return strings.Join(b, " "), strings.Join(s, " "), nil
}
