package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func readAll(t *testing.T, c *kafka.Cluster, ranges []kafka.PartitionRange) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var offsets []int64
	err := c.Read(ctx, ranges, func(r *kgo.Record) error {
		offsets = append(offsets, r.Offset)
		return nil
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return offsets
}

func TestPlanAndReadRanges(t *testing.T) {
	c := testenv.Cluster(t)
	topic := testenv.Topic(t, 2, nil)
	prod := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 10; i++ {
		testenv.Produce(t, prod, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprint(i))})
	}
	ctx := context.Background()
	all, err := c.Plan(ctx, topic, kafka.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Len() != 10 || all[1].Len() != 0 {
		t.Fatalf("plan = %+v", all)
	}
	if got := readAll(t, c, all); len(got) != 10 {
		t.Fatalf("read %d records, want 10", len(got))
	}
	s, e := int64(3), int64(6)
	some, err := c.Plan(ctx, topic, kafka.Selection{Partitions: []int32{0}, StartOffset: &s, EndOffset: &e})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, some); fmt.Sprint(got) != "[3 4 5 6]" {
		t.Fatalf("offsets 3..6 read %v", got)
	}
	// Records produced after the plan are not read.
	testenv.Produce(t, prod, &kgo.Record{Partition: 0, Value: []byte("late")})
	if got := readAll(t, c, all); len(got) != 10 {
		t.Fatalf("bounded read saw %d records, want 10", len(got))
	}
	// An offset outside the partition is not found, and the error gives the valid range.
	bad := int64(99)
	_, err = c.Plan(ctx, topic, kafka.Selection{Partitions: []int32{0}, StartOffset: &bad})
	if fwerr.KindOf(err) != fwerr.KindNotFound || !strings.Contains(err.Error(), "0..10") {
		t.Fatalf("out of range: %v", err)
	}
	_, err = c.Plan(ctx, topic, kafka.Selection{StartOffset: &e, EndOffset: &s})
	if fwerr.KindOf(err) != fwerr.KindUsage {
		t.Fatalf("inverted: %v", err)
	}
	_, err = c.Plan(ctx, topic, kafka.Selection{Partitions: []int32{7}})
	if fwerr.KindOf(err) != fwerr.KindNotFound {
		t.Fatalf("unknown partition: %v", err)
	}
}

func TestPlanByTime(t *testing.T) {
	c := testenv.Cluster(t)
	topic := testenv.Topic(t, 1, nil)
	prod := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := 0; i < 6; i++ {
		testenv.Produce(t, prod, &kgo.Record{Timestamp: base.Add(time.Duration(i) * time.Minute), Value: []byte{byte(i)}})
	}
	r, err := c.Plan(context.Background(), topic, kafka.Selection{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, c, r); fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("time window read %v", got)
	}
}

