package replay

import (
	"strings"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// SelectStatus selects the dead letters that have one of statuses for consumer: `replay
// --status pending --consumer C`, meant to select what `dlq list --status pending --consumer
// C` lists (docs/design.md §3.2). No statuses selects by no status.
//
// It is the one place where the command line's status selection meets the Spec, and
// (statusSelection) where a plan reads it back to say what it selects: for now through
// PendingFor, which leaves out the records C has a marker for; once the Spec selects on
// dlq's status rule itself, these two are all that change.
func (s *Spec) SelectStatus(statuses []dlq.Status, consumer string) error {
	if len(statuses) == 0 {
		return nil
	}
	if len(statuses) != 1 || statuses[0] != dlq.StatusPending {
		names := make([]string, len(statuses))
		for i, st := range statuses {
			names[i] = string(st)
		}
		return fwerr.Usagef("--status %q: only pending is a replay selection (replayed and resolved dead letters need no replay)", strings.Join(names, ","))
	}
	if consumer == "" {
		return fwerr.Usagef("--status pending needs --consumer C: pending means C has no marker for the event")
	}
	s.PendingFor = consumer
	return nil
}

// statusSelection is the status selection SelectStatus made: the statuses and the consumer
// they are for (none: no status selection).
func (s *Spec) statusSelection() ([]dlq.Status, string) {
	if s.PendingFor == "" {
		return nil, ""
	}
	return []dlq.Status{dlq.StatusPending}, s.PendingFor
}
