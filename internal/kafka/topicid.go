package kafka

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicID returns the Kafka topic ID of topic (KIP-516): the identity a topic keeps for its
// life, which a topic deleted and created again under the same name does not share. It is
// written as Kafka's own tools print it (`kafka-topics.sh --describe` shows TopicId: …): URL-safe
// base64 without padding. It is "" when the brokers give no topic IDs (before Kafka 2.8). A
// topic that does not exist is an *UnknownTopicError. Each call asks the cluster (one metadata
// request): the answer is never an ID cached before the topic was recreated.
func (c *Cluster) TopicID(ctx context.Context, topic string) (string, error) {
	details, err := c.Admin.ListTopics(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("describe topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	switch {
	case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return "", &UnknownTopicError{Topic: topic}
	case d.Err != nil:
		return "", Denied(fmt.Errorf("describe topic %s: %w", topic, d.Err), OpDescribe, ResourceTopic, topic)
	case d.ID == [16]byte{}:
		return "", nil
	}
	return base64.RawURLEncoding.EncodeToString(d.ID[:]), nil
}