// A transaction's commit marker ends the log: the read must not wait for a record at the
// marker's offset. An aborted transaction's records are not delivered.
func TestReadStopsAtTransactionMarkers(t *testing.T) {
	c := testenv.Cluster(t)
	topic := testenv.Topic(t, 1, nil)
	plain := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	testenv.Produce(t, plain, &kgo.Record{Value: []byte("plain")})
	txn := testenv.Client(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(testenv.Name(t, "txn")))
	ctx := context.Background()
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		testenv.Produce(t, txn, &kgo.Record{Value: []byte(fmt.Sprint(commit))})
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	// offsets: 0 plain, 1 aborted, 2 abort marker, 3 committed, 4 commit marker.
	// EndTransaction returns once the coordinator has logged the commit; it writes the
	// markers afterwards, and until the commit marker is in, the last stable offset stays at 3
	// (the committed record is not readable yet). A plan takes the end as of now, so wait for
	// the marker first: on a busy machine it lands well after EndTransaction returns.
	waitStable(t, c, topic, 5)
	ranges, err := c.Plan(ctx, topic, kafka.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if ranges[0].End != 5 {
		t.Fatalf("end offset = %d, want 5", ranges[0].End)
	}
	for name, read := range readers(c) {
		done := make(chan []int64, 1)
		go func() {
			var offsets []int64
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := read(rctx, ranges, func(r *kgo.Record) error {
				offsets = append(offsets, r.Offset)
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			done <- offsets
		}()
		select {
		case got := <-done:
			if fmt.Sprint(got) != "[0 3]" {
				t.Fatalf("%s read %v, want [0 3]", name, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s hung on a transaction marker", name)
		}
	}
}

// waitStable waits, bounded, until partition 0 of topic has last stable offset and high
// watermark want.
func waitStable(t *testing.T, c *kafka.Cluster, topic string, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := c.Bounds(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		if b[0].LastStable == want && b[0].HighWatermark == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("last stable offset %d, high watermark %d 30s after the commit; want %d", b[0].LastStable, b[0].HighWatermark, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUnknownTopic(t *testing.T) {
	c := testenv.Cluster(t)
	_, err := c.Plan(context.Background(), topic404(t), kafka.Selection{})
	var ute *kafka.UnknownTopicError
	if err == nil || !errors.As(err, &ute) {
		t.Fatalf("err = %v", err)
	}
}

func topic404(t *testing.T) string { return testenv.Name(t, "missing") }

func TestUnreachableBroker(t *testing.T) {
	testenv.Brokers(t) // an integration test: runs beside the others
	start := time.Now()
	_, err := kafka.Connect(context.Background(), config.Connection{Brokers: []string{"127.0.0.1:1"}}, 3*time.Second)
	if fwerr.KindOf(err) != fwerr.KindConnect {
		t.Fatalf("err = %v (kind %v)", err, fwerr.KindOf(err))
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("message does not name broker and cause: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestNotAKafkaBroker: --brokers pointed at a port that is no Kafka listener says so, rather
// than franz-go's "invalid large response size": the real PostgreSQL's port, a web server,
// and the real broker's TLS listener dialled in the clear (which needs --tls).
func TestNotAKafkaBroker(t *testing.T) {
	pg, err := url.Parse(testenv.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	// A web server that answers what it cannot parse at once, as most proxies do.
	web, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	go func() {
		for {
			c, err := web.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	tlsAddr, _, _ := testenv.SecureBrokers(t)
	for _, c := range []struct{ addr, want string }{
		{pg.Host, pg.Host + " is not a Kafka broker (its answer is not Kafka's protocol): give the port of a Kafka listener in --brokers"},
		{web.Addr().String(), web.Addr().String() + " is not a Kafka broker (it answers HTTP)"},
		{tlsAddr, "Kafka at " + tlsAddr + " speaks TLS: add --tls"},
	} {
		_, err := kafka.Connect(context.Background(), config.Connection{Brokers: []string{c.addr}}, 10*time.Second)
		if fwerr.KindOf(err) != fwerr.KindConnect || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "invalid large response") {
			t.Errorf("--brokers %s: err = %v (kind %v), want %q", c.addr, err, fwerr.KindOf(err), c.want)
		}
	}
}

func TestSASL(t *testing.T) {
	addr, user, pw := testenv.SASLBrokers(t)
	for _, mech := range config.Mechanisms {
		if mech == config.MechanismAWSMSKIAM || mech == config.MechanismOAuthBearer {
			continue // no password: TestAWSMSKIAM, and internal/access on the listener that takes tokens
		}
		t.Run(mech, func(t *testing.T) {
			conn := config.Connection{Brokers: []string{addr}, SASL: config.SASL{Mechanism: mech, Username: user}, Password: pw}
			c, err := kafka.Connect(context.Background(), conn, 10*time.Second)
			if err != nil {
				t.Fatalf("right password: %v", err)
			}
			c.Close()
			conn.Password = "wrong-" + pw
			start := time.Now()
			_, err = kafka.Connect(context.Background(), conn, 10*time.Second)
			if fwerr.KindOf(err) != fwerr.KindConnect {
				t.Fatalf("wrong password: %v", err)
			}
			if strings.Contains(err.Error(), conn.Password) {
				t.Fatalf("error shows the password: %v", err)
			}
			if !strings.Contains(err.Error(), "authenticate") {
				t.Errorf("error does not say authentication failed: %v", err)
			}
			t.Logf("%s wrong password after %s: %v", mech, time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// TestReadOfADeletedTopic: a topic deleted after its ranges were planned (another team's
// dead-letter topic that came and went while a pattern's scan read the others) ends the read
// with an *UnknownTopicError naming it, soon, rather than waiting for records that will never
// come.
func TestReadOfADeletedTopic(t *testing.T) {
	c := testenv.Cluster(t)
	topic := testenv.Topic(t, 2, nil)
	prod := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	for i := 0; i < 10; i++ {
		testenv.Produce(t, prod, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	ranges, err := c.Plan(context.Background(), topic, kafka.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTopic(t, prod, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for name, read := range readers(c) {
		err = read(ctx, ranges, func(*kgo.Record) error { return nil })
		var ute *kafka.UnknownTopicError
		if !errors.As(err, &ute) || ute.Topic != topic {
			t.Fatalf("%s of a deleted topic: %v (context: %v), want an UnknownTopicError for %s", name, err, ctx.Err(), topic)
		}
	}
}

// readers are Read and ReadInOrder (which must behave alike at a transaction marker and a
// topic deleted), by name.
func readers(c *kafka.Cluster) map[string]func(context.Context, []kafka.PartitionRange, func(*kgo.Record) error) error {
	return map[string]func(context.Context, []kafka.PartitionRange, func(*kgo.Record) error) error{
		"Read": c.Read,
		"ReadInOrder": func(ctx context.Context, ranges []kafka.PartitionRange, fn func(*kgo.Record) error) error {
			return c.ReadInOrder(ctx, ranges, fn, nil)
		},
	}
}
