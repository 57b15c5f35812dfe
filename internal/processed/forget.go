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
}

// Forget deletes the markers of ids for consumer ("" for every consumer's), all in one
// transaction, so that the events are processed again when redelivered or replayed, and says
// which ids had no marker. ids are taken as given: the caller makes them distinct.
func Forget(ctx context.Context, st *dedup.Store, consumer string, ids []string) (*ForgetReport, error) {
	removed, err := st.Forget(ctx, consumer, ids)
	if err != nil {
		return nil, err
	}
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
	return rep, nil
}
