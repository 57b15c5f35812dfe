package inspect_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestInspectRecords reads runs of records from the real broker as kcat -o -N -e does: the
// last N of each partition, in partition and offset order, narrowed by the selection flags;
// JSON Lines give each record with inspect record's fields, a table a line each.
func TestInspectRecords(t *testing.T) {
	topic := testenv.Topic(t, 2, nil)
	cl := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p, n := range []int{5, 3} {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(fmt.Sprintf("k%d-%d", p, i)),
				Value: fmt.Appendf(nil, `{"specversion":"1.0","id":"e%d-%d","type":"task.created","source":"/t","aggregateid":"a","aggregateversion":%d}`, p, i, i+1)})
		}
	}
	testenv.Produce(t, cl, recs...)
	env := cmdtest.BrokerEnv(t)
	read := func(args ...string) []string {
		t.Helper()
		r := roottest.RunCode(t, env, 0, append([]string{"inspect", "records", topic, "-o", "jsonl"}, args...)...)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			var rec struct {
				Topic     string
				Partition int32
				Offset    int64
				Event     struct {
					EventID string `json:"event_id"`
				}
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Topic != topic {
				t.Fatalf("%v: %v\n%s", args, err, line)
			}
			got = append(got, fmt.Sprintf("%d/%d %s", rec.Partition, rec.Offset, rec.Event.EventID))
		}
		return got
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--last", "2"}, []string{"0/3 e0-3", "0/4 e0-4", "1/1 e1-1", "1/2 e1-2"}},
		{nil, []string{"0/0 e0-0", "0/1 e0-1", "0/2 e0-2", "0/3 e0-3", "0/4 e0-4", "1/0 e1-0", "1/1 e1-1", "1/2 e1-2"}},
		{[]string{"--partition", "1", "--last", "0"}, []string{"1/0 e1-0", "1/1 e1-1", "1/2 e1-2"}},
		{[]string{"--partition", "0", "--start-offset", "1", "--end-offset", "3", "--last", "2"}, []string{"0/2 e0-2", "0/3 e0-3"}},
	} {
		if got := read(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("inspect records %v: %v, want %v", tc.args, got, tc.want)
		}
	}
	table := roottest.RunCode(t, env, 0, "inspect", "records", topic, "--partition", "1", "--last", "1", "-o", "table").Stdout
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "PARTITION  OFFSET  TIMESTAMP") ||
		!strings.Contains(lines[1], "k1-2") || !strings.Contains(lines[1], "task.created") || !strings.Contains(lines[1], "e1-2") {
		t.Errorf("table:\n%s", table)
	}
	roottest.CheckUsage(t, []roottest.Usage{{Args: []string{"inspect", "records", topic, "--last", "-1"}, Want: "--last -1: must be 0 (all) or more"}})
}

// TestUnknownNamesAreAnswered: a topic or a consumer group the cluster does not have is
// answered with the cluster's names close to it.
func TestUnknownNamesAreAnswered(t *testing.T) {
	topic := testenv.Topic(t, 1, nil)
	env := cmdtest.BrokerEnv(t)
	typo := topic[:len(topic)-1] + "x"
	r := roottest.Run(t, env, "inspect", "records", typo)
	if r.Code == 0 || !strings.Contains(r.Stderr, "does not exist\n\nDid you mean this?\n") || !strings.Contains(r.Stderr, "\t"+topic+"\n") {
		t.Errorf("inspect records %s: exit %d\n%s", typo, r.Code, r.Stderr)
	}
}
