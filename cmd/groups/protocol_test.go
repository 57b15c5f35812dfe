package groups_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestSkipConsumerProtocolGroup: a group of the consumer protocol (KIP-848: the broker
// assigns the partitions), which DescribeGroups does not know, is described with its member,
// listed with it, refused while the member runs, and skipped once it stopped; restarted, the
// consumer moves on past the poison.
func TestSkipConsumerProtocolGroup(t *testing.T) {
	_, env, topic, cl := sqliteWorld(t, ".dlq")
	for _, kv := range [][2]string{{"k1", "v1"}, {"k2", "POISON"}, {"k3", "v3"}} {
		testenv.Produce(t, cl, &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	group := inspecttest.Name("fwg")
	nextGen := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}
	adm := kadm.NewClient(testenv.Client(t))

	c := startPlainConsumer(t, topic, group, nextGen...)
	<-c.stuck
	waitFor(t, "commit at 1", func() bool { return committed(t, adm, group, topic) == 1 })
	r := roottest.RunCode(t, env, 0, "groups", "describe", group, "--interval", "0", "-o", "jsonl")
	if !strings.Contains(r.Stdout, `"type":"consumer","state":"Stable","protocol_type":"consumer","assignor":"`) || !strings.Contains(r.Stdout, `"client_id":"plain-consumer"`) ||
		!strings.Contains(r.Stdout, `"committed_offset":1,"high_watermark":3,"lag":2,"member":"plain-consumer@`) {
		t.Fatalf("describe:\n%s", r.Stdout)
	}
	r = roottest.RunCode(t, env, 0, "groups", "list", "-o", "jsonl")
	if !strings.Contains(r.Stdout, `{"group":"`+group+`","state":"Stable","type":"consumer","protocol_type":"consumer","members":1,`) {
		t.Fatalf("list:\n%s", r.Stdout)
	}
	skip := []string{"groups", "skip", group, "--topic", topic, "--partition", "0"}
	r = roottest.RunCode(t, env, 1, append(skip, "--execute", "--yes", "--reason", "poison")...)
	if !strings.Contains(r.Stderr, "active members (1: plain-consumer@") {
		t.Fatalf("refusal: %s", r.Stderr)
	}

	c.stop()
	waitFor(t, "no member in "+group, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		return err == nil && ds[group].Err == nil && len(ds[group].Members) == 0
	})
	roottest.RunCode(t, env, 0, append(skip, "--execute", "--yes", "--reason", "poison")...)
	if got := committed(t, adm, group, topic); got != 2 {
		t.Fatalf("after the skip the commit is %d, want 2", got)
	}
	c = startPlainConsumer(t, topic, group, nextGen...)
	waitFor(t, "the consumer past the poison", func() bool { return committed(t, adm, group, topic) == 3 })
	if got := fmt.Sprint(c.Handled()); got != "[k3]" {
		t.Fatalf("the restarted consumer handled %s, want [k3]", got)
	}
}
