package cmdutil

import (
	"strconv"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// EventSection renders a decoded event the same way wherever a record is shown in full
// (inspect record, dlq show).
func EventSection(st output.Styles, ev *envelope.Event) output.Section {
	version := strconv.FormatInt(ev.Version, 10)
	if !ev.HasVersion {
		version = st.Warn.Render("none")
	}
	evs := output.Section{Title: "Event (" + string(ev.Format) + ")", Fields: [][2]string{
		{"event_id", ev.ID},
		{"type", OrDash(ev.Type)},
	}}
	if ev.Source != "" {
		evs.Fields = append(evs.Fields, [2]string{"source", ev.Source})
	}
	if ev.Subject != "" {
		evs.Fields = append(evs.Fields, [2]string{"subject", ev.Subject})
	}
	evs.Fields = append(evs.Fields,
		[2]string{"time", FormatTime(ev.Time)},
		[2]string{"aggregate_type", OrDash(ev.AggregateType)},
		[2]string{"aggregate_id", OrDash(ev.AggregateID)},
		[2]string{"version", version},
	)
	return evs
}

// MalformedRecordSection renders why a record is not a recognisable event.
func MalformedRecordSection(st output.Styles, format, field, reason string) output.Section {
	return output.Section{Title: "Malformed: not a recognisable event", Fields: [][2]string{
		{"format", OrDash(format)},
		{"field", OrDash(field)},
		{"reason", st.Bad.Render(reason)},
	}}
}

// MalformedRecordsSection lists the records of a topic that are not recognisable events
// (inspect topic's sample, inspect aggregate, processed check), with their format, field and
// reason.
func MalformedRecordsSection(title string, p *output.Printer, ms []schema.MalformedRecord) output.Section {
	s := output.Section{Title: title, Header: []string{"partition", "offset", "format", "field", "reason"}, Keep: []string{"format", "field"}}
	for _, m := range ms {
		s.Rows = append(s.Rows, []string{strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.Offset, 10),
			OrDash(m.Format), OrDash(m.Field), p.Styles.Bad.Render(m.Reason)})
	}
	return s
}
