package dlq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// ErrNoRecord is returned (wrapped) when an offset holds no readable record.
var ErrNoRecord = kafka.ErrNoRecord

// Fetch reads the record at topic/partition/offset (see kafka.Cluster.Fetch for its errors).
func Fetch(ctx context.Context, c *kafka.Cluster, topic string, partition int32, offset int64) (*kgo.Record, error) {
	return c.Fetch(ctx, topic, partition, offset)
}

// FindEventID scans s for the dead letters that f matches (its EventID set: the dead letters
// of one event), returning every match in scan order. Memory is bounded by the matches.
func FindEventID(ctx context.Context, s *Scan, f Filter) ([]DeadLetter, ScanResult, error) {
	var out []DeadLetter
	res, err := s.Run(ctx, f, func(d DeadLetter) error {
		out = append(out, d)
		return nil
	})
	return out, res, err
}

// Newest returns the dead letter with the latest timestamp (the last in order among equals).
func Newest(ds []DeadLetter) (DeadLetter, bool) {
	if len(ds) == 0 {
		return DeadLetter{}, false
	}
	best := ds[0]
	for _, d := range ds[1:] {
		if !d.Timestamp.Before(best.Timestamp) {
			best = d
		}
	}
	return best, true
}

// ReplayHint says how to send a dead letter back to where it failed.
type ReplayHint struct {
	// Target is the topic a replay sends it to: the original topic ("" when unknown).
	Target string `json:"target"`
	// DryRun prints the plan; Command executes it.
	DryRun  string `json:"dry_run"`
	Command string `json:"command"`
	// Notes say what would stop or change the replay.
	Notes []string `json:"notes"`
}

// DefaultMaxReplays is fieldwork replay's default --max-replays (docs/design.md §3.3): a record
// replayed that many times is quarantined rather than sent.
const DefaultMaxReplays = 3

// Replay returns the fieldwork replay command lines that send d back to its original topic.
// Topic names are shell-safe as Kafka allows them, so the addresses need no quoting.
func (d DeadLetter) Replay() ReplayHint {
	addr := d.Address().String()
	h := ReplayHint{
		DryRun:  "fieldwork replay " + addr,
		Command: ReplayCommand(addr),
		Notes:   []string{},
	}
	if topic, _, ok := d.Source(); ok {
		h.Target = topic
	} else if d.OriginalTopic != "" {
		h.Notes = append(h.Notes, fmt.Sprintf("the original topic %s is not a valid topic name: add --to TOPIC to say where to send it", quote(d.OriginalTopic)))
	} else {
		h.Notes = append(h.Notes, "the dead letter names no original topic: add --to TOPIC to say where to send it")
	}
	if d.ValueOmitted != "" {
		of := "the original value"
		if d.ValueBytes > 0 {
			of = fmt.Sprintf("the original's %d", d.ValueBytes)
		}
		h.Notes = append(h.Notes, fmt.Sprintf("a bounded copy: its value holds %d bytes of %s (%s); replay refuses it (incomplete), since it would send the cut value back as the event",
			len(d.Value), of, d.ValueOmitted))
	}
	if d.ReplayCount >= DefaultMaxReplays {
		h.Notes = append(h.Notes, fmt.Sprintf("replayed %d times already: replay quarantines it unless --max-replays is above %d", d.ReplayCount, d.ReplayCount))
	}
	return h
}

// ReplayCommand is the fieldwork replay command line that executes a replay of the dead letters
// at addrs (of one topic), the reason left for the operator to write: several are named one a
// line in a file (--from-file) the shell makes (bash, zsh), so that the terminal stays the
// command's input and it can ask. Topic names are shell-safe as Kafka allows them.
func ReplayCommand(addrs ...string) string {
	if len(addrs) == 1 {
		return "fieldwork replay " + addrs[0] + ` --execute --reason "…"`
	}
	return `fieldwork replay --from-file <(printf '%s\n' ` + strings.Join(addrs, " ") + `) --execute --reason "…"`
}

