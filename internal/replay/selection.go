package replay

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// SelectionReport is what a plan was asked to read, as its report prints it (Report.Ranges
// are the offsets that came to when the plan was made): the spec's source, record and
// selection (kafka.Selection: --start-offset and --end-offset are the first and the last
// offset, both inclusive, last_offset as every inclusive end in JSON).
type SelectionReport struct {
	Source string `json:"topic"`
	// Record is set when one record was named; the range is then that offset.
	Record string `json:"record,omitempty"`
	// Selection: no partitions, every partition.
	kafka.Selection
	// Addresses and EventIDs count the records named one by one (--from-file).
	Addresses int `json:"addresses,omitempty"`
	EventIDs  int `json:"event_ids,omitempty"`
}

// Filters are the filters a plan applies, each named as its flag (snake_case); those not
// set are left out, so {} filters nothing. Status is the dead-letter status selected for
// Consumer; SkipProcessed counts but does not send the records whose event Consumer has
// processed.
type Filters struct {
	DLQReason     []string `json:"dlq_reason,omitempty"`
	Error         string   `json:"error,omitempty"`
	OriginalTopic string   `json:"original_topic,omitempty"`
	Group         string   `json:"group,omitempty"`
	// Key is the key filter as text, KeyBase64 one that is not text.
	Key           *string  `json:"key,omitempty"`
	KeyBase64     string   `json:"key_base64,omitempty"`
	EventID       string   `json:"event_id,omitempty"`
	SchemaID      int      `json:"schema_id,omitempty"`
	Fingerprint   string   `json:"fingerprint,omitempty"`
	Status        []string `json:"status,omitempty"`
	Consumer      string   `json:"consumer,omitempty"`
	SkipProcessed bool     `json:"skip_processed,omitempty"`
	// IncludeReplayed sends settled dead letters an earlier run sent (Spec.IncludeReplayed).
	IncludeReplayed bool `json:"include_replayed,omitempty"`
}

// SelectionReport describes what the spec reads.
func (s *Spec) SelectionReport() SelectionReport {
	return SelectionReport{Source: s.From, Record: s.Record, Selection: s.Selection, Addresses: len(s.Addresses), EventIDs: len(s.EventIDs)}
}

// Filters describes every filter the spec applies.
func (s *Spec) Filters() Filters {
	f := Filters{DLQReason: s.Reasons, Error: s.Error, OriginalTopic: s.OriginalTopic, Group: s.Group, EventID: s.EventID, SchemaID: s.SchemaID, Fingerprint: s.Fingerprint}
	if s.Key != nil {
		if utf8.Valid(s.Key) {
			k := string(s.Key)
			f.Key = &k
		} else {
			f.KeyBase64 = base64.StdEncoding.EncodeToString(s.Key)
		}
	}
	statuses, consumer := s.statusSelection()
	for _, st := range statuses {
		f.Status = append(f.Status, string(st))
	}
	f.Consumer = consumer
	f.IncludeReplayed = s.IncludeReplayed
	if s.SkipProcessedFor != "" {
		f.SkipProcessed = true
		if f.Consumer == "" {
			f.Consumer = s.SkipProcessedFor
		}
	}
	return f
}

// Flags are the filters as the command line spells them, in the order of the command's help:
// flag and value ("" for a flag without one).
func (f Filters) Flags() [][2]string {
	var out [][2]string
	add := func(flag, v string) {
		if v != "" {
			out = append(out, [2]string{flag, v})
		}
	}
	add("--dlq-reason", strings.Join(f.DLQReason, ","))
	add("--error", f.Error)
	add("--original-topic", f.OriginalTopic)
	add("--group", f.Group)
	if f.Key != nil {
		out = append(out, [2]string{"--key", *f.Key})
	}
	add("--key-base64", f.KeyBase64)
	add("--event-id", f.EventID)
	if f.SchemaID != 0 {
		add("--schema-id", strconv.Itoa(f.SchemaID))
	}
	add("--fingerprint", f.Fingerprint)
	add("--status", strings.Join(f.Status, ","))
	add("--consumer", f.Consumer)
	if f.SkipProcessed {
		out = append(out, [2]string{"--skip-processed", ""})
	}
	if f.IncludeReplayed {
		out = append(out, [2]string{"--include-replayed", ""})
	}
	return out
}

// SelectStatus selects the dead letters that have one of statuses for consumer ("" means each
// dead letter's own group, as in `dlq list`): `replay --status pending --consumer C` selects
// exactly what `dlq list --status pending --consumer C` lists, because both ask dlq's one
// status rule (docs/design.md §3.2). No statuses selects by no status. Validate refuses the
// statuses a replay cannot select by (see Spec.Statuses).
func (s *Spec) SelectStatus(statuses []dlq.Status, consumer string) error {
	if len(statuses) == 0 {
		return nil
	}
	s.Statuses = append(s.Statuses[:0:0], statuses...)
	s.StatusConsumer = consumer
	return nil
}

// statusSelection is the status selection of the spec: the statuses and the consumer they are
// for (none: no status selection). A spec journaled before Statuses existed selects by
// PendingFor, which means the same as --status pending --consumer PendingFor.
func (s *Spec) statusSelection() ([]dlq.Status, string) {
	if len(s.Statuses) > 0 {
		return s.Statuses, s.StatusConsumer
	}
	if s.PendingFor != "" {
		return []dlq.Status{dlq.StatusPending}, s.PendingFor
	}
	return nil, ""
}
