package groups_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// plainConsumer is a consumer that knows nothing of fieldwork: a franz-go group member that
// handles each record and commits after it, and that cannot get past a record whose value
// is POISON (it retries it forever, committing nothing, as a consumer without a dead-letter
// path does). It records what it handled.
type plainConsumer struct {
	cl      *kgo.Client
	stuck   chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	handled []string
	stop    func()
}

func startPlainConsumer(t *testing.T, topic, group string, opts ...kgo.Opt) *plainConsumer {
	t.Helper()
	c := &plainConsumer{stuck: make(chan struct{}), done: make(chan struct{})}
	c.cl = testenv.Client(t, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ClientID("plain-consumer"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(c.done)
		var once sync.Once
		for ctx.Err() == nil {
			fs := c.cl.PollFetches(ctx)
			for _, rec := range fs.Records() {
				if string(rec.Value) == "POISON" {
					once.Do(func() { close(c.stuck) })
					<-ctx.Done() // retrying forever
					return
				}
				c.mu.Lock()
				c.handled = append(c.handled, string(rec.Key))
				c.mu.Unlock()
				_ = c.cl.CommitRecords(ctx, rec)
			}
		}
	}()
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			cancel()
			<-c.done
			c.cl.Close() // leaves the group
		})
	}
	t.Cleanup(c.stop)
	return c
}

func (c *plainConsumer) Handled() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.handled...)
}

// committed is the group's committed offset on topic/0 (-1 without one).
func committed(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	if at, ok := commitsOn(t, adm, group, topic)[0]; ok {
		return at
	}
	return -1
}

// waitFor waits up to 30s for cond (testenv.WaitUntil).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitUntil(t, 30*time.Second, nil, what, cond)
}

// empty waits until group has no members.
func waitEmpty(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	waitFor(t, "empty group "+group, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ds, err := adm.DescribeGroups(ctx, group)
		return err == nil && len(ds[group].Members) == 0
	})
}

// sqliteWorld is the environment of a test whose journal is a migrated SQLite file, and a
// topic of one partition with a dead-letter topic (its name plus dlqSuffix), and a producer
// to the topic.
func sqliteWorld(t *testing.T, dlqSuffix string) (brokers string, env map[string]string, topic string, cl *kgo.Client) {
	t.Helper()
	brokers = testenv.Brokers(t)
	env = map[string]string{"FIELDWORK_BROKERS": brokers, "FIELDWORK_DSN": "sqlite:" + t.TempDir() + "/journal.db"}
	roottest.RunCode(t, env, 0, "db", "migrate")
	topic = inspecttest.Topic(t, 1)
	testenv.CreateTopic(t, topic+dlqSuffix, 1, nil)
	return brokers, env, topic, testenv.Client(t, kgo.DefaultProduceTopic(topic))
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
}

