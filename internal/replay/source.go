package replay

import (
	"context"
	"fmt"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// SourceRecreatedError means the topic a replay reads was deleted and created again under the
// same name since the replay was planned, or since a journaled run read it: its Kafka topic ID
// changed, and the records at the offsets the plan or the run's checkpoints name are not the
// ones they named. It is a plain error (exit 1): nothing was sent.
type SourceRecreatedError struct {
	Topic string
	// RunID is the journaled run refused a resume; "" for a plan not yet executed.
	RunID string
	// Then is the topic ID the plan or the journal holds; Now the topic's ID now.
	Then, Now string
}

func (e *SourceRecreatedError) Error() string {
	if e.RunID != "" {
		return fmt.Sprintf("run %s cannot be resumed: its source topic %s was deleted and recreated since the run (topic ID %s then, %s now); "+
			"its checkpoints name records that no longer exist: start a new replay of %s", e.RunID, e.Topic, e.Then, e.Now, e.Topic)
	}
	return fmt.Sprintf("the source topic %s was deleted and recreated since the replay was planned (topic ID %s then, %s now); "+
		"the records planned no longer exist: plan the replay again", e.Topic, e.Then, e.Now)
}

// checkSourceTopic refuses p when its source topic's ID is not the one p holds (the one the
// plan was made with, or the journaled run's): a *SourceRecreatedError. A plan or a run without
// a topic ID (a broker that gives none, a run journaled before topic IDs were) cannot be
// checked and passes.
func checkSourceTopic(ctx context.Context, c *kafka.Cluster, p *Plan) error {
	if p.SourceTopicID == "" {
		return nil
	}
	now, err := c.TopicID(ctx, p.Spec.From)
	if err != nil {
		return err
	}
	if now == "" || now == p.SourceTopicID {
		return nil
	}
	e := &SourceRecreatedError{Topic: p.Spec.From, Then: p.SourceTopicID, Now: now}
	if p.Resume != nil {
		e.RunID = p.Resume.Run.ID
	}
	return e
}
