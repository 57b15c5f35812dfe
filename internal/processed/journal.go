package processed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/timespec"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// maxJournaledIDs bounds the event ids a forget's journal entry lists; Counts.Requested says
// how many were given.
const maxJournaledIDs = 1000

// pruneSelection is what a prune's journal entry says it selected.
type pruneSelection struct {
	Consumer        string   `json:"consumer,omitempty"`
	OlderThan       string   `json:"older_than"`
	ProcessedBefore string   `json:"processed_before"`
	Topics          []string `json:"topics,omitempty"`
	Forced          bool     `json:"forced"`
}

type pruneCounts struct {
	Candidates int64            `json:"candidates"`
	Deleted    int64            `json:"deleted"`
	PerTopic   map[string]int64 `json:"per_topic,omitempty"`
	NoTopic    int64            `json:"without_topic,omitempty"`
}

type forgetSelection struct {
	Consumer     string   `json:"consumer,omitempty"`
	AllConsumers bool     `json:"all_consumers"`
	EventIDs     []string `json:"event_ids"`
	// Truncated is set when EventIDs lists only the first maxJournaledIDs.
	Truncated bool `json:"event_ids_truncated,omitempty"`
}

type forgetCounts struct {
	Requested int `json:"requested"`
	Deleted   int `json:"deleted"`
	NotFound  int `json:"not_found"`
}

// record journals an executed action that deleted deleted markers (failed is the error that
// stopped it part way, or nil). A journal that cannot be written fails the command: the
// markers are gone, and the error says so.
// rec says who acted and why (action.Record; docs/design.md §3.3).
func record(ctx context.Context, st *dedup.Store, kind string, rec action.Record, selection, counts any, deleted int64, failed error) error {
	sel, err := json.Marshal(selection)
	if err != nil {
		return err
	}
	cnt, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	a := dedup.MarkerAction{Action: kind, Operator: rec.Operator, Reason: rec.Reason, Selection: dedup.JSONText(sel), Counts: dedup.JSONText(cnt), Deleted: deleted}
	if failed != nil {
		a.Error = failed.Error()
	}
	if err := st.RecordMarkerAction(ctx, a); err != nil {
		return fmt.Errorf("%s deleted, but the journal was not written: %w", wording.Plural(deleted, "marker"), err)
	}
	return nil
}

func recordPrune(ctx context.Context, st *dedup.Store, o PruneOptions, rec action.Record, rep *PruneReport, failed error) error {
	sel := pruneSelection{Consumer: o.Consumer, OlderThan: rep.OlderThan, ProcessedBefore: timespec.FormatTime(rep.ProcessedBefore),
		Topics: o.Topics, Forced: o.Force}
	counts := pruneCounts{Candidates: rep.Candidates, Deleted: rep.Deleted, NoTopic: rep.NoTopic}
	for _, t := range rep.Topics {
		if counts.PerTopic == nil {
			counts.PerTopic = map[string]int64{}
		}
		counts.PerTopic[t.Topic] = t.Markers
	}
	return errors.Join(failed, record(ctx, st, dedup.ActionPrune, rec, sel, counts, rep.Deleted, failed))
}

func recordForget(ctx context.Context, st *dedup.Store, rec action.Record, ids []string, rep *ForgetReport) error {
	sel := forgetSelection{Consumer: rep.Consumer, AllConsumers: rep.AllConsumers, EventIDs: ids}
	if len(ids) > maxJournaledIDs {
		sel.EventIDs, sel.Truncated = ids[:maxJournaledIDs], true
	}
	counts := forgetCounts{Requested: rep.Requested, Deleted: len(rep.Removed), NotFound: len(rep.NotFound)}
	return record(ctx, st, dedup.ActionForget, rec, sel, counts, int64(len(rep.Removed)), nil)
}

// journalReady checks, before anything is deleted from another library's table (a preset),
// that the journal of prunes and forgets can be written: it is fieldwork's own schema in the
// same database (docs/design.md §3.4), never the library's, which `fieldwork db migrate`
// creates.
func journalReady(ctx context.Context, st *dedup.Store) error {
	if st.Preset() == nil {
		return nil
	}
	_, err := st.MarkerActions(ctx, 1)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dedup.ErrNotMigrated):
		// Not wrapped: the advice is this one, for fieldwork's schema, not the table's.
		migrate := "fieldwork db migrate"
		if s := st.JournalSchema(); s != dedup.DefaultSchema {
			migrate += " --schema " + s
		}
		return fmt.Errorf("nothing was deleted from %s: fieldwork's journal of prunes and forgets is not in schema %s: %v\nhint: run `%s` with the same --dsn and no --preset: it creates fieldwork's own tables in schema %s, beside %s's table, not in its schema",
			st.Table(), st.JournalSchema(), err, migrate, st.JournalSchema(), st.Preset().Library)
	}
	return fmt.Errorf("nothing was deleted from %s: the journal of prunes and forgets cannot be read: %w", st.Table(), err)
}
