// Package status is how a dead letter's status (dlq.Status) is shown, declared once for
// dlq's tables, the demo and the triage console: its word and its tone (look.Tone).
package status

import (
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/look"
)

// Word is the status as it is shown: its name (dlq's stable value), or look.Absent when it was
// not looked up (the zero Status).
func Word(s dlq.Status) string { return look.OrAbsent(string(s)) }

// Tone is the tone the status is shown in: pending and stale (the consumer ignored the
// replayed event: the fix did not take effect) need the operator, so they warn; resolved is
// settled by processing, so it is OK; replayed (on its way), unknown and a status not looked
// up are plain.
func Tone(s dlq.Status) look.Tone {
	switch s {
	case dlq.StatusPending, dlq.StatusStale:
		return look.Warn
	case dlq.StatusResolved:
		return look.OK
	}
	return look.Plain
}
