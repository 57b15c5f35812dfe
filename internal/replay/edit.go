package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// Edit is what an operator changes in one dead letter before it is replayed (`replay T/P/O
// --edit`, `--value-file`, `--set-header`). Only the edited copy is sent; it carries
// fw.replay.edited (the dead letter's address) beside the usual provenance, and the run's
// journal holds the edit with the selection, so that the send journaled for the dead letter
// links the copy to its original.
//
// The copy is the same event, fixed: when the dead letter has an event id, the edited record
// must decode to an event with that id (docs/design.md §3.3). The consumer's marker for it
// then resolves the original dead letter, by the one status rule (dlq.Status), and a copy that
// fails again is dead-lettered under the same id.
type Edit struct {
	// Value is the new value; nil leaves the value as it was.
	Value []byte `json:"value,omitzero"`
	// Headers are set on the copy, each replacing the record's headers of the same key.
	Headers []HeaderEdit `json:"headers,omitempty"`
	// Interactive asks FlowOptions.Editor for the value when the flow starts (--edit): it is
	// given the dead letter's value (JSON indented) and returns the new one.
	Interactive bool `json:"-"`
	// EventID is the edited copy's event id, set when the edit is checked (the dead letter's,
	// or, for a dead letter that had none, the one the edit gave it). Journaled with the run,
	// it is how the status rule follows a dead letter without an event id to its copy
	// (dlq.EditedEventID reads it).
	EventID string `json:"event_id,omitempty"`
}

// HeaderEdit is one header set by an edit.
type HeaderEdit struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ParseHeaderEdit reads K=V (--set-header).
func ParseHeaderEdit(s string) (HeaderEdit, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return HeaderEdit{}, fwerr.Usagef("--set-header %q: want KEY=VALUE", s)
	}
	return HeaderEdit{Key: k, Value: v}, nil
}

func (e *Edit) validate() error {
	if e.Interactive && e.Value != nil {
		return fwerr.Usagef("choose either --edit or --value-file, not both")
	}
	if !e.Interactive && e.Value == nil && len(e.Headers) == 0 {
		return fwerr.Usagef("an edit changes something: --edit, --value-file or --set-header")
	}
	for _, h := range e.Headers {
		if stripHeader(h.Key) {
			return fwerr.Usagef("--set-header %s: dead-letter and fw.replay.* headers are the replay's own, not an edit's", h.Key)
		}
	}
	return nil
}

// apply turns the outgoing headers into the edited copy's: the edit's headers replace those
// of the same key (ASCII case ignored), then fw.replay.edited names the original.
func (e *Edit) apply(out *kgo.Record, original string) {
	if e.Value != nil {
		out.Value = e.Value
	}
	hs := out.Headers[:0:0]
	for _, h := range out.Headers {
		if !e.sets(h.Key) {
			hs = append(hs, h)
		}
	}
	for _, h := range e.Headers {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	out.Headers = append(hs, kgo.RecordHeader{Key: dlq.ReplayHeaderEdited, Value: []byte(original)})
}

func (e *Edit) sets(key string) bool {
	for _, h := range e.Headers {
		if strings.EqualFold(h.Key, key) {
			return true
		}
	}
	return false
}

// EditReport is what a plan says of an edit: the record edited, the copy's event id, the
// value's diff (unified, the JSON indented on both sides when it is JSON) and the headers set.
type EditReport struct {
	Original string       `json:"original"`
	EventID  string       `json:"event_id,omitempty"`
	Diff     string       `json:"diff"`
	Headers  []HeaderEdit `json:"headers_set"`
}

// EditableValue is a value as an operator edits it: JSON indented by two spaces, or the bytes
// as they are when they are not JSON.
func EditableValue(v []byte) []byte {
	var b bytes.Buffer
	if json.Indent(&b, v, "", "  ") != nil {
		return v
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// prepareEdit reads the one record the plan names, asks editor for its new value when the edit
// is interactive, and checks that the edited copy is the same event. It returns the plan's
// EditReport.
func prepareEdit(ctx context.Context, p *Plan, read func(context.Context, func(*kgo.Record) error) error, editor func([]byte) ([]byte, error)) (*EditReport, error) {
	e := p.Spec.Edit
	var src *kgo.Record
	if err := read(ctx, func(r *kgo.Record) error { src = r; return nil }); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("record %s is not readable", p.Spec.Record)
	}
	if e.Interactive {
		if editor == nil {
			return nil, fwerr.Usagef("--edit needs a terminal and $EDITOR (or give the value with --value-file)")
		}
		v, err := editor(EditableValue(src.Value))
		if err != nil {
			return nil, err
		}
		// An operator's editor adds a final newline; JSON does not care, and compacting keeps
		// the value as small as the original's.
		var b bytes.Buffer
		if json.Compact(&b, v) == nil {
			v = b.Bytes()
		}
		e.Value, e.Interactive = v, false
	}
	dl := dlq.NewParser(dlq.ParseOptions{NoHeaders: true, NoTimes: true}).Parse(src)
	out := &kgo.Record{Key: src.Key, Value: src.Value, Headers: dlq.StripDeadLetterHeaders(src.Headers)}
	e.apply(out, p.Spec.Record)
	ev, err := envelope.DecodeRecord(out)
	rep := &EditReport{Original: p.Spec.Record, Headers: e.Headers}
	if rep.Headers == nil {
		rep.Headers = []HeaderEdit{}
	}
	switch {
	case err != nil && dl.EventID != "":
		return nil, fwerr.Usagef("the edited %s is not an event (%v): nothing was sent", p.Spec.Record, err)
	case err == nil && dl.EventID != "" && ev.ID != dl.EventID:
		return nil, fwerr.Usagef("the edited %s has event id %s, the dead letter %s: an edit fixes the event, it keeps its id (the consumer's marker for it resolves the dead letter)",
			p.Spec.Record, ev.ID, dl.EventID)
	case err == nil:
		rep.EventID, e.EventID = ev.ID, ev.ID
	}
	rep.Diff, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(EditableValue(src.Value))), B: difflib.SplitLines(string(EditableValue(out.Value))),
		FromFile: p.Spec.Record, ToFile: "edited", Context: 3,
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
