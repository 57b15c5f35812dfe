package processed

import (
	"context"
	"fmt"

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
}

// ForgetOptions are how Forget is run beyond what it deletes.
type ForgetOptions struct {
	// Journal is who forgets and why.
	Journal Journal
	// Confirm, when set, is asked before anything is deleted, once the store's refusals are
	// checked (dedup.Store.CheckForget), with the plan (PlanForget: the markers found and the
	// ids that have none) and a sentence that says what will be deleted; an error from it
	// stops the forget and is returned. An operator is never asked to confirm what the
	// store then refuses.
	Confirm func(plan *ForgetReport, question string) error
}

// Forget deletes the markers of ids for consumer ("" for every consumer's), all in one
// transaction, so that the events are processed again when redelivered or replayed, and says
// which ids had no marker. ids are taken as given: the caller makes them distinct. The forget
// is journaled with o.Journal once the transaction is committed.
func Forget(ctx context.Context, st *dedup.Store, consumer string, ids []string, o ForgetOptions) (*ForgetReport, error) {
	if err := journalReady(ctx, st); err != nil {
		return nil, err
	}
	if o.Confirm != nil {
		plan, err := PlanForget(ctx, st, consumer, ids)
		if err != nil {
			return nil, err
		}
		of := "every consumer"
		if consumer != "" {
			of = "consumer " + consumer
		}
		question := fmt.Sprintf("forget %s of %s for %s in %s (they will be processed again when redelivered or replayed)",
			wording.Plural(int64(len(plan.Removed)), "marker"), wording.Plural(int64(len(ids)), "event"), of, st.Table())
		if err := o.Confirm(plan, question); err != nil {
			return nil, err
		}
	}
	// The store checks its refusals again before it deletes: the rows may have changed since.
	removed, err := st.Forget(ctx, consumer, ids)
	if err != nil {
		return nil, err
	}
	rep := forgetReport(st, consumer, ids, removed)
	return rep, recordForget(context.WithoutCancel(ctx), st, o.Journal, ids, rep)
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
	rep := &ForgetReport{Table: st.Table(), Consumer: consumer, AllConsumers: consumer == "",
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
