package processed_test

import (
	"errors"
	"fmt"
	"github.com/fieldwork/fieldwork/internal/action"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/processed"
)

// TestForget deletes markers of one consumer, then of every consumer, against the real
// PostgreSQL, and checks which ids the report says had none: a long id, which the store
// keeps hashed, is found by its original text.
func TestForget(t *testing.T) {
	st := pgStore(t, true)
	long := strings.Repeat("x", dedup.MaxInlineEventIDBytes+1)
	mark(t, st, "billing", dedup.Marker{EventID: "e1"}, dedup.Marker{EventID: "e2"}, dedup.Marker{EventID: long})
	mark(t, st, "mailer", dedup.Marker{EventID: "e1"})

	// The plan names what Forget would remove, a hashed long id included, and removes nothing.
	plan, err := processed.PlanForget(ctx(t), st, "billing", []string{"e1", long, "nope"})
	if err != nil || !plan.DryRun || len(plan.Removed) != 2 || fmt.Sprint(plan.NotFound) != "[nope]" {
		t.Fatalf("plan for billing: %+v, %v", plan, err)
	}
	if plan, err = processed.PlanForget(ctx(t), st, "", []string{"e1", "nope"}); err != nil || len(plan.Removed) != 2 || fmt.Sprint(plan.NotFound) != "[nope]" {
		t.Fatalf("plan for every consumer: %+v, %v", plan, err)
	}
	if left, _ := st.Lookup(ctx(t), "billing", []string{"e1", "e2", long}); len(left) != 3 {
		t.Fatalf("the plan removed markers: billing keeps %d of 3", len(left))
	}

	// Confirm is asked with the plan before anything is deleted; declining deletes nothing.
	declined := errors.New("declined")
	var asked string
	_, err = runForget(ctx(t), st, "billing", []string{"e1", long, "nope"}, forgetCall{
		Confirm: func(plan *processed.ForgetReport, question string) error {
			asked = question
			if len(plan.Removed) != 2 || fmt.Sprint(plan.NotFound) != "[nope]" {
				t.Errorf("confirm got the plan %+v", plan)
			}
			return declined
		},
	})
	if !errors.Is(err, declined) || !strings.HasPrefix(asked, "forget 2 markers of 3 events for consumer billing in ") {
		t.Fatalf("declined forget: %v, asked %q", err, asked)
	}
	if left, _ := st.Lookup(ctx(t), "billing", []string{"e1", "e2", long}); len(left) != 3 {
		t.Fatalf("a declined forget removed markers: billing keeps %d of 3", len(left))
	}

	rep, err := runForget(ctx(t), st, "billing", []string{"e1", long, "nope"}, forgetCall{
		Journal: action.Record{Operator: "alice"},
		Confirm: func(*processed.ForgetReport, string) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Consumer != "billing" || rep.AllConsumers || rep.Requested != 3 || len(rep.Removed) != 2 ||
		fmt.Sprint(rep.NotFound) != "[nope]" || rep.Table != st.TableLabel() || rep.DryRun {
		t.Fatalf("billing: %+v", rep)
	}
	if left, _ := st.Lookup(ctx(t), "billing", []string{"e1", "e2", long}); len(left) != 1 {
		t.Errorf("billing keeps %d markers, want e2 alone", len(left))
	}

	rep, err = runForget(ctx(t), st, "", []string{"e1", "e2"}, forgetCall{Journal: action.Record{Operator: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.AllConsumers || rep.Consumer != "" || len(rep.Removed) != 2 || len(rep.NotFound) != 0 {
		t.Fatalf("every consumer: %+v", rep)
	}
	// Nothing left to forget: every id is reported, and the lists are empty, not null.
	rep, err = runForget(ctx(t), st, "", []string{"e1"}, forgetCall{Journal: action.Record{Operator: "alice"}})
	if err != nil || rep.Removed == nil || fmt.Sprint(rep.NotFound) != "[e1]" {
		t.Fatalf("again: %+v, %v", rep, err)
	}
}
