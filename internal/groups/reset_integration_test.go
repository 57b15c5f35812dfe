package groups

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestResetStalePlan: a reset executes the plan it was shown or nothing. A group that
// committed between the plan and the execute (a consumer ran) is refused, its new commit left
// as it is and nothing journaled; planned again, the reset goes through and journals each
// partition's old and new offset.
func TestResetStalePlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := inspecttest.Topic(t, 2)
	p := inspecttest.Producer(t, topic)
	for part := range int32(2) {
		for i := range 4 {
			testenv.Produce(t, p, inspecttest.Rec(part, i, nil, "v"))
		}
	}
	group := inspecttest.CommitGroup(t, topic, map[int32]int64{0: 3, 1: 3})
	c, st := testenv.Cluster(t), testenv.SQLiteStore(t)
	env := &action.Env{Options: action.Options{Execute: true, Yes: true, Record: action.NewRecord(time.Now(), "tester", os.Getenv, "INC-9")}}
	steps := Reset(c, st, ResetOptions{Group: group, Target: ResetTarget{To: ResetEarliest}})
	plan, err := steps.Plan(ctx, env)
	if err != nil || plan.Changes != 2 || plan.Reason == nil || *plan.Reason != "INC-9" {
		t.Fatalf("plan: %+v, %v", plan, err)
	}
	adm := kadm.NewClient(testenv.Client(t))
	if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{topic: {1: {Topic: topic, Partition: 1, At: 4, LeaderEpoch: -1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Execute(ctx, env, plan); err == nil || !strings.Contains(err.Error(), "is 4, not 3 as planned") {
		t.Fatalf("a stale plan executed: %v", err)
	}
	commits, err := c.CommitsOf(ctx, group)
	if err != nil || commits[topic][0] != 3 || commits[topic][1] != 4 {
		t.Fatalf("after the refused reset: %v, %v", commits, err)
	}
	if js, err := st.GroupActions(ctx, 0); err != nil || len(js) != 0 {
		t.Fatalf("a refused reset was journaled: %+v, %v", js, err)
	}

	out, err := action.Run(ctx, steps, env.Options, action.Hooks[*ResetPlan]{})
	if err != nil || out.Stage != action.StageExecute || out.Result.ID != env.Record.ID {
		t.Fatalf("planned again: %+v, %v", out, err)
	}
	js, err := st.GroupActions(ctx, 0)
	if err != nil || len(js) != 1 || js[0].Action != "reset" || js[0].Topic != topic ||
		string(js[0].Offsets) != `[{"topic":"`+topic+`","partition":0,"committed_offset":3,"new_offset":0,"parked":0},{"topic":"`+topic+`","partition":1,"committed_offset":4,"new_offset":0,"parked":0}]` {
		t.Fatalf("journal: %+v, %v", js, err)
	}
	// Now at the plan's offsets: nothing to do, nothing journaled.
	out, err = action.Run(ctx, steps, env.Options, action.Hooks[*ResetPlan]{})
	if err != nil || out.Stage != action.StageCheck || out.Plan.Changes != 0 {
		t.Fatalf("again: %+v, %v", out, err)
	}
}

// TestResetTargetCheck: a target is one kind with the value it takes.
func TestResetTargetCheck(t *testing.T) {
	neg, zero := int64(-1), int64(0)
	for _, tc := range []struct {
		t    ResetTarget
		want string
	}{
		{ResetTarget{}, "say where the commits go"},
		{ResetTarget{To: "start"}, "say where the commits go"},
		{ResetTarget{To: ResetOffset}, "--to-offset"},
		{ResetTarget{To: ResetOffset, Offset: &neg}, "--to-offset"},
		{ResetTarget{To: ResetDatetime}, "--to-datetime"},
		{ResetTarget{To: ResetShift}, "--shift-by"},
		{ResetTarget{To: ResetOffset, Offset: &zero}, ""},
		{ResetTarget{To: ResetShift, Shift: &neg}, ""},
		{ResetTarget{To: ResetEarliest}, ""},
	} {
		err := tc.t.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.t, err, tc.want)
		}
	}
}
