package consumer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
)

// A service's consumer: its handler writes its own table through the transaction the runner
// gives it, in which the runner has claimed the event's marker. A duplicate never reaches the
// handler, and what the handler cannot handle is dead-lettered in fieldwork's convention.
//
// The example runs on an in-process broker (franz-go's kfake) and an SQLite file; a service
// passes its brokers to consumer.Kafka and opens its PostgreSQL database with inbox.Open.
func Example() {
	ctx := context.Background()

	// A broker with the topic and its dead-letter topic (the runner never creates topics).
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "orders.dlq"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	brokers := consumer.Kafka(kgo.SeedBrokers(cluster.ListenAddrs()...))

	// The inbox: the markers, and the service's own table beside them.
	dir, err := os.MkdirTemp("", "consumer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := inbox.Open(ctx, "sqlite:"+filepath.Join(dir, "orders.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	orders := store.Table("orders")
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := store.InTx(ctx, func(tx *inbox.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+orders+` (order_id text PRIMARY KEY, event_id text NOT NULL)`)
		return err
	}); err != nil {
		log.Fatal(err)
	}

	// The events: two orders placed, the first one sent twice (a producer's retry), an event
	// of a type the handler does not know, and a record that is not an event at all.
	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()
	for _, v := range []string{
		`{"event_id": "e1", "type": "order.placed", "aggregate_id": "o-1", "aggregate_version": 1}`,
		`{"event_id": "e2", "type": "order.placed", "aggregate_id": "o-2", "aggregate_version": 1}`,
		`{"event_id": "e1", "type": "order.placed", "aggregate_id": "o-1", "aggregate_version": 1}`,
		`{"event_id": "e3", "type": "order.teleported", "aggregate_id": "o-2", "aggregate_version": 2}`,
		`not an event`,
	} {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			log.Fatal(err)
		}
	}

	// The handler: the service's business logic, writing through tx only.
	handler := consumer.HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
		if m.Event.Type != "order.placed" {
			return 0, consumer.Unsupportedf("no handler for %s", m.Event.Type)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+orders+` (order_id, event_id) VALUES ($1, $2)`, m.Event.AggregateID, m.Event.ID)
		return consumer.Applied, err
	})

	// Run until every record is handled and committed, and nothing more arrives.
	r, err := consumer.New(store, handler, brokers,
		consumer.Topics("orders"), consumer.Group("billing"), consumer.StopWhenIdle(500*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
	s := r.Stats()
	fmt.Printf("%d records: %d applied, %d duplicate, %d dead-lettered\n", s.Records, s.Processed, s.Duplicates, s.DeadLettered)

	// The service's table: one row per order.
	if err := store.InTx(ctx, func(tx *inbox.Tx) error {
		rows, err := tx.Query(ctx, `SELECT order_id, event_id FROM `+orders+` ORDER BY order_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, ev string
			if err := rows.Scan(&id, &ev); err != nil {
				return err
			}
			fmt.Println("order", id, "from event", ev)
		}
		return rows.Err()
	}); err != nil {
		log.Fatal(err)
	}

	// The dead letters: the original record, with headers that say where it failed and why
	// (fieldwork dlq list reads them).
	dlq, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders.dlq"))
	if err != nil {
		log.Fatal(err)
	}
	defer dlq.Close()
	for seen := 0; seen < 2; {
		dlq.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			seen++
			h := map[string]string{}
			for _, kv := range rec.Headers {
				h[kv.Key] = string(kv.Value)
			}
			fmt.Printf("dead letter of orders/0/%s: %s by group %s\n", h["fw.dlq.offset"], h["fw.dlq.reason"], h["fw.dlq.group"])
		})
	}

	// Output:
	// 5 records: 2 applied, 1 duplicate, 2 dead-lettered
	// order o-1 from event e1
	// order o-2 from event e2
	// dead letter of orders/0/3: unsupported by group billing
	// dead letter of orders/0/4: malformed by group billing
}
