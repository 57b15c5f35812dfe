package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestShareDLQMisconfigured: a share group whose dead-letter topic would lose what is
// rejected to it (a name without the cluster's prefix, a topic without the enable flag, a
// missing topic with auto-create off) stops the runner at start with a ShareDLQError naming
// the problem, before any record is acquired. The real consumer path is tested end to end
// in internal/consumersuite (TestShareGroupBrokerDLQ).
func TestShareDLQMisconfigured(t *testing.T) {
	st, _ := pgStore(t)
	source, _ := topics(t, 1)
	cl := producer(t)
	cluster, err := kafka.ReadShareDLQCluster(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if cluster.ShareVersion < 2 || cluster.AutoCreate {
		t.Fatalf("the test broker must write share-group dead letters and not create their topics: %+v", cluster)
	}
	noPrefix := testenv.Name(t, "noprefix")
	createTopicWith(t, cl, noPrefix, 1, map[string]string{kafka.ConfigShareDLQTopicEnable: "true"})
	noFlag := cluster.Prefix + testenv.Name(t, "noflag")
	createTopicWith(t, cl, noFlag, 1, nil)
	for _, tc := range []struct{ topic, want string }{
		{noPrefix, "does not start with the cluster's prefix"},
		{noFlag, "lacks " + kafka.ConfigShareDLQTopicEnable + "=true"},
		{cluster.Prefix + testenv.Name(t, "missing"), "does not exist"},
	} {
		group := testenv.Name(t, "share-misconfigured")
		if err := kafka.SetShareGroupConfig(context.Background(), cl, group, map[string]string{kafka.ConfigShareGroupDLQTopic: tc.topic}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kafka.SetShareGroupConfig(context.Background(), cl, group, map[string]string{kafka.ConfigShareGroupDLQTopic: ""})
		})
		h := consumer.HandlerFunc(func(context.Context, *inbox.Tx, *consumer.Message) (consumer.Outcome, error) {
			t.Error("a record reached the handler")
			return consumer.Applied, nil
		})
		o := engineOpts(t, st, h, source, "")
		r, err := consumer.New(inboxlink.NewStore(st).(*inbox.Store), h, append(o.opts(), consumer.ShareGroup(group))...)
		if err != nil {
			t.Fatal(err)
		}
		err = r.Run(context.Background())
		var de *consumer.ShareDLQError
		if !errors.As(err, &de) || de.Topic != tc.topic || de.Group != group || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Run: %v; want a ShareDLQError saying %q", tc.topic, err, tc.want)
		}
	}
}
