package processed

import (
	"context"
	"fmt"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// ForgetReport is what `processed forget` prints.
type ForgetReport struct {
	Table        string `json:"table"`
	Consumer     string `json:"consumer,omitempty"`
	AllConsumers bool   `json:"all_consumers"`
	// Requested is how many distinct ids were given.
	Requested int               `json:"requested"`
	Removed   []dedup.MarkerRow `json:"removed"`
	// NotFound are the ids given that had no marker, in the order given.
	NotFound []string `json:"not_found"`
	// DryRun is set on a plan (PlanForget): Removed are the markers that would be removed.
	DryRun bool `json:"dry_run"`
	// Reason is the --reason the forget is asked with (nil without one).
	Reason *string `json:"reason"`
}

// Forget is the forget of the markers of ids for consumer ("" for every consumer's) as an
// action (action.Run), so that the events are processed again when redelivered or replayed.
// ids are taken as given: the caller makes them distinct.
//
// Its plan is PlanForget's (the markers found, the ids that have none, the store's refusals
// checked: an operator is never asked to confirm what the store then refuses); an executed
// forget checks first that its journal can be written (journalReady), then deletes them all
// in one transaction and journals the forget under the action's Record once it is committed.
func Forget(st *dedup.Store, consumer string, ids []string) action.Steps[*ForgetReport, *ForgetReport] {
	return action.Steps[*ForgetReport, *ForgetReport]{
		Plan: func(ctx context.Context, e *action.Env) (*ForgetReport, error) {
			rep, err := PlanForget(ctx, st, consumer, ids)
			if rep != nil {
				rep.Reason = e.Reason()
			}
			return rep, err
		},
		Check: func(ctx context.Context, _ *action.Env, _ *ForgetReport) error { return journalReady(ctx, st) },
		Execute: func(ctx context.Context, e *action.Env, _ *ForgetReport) (*ForgetReport, error) {
			// The store checks its refusals again before it deletes: the rows may have changed since.
			removed, err := st.Forget(ctx, consumer, ids)
			if err != nil {
				return nil, err
			}
			rep := forgetReport(st, consumer, ids, removed)
			rep.Reason = e.Reason()
			return rep, recordForget(context.WithoutCancel(ctx), st, e.Record, ids, rep)
		},
	}
}

// Question is what the person who forgets is asked, completing "refusing to …".
func (r *ForgetReport) Question() string {
	of := "every consumer"
	if r.Consumer != "" {
		of = "consumer " + r.Consumer
	}
	return fmt.Sprintf("forget %s of %s for %s in %s (they will be processed again when redelivered or replayed)",
		wording.Plural(int64(len(r.Removed)), "marker"), wording.Plural(int64(r.Requested), "event"), of, r.Table)
}

// PlanForget is Forget's dry run: the markers of ids that Forget would delete, and the ids
// that have none, read without deleting anything (one query for a consumer, one per id for
// every consumer's).
func PlanForget(ctx context.Context, st *dedup.Store, consumer string, ids []string) (*ForgetReport, error) {
	// A plan the forget would refuse says so at once (dedup.Store.CheckForget).
	if err := st.CheckForget(ctx, consumer, ids); err != nil {
		return nil, err
	}
	var rows []dedup.MarkerRow
	if consumer != "" {
		found, err := st.Lookup(ctx, consumer, ids)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if m, ok := found[id]; ok {
				rows = append(rows, m)
			}
		}
	} else {
		for _, id := range ids {
			ms, err := st.Get(ctx, id, "")
			if err != nil {
				return nil, err
			}
			rows = append(rows, ms...)
		}
	}
	rep := forgetReport(st, consumer, ids, rows)
	rep.DryRun = true
	return rep, nil
}

// forgetReport is the report of the markers removed (or to remove) among ids.
func forgetReport(st *dedup.Store, consumer string, ids []string, removed []dedup.MarkerRow) *ForgetReport {
	rep := &ForgetReport{Table: st.TableLabel(), Consumer: consumer, AllConsumers: consumer == "",
		Requested: len(ids), Removed: removed, NotFound: []string{}}
	if rep.Removed == nil {
		rep.Removed = []dedup.MarkerRow{}
	}
	had := make(map[string]bool, len(removed))
	for _, m := range removed {
		had[m.EventID] = true
	}
	for _, id := range ids {
		// The store keeps an id as dedup.EventKey makes it (a long id is hashed).
		if !had[dedup.EventKey(id)] {
			rep.NotFound = append(rep.NotFound, id)
		}
	}
	return rep
}
