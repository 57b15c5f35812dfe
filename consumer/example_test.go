package consumer_test

import (
	"context"
	"errors"
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

// exampleKafka starts an in-process broker (franz-go's kfake) with topic and its dead-letter
// topic <topic>.dlq, one partition each, and produces values to topic, in order. It returns
// the option that points a runner at it, the broker's addresses, and a function that stops
// it. (A service passes its own brokers to consumer.Kafka.)
func exampleKafka(topic string, values ...string) (consumer.Opt, []string, func()) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic, topic+".dlq"))
	if err != nil {
		log.Fatal(err)
	}
	seeds := cluster.ListenAddrs()
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()
	for _, v := range values {
		if err := producer.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			log.Fatal(err)
		}
	}
	return consumer.Kafka(kgo.SeedBrokers(seeds...)), seeds, cluster.Close
}

// exampleStore opens a migrated inbox in a new SQLite file with the service's table, and
// returns it with the table's quoted name and a function that closes and removes it. (A
// service opens its PostgreSQL database the same way: inbox.Open(ctx, "postgres://…").)
func exampleStore(ctx context.Context, table, columns string) (*inbox.Store, string, func()) {
	dir, err := os.MkdirTemp("", "consumer-example")
	if err != nil {
		log.Fatal(err)
	}
	store, err := inbox.Open(ctx, "sqlite:"+filepath.Join(dir, "inbox.db"))
	if err != nil {
		log.Fatal(err)
	}
	name := store.Table(table)
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := store.InTx(ctx, func(tx *inbox.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+name+` (`+columns+`)`)
		return err
	}); err != nil {
		log.Fatal(err)
	}
	return store, name, func() { _ = store.Close(); _ = os.RemoveAll(dir) }
}

// A service's consumer: its handler writes its own table through the transaction the runner
// gives it, in which the runner has claimed the event's marker, so that the row and the
// marker commit together. A duplicate never reaches the handler; an event it cannot handle,
// and a record that is not an event, are dead-lettered in fieldwork's convention (fieldwork
// dlq list and replay read them).
func Example() {
	ctx := context.Background()

	// Two orders placed, the first sent twice (a producer's retry), an event of a type the
	// service does not know, and a record that is not an event at all.
	kafka, seeds, stop := exampleKafka("orders",
		`{"event_id": "e1", "type": "order.placed", "aggregate_id": "o-1", "aggregate_version": 1}`,
		`{"event_id": "e2", "type": "order.placed", "aggregate_id": "o-2", "aggregate_version": 1}`,
		`{"event_id": "e1", "type": "order.placed", "aggregate_id": "o-1", "aggregate_version": 1}`,
		`{"event_id": "e3", "type": "order.teleported", "aggregate_id": "o-2", "aggregate_version": 2}`,
		`not an event`,
	)
	defer stop()
	store, orders, done := exampleStore(ctx, "orders", "order_id text PRIMARY KEY, event_id text NOT NULL")
	defer done()

	// The handler: the service's business logic, writing through tx only.
	handler := consumer.HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
		if m.Event.Type != "order.placed" {
			return 0, consumer.Unsupportedf("no handler for %s", m.Event.Type)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+orders+` (order_id, event_id) VALUES ($1, $2)`, m.Event.AggregateID, m.Event.ID)
		return consumer.Applied, err
	})

	// Run until every record is handled and committed, and nothing more arrives.
	r, err := consumer.New(store, handler, kafka,
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

	// The dead letters: each the original record, with headers that say where it failed and
	// why.
	dlq, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("orders.dlq"))
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

// A team's own middleware, added to the default chain where it belongs. Placed after
// Retry, it sees every attempt: the handler fails e2's first attempt with a Retryable error
// (a provider's 503, say), Retry rolls it back and calls again, and the second attempt
// succeeds.
func ExampleMiddleware() {
	ctx := context.Background()
	kafka, _, stop := exampleKafka("payments",
		`{"event_id": "e1", "type": "payment.captured", "aggregate_id": "p-1"}`,
		`{"event_id": "e2", "type": "payment.captured", "aggregate_id": "p-2"}`,
	)
	defer stop()
	store, payments, done := exampleStore(ctx, "payments", "payment_id text PRIMARY KEY")
	defer done()

	// logAttempts is the team's middleware: it sees the message's Event and Attempt, calls
	// the next step and may look at (or change) what it returns.
	logAttempts := func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
			out, err := next.Handle(ctx, tx, m)
			fmt.Printf("%s attempt %d: %v\n", m.Event.ID, m.Attempt, err)
			return out, err
		})
	}

	handler := consumer.HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
		if m.Event.ID == "e2" && m.Attempt == 1 {
			return 0, consumer.Retryable(errors.New("provider answered 503"))
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+payments+` (payment_id) VALUES ($1)`, m.Event.AggregateID)
		return consumer.Applied, err
	})

	// DefaultMiddleware is DeadLetter, Retry, Metrics, Recover (outermost first): the team's
	// step goes after Retry.
	mw := consumer.DefaultMiddleware()
	chain := append([]consumer.Middleware{mw[0], mw[1], logAttempts}, mw[2:]...)
	r, err := consumer.New(store, handler, kafka, consumer.Chain(chain...),
		consumer.Topics("payments"), consumer.Group("ledger"), consumer.StopWhenIdle(500*time.Millisecond),
		consumer.RetryBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
	s := r.Stats()
	fmt.Printf("%d applied, %d retried, %d dead-lettered\n", s.Processed, s.Retried, s.DeadLettered)

	// Output:
	// e1 attempt 1: <nil>
	// e2 attempt 1: provider answered 503
	// e2 attempt 2: <nil>
	// 2 applied, 1 retried, 0 dead-lettered
}