// TestSkipUnsticksAPlainConsumer: a consumer that is not fieldwork's is stuck on a poison
// record. groups describe shows it stuck; groups skip refuses while it runs, naming it; once
// it is stopped, the dry run shows the record and changes nothing; the skip parks the record
// in the dead-letter topic (reason parked, the group, the reason) and commits past it;
// --undo restores the offset (once); skipped again, the restarted consumer moves on past the
// poison to the records after it; an undo after that is refused.
func TestSkipUnsticksAPlainConsumer(t *testing.T) {
	brokers := testenv.Brokers(t)
	dsn := testenv.DSN(t)
	schema := testenv.PGSchema(t, "gskip")
	env := map[string]string{"FIELDWORK_BROKERS": brokers, "FIELDWORK_DSN": dsn}
	roottest.RunCode(t, env, 0, "db", "migrate", "--schema", schema)

	topic := inspecttest.Topic(t, 1)
	testenv.CreateTopic(t, topic+".dlq", 1, nil)
	group := inspecttest.Name("fwg")
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	for _, kv := range [][2]string{{"k1", "v1"}, {"k2", "v2"}, {"k3", "POISON"}, {"k4", "v4"}, {"k5", "v5"}} {
		testenv.Produce(t, cl, &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	adm := kadm.NewClient(testenv.Client(t))

	c := startPlainConsumer(t, topic, group)
	<-c.stuck
	waitFor(t, "commit at 2", func() bool { return committed(t, adm, group, topic) == 2 })

	// Stuck: a member, lag 3, the commit still over two reads.
	r := roottest.RunCode(t, env, 0, "groups", "describe", group, "--interval", "1s", "-o", "json")
	var rep struct {
		State   string `json:"state"`
		Members []struct {
			ClientID string   `json:"client_id"`
			Assigned []string `json:"assigned"`
		} `json:"members"`
		Partitions []struct {
			Committed   int64 `json:"committed_offset"`
			LogEnd      int64 `json:"high_watermark"`
			Lag         int64 `json:"lag"`
			CommitMoved bool  `json:"commit_moved"`
		} `json:"partitions"`
		TotalLag int64 `json:"total_lag"`
	}
	decode(t, r.Stdout, &rep)
	if len(rep.Members) != 1 || rep.Members[0].ClientID != "plain-consumer" || len(rep.Members[0].Assigned) != 1 ||
		len(rep.Partitions) != 1 || rep.Partitions[0].Committed != 2 || rep.Partitions[0].LogEnd != 5 || rep.Partitions[0].Lag != 3 ||
		rep.Partitions[0].CommitMoved || rep.TotalLag != 3 {
		t.Fatalf("describe: %+v", rep)
	}
	r = roottest.RunCode(t, env, 0, "groups", "describe", group, "--interval", "1s", "-o", "table")
	if !strings.Contains(r.Stdout, "stuck at") || !strings.Contains(r.Stdout, topic+"/0/2") {
		t.Fatalf("describe table does not say stuck at %s/0/2:\n%s", topic, r.Stdout)
	}
	r = roottest.RunCode(t, env, 0, "groups", "list", "-o", "json")
	var list []struct {
		Group    string   `json:"group"`
		Members  int      `json:"members"`
		Topics   []string `json:"topics"`
		TotalLag int64    `json:"total_lag"`
	}
	decode(t, r.Stdout, &list)
	found := false
	for _, g := range list {
		if g.Group == group {
			found = g.Members == 1 && g.TotalLag == 3 && len(g.Topics) == 1 && g.Topics[0] == topic
		}
	}
	if !found {
		t.Fatalf("groups list has no %s with 1 member and lag 3:\n%s", group, r.Stdout)
	}
	// inspect topic keeps its per-group lag, by the same rule.
	r = roottest.RunCode(t, env, 0, "inspect", "topic", topic, "--sample", "0", "-o", "jsonl")
	if !regexp.MustCompile(`"group":"` + group + `","type":"classic","state":"[A-Za-z]+","partitions":\[\{"partition":0,"committed_offset":2,"lag":3\}\],"total_lag":3`).MatchString(r.Stdout) {
		t.Fatalf("inspect topic lag:\n%s", r.Stdout)
	}

	// Refused while the consumer runs, naming it; nothing changes.
	skip := []string{"groups", "skip", group, "--topic", topic, "--partition", "0", "--schema", schema}
	r = roottest.RunCode(t, env, 1, append(skip, "--execute", "--yes", "--reason", "INC-1")...)
	if !strings.Contains(r.Stderr, "active members") || !strings.Contains(r.Stderr, "plain-consumer@") {
		t.Fatalf("the refusal does not name the member:\n%s", r.Stderr)
	}
	if got := committed(t, adm, group, topic); got != 2 {
		t.Fatalf("refused, yet the commit is %d", got)
	}

	c.stop()
	waitEmpty(t, adm, group)

	// Usage: no reason, no --yes off a terminal.
	roottest.RunCode(t, env, 2, append(skip, "--execute", "--yes")...)
	roottest.RunCode(t, env, 2, append(skip, "--execute", "--reason", "INC-1")...)

	// The dry run shows the record as inspect record does, and changes nothing.
	r = roottest.RunCode(t, env, 0, append(skip, "-o", "json")...)
	var plan struct {
		Committed int64  `json:"committed_offset"`
		NewOffset int64  `json:"new_offset"`
		DLQ       string `json:"dead_letter_topic"`
		Record    struct {
			Offset int64  `json:"offset"`
			Key    string `json:"key"`
			Value  string `json:"value"`
		} `json:"record"`
	}
	decode(t, r.Stdout, &plan)
	if plan.Committed != 2 || plan.NewOffset != 3 || plan.DLQ != topic+".dlq" || plan.Record.Offset != 2 || plan.Record.Key != "k3" || plan.Record.Value != "POISON" {
		t.Fatalf("plan: %+v", plan)
	}
	r = roottest.RunCode(t, env, 0, append(skip, "-o", "table")...)
	if !strings.Contains(r.Stdout, "dry run") || !strings.Contains(r.Stdout, "Record "+topic+"/0/2") {
		t.Fatalf("plan table:\n%s", r.Stdout)
	}
	if got := committed(t, adm, group, topic); got != 2 {
		t.Fatalf("a dry run moved the commit to %d", got)
	}

	execSkip := func() string {
		t.Helper()
		r := roottest.RunCode(t, env, 0, append(skip, "--execute", "--yes", "--reason", "INC-1: unparseable", "--operator", "alice", "-o", "json")...)
		var res struct {
			ID     string `json:"run_id"`
			Parked int64  `json:"parked"`
		}
		decode(t, r.Stdout, &res)
		if res.ID == "" || res.Parked != 1 {
			t.Fatalf("skip: %s", r.Stdout)
		}
		if got := committed(t, adm, group, topic); got != 3 {
			t.Fatalf("after the skip the commit is %d, want 3", got)
		}
		return res.ID
	}
	first := execSkip()

	// The parked copy, in fieldwork's convention.
	recs := testenv.ReadTopic(t, brokers, topic+".dlq")
	if len(recs) != 1 {
		t.Fatalf("%d parked records, want 1", len(recs))
	}
	d := dlq.Parse(recs[0])
	if d.Reason != dlq.ReasonParked || d.Group != group || d.ErrorMessage != "INC-1: unparseable" || d.OriginalTopic != topic ||
		d.OriginalOffset == nil || *d.OriginalOffset != 2 || string(recs[0].Value) != "POISON" || string(recs[0].Key) != "k3" {
		t.Fatalf("parked copy: %+v", d)
	}

	// Undo: planned, executed once, refused the second time.
	undo := []string{"groups", "skip", "--undo", first, "--schema", schema}
	r = roottest.RunCode(t, env, 0, append(undo, "-o", "table")...)
	if !strings.Contains(r.Stdout, "3 → 2") {
		t.Fatalf("undo plan:\n%s", r.Stdout)
	}
	roottest.RunCode(t, env, 0, append(undo, "--execute", "--yes", "--reason", "wrong record")...)
	if got := committed(t, adm, group, topic); got != 2 {
		t.Fatalf("after the undo the commit is %d, want 2", got)
	}
	r = roottest.RunCode(t, env, 2, append(undo, "--execute", "--yes", "--reason", "again")...)
	if !strings.Contains(r.Stderr, "undone already") {
		t.Fatalf("a second undo: %s", r.Stderr)
	}

	// Skipped again, the consumer moves on past the poison.
	second := execSkip()
	c = startPlainConsumer(t, topic, group)
	waitFor(t, "the consumer past the poison", func() bool { return committed(t, adm, group, topic) == 5 })
	if got := fmt.Sprint(c.Handled()); got != "[k4 k5]" {
		t.Fatalf("the restarted consumer handled %s, want [k4 k5]", got)
	}
	c.stop()
	waitEmpty(t, adm, group)

	// Caught up, describe answers from its first read: no partition has lag, none can be
	// stuck, so it does not wait --interval (5s by default) for a second one.
	r = roottest.RunCode(t, env, 0, "groups", "describe", group, "-o", "json")
	var caught struct {
		WatchedMS  int64 `json:"watched_ms"`
		TotalLag   int64 `json:"total_lag"`
		Partitions []struct {
			Lag int64 `json:"lag"`
		} `json:"partitions"`
	}
	decode(t, r.Stdout, &caught)
	if caught.WatchedMS != 0 || caught.TotalLag != 0 || len(caught.Partitions) != 1 {
		t.Fatalf("describe of a caught-up group read it again: %s", r.Stdout)
	}
	// Its type in the one word groups list uses (TYPE classic), its assignor apart.
	if r = roottest.RunCode(t, env, 0, "groups", "describe", group, "-o", "table"); !strings.Contains(r.Stdout, "caught up") ||
		!regexp.MustCompile(`(?m)^type +classic$`).MatchString(r.Stdout) || !regexp.MustCompile(`(?m)^assignor +\S+$`).MatchString(r.Stdout) {
		t.Fatalf("describe table of a caught-up group:\n%s", r.Stdout)
	}

	// The group moved on: undoing now would send it back over k4 and k5.
	r = roottest.RunCode(t, env, 1, "groups", "skip", "--undo", second, "--schema", schema, "--execute", "--yes", "--reason", "late")
	if !strings.Contains(r.Stderr, "moved on") {
		t.Fatalf("undo after the group moved on: %s", r.Stderr)
	}

	// The journal: both skips, the undo that names the first, with operator and offsets.
	r = roottest.RunCode(t, env, 0, "groups", "journal", "--schema", schema, "-o", "json")
	var journal []struct {
		ID       string `json:"run_id"`
		Action   string `json:"action"`
		Operator string `json:"operator"`
		Undoes   string `json:"undoes"`
		UndoneBy string `json:"undone_by"`
		Offsets  []struct {
			Old int64 `json:"committed_offset"`
			New int64 `json:"new_offset"`
		} `json:"offsets"`
	}
	decode(t, r.Stdout, &journal)
	if len(journal) != 3 || journal[0].ID != second || journal[1].Action != "undo" || journal[1].Undoes != first ||
		journal[2].ID != first || journal[2].UndoneBy != journal[1].ID || journal[2].Operator != "alice" ||
		len(journal[2].Offsets) != 1 || journal[2].Offsets[0].Old != 2 || journal[2].Offsets[0].New != 3 {
		t.Fatalf("journal:\n%s", r.Stdout)
	}
}

// TestDescribeWatch: groups describe --watch prints a report per read, as JSON Lines, until
// interrupted (exit 0); a commit made between two reads is reported as moved, one that stands
// still is not; inspect topic --watch prints the group's new lag the same way.
func TestDescribeWatch(t *testing.T) {
	brokers := testenv.Brokers(t)
	topic := inspecttest.Topic(t, 1)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	for i := range 4 {
		testenv.Produce(t, cl, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v")})
	}
	group := inspecttest.CommitGroup(t, topic, map[int32]int64{0: 1})
	adm := kadm.NewClient(testenv.Client(t))
	commit := func(at int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: at, LeaderEpoch: -1}}}); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, _, done := roottest.Start(ctx, "--brokers", brokers, "groups", "describe", group, "--watch", "--interval", "300ms", "-o", "jsonl")
	still := regexp.MustCompile(`"committed_offset":1,"high_watermark":4,"lag":3,"member":"","commit_moved":false`)
	roottest.WaitFor(t, out, still, done)
	commit(3)
	roottest.WaitFor(t, out, regexp.MustCompile(`"committed_offset":3,"high_watermark":4,"lag":1,"member":"","commit_moved":true`), done)

	tctx, tcancel := context.WithCancel(context.Background())
	defer tcancel()
	tout, _, tdone := roottest.Start(tctx, "--brokers", brokers, "inspect", "topic", topic, "--sample", "0", "--watch", "--interval", "300ms", "-o", "jsonl")
	roottest.WaitFor(t, tout, regexp.MustCompile(`"committed_offset":3,"lag":1`), tdone)
	commit(4)
	roottest.WaitFor(t, tout, regexp.MustCompile(`"committed_offset":4,"lag":0`), tdone)
	roottest.WaitFor(t, out, regexp.MustCompile(`"committed_offset":4,"high_watermark":4,"lag":0`), done)

	cancel()
	tcancel()
	for name, d := range map[string]<-chan roottest.Exit{"groups describe": done, "inspect topic": tdone} {
		if r := <-d; r.Code != 0 {
			t.Fatalf("%s --watch: exit %d after the interruption, want 0: %v", name, r.Code, r.Err)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("not a JSON line: %q", l)
		}
	}
}

