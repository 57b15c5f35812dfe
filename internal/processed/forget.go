package processed

import (
	"context"

	"github.com/fieldwork/fieldwork/internal/dedup"
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

// Forget deletes the markers of ids for consumer ("" for every consumer's), all in one
// transaction, so that the events are processed again when redelivered or replayed, and says
// which ids had no marker. ids are taken as given: the caller makes them distinct. The forget
// is journaled with j once the transaction is committed.
func Forget(ctx context.Context, st *dedup.Store, consumer string, ids []string, j Journal) (*ForgetReport, error) {
	if err := journalReady(ctx, st); err != nil {
		return nil, err
	}
	removed, err := st.Forget(ctx, consumer, ids)
	if err != nil {
		return nil, err
	}
	rep := forgetReport(st, consumer, ids, removed)
	return rep, recordForget(context.WithoutCancel(ctx), st, j, ids, rep)
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
