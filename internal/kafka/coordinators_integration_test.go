package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestGroupsOfAFreshCluster: the first group lookup of a new cluster has the broker create
// __consumer_offsets, and until its partitions have leaders the broker answers that no
// coordinator is available. The client retries that answer for requests but not for the
// coordinator's lookup, so the calls wait for the coordinator themselves: a command run
// against a cluster that just started reads its groups instead of failing.
func TestGroupsOfAFreshCluster(t *testing.T) {
	for _, call := range []struct {
		name string
		run  func(ctx context.Context, c *kafka.Cluster) error
	}{
		{"commits", func(ctx context.Context, c *kafka.Cluster) error { _, err := c.CommitsOf(ctx, "fresh"); return err }},
		{"share starts", func(ctx context.Context, c *kafka.Cluster) error {
			_, failed := c.ShareGroupStarts(ctx, "fresh")
			return failed["fresh"]
		}},
		{"describe", func(ctx context.Context, c *kafka.Cluster) error {
			_, err := groups.Describe(ctx, c, "fresh", 0, time.Now, func() {})
			if fwerr.KindOf(err) == fwerr.KindNotFound {
				return nil // the answer: no such group
			}
			return fmt.Errorf("want that the group does not exist: %v", err)
		}},
	} {
		t.Run(call.name, func(t *testing.T) {
			k := testenv.StartPrivateKafka(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := kafka.Connect(ctx, config.Connection{Brokers: []string{k.Brokers()}}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := call.run(ctx, c); err != nil {
				t.Fatalf("the first group call of a fresh cluster: %v", err)
			}
		})
	}
}