// TestDescribeRebalancing: a classic group held in PreparingRebalance by a member that does not
// rejoin (it polls no more, as a killed one never heartbeats again) while another one joins is
// described with what that state waits for.
func TestDescribeRebalancing(t *testing.T) {
	brokers := testenv.Brokers(t)
	topic := inspecttest.Topic(t, 1)
	group := testenv.Name(t, "rebalancing")
	testenv.HoldRebalance(t, group, topic)
	// A second member's join starts a rebalance the holder never rejoins.
	joiner := testenv.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			testenv.PollOnce(joiner)
		}
	}()
	want := "state        PreparingRebalance (waiting for every member to rejoin: a member killed without leaving holds the group until its session times out)"
	var r roottest.Result
	defer func() {
		if t.Failed() {
			t.Logf("the last groups describe:\n%s\n%s", r.Stdout, r.Stderr)
		}
	}()
	testenv.WaitUntil(t, time.Minute, nil, "groups describe shows what PreparingRebalance waits for", func() bool {
		r = roottest.Run(t, map[string]string{"FIELDWORK_BROKERS": brokers}, "groups", "describe", group, "--interval", "0", "-o", "table")
		return strings.Contains(r.Stdout, want)
	})
}

// TestSkipWider: --count, --to-offset and --to-datetime plan a wider move, bounded to the
// partition and past the commit; executed, every record in between is parked, in order, and
// the group's commit lands on the planned offset. The journal is SQLite here.
func TestSkipWider(t *testing.T) {
	brokers, env, topic, cl := sqliteWorld(t, ".parked")
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range 6 {
		testenv.Produce(t, cl, &kgo.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	group := inspecttest.CommitGroup(t, topic, map[int32]int64{0: 1})
	skip := []string{"groups", "skip", group, "--topic", topic, "--partition", "0", "--dlq-topic", topic + ".parked"}
	plan := func(args ...string) (committed, next, offsets int64) {
		t.Helper()
		r := roottest.RunCode(t, env, 0, append(append(append([]string{}, skip...), args...), "-o", "json")...)
		var p struct {
			Committed int64 `json:"committed_offset"`
			NewOffset int64 `json:"new_offset"`
			Offsets   int64 `json:"offsets"`
		}
		decode(t, r.Stdout, &p)
		return p.Committed, p.NewOffset, p.Offsets
	}
	for _, tc := range []struct {
		args      []string
		next, off int64
	}{
		{nil, 2, 1},
		{[]string{"--count", "2"}, 3, 2},
		{[]string{"--to-offset", "5"}, 5, 4},
		{[]string{"--to-offset", "6"}, 6, 5},
		{[]string{"--to-datetime", base.Add(4 * time.Minute).Format(time.RFC3339)}, 4, 3},
		{[]string{"--to-time", base.Add(3*time.Minute + time.Second).Format(time.RFC3339)}, 4, 3}, // its old name
		// The commit is at the target already: nothing to do (a rerun of the same skip).
		{[]string{"--to-offset", "1"}, 1, 0},
		{[]string{"--to-datetime", base.Add(time.Minute).Format(time.RFC3339)}, 1, 0},
	} {
		if c, n, o := plan(tc.args...); c != 1 || n != tc.next || o != tc.off {
			t.Errorf("%v: plan %d → %d (%d offsets), want 1 → %d (%d)", tc.args, c, n, o, tc.next, tc.off)
		}
	}
	for _, args := range [][]string{{"--to-offset", "0"}, {"--to-offset", "7"}, {"--count", "6"}} {
		r := roottest.RunCode(t, env, 2, append(append([]string{}, skip...), args...)...)
		if !strings.Contains(r.Stderr, "offset") {
			t.Errorf("%v: %s", args, r.Stderr)
		}
	}

	// A dead-letter topic that does not exist: nothing is parked or moved.
	r := roottest.RunCode(t, env, root.ExitNotFound, "groups", "skip", group, "--topic", topic, "--partition", "0", "--dlq-topic", topic+".nowhere",
		"--execute", "--yes", "--reason", "r")
	if !strings.Contains(r.Stderr, "nothing was parked or moved") || !strings.Contains(r.Stderr, topic+".nowhere") {
		t.Fatalf("a missing dead-letter topic: %s", r.Stderr)
	}
	roottest.RunCode(t, env, 0, append(skip, "--to-offset", "5", "--execute", "--yes", "--reason", "bad batch")...)
	adm := kadm.NewClient(testenv.Client(t))
	if got := committed(t, adm, group, topic); got != 5 {
		t.Fatalf("the commit is %d, want 5", got)
	}
	recs := testenv.ReadTopic(t, brokers, topic+".parked")
	var got []string
	for _, r := range recs {
		d := dlq.Parse(r)
		got = append(got, fmt.Sprintf("%s@%d", r.Key, *d.OriginalOffset))
		if d.Reason != dlq.ReasonParked || d.Group != group {
			t.Errorf("parked copy %+v", d)
		}
	}
	if fmt.Sprint(got) != "[k1@1 k2@2 k3@3 k4@4]" {
		t.Fatalf("parked %v, want k1..k4 at offsets 1..4 in order", got)
	}
	// The same skip again (a runbook run twice): the commit is at its target already, so
	// nothing is parked, committed or journaled, and it exits 0 saying so.
	journal := func() string {
		return roottest.RunCode(t, env, 0, "groups", "journal", "-o", "json").Stdout
	}
	before := journal()
	r = roottest.RunCode(t, env, 0, append(skip, "--to-offset", "5", "--execute", "--yes", "--reason", "bad batch")...)
	if !strings.Contains(r.Stderr, "nothing to do: consumer group "+group+" is at offset 5") {
		t.Fatalf("the same skip again: %s", r.Stderr)
	}
	if n := len(testenv.ReadTopic(t, brokers, topic+".parked")); n != 4 || committed(t, adm, group, topic) != 5 || journal() != before {
		t.Fatalf("the same skip again changed something: %d parked, commit %d", n, committed(t, adm, group, topic))
	}
	// At the end of the partition there is nothing to be stuck on; a skip to it, again, is
	// nothing to do.
	roottest.RunCode(t, env, 0, append(skip, "--to-offset", "6", "--execute", "--yes", "--reason", "rest")...)
	roottest.RunCode(t, env, 0, append(skip, "--to-offset", "6", "--execute", "--yes", "--reason", "rest")...)
	r = roottest.RunCode(t, env, 2, skip...)
	if !strings.Contains(r.Stderr, "not stuck") {
		t.Fatalf("a group at the end: %s", r.Stderr)
	}
}
