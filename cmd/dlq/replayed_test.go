package dlq_test

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// replayedCycle is a replay that took effect for one dead letter and not for the other,
// against the real broker and PostgreSQL, through the commands: the source topic holds
// version 2 of task-1 (evt-new), which `consume --handler projection` applies; its dead-letter
// topic holds two dead letters, evt-old (version 1 of task-1) and evt-2 (version 1 of task-2).
// `replay --execute` sends both back and the projection consumes them again: evt-2 is
// applied, evt-old is ignored as stale (its task is at version 2), both are marked.
type replayedCycle struct {
	env            map[string]string
	schema, source string
	dead           string
	runID          string
}

func newReplayedCycle(t *testing.T) *replayedCycle {
	t.Helper()
	env := cmdtest.BrokerEnv(t)
	_, dsn, schema := dlqStore(t)
	env["FIELDWORK_DSN"] = dsn
	source := inspecttest.Name("rpd")
	dead := source + dlq.DefaultTopicSuffix
	dlqNamedTopic(t, source, 1, nil)
	dlqNamedTopic(t, dead, 1, nil)
	ev := func(id, agg string, version int) *kgo.Record {
		return &kgo.Record{Topic: source, Key: []byte(agg), Headers: dlqHeaders("content-type", "application/cloudevents+json"),
			Value: []byte(`{"specversion":"1.0","id":"` + id + `","type":"task.created","source":"/tasks","aggregateid":"` + agg +
				`","aggregateversion":` + string(rune('0'+version)) + `,"data":{"status":"open"}}`)}
	}
	testenv.Produce(t, testenv.Client(t, kgo.DefaultProduceTopic(source)), ev("evt-new", "task-1", 2))
	dl := func(r *kgo.Record, off int64) *kgo.Record {
		r.Partition, r.Offset = 0, off
		return dlq.NewDeadLetter(r, dlq.Meta{Topic: dead, Group: "projector", Handler: "projection", Reason: dlq.ReasonRejected, Error: "illegal transition"})
	}
	testenv.Produce(t, testenv.Client(t, kgo.DefaultProduceTopic(dead)), dl(ev("evt-old", "task-1", 1), 90), dl(ev("evt-2", "task-2", 1), 91))

	c := &replayedCycle{env: env, schema: schema, source: source, dead: dead}
	c.consume(t)
	r := roottest.Run(t, env, "replay", "--topic", dead, "--execute", "--yes", "--reason", "projection fixed", "--schema", schema, "-o", "json")
	var sum struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.RunID == "" {
		t.Fatalf("replay: exit %d %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	c.runID = sum.RunID
	c.consume(t)
	return c
}

func (c *replayedCycle) consume(t *testing.T) {
	t.Helper()
	r := roottest.Run(t, c.env, "consume", "--topic", c.source, "--group", "projector", "--handler", "projection",
		"--schema", c.schema, "--migrate", "--stop-when-idle", "3s", "--metrics-addr", "", "--log-format", "json")
	if r.Code != 0 {
		t.Fatalf("consume: exit %d\n%s", r.Code, r.Stderr)
	}
}

// list is `dlq list -o jsonl` of the dead-letter topic, by event id.
func (c *replayedCycle) list(t *testing.T) map[string]map[string]any {
	t.Helper()
	r := roottest.Run(t, c.env, "dlq", "list", "--topic", c.dead, "--schema", c.schema, "-o", "jsonl")
	if r.Code != 0 {
		t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
	}
	out := map[string]map[string]any{}
	for _, e := range dlqEntries(t, r.Stdout) {
		out[e["event_id"].(string)] = e
	}
	return out
}

// TestDLQStaleAfterReplay: a replayed dead letter whose event the projection then ignored as
// stale (a newer version had won; the marker is still written) is `stale`, not `resolved`,
// in dlq list and dlq stats; the one whose replay took effect is `resolved`.
func TestDLQStaleAfterReplay(t *testing.T) {
	c := newReplayedCycle(t)
	got := c.list(t)
	if len(got) != 2 || got["evt-old"]["status"] != "stale" || got["evt-2"]["status"] != "resolved" {
		t.Fatalf("dlq list statuses: evt-old %v, evt-2 %v (want stale, resolved)", got["evt-old"]["status"], got["evt-2"]["status"])
	}
	r := roottest.Run(t, c.env, "dlq", "list", "--topic", c.dead, "--schema", c.schema, "--status", "stale", "-o", "jsonl")
	if es := dlqEntries(t, r.Stdout); r.Code != 0 || len(es) != 1 || es[0]["event_id"] != "evt-old" {
		t.Errorf("dlq list --status stale: exit %d %v\n%s", r.Code, es, r.Stderr)
	}
	r = roottest.Run(t, c.env, "dlq", "stats", "--topic", c.dead, "--schema", c.schema, "-o", "json")
	var rep struct {
		Topics []struct {
			Statuses map[string]int64 `json:"status"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || len(rep.Topics) != 1 {
		t.Fatalf("dlq stats: exit %d %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if got, want := rep.Topics[0].Statuses, map[string]int64{"pending": 0, "replayed": 0, "resolved": 1, "stale": 1, "unknown": 0}; !maps.Equal(got, want) {
		t.Errorf("dlq stats statuses %v, want %v", got, want)
	}
}

// TestReplayLeavesOutReplayed: the same replay a second time leaves out the dead letters the
// first run sent and the consumer has since settled (resolved, stale), and says so: how many,
// from which run, their status now; --include-replayed takes them. dlq list's JSON names the
// run that last replayed each dead letter, whatever its status.
func TestReplayLeavesOutReplayed(t *testing.T) {
	c := newReplayedCycle(t)
	for id, e := range c.list(t) {
		last, _ := e["last_replay"].(map[string]any)
		if last == nil || last["run_id"] != c.runID || last["target_topic"] != c.source {
			t.Errorf("dlq list: %s's last_replay is %v, want run %s to %s", id, e["last_replay"], c.runID, c.source)
		}
	}

	type plan struct {
		Counts struct {
			Selected        int64 `json:"selected"`
			ToSend          int64 `json:"to_send"`
			AlreadyReplayed int64 `json:"already_replayed"`
		} `json:"counts"`
		Filters struct {
			IncludeReplayed bool `json:"include_replayed"`
		} `json:"filters"`
		ReplayedBefore struct {
			Records int64 `json:"records"`
			LeftOut int64 `json:"left_out"`
			Runs    []struct {
				RunID    string           `json:"run_id"`
				Records  int64            `json:"records"`
				LeftOut  int64            `json:"left_out"`
				Statuses map[string]int64 `json:"statuses"`
			} `json:"runs"`
		} `json:"replayed_before"`
	}
	dry := func(args ...string) plan {
		t.Helper()
		r := roottest.Run(t, c.env, append([]string{"replay", "--topic", c.dead, "--schema", c.schema, "-o", "json"}, args...)...)
		var p plan
		if err := json.Unmarshal([]byte(r.Stdout), &p); r.Code != 0 || err != nil {
			t.Fatalf("replay %v: exit %d %v\n%s%s", args, r.Code, err, r.Stdout, r.Stderr)
		}
		return p
	}
	p := dry()
	rb := p.ReplayedBefore
	if p.Counts.Selected != 2 || p.Counts.ToSend != 0 || p.Counts.AlreadyReplayed != 2 || rb.Records != 2 || rb.LeftOut != 2 || len(rb.Runs) != 1 ||
		rb.Runs[0].RunID != c.runID || rb.Runs[0].Records != 2 || rb.Runs[0].LeftOut != 2 || rb.Runs[0].Statuses["resolved"] != 1 || rb.Runs[0].Statuses["stale"] != 1 {
		t.Errorf("the same replay again: %+v", p)
	}
	// Executed, it sends nothing and journals them as skipped.
	r := roottest.Run(t, c.env, "replay", "--topic", c.dead, "--schema", c.schema, "--execute", "--yes", "--reason", "again", "-o", "json")
	var sum struct {
		Counts struct {
			Selected, Sent, Skipped int64
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Counts.Sent != 0 || sum.Counts.Skipped != 2 || sum.Counts.Selected != 2 {
		t.Errorf("executed again: exit %d %v %+v\n%s%s", r.Code, err, sum, r.Stdout, r.Stderr)
	}

	p = dry("--include-replayed")
	if p.Counts.ToSend != 2 || p.Counts.AlreadyReplayed != 0 || p.ReplayedBefore.Records != 2 || p.ReplayedBefore.LeftOut != 0 || !p.Filters.IncludeReplayed {
		t.Errorf("--include-replayed: %+v", p)
	}
}
