package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// shareConsumer is a share-group member that knows nothing of fieldwork: it accepts every
// record but one whose value is POISON, which it releases each time it is delivered (a handler
// that fails on it and lets the broker redeliver), as a member without a dead-letter path of its
// own does. It records the highest delivery count it saw of the poison.
type shareConsumer struct {
	cl     *kgo.Client
	cancel func()
	done   chan struct{}
	mu     sync.Mutex
	seen   int32
}

var (
	shareMu        sync.Mutex
	shareConsumers = map[*testscript.TestScript]*shareConsumer{}
)

// cmdShareConsumer is `fw-share-consumer start GROUP TOPIC | stop`: start runs a shareConsumer
// on $FIELDWORK_BROKERS in the background; stop makes it leave the group and prints the highest
// delivery count of the poison record it saw.
func cmdShareConsumer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fw-share-consumer start GROUP TOPIC | stop")
	}
	shareMu.Lock()
	c := shareConsumers[ts]
	shareMu.Unlock()
	switch args[0] {
	case "start":
		if len(args) != 3 || c != nil {
			ts.Fatalf("usage: fw-share-consumer start GROUP TOPIC (one at a time)")
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(ts.Getenv("FIELDWORK_BROKERS"), ",")...),
			kgo.ShareGroup(args[1]), kgo.ConsumeTopics(args[2]), kgo.ClientID("share-consumer"))
		ts.Check(err)
		ctx, cancel := context.WithCancel(context.Background())
		c = &shareConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
		go c.run(ctx)
		shareMu.Lock()
		shareConsumers[ts] = c
		shareMu.Unlock()
		ts.Defer(c.stop)
	case "stop":
		if c == nil {
			ts.Fatalf("fw-share-consumer stop: none started")
		}
		c.stop()
		shareMu.Lock()
		delete(shareConsumers, ts)
		shareMu.Unlock()
		c.mu.Lock()
		fmt.Fprintf(ts.Stdout(), "poison delivered %d times\n", c.seen)
		c.mu.Unlock()
	default:
		ts.Fatalf("usage: fw-share-consumer start GROUP TOPIC | stop")
	}
}

func (c *shareConsumer) run(ctx context.Context) {
	defer close(c.done)
	for ctx.Err() == nil {
		c.cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "POISON" {
				r.Ack(kgo.AckAccept)
				return
			}
			c.mu.Lock()
			c.seen = max(c.seen, r.DeliveryCount())
			c.mu.Unlock()
			r.Ack(kgo.AckRelease)
		})
	}
}

func (c *shareConsumer) stop() {
	c.cancel()
	<-c.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.cl.FlushAcks(ctx)
	c.cl.Close()
}

// cmdShareConfig is `fw-share-config GROUP KEY=VALUE...`: it sets a share group's configs on
// the real broker (an empty VALUE deletes the key), as kafka-configs --entity-type groups does.
func cmdShareConfig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fw-share-config GROUP KEY=VALUE...")
	}
	kv := map[string]string{}
	for _, a := range args[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			ts.Fatalf("fw-share-config: %q is not KEY=VALUE", a)
		}
		kv[k] = v
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(ts.Getenv("FIELDWORK_BROKERS"), ",")...))
	ts.Check(err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts.Check(kafka.SetShareGroupConfig(ctx, cl, args[0], kv))
}
