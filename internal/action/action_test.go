package action

import (
	"context"
	"errors"
	"os/user"
	"strings"
	"testing"
)

// TestOperator: --operator, then $USER, then $LOGNAME, then the account the process runs as;
// never "unknown" for a process that has an account.
func TestOperator(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	me, err := user.Current()
	if err != nil || me.Username == "" {
		t.Fatalf("no current user to compare with: %v", err)
	}
	for _, c := range []struct {
		explicit string
		env      map[string]string
		want     string
	}{
		{"alice", map[string]string{"USER": "bob", "LOGNAME": "carol"}, "alice"},
		{"", map[string]string{"USER": "bob", "LOGNAME": "carol"}, "bob"},
		{" ", map[string]string{"USER": " ", "LOGNAME": "carol"}, "carol"},
		{"", map[string]string{}, me.Username},
	} {
		if got := Operator(c.explicit, env(c.env)); got != c.want {
			t.Errorf("Operator(%q, %v) = %q, want %q", c.explicit, c.env, got, c.want)
		}
	}
}

// TestRunOrder: a dry run ends at the plan; an executed action is checked, confirmed unless
// Yes, then executed under the Record; a refused plan, a failed check, nothing to do and a
// declined confirmation each stop it where they happen, nothing executed.
func TestRunOrder(t *testing.T) {
	refused, declined := errors.New("refused"), errors.New("declined")
	for _, tc := range []struct {
		name    string
		o       Options
		planErr error
		check   error
		confirm error
		steps   string
		stage   Stage
		err     error
	}{
		{"dry run", Options{}, nil, nil, nil, "plan", StagePlan, nil},
		{"refused plan", Options{Execute: true}, refused, nil, nil, "plan", StagePlan, refused},
		{"failed check", Options{Execute: true}, nil, refused, nil, "plan check", StageCheck, refused},
		{"nothing to do", Options{Execute: true}, nil, ErrNothingToDo, nil, "plan check", StageCheck, nil},
		{"declined", Options{Execute: true}, nil, nil, declined, "plan check confirm", StageConfirm, declined},
		{"confirmed", Options{Execute: true}, nil, nil, nil, "plan check confirm execute", StageExecute, nil},
		{"yes", Options{Execute: true, Yes: true}, nil, nil, nil, "plan check execute", StageExecute, nil},
	} {
		var steps []string
		tc.o.Record = Record{ID: "r1", Operator: "alice", Reason: "why"}
		out, err := Run(context.Background(), Steps[string, string]{
			Plan: func(context.Context, *Env) (string, error) { steps = append(steps, "plan"); return "p", tc.planErr },
			Check: func(context.Context, *Env, string) error {
				steps = append(steps, "check")
				return tc.check
			},
			Execute: func(_ context.Context, e *Env, plan string) (string, error) {
				steps = append(steps, "execute")
				return plan + " by " + e.Record.Operator, nil
			},
		}, tc.o, Hooks[string]{Confirm: func(string) error { steps = append(steps, "confirm"); return tc.confirm }})
		if got := strings.Join(steps, " "); got != tc.steps || out.Stage != tc.stage || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: steps %q, stage %s, error %v; want %q, %s, %v", tc.name, got, out.Stage, err, tc.steps, tc.stage, tc.err)
		}
		if out.Plan != "p" || (out.Stage == StageExecute) != (out.Result == "p by alice") {
			t.Errorf("%s: plan %q result %q", tc.name, out.Plan, out.Result)
		}
	}
}
