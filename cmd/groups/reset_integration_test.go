package groups_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// commitsOn is group's committed offsets on topic, by partition (a partition without a
// commit is absent), as the broker has them.
func commitsOn(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// orNone is a number that JSON may give as null, "none" then.
func orNone(n *int64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

// resetPlan is the JSON of a reset plan, and the parts of a reset's result the tests read.
type resetPlan struct {
	Group  string `json:"group"`
	Target struct {
		To string `json:"to"`
	} `json:"target"`
	Topics     []string `json:"topics"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Committed *int64 `json:"committed_offset"`
		NewOffset int64  `json:"new_offset"`
		Delta     *int64 `json:"delta"`
		LogStart  int64  `json:"log_start_offset"`
		LogEnd    int64  `json:"high_watermark"`
		Clamped   bool   `json:"clamped"`
	} `json:"partitions"`
	Changes int     `json:"changes"`
	Clamped int     `json:"clamped"`
	Reason  *string `json:"reason"`
	Members []struct {
		ClientID string `json:"client_id"`
	} `json:"members"`
}

// moves says a plan's partitions as "p:committed→new(delta)", a clamped one with a "!".
func (p resetPlan) moves() string {
	var s []string
	for _, rp := range p.Partitions {
		m := fmt.Sprintf("%d:%s→%d(%s)", rp.Partition, orNone(rp.Committed), rp.NewOffset, orNone(rp.Delta))
		if rp.Clamped {
			m += "!"
		}
		s = append(s, m)
	}
	return strings.Join(s, " ")
}

type resetResult struct {
	ID       string    `json:"run_id"`
	Plan     resetPlan `json:"plan"`
	Operator string    `json:"operator"`
	Reason   string    `json:"reason"`
}

// resetWorld is a topic of three partitions of six records each (offsets 0..5, written a
// minute apart from base), a group without members committed at 4, 2 and 6 on it, and a
// migrated SQLite journal.
func resetWorld(t *testing.T) (env map[string]string, topic, group string, base time.Time, adm *kadm.Client) {
	t.Helper()
	env = map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": "sqlite:" + t.TempDir() + "/journal.db", "USER": "tester"}
	roottest.RunCode(t, env, 0, "db", "migrate")
	topic = inspecttest.Topic(t, 3)
	cl := inspecttest.Producer(t, topic)
	base = time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	for p := range int32(3) {
		for i := range 6 {
			testenv.Produce(t, cl, &kgo.Record{Partition: p, Key: fmt.Appendf(nil, "k%d-%d", p, i), Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Minute)})
		}
	}
	group = inspecttest.CommitGroup(t, topic, map[int32]int64{0: 4, 1: 2, 2: 6})
	return env, topic, group, base, kadm.NewClient(testenv.Client(t))
}

// TestResetPlans: each target's dry run plans every partition of the group's committed topic
// (or those --topic and --partition name), clamped to [log start, log end] with the clamped
// ones said, and changes nothing.
func TestResetPlans(t *testing.T) {
	env, topic, group, base, adm := resetWorld(t)
	reset := []string{"groups", "reset", group}
	for _, tc := range []struct {
		args          []string
		want          string
		changes, clam int
	}{
		{[]string{"--to-earliest"}, "0:4→0(-4) 1:2→0(-2) 2:6→0(-6)", 3, 0},
		{[]string{"--to-latest"}, "0:4→6(2) 1:2→6(4) 2:6→6(0)", 2, 0},
		{[]string{"--to-offset", "3"}, "0:4→3(-1) 1:2→3(1) 2:6→3(-3)", 3, 0},
		{[]string{"--to-offset", "99"}, "0:4→6(2)! 1:2→6(4)! 2:6→6(0)!", 2, 3},
		{[]string{"--to-datetime", base.Add(2 * time.Minute).Format(time.RFC3339)}, "0:4→2(-2) 1:2→2(0) 2:6→2(-4)", 2, 0},
		{[]string{"--to-datetime", base.Add(90 * time.Second).Format(time.RFC3339)}, "0:4→2(-2) 1:2→2(0) 2:6→2(-4)", 2, 0},
		// A duration ago, as --since takes it: every record is older than 2h, so the log end.
		{[]string{"--to-datetime", "2h"}, "0:4→6(2) 1:2→6(4) 2:6→6(0)", 2, 0},
		{[]string{"--to-datetime", "4h"}, "0:4→0(-4) 1:2→0(-2) 2:6→0(-6)", 3, 0},
		{[]string{"--shift-by", "-3"}, "0:4→1(-3) 1:2→0(-2)! 2:6→3(-3)", 3, 1},
		{[]string{"--shift-by", "1"}, "0:4→5(1) 1:2→3(1) 2:6→6(0)!", 2, 1},
		{[]string{"--topic", topic, "--partition", "0,2", "--to-earliest"}, "0:4→0(-4) 2:6→0(-6)", 2, 0},
		{[]string{"--topic", topic, "--partition", "1", "--partition", "1", "--shift-by", "2"}, "1:2→4(2)", 1, 0},
	} {
		r := roottest.RunCode(t, env, 0, append(append(append([]string{}, reset...), tc.args...), "-o", "json")...)
		var p resetPlan
		decode(t, r.Stdout, &p)
		if got := p.moves(); got != tc.want || p.Changes != tc.changes || p.Clamped != tc.clam || p.Group != group ||
			!slices.Equal(p.Topics, []string{topic}) || p.Reason != nil || len(p.Members) != 0 {
			t.Errorf("%v: plan %s (%d changes, %d clamped), want %s (%d, %d)\n%s", tc.args, got, p.Changes, p.Clamped, tc.want, tc.changes, tc.clam, r.Stdout)
		}
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--to-offset", "99", "-o", "table"}, []string{"dry run", "clamped  3 partitions", "+2", "clamped"}},
		{[]string{"--to-latest", "-o", "table"}, []string{"moves   2 of 3 partitions", "target  to latest"}},
	} {
		r := roottest.RunCode(t, env, 0, append(append([]string{}, reset...), tc.args...)...)
		for _, w := range tc.want {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("%v: the table lacks %q:\n%s", tc.args, w, r.Stdout)
			}
		}
	}
	if got := commitsOn(t, adm, group, topic); fmt.Sprint(got) != "map[0:4 1:2 2:6]" {
		t.Fatalf("the dry runs moved the commits: %v", got)
	}
}

// TestResetExecuteJournalUndo: an executed reset moves the commits to its plan's offsets and
// is journaled with each old and new offset; the same reset again is a plan that changes
// nothing, executed without a question or a journal row; reset --undo restores the offsets
// the reset found (once), also where the group had no commit; groups journal lists them all.
func TestResetExecuteJournalUndo(t *testing.T) {
	env, topic, group, _, adm := resetWorld(t)
	run := func(args ...string) resetResult {
		t.Helper()
		r := roottest.RunCode(t, env, 0, append(append([]string{"groups", "reset", group}, args...), "--execute", "--yes", "-o", "json")...)
		var res resetResult
		decode(t, r.Stdout, &res)
		return res
	}
	shift := run("--shift-by", "-3", "--reason", "INC-9: rebuild the projection", "--operator", "alice")
	if shift.ID == "" || shift.Operator != "alice" || shift.Reason != "INC-9: rebuild the projection" || shift.Plan.moves() != "0:4→1(-3) 1:2→0(-2)! 2:6→3(-3)" ||
		shift.Plan.Reason == nil || *shift.Plan.Reason != shift.Reason {
		t.Fatalf("reset: %+v", shift)
	}
	if got := commitsOn(t, adm, group, topic); fmt.Sprint(got) != "map[0:1 1:0 2:3]" {
		t.Fatalf("after --shift-by -3 the commits are %v", got)
	}
	earliest := run("--to-earliest", "--reason", "from the start")
	if earliest.Plan.moves() != "0:1→0(-1) 1:0→0(0) 2:3→0(-3)" || earliest.Plan.Changes != 2 {
		t.Fatalf("to earliest: %s", earliest.Plan.moves())
	}
	// The same reset again: nothing to do, nothing journaled, exit 0, the plan printed.
	r := roottest.RunCode(t, env, 0, "groups", "reset", group, "--to-earliest", "--execute", "--yes", "--reason", "again", "-o", "json")
	var again resetPlan
	decode(t, r.Stdout, &again)
	if again.Changes != 0 || again.moves() != "0:0→0(0) 1:0→0(0) 2:0→0(0)" || !strings.Contains(r.Stderr, "nothing to do") {
		t.Fatalf("the same reset again: %s\n%s", r.Stdout, r.Stderr)
	}

	// A topic the group never committed on: from no commit, and back to none.
	other := inspecttest.Topic(t, 1)
	testenv.Produce(t, testenv.Client(t), &kgo.Record{Topic: other, Value: []byte("a")}, &kgo.Record{Topic: other, Value: []byte("b")})
	r = roottest.RunCode(t, env, 2, "groups", "reset", group, "--topic", other, "--shift-by", "1")
	if !strings.Contains(r.Stderr, "no committed offset on "+other+"/0") {
		t.Fatalf("--shift-by without a commit: %s", r.Stderr)
	}
	fresh := run("--topic", other, "--to-offset", "1", "--reason", "start the new topic at 1")
	if fresh.Plan.moves() != "0:none→1(none)" {
		t.Fatalf("a partition without a commit: %s", fresh.Plan.moves())
	}
	if got := commitsOn(t, adm, group, other); fmt.Sprint(got) != "map[0:1]" {
		t.Fatalf("the new commit: %v", got)
	}

	// The journal: the three resets, newest first, with their offsets.
	journal := func() []groupAction {
		t.Helper()
		var js []groupAction
		decode(t, roottest.RunCode(t, env, 0, "groups", "journal", "-o", "json").Stdout, &js)
		return js
	}
	js := journal()
	if len(js) != 3 || js[0].ID != fresh.ID || js[1].ID != earliest.ID || js[2].ID != shift.ID || js[2].Action != "reset" ||
		js[2].Operator != "alice" || js[2].Topic != topic || js[2].Offsets() != topic+"/0:4→1 "+topic+"/1:2→0 "+topic+"/2:6→3" ||
		js[1].Offsets() != topic+"/0:1→0 "+topic+"/2:3→0" || js[0].Offsets() != other+"/0:none→1" {
		t.Fatalf("journal: %+v", js)
	}
	r = roottest.RunCode(t, env, 0, "groups", "journal", "-o", "table")
	if !strings.Contains(r.Stdout, topic+"/0: 4 → 1") || !strings.Contains(r.Stdout, other+"/0: none → 1") {
		t.Fatalf("journal table:\n%s", r.Stdout)
	}

	// Undo, as a skip's: the plan, then the old offsets back, once.
	undo := func(id string, code int, args ...string) roottest.Result {
		t.Helper()
		return roottest.RunCode(t, env, code, append([]string{"groups", "reset", "--undo", id}, args...)...)
	}
	r = undo(fresh.ID, 0, "-o", "table")
	if !strings.Contains(r.Stdout, other+"/0: 1 → none") || !strings.Contains(r.Stdout, "reset    "+fresh.ID) {
		t.Fatalf("undo plan:\n%s", r.Stdout)
	}
	undo(fresh.ID, 0, "--execute", "--yes", "--reason", "not yet")
	if got := commitsOn(t, adm, group, other); len(got) != 0 {
		t.Fatalf("the undo left a commit where there was none: %v", got)
	}
	// The shift cannot be undone while the later reset stands: the group is not where it left it.
	r = undo(shift.ID, 1, "--execute", "--yes", "--reason", "too early")
	if !strings.Contains(r.Stderr, "moved on") {
		t.Fatalf("undo of a reset the group moved on from: %s", r.Stderr)
	}
	undo(earliest.ID, 0, "--execute", "--yes", "--reason", "back to the shift")
	if got := commitsOn(t, adm, group, topic); fmt.Sprint(got) != "map[0:1 1:0 2:3]" {
		t.Fatalf("after undoing the reset to earliest the commits are %v", got)
	}
	r = undo(earliest.ID, 2, "--execute", "--yes", "--reason", "twice")
	if !strings.Contains(r.Stderr, "undone already") {
		t.Fatalf("a second undo: %s", r.Stderr)
	}
	undo(shift.ID, 0, "--execute", "--yes", "--reason", "all the way back")
	if got := commitsOn(t, adm, group, topic); fmt.Sprint(got) != "map[0:4 1:2 2:6]" {
		t.Fatalf("after undoing both resets the commits are %v", got)
	}
	js = journal()
	if len(js) != 6 || js[0].Action != "undo" || js[0].Undoes != shift.ID || js[5].UndoneBy != js[0].ID {
		t.Fatalf("journal after the undos: %+v", js)
	}

	// A reset the group came back from on its own: the undo would move nothing, and says so.
	away := run("--topic", topic, "--partition", "0", "--to-offset", "1", "--reason", "away")
	run("--topic", topic, "--partition", "0", "--to-offset", "4", "--reason", "and back")
	r = undo(away.ID, 1, "--execute", "--yes", "--reason", "late")
	if want := "is 4 again, the offset the reset moved it from: the group moved on since and is where the undo would put it (nothing to undo)"; !strings.Contains(r.Stderr, want) {
		t.Fatalf("undo of a reset the group came back from: %s, want %q", r.Stderr, want)
	}
}

// groupAction is a row of groups journal -o json.
type groupAction struct {
	ID       string `json:"run_id"`
	Action   string `json:"action"`
	Topic    string `json:"topic"`
	Operator string `json:"operator"`
	Undoes   string `json:"undoes"`
	UndoneBy string `json:"undone_by"`
	Moves    []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Old       *int64 `json:"committed_offset"`
		New       *int64 `json:"new_offset"`
	} `json:"offsets"`
}

// Offsets says the row's moves as "topic/p:old→new".
func (a groupAction) Offsets() string {
	var s []string
	for _, m := range a.Moves {
		s = append(s, fmt.Sprintf("%s/%d:%s→%s", m.Topic, m.Partition, orNone(m.Old), orNone(m.New)))
	}
	return strings.Join(s, " ")
}

// TestResetRefused: a group with a member is planned and refused, naming the member, and
// nothing moves; a group, topic or partition that does not exist exits 9 (not found), as every
// other command says that it does not.
func TestResetRefused(t *testing.T) {
	env, topic, group, _, adm := resetWorld(t)

	// The same exit codes as the rest for what does not exist.
	missing := []struct {
		name       string
		reset, ref []string
		want       string
	}{
		{"group", []string{"groups", "reset", "fwg-nosuch-group", "--to-earliest"}, []string{"groups", "describe", "fwg-nosuch-group"}, "does not exist"},
		{"topic", []string{"groups", "reset", group, "--topic", topic + "-nosuch", "--to-earliest"}, []string{"inspect", "topic", topic + "-nosuch"}, "does not exist"},
		{"partition", []string{"groups", "reset", group, "--topic", topic, "--partition", "7", "--to-earliest"},
			[]string{"groups", "skip", group, "--topic", topic, "--partition", "7"}, "no partition 7"},
	}
	for _, m := range missing {
		ref := roottest.Run(t, env, m.ref...)
		r := roottest.Run(t, env, m.reset...)
		if ref.Code != root.ExitNotFound || r.Code != ref.Code || !strings.Contains(r.Stderr, m.want) || strings.Contains(r.Stderr, "--help") || r.Stdout != "" {
			t.Errorf("a missing %s: reset exits %d (%s), %v exits %d", m.name, r.Code, r.Stderr, m.ref, ref.Code)
		}
	}

	// A member: the consumer polls the topic in the group.
	c := startPlainConsumer(t, topic, group)
	waitFor(t, "a member in "+group, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ds, err := adm.DescribeGroups(ctx, group)
		return err == nil && len(ds[group].Members) == 1
	})
	// It reads what is left and commits it: the commits stand still once it is at the end.
	waitFor(t, "the member at the end", func() bool { return fmt.Sprint(commitsOn(t, adm, group, topic)) == "map[0:6 1:6 2:6]" })
	before := commitsOn(t, adm, group, topic)
	r := roottest.RunCode(t, env, 1, "groups", "reset", group, "--to-earliest", "-o", "json")
	var p resetPlan
	decode(t, r.Stdout, &p)
	if len(p.Members) != 1 || p.Members[0].ClientID != "plain-consumer" || !strings.Contains(r.Stderr, "active members") || !strings.Contains(r.Stderr, "plain-consumer@") {
		t.Fatalf("the plan of a live group: %s\n%s", r.Stdout, r.Stderr)
	}
	r = roottest.RunCode(t, env, 1, "groups", "reset", group, "--to-earliest", "--execute", "--yes", "--reason", "INC-9", "-o", "table")
	if !strings.Contains(r.Stderr, "active members") || !strings.Contains(r.Stderr, "plain-consumer@") || !strings.Contains(r.Stdout, "Active members of "+group) {
		t.Fatalf("the refusal does not name the member:\n%s\n%s", r.Stdout, r.Stderr)
	}
	c.stop()
	waitEmpty(t, adm, group)
	if got := commitsOn(t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("refused, yet the commits moved from %v to %v", before, got)
	}
	var js []groupAction
	decode(t, roottest.RunCode(t, env, 0, "groups", "journal", "-o", "json").Stdout, &js)
	if len(js) != 0 {
		t.Fatalf("a refused reset was journaled: %+v", js)
	}
}

// TestResetReadByKcat: a consumer that is neither fieldwork's nor franz-go (kcat, librdkafka,
// in its group) reads from the offsets a reset committed.
func TestResetReadByKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		testenv.Missing(t, "no kcat", "install kcat")
	}
	env, topic, group, _, _ := resetWorld(t)
	roottest.RunCode(t, env, 0, "groups", "reset", group, "--to-offset", "4", "--execute", "--yes", "--reason", "read the last two again")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", "-b", testenv.Brokers(t), "-G", group, "-c", "6", "-q",
		"-f", `%p/%o %k\n`, "-X", "auto.offset.reset=error", topic).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	if got := strings.Join(lines, ", "); got != "0/4 k0-4, 0/5 k0-5, 1/4 k1-4, 1/5 k1-5, 2/4 k2-4, 2/5 k2-5" {
		t.Fatalf("kcat read %s, want offsets 4 and 5 of each partition", got)
	}
}
