package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// StoppedError means a run stopped itself (--stop-on-redeadletter): Redeadlettered of the
// records it sent were dead-lettered again into the topic it reads, by fw.replay.id, so the
// cause is not fixed. Records in flight were awaited and journaled, and the run is marked
// interrupted with this error: it resumes where it stopped (`replay resume`) once the cause is
// fixed. It is a check failure (exit 3).
type StoppedError struct {
	RunID          string
	Topic          string
	Redeadlettered int
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped: %d records of run %s were dead-lettered again into %s (--stop-on-redeadletter %d): the failure is not fixed; fix it, then continue with: fieldwork replay resume %s --execute",
		e.Redeadlettered, e.RunID, e.Topic, e.Redeadlettered, e.RunID)
}

// IsStopped reports whether err is a run's StoppedError.
func IsStopped(err error) bool {
	var se *StoppedError
	return errors.As(err, &se)
}

// watchRedeadletters reads the topic a run reads from its end now on, and calls stop with a
// *StoppedError once n records carrying the run's fw.replay.id have arrived there. It returns
// when ctx is done.
func watchRedeadletters(ctx context.Context, c *kafka.Cluster, topic, runID string, n int, stop func(error)) error {
	bounds, err := c.Bounds(ctx, topic)
	if err != nil {
		return err
	}
	starts := map[string]map[int32]int64{topic: {}}
	for _, b := range bounds {
		starts[topic][b.Partition] = b.HighWatermark
	}
	id := []byte(runID)
	seen := 0
	err = c.Follow(ctx, starts, nil, func(r *kgo.Record) error {
		for _, h := range r.Headers {
			if h.Key == dlq.ReplayHeaderID && bytes.Equal(h.Value, id) {
				if seen++; seen >= n {
					return &StoppedError{RunID: runID, Topic: topic, Redeadlettered: seen}
				}
				break
			}
		}
		return nil
	})
	if IsStopped(err) {
		stop(fwerr.Wrap(fwerr.KindCheck, err))
		return nil
	}
	return err
}
