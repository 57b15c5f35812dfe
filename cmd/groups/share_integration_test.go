package groups_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestShareGroupCommands: groups list, describe, check, reset, journal and reset --undo of a
// share group on the real broker, a member holding it first, then none.
func TestShareGroupCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": "sqlite:" + t.TempDir() + "/journal.db", "USER": "tester"}
	roottest.RunCode(t, env, 0, "db", "migrate")
	cl := testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	for i := range 4 {
		testenv.Produce(t, cl, &kgo.Record{Topic: topic, Value: []byte{byte('a' + i)}})
	}
	group := testenv.Name(t, "fw-share")
	// The DLQ topic is named without the cluster's prefix: rejected records would be lost.
	if err := kafka.SetShareGroupConfig(ctx, cl, group, map[string]string{kafka.ConfigShareAutoOffsetReset: "earliest", kafka.ConfigShareGroupDLQTopic: "nodlq-" + group}); err != nil {
		t.Fatal(err)
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(testenv.Brokers(t)), kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.ClientID("share-member"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for got := 0; got < 4; {
		fs := sc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the share member got %d of 4 records", got)
		}
		fs.EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept); got++ })
	}
	if err := sc.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}

	var list []struct {
		Group   string   `json:"group"`
		Type    string   `json:"type"`
		Members int      `json:"members"`
		Topics  []string `json:"topics"`
	}
	decode(t, roottest.RunCode(t, env, 0, "groups", "list", "-o", "json").Stdout, &list)
	found := false
	for _, g := range list {
		if g.Group == group {
			found = true
			if g.Type != "share" || g.Members != 1 || len(g.Topics) != 1 || g.Topics[0] != topic {
				t.Fatalf("groups list: %+v", g)
			}
		}
	}
	if !found {
		t.Fatalf("groups list does not show share group %s", group)
	}

	var rep struct {
		Type  string `json:"type"`
		Share struct {
			Partitions []struct {
				Topic       string   `json:"topic"`
				StartOffset int64    `json:"start_offset"`
				LogEnd      int64    `json:"high_watermark"`
				Lag         int64    `json:"lag"`
				Members     []string `json:"members"`
			} `json:"partitions"`
			NotReported string `json:"not_reported"`
			DeadLetters struct {
				Lost bool `json:"lost"`
			} `json:"dead_letters"`
		} `json:"share"`
	}
	decode(t, roottest.RunCode(t, env, 0, "groups", "describe", group, "--interval", "0", "-o", "json").Stdout, &rep)
	if ps := rep.Share.Partitions; rep.Type != "share" || len(ps) != 1 || ps[0].LogEnd != 4 || ps[0].StartOffset < 0 || len(ps[0].Members) != 1 ||
		!strings.Contains(ps[0].Members[0], "share-member") || !rep.Share.DeadLetters.Lost || rep.Share.NotReported == "" {
		t.Fatalf("groups describe: %+v", rep)
	}
	r := roottest.RunCode(t, env, 0, "groups", "describe", group, "--interval", "0", "-o", "table")
	for _, want := range []string{"Share group " + group, "start offset", "not reported by the admin API", "dlq_prefix", "archived and lost"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("groups describe lacks %q:\n%s", want, r.Stdout)
		}
	}
	var topicRep struct {
		Groups []struct {
			Group      string `json:"group"`
			Type       string `json:"type"`
			Partitions []struct {
				Committed   int64  `json:"committed_offset"`
				StartOffset *int64 `json:"start_offset"`
			} `json:"partitions"`
		} `json:"groups"`
	}
	decode(t, roottest.RunCode(t, env, 0, "inspect", "topic", topic, "-o", "json").Stdout, &topicRep)
	if gs := topicRep.Groups; len(gs) != 1 || gs[0].Group != group || gs[0].Type != "share" || len(gs[0].Partitions) != 1 ||
		gs[0].Partitions[0].StartOffset == nil || gs[0].Partitions[0].Committed != -1 {
		t.Fatalf("inspect topic's groups: %+v", gs)
	}
	r = roottest.RunCode(t, env, 3, "groups", "check", group)
	if !strings.Contains(r.Stdout, "dlq_prefix") || !strings.Contains(r.Stderr, group) {
		t.Fatalf("groups check: %s\n%s", r.Stdout, r.Stderr)
	}

	// A member holds the group: the reset is refused; gone, it goes through and is undone.
	roottest.RunCode(t, env, 1, "groups", "reset", group, "--topic", topic, "--to-offset", "1")
	sc.Close()
	adm := kadm.NewClient(cl)
	testenv.WaitUntil(t, 30*time.Second, nil, "the share group empties", func() bool {
		d, err := adm.DescribeShareGroups(ctx, group)
		return err == nil && len(d[group].Members) == 0
	})
	// The start offset is where the share coordinator last wrote it (0 as a rule, 1 seen once
	// after the four acknowledgements): the reset goes to an offset it is not at, so that it
	// has something to move.
	to := int64(1)
	if startOf(t, adm, group, topic) == to {
		to = 2
	}
	var res resetResult
	decode(t, roottest.RunCode(t, env, 0, "groups", "reset", group, "--topic", topic, "--to-offset", strconv.FormatInt(to, 10), "--execute", "--yes", "--reason", "INC-28: read again", "-o", "json").Stdout, &res)
	if res.ID == "" || len(res.Plan.Partitions) != 1 || res.Plan.Partitions[0].NewOffset != to {
		t.Fatalf("reset: %+v", res)
	}
	if s := startOf(t, adm, group, topic); s != to {
		t.Fatalf("start offset after the reset: %d", s)
	}
	r = roottest.RunCode(t, env, 0, "groups", "journal", "-o", "table")
	if !strings.Contains(r.Stdout, res.ID) || !strings.Contains(r.Stdout, "INC-28") {
		t.Fatalf("groups journal:\n%s", r.Stdout)
	}
	roottest.RunCode(t, env, 0, "groups", "reset", "--undo", res.ID, "--execute", "--yes", "--reason", "undo INC-28")
	old := res.Plan.Partitions[0].Committed
	if s := startOf(t, adm, group, topic); old == nil || s != *old {
		t.Fatalf("start offset after the undo: %d, want %v", s, old)
	}
}

// startOf is share group's start offset on topic/0 (-1 without one).
func startOf(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := d[group].Offsets.Lookup(topic, 0); ok {
		return o.StartOffset
	}
	return -1
}
