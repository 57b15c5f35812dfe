package testenv

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Cluster connects fieldwork's Kafka client to the real broker, as a command does, and closes
// it at cleanup.
func Cluster(t testing.TB) *kafka.Cluster {
	t.Helper()
	c, err := kafka.Connect(context.Background(), config.Connection{Brokers: []string{Brokers(t)}}, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// SQLiteStore is the embedded store, migrated, in a temporary directory: a real store, the same
// queries as PostgreSQL's behind the same Store. It is closed at cleanup.
func SQLiteStore(t testing.TB) *dedup.Store {
	t.Helper()
	ctx := context.Background()
	st, err := dedup.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "fieldwork.db"), dedup.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	return st
}

// DeleteTopic deletes topic through cl and waits, bounded, until the brokers no longer know
// it, so that a test can create it again or rely on its absence.
func DeleteTopic(t testing.TB, cl *kgo.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := deleteTopic(ctx, kadm.NewClient(cl), topic); err != nil {
		t.Fatal(err)
	}
}

// deleteTopic is DeleteTopic for callers without a testing.TB (the script command).
func deleteTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return err
	}
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New(topic + " is still there after its deletion")
		case <-poll.C:
		}
	}
}
