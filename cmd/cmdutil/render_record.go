package cmdutil

import (
	"fmt"
	"strconv"

	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// RecordSections are the sections of one record as `inspect record` shows it, and every
// command that shows a record the same way (groups skip).
func RecordSections(p *output.Printer, rep *inspect.RecordReport) []output.Section {
	st := p.Styles
	rec := output.Section{Title: "Record " + kafka.RecordAddress{Topic: rep.Topic, Partition: rep.Partition, Offset: rep.Offset}.String(), Fields: [][2]string{
		{"topic", rep.Topic},
		{"partition", strconv.Itoa(int(rep.Partition))},
		{"offset", strconv.FormatInt(rep.Offset, 10)},
		{"timestamp", FormatTime(rep.Timestamp) + st.Dim.Render(" ("+rep.TimestampType+")")},
		{"key", BytesDisplay(st, rep.Key)},
		{"format", OrDash(rep.Format)},
	}}
	rec.Fields = append(rec.Fields, KeySchemaFields(rep.KeySchema)...)
	if rep.ValueSchema != nil {
		rec.Fields = append(rec.Fields, [2]string{"value schema", PayloadDisplay(rep.ValueSchema)})
	}
	headers := output.Section{Title: fmt.Sprintf("Headers (%d)", len(rep.Headers))}
	for _, h := range rep.Headers {
		headers.Fields = append(headers.Fields, [2]string{KeyDisplay(h.Key), BytesDisplay(st, h.Value)})
	}
	if len(rep.Headers) == 0 {
		headers.Text = st.Dim.Render("(none)")
	}
	sections := []output.Section{rec, headers}
	if ev := rep.Event; ev != nil {
		sections = append(sections, EventSection(st, ev))
	}
	if m := rep.Malformed; m != nil {
		sections = append(sections, MalformedRecordSection(st, m.Format, m.Field, m.Reason))
	}
	return append(sections, ValueSection(st, rep.Value, rep.ValueJSON, rep.ValueSchema))
}