// Detail is everything about one dead letter, as `dlq show` shows it.
type Detail struct {
	Entry
	// Event is the decoded envelope; nil when the record is malformed.
	Event *envelope.Event
	// Malformed says why the envelope does not decode; nil when it does.
	Malformed *schema.Malformed
	// ValueJSON is the value itself when it is valid JSON.
	ValueJSON json.RawMessage
	Replay    ReplayHint
	// Original is the original record as its source topic holds it now, read for a share
	// group's dead letter (ReadOriginal); nil when not read. For a dead letter that holds only
	// coordinates (CoordinatesOnly), Event, Malformed and ValueJSON are the original record's.
	Original *Original
}

// ReadOriginal reads, for a share group's dead letter, its original record from the source
// topic by the coordinates its headers name (Originals): a dead letter without a copy of the
// record (CoordinatesOnly) is then shown with the record's envelope and value, and its replay
// hint says whether a replay can send it. Any other dead letter is left as it is.
func (det *Detail) ReadOriginal(ctx context.Context, c *kafka.Cluster) error {
	if det.Convention != ConventionShareGroup {
		return nil
	}
	os, err := Originals(ctx, c, []DeadLetter{det.DeadLetter})
	if err != nil {
		return err
	}
	if os[0].State != "" {
		det.SetOriginal(os[0])
	}
	return nil
}

// SetOriginal sets o, the dead letter's original record as Originals read it, on det, as
// ReadOriginal does: a dead letter that holds only coordinates then shows the record's
// envelope and value, and its replay hint says whether a replay can send it. The console
// reads the original once and sets it on each detail it renders.
func (det *Detail) SetOriginal(o Original) {
	det.Original = &o
	if !det.CoordinatesOnly() {
		return
	}
	if !o.Found() {
		det.Replay.Notes = append(det.Replay.Notes, fmt.Sprintf("the dead letter holds only the record's coordinates and the record is gone (%s: %s): replay refuses it", o.State, o.Detail))
		return
	}
	det.Replay.Notes = append(det.Replay.Notes, fmt.Sprintf("the dead letter holds only the record's coordinates: replay sends the original record read from %s, byte for byte", kafka.AddressOf(o.Record)))
	det.Event, det.Malformed, det.ValueJSON = nil, nil, nil
	ev, err := envelope.Decode(envelope.RecordHeaders(o.Record.Headers), o.Record.Value)
	if err != nil {
		m := schema.MalformedOf(err)
		det.Malformed = &m
	} else {
		det.Event = &ev
	}
	if len(o.Record.Value) > 0 && json.Valid(o.Record.Value) {
		det.ValueJSON = json.RawMessage(bytes.Clone(o.Record.Value))
	}
}

// NewDetail decodes d's envelope and builds its replay hint.
func NewDetail(e Entry) Detail {
	det := Detail{Entry: e, Replay: e.Replay()}
	ev, err := envelope.Decode(e.Headers, e.envelopeValue())
	if err != nil {
		m := schema.MalformedOf(err)
		det.Malformed = &m
	} else {
		det.Event = &ev
	}
	if len(e.Value) > 0 && json.Valid(e.Value) {
		det.ValueJSON = json.RawMessage(bytes.Clone(e.Value))
	}
	return det
}

// MarshalJSON writes the DeadLetter's fields, then status (null when not looked up),
// status_detail (the consumer, its marker when resolved, why when unknown; null when not
// looked up), event and malformed (one of them null), value_json (null unless the value is
// JSON), replay and original_record (Detail.Original; null when not read).
func (d Detail) MarshalJSON() ([]byte, error) {
	var (
		status *Status
		detail *StatusInfo
	)
	if d.Status.Status != "" {
		status, detail = &d.Status.Status, &d.Status
	}
	var valueJSON any
	if len(d.ValueJSON) > 0 {
		valueJSON = d.ValueJSON
	}
	return appendJSONFields(nil, d.DeadLetter,
		jsonField{"status", status},
		jsonField{"status_detail", detail},
		jsonField{"event", d.Event},
		jsonField{"malformed", d.Malformed},
		jsonField{"value_json", valueJSON},
		jsonField{"replay", d.Replay},
		jsonField{"original_record", d.Original},
	)
}
