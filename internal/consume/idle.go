package consume

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// idleCheck decides when StopWhenIdle stops the engine: no record has arrived for
// StopWhenIdle since the first assignment, no partition has anything queued or in flight,
// and — asked of the broker, because a quiet client proves nothing (a resumed partition is
// fetched a little later; a new member may take a while to get its first records) — every
// assigned partition's position (the later of what this engine finished and what the group
// has committed) has reached the partition's end offset. A partition that stays behind for
// 3×StopWhenIdle without a record arriving is given up on with a warning: that happens when
// the log ends in transaction markers, which are never delivered as records.
type idleCheck struct {
	lastAsked time.Time
	behind    string // the partitions found behind at the last check, for the log
}

// done reports whether the engine should stop now, and logs why when it should.
func (c *idleCheck) done(ctx context.Context, e *Engine) bool {
	d := e.o.StopWhenIdle
	if d <= 0 {
		return false
	}
	e.mu.Lock()
	quiet := time.Since(e.lastRecv)
	ready := e.joined && quiet >= d
	positions := map[tp]int64{}
	for k, w := range e.workers {
		idle, finished := w.idle()
		if !idle {
			ready = false
		}
		positions[k] = finished
	}
	e.mu.Unlock()
	if !ready || time.Since(c.lastAsked) < time.Second {
		return false
	}
	c.lastAsked = time.Now()
	behind, err := e.behind(ctx, positions)
	switch {
	case err != nil:
		e.log.Warn("idle check: cannot read offsets from the broker", "error", err)
		return false
	case behind == "":
		e.log.Info("no records for a while, nothing in flight, every partition at its end: stopping",
			"stop_when_idle", d.String())
		return true
	case quiet >= 3*d:
		e.log.Warn("stopping although partitions have records this consumer has not received (transaction markers at the end of the log, or the fetch is stuck)",
			"stop_when_idle", d.String(), "behind", behind)
		return true
	}
	if behind != c.behind {
		e.log.Info("quiet, but partitions are behind their end offsets: waiting", "behind", behind)
		c.behind = behind
	}
	return false
}

// behind lists the partitions whose position is before their end offset, as
// "topic/partition@position<end" separated by spaces; "" when none is.
func (e *Engine) behind(ctx context.Context, positions map[tp]int64) (string, error) {
	if len(positions) == 0 {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(e.cl)
	ends, err := adm.ListEndOffsets(ctx, e.o.Topics...)
	if err != nil {
		return "", err
	}
	starts, err := adm.ListStartOffsets(ctx, e.o.Topics...)
	if err != nil {
		return "", err
	}
	committed, err := adm.FetchOffsets(ctx, e.o.Group)
	if err != nil {
		return "", err
	}
	var out []string
	for k, pos := range positions {
		if c, ok := committed.Lookup(k.topic, k.partition); ok && c.Err == nil {
			pos = max(pos, c.At)
		}
		// Records before the log start are gone (retention, deleted records): they can
		// never arrive.
		if s, ok := starts.Lookup(k.topic, k.partition); ok && s.Err == nil {
			pos = max(pos, s.Offset)
		}
		end, ok := ends.Lookup(k.topic, k.partition)
		if !ok || end.Err != nil {
			return "", fmt.Errorf("end offset of %s/%d: %v", k.topic, k.partition, end.Err)
		}
		if pos < end.Offset {
			out = append(out, fmt.Sprintf("%s/%d@%d<%d", k.topic, k.partition, pos, end.Offset))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " "), nil
}
