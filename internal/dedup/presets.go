package dedup

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Preset is the processed-message table of another library, as its own DDL creates it on
// PostgreSQL (docs/design.md §3.4): where it is, which of its columns hold what the marker
// queries read, and what is unsafe to do to it.
type Preset struct {
	Name string
	// Library is what writes the table, for messages.
	Library string
	Schema  string
	Table   string
	Columns ColumnNames
	// NoForget, when set, is why `processed forget` is refused on the table.
	NoForget string
	// Prefixed says the library names Table after an endpoint (<Endpoint>_Table): without
	// --table the store reads the one table of the schema named Table or ending in _Table.
	Prefixed bool
}

// Presets are the tables of other libraries the processed commands read (--preset).
var Presets = []Preset{
	{Name: "eventuate", Library: "Eventuate Tram", Schema: "eventuate", Table: "received_messages",
		Columns: ColumnNames{Consumer: "consumer_id", EventID: "message_id", ProcessedAt: "creation_time", ProcessedAtUnit: "ms"}},
	{Name: "masstransit", Library: "MassTransit", Schema: "public", Table: "InboxState",
		// ConsumerId is MassTransit's uuid of the endpoint and consumer type, shown as stored. A
		// row is a marker once Consumed; it may be deleted once its outbox messages are
		// Delivered (MassTransit's own cleanup waits for that too).
		Columns: ColumnNames{Consumer: "ConsumerId", EventID: "MessageId", ProcessedAt: "Consumed", Done: "Consumed", Removable: "Delivered"}},
	{Name: "cap", Library: "CAP", Schema: "cap", Table: "received",
		// The message id is the cap-msg-id header kept in Content; Name is the topic. A row is a
		// marker when Succeeded; Failed rows are CAP's own dead letters.
		Columns: ColumnNames{Consumer: "Group", EventID: "Content", EventIDPath: "Headers/cap-msg-id", ProcessedAt: "Added", Topic: "Name",
			Status: "StatusName", StatusDone: "Succeeded", StatusFailed: "Failed"},
		NoForget: "CAP does not skip a message because of its received row: deleting it would not make the message be processed again (CAP retries Failed rows itself)"},
	{Name: "nservicebus", Library: "NServiceBus", Schema: "public", Table: "OutboxData", Prefixed: true,
		// One endpoint's outbox, named after it by NServiceBus's SQL persistence (the table
		// prefix is the endpoint's name and an underscore: Sales_OutboxData), found by that
		// name; a row may be deleted once Dispatched, as NServiceBus's own cleanup does.
		Columns: ColumnNames{Consumer: Absent, EventID: "MessageId", ProcessedAt: "DispatchedAt", Removable: "Dispatched"}},
}

// PresetNames are the names of Presets.
func PresetNames() []string {
	out := make([]string, len(Presets))
	for i, p := range Presets {
		out[i] = p.Name
	}
	return out
}

// presetOf is the preset named name, nil for "".
func presetOf(name string) (*Preset, error) {
	if name == "" {
		return nil, nil
	}
	for i := range Presets {
		if Presets[i].Name == name {
			return &Presets[i], nil
		}
	}
	return nil, &InvalidInputError{Field: "preset", Index: -1, Value: name, Reason: "want one of " + strings.Join(PresetNames(), ", ")}
}

// applyPreset puts the preset's names where o still has the defaults (the flags' values when
// not given): a --schema, --table or --column-* given with a preset wins. The journal (of
// replays, prunes, forgets and skips) and the migrations table are fieldwork's own, in its
// default schema, never the library's: --schema names the library's table alone. prefixed is
// set when the table is to be found by the library's endpoint prefix (Preset.Prefixed, no
// --table given).
func (o Options) applyPreset() (_ Options, journal string, prefixed bool, _ error) {
	p, err := presetOf(o.Preset)
	if err != nil || p == nil {
		return o, "", false, err
	}
	journal = DefaultSchema
	if o.Schema == "" || o.Schema == DefaultSchema {
		o.Schema = p.Schema
	}
	if o.Table == "" || o.Table == DefaultTable {
		o.Table, prefixed = p.Table, p.Prefixed
	}
	c, d, pc := &o.Columns, DefaultColumns, p.Columns
	// The path is into the preset's own event-id column: a --column-event-id of the caller's
	// holds the id itself.
	ownEventID := c.EventID == "" || c.EventID == d.EventID
	for _, f := range []struct {
		v        *string
		def, set string
	}{
		{&c.Consumer, d.Consumer, pc.Consumer}, {&c.EventID, d.EventID, pc.EventID}, {&c.ProcessedAt, d.ProcessedAt, pc.ProcessedAt},
		{&c.Topic, d.Topic, pc.Topic}, {&c.Partition, d.Partition, pc.Partition}, {&c.Offset, d.Offset, pc.Offset},
		{&c.AggregateID, d.AggregateID, pc.AggregateID}, {&c.AggregateVersion, d.AggregateVersion, pc.AggregateVersion},
		{&c.ProcessedAtUnit, "", pc.ProcessedAtUnit},
	} {
		if f.set != "" && (*f.v == "" || *f.v == f.def) {
			*f.v = f.set
		}
	}
	c.Done, c.Status, c.StatusDone, c.StatusFailed, c.Removable = pc.Done, pc.Status, pc.StatusDone, pc.StatusFailed, pc.Removable
	if ownEventID {
		c.EventIDPath = pc.EventIDPath
	}
	return o, journal, prefixed, nil
}

// shapeValueRE is what a status value and an event-id path key must match (they are written
// into SQL as literals).
var shapeValueRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// validateShape checks the fields of c beyond the eight names (dedupdriver.Columns).
func validateShape(c ColumnNames) error {
	for _, f := range []struct{ kind, name string }{{"column done", c.Done}, {"column status", c.Status}, {"column removable", c.Removable}} {
		if f.name != "" {
			if err := ValidateIdentifier(f.kind, f.name); err != nil {
				return err
			}
		}
	}
	if !slices.Contains([]string{"", "ms", "s"}, c.ProcessedAtUnit) {
		return &InvalidInputError{Field: "processed-at unit", Index: -1, Value: c.ProcessedAtUnit, Reason: "want ms or s"}
	}
	values := []string{c.StatusDone, c.StatusFailed}
	if c.EventIDPath != "" {
		values = append(values, strings.Split(c.EventIDPath, "/")...)
	}
	for _, v := range values {
		if v != "" && !shapeValueRE.MatchString(v) {
			return &InvalidInputError{Field: "table shape", Index: -1, Value: v, Reason: fmt.Sprintf("must match %s", shapeValueRE)}
		}
	}
	return nil
}
