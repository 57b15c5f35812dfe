package access

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestGroupOperatorPrincipal: the groups commands need what the README's table says. DESCRIBE
// on the group and DESCRIBE and READ on the topic let groups describe, list and the skip's
// plan run; the skip also needs READ on the group (its commit) and WRITE on the dead-letter
// topic, and each missing one is refused, named, before anything is parked or moved.
func TestGroupOperatorPrincipal(t *testing.T) {
	w := cleanWorld(t)
	st := store(t)
	group := testenv.Name(t, "stuck")
	adm := kadm.NewClient(testenv.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{w.topic: {0: {Topic: w.topic, Partition: 0, At: 0, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteGroups(context.Background(), group) })
	p := testenv.NewPrincipal(t, "groupop")
	skip := append([]string{"groups", "skip", group, "--topic", w.topic, "--partition", "0"}, st...)
	execute := append(append([]string{}, skip...), "--execute", "--yes", "--reason", "poison")

	denied(t, as(t, p, nil, "groups", "describe", group, "--interval", "0"), "DESCRIBE on group "+group)
	denied(t, as(t, p, nil, skip...), "DESCRIBE on topic "+w.topic)

	p.Allow(kadm.NewACLs().Groups(group), kadm.OpDescribe)
	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpDescribe, kadm.OpRead)
	r := expect(t, p, 0, "groups", "describe", group, "--interval", "0", "-o", "jsonl")
	if !strings.Contains(r.stdout, `"topic":"`+w.topic+`","partition":0,"committed_offset":0`) {
		t.Errorf("groups describe\n%s", r)
	}
	r = expect(t, p, 0, "groups", "list", "-o", "jsonl")
	if !strings.Contains(r.stdout, `"group":"`+group+`"`) {
		t.Errorf("groups list does not show the group\n%s", r)
	}
	if r := expect(t, p, 0, append(skip, "-o", "jsonl")...); !strings.Contains(r.stdout, `"committed_offset":0,"new_offset":1`) {
		t.Errorf("groups skip plan\n%s", r)
	}

	before := endOffsets(t, w.dlq)
	denied(t, as(t, p, nil, execute...), "READ on group "+group)
	p.Allow(kadm.NewACLs().Groups(group), kadm.OpRead)
	denied(t, as(t, p, nil, execute...), "WRITE on topic "+w.dlq)
	// Seen but not writable: the producer is refused, and says what is missing.
	p.Allow(kadm.NewACLs().Topics(w.dlq), kadm.OpDescribe)
	denied(t, as(t, p, nil, execute...), "WRITE on topic "+w.dlq)
	if got := endOffsets(t, w.dlq); got != before {
		t.Fatalf("a refused skip parked %d records", got-before)
	}
	if got := committedOffsets(t, group, w.topic); got != 0 {
		t.Fatalf("a refused skip moved the commit to %d", got)
	}

	p.Allow(kadm.NewACLs().Topics(w.dlq), kadm.OpWrite)
	r = expect(t, p, 0, append(execute, "-o", "jsonl")...)
	var res struct {
		ID     string `json:"run_id"`
		Parked int64  `json:"parked"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Parked != 1 {
		t.Fatalf("groups skip --execute: %v\n%s", err, r)
	}
	if got := committedOffsets(t, group, w.topic); got != 1 {
		t.Errorf("after the skip the commit is %d, want 1", got)
	}
	if got := endOffsets(t, w.dlq); got != before+1 {
		t.Errorf("%d records parked, want 1", got-before)
	}
	expect(t, p, 0, append([]string{"groups", "skip", "--undo", res.ID, "--execute", "--yes", "--reason", "wrong one"}, st...)...)
	if got := committedOffsets(t, group, w.topic); got != 0 {
		t.Errorf("after the undo the commit is %d, want 0", got)
	}
}

// TestGroupResetPrincipal: groups reset needs what the README's table says: DESCRIBE on the
// group and on the topic for its plan, READ on both to commit, each missing one refused,
// named, before anything moves; its undo needs DELETE on the group where it removes a commit
// the reset made.
func TestGroupResetPrincipal(t *testing.T) {
	w := cleanWorld(t)
	st := store(t)
	group := testenv.Name(t, "rewind")
	adm := kadm.NewClient(testenv.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{w.topic: {0: {Topic: w.topic, Partition: 0, At: 1, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteGroups(context.Background(), group) })
	p := testenv.NewPrincipal(t, "groupreset")
	reset := append([]string{"groups", "reset", group, "--topic", w.topic, "--to-earliest"}, st...)
	execute := append(append([]string{}, reset...), "--execute", "--yes", "--reason", "rewind")

	denied(t, as(t, p, nil, reset...), "DESCRIBE on group "+group)
	p.Allow(kadm.NewACLs().Groups(group), kadm.OpDescribe)
	denied(t, as(t, p, nil, reset...), "DESCRIBE on topic "+w.topic)
	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpDescribe)
	if r := expect(t, p, 0, append(reset, "-o", "jsonl")...); !strings.Contains(r.stdout, `"committed_offset":1,"new_offset":0`) {
		t.Errorf("groups reset plan\n%s", r)
	}
	denied(t, as(t, p, nil, execute...), "READ on group "+group)
	p.Allow(kadm.NewACLs().Groups(group), kadm.OpRead)
	denied(t, as(t, p, nil, execute...), "READ on topic "+w.topic)
	if got := committedOffsets(t, group, w.topic); got != 1 {
		t.Fatalf("a refused reset moved the commit to %d", got)
	}
	p.Allow(kadm.NewACLs().Topics(w.topic), kadm.OpRead)
	r := expect(t, p, 0, append(execute, "-o", "jsonl")...)
	var res struct {
		ID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.ID == "" {
		t.Fatalf("groups reset --execute: %v\n%s", err, r)
	}
	if got := committedOffsets(t, group, w.topic); got != 0 {
		t.Errorf("after the reset the commit is %d, want 0", got)
	}
	// The reset gave partition 1 its first commit: its undo removes it, which takes DELETE.
	undo := append([]string{"groups", "reset", "--undo", res.ID, "--execute", "--yes", "--reason", "wrong one"}, st...)
	denied(t, as(t, p, nil, undo...), "DELETE on group "+group)
	if got := committedOffsets(t, group, w.topic); got != 0 {
		t.Fatalf("a refused undo moved the commit to %d", got)
	}
	p.Allow(kadm.NewACLs().Groups(group), kadm.OpDelete)
	expect(t, p, 0, undo...)
	if got := committedOffsets(t, group, w.topic); got != 1 {
		t.Errorf("after the undo the commit is %d, want 1", got)
	}
}
