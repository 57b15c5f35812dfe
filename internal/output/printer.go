package output

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/fieldwork/fieldwork/internal/printable"
)

// Printer writes command results to stdout in the chosen format.
type Printer struct {
	Streams *Streams
	Format  Format
	Styles  Styles
	// Wide shows every table cell whole (--wide). Otherwise a table on a terminal is fitted
	// to its width (Streams.Width): the widest cells cut with Ellipsis.
	Wide bool
}

// TableWidth is the width tables are fitted to: the terminal's, 0 (unlimited) with Wide or
// when stdout is not a terminal. JSON, JSON Lines and CSV are never cut.
func (p *Printer) TableWidth() int {
	if p.Wide {
		return 0
	}
	return p.Streams.Width
}

// NewPrinter returns a printer for s in format f, with colour when s allows it.
func NewPrinter(s *Streams, f Format) *Printer {
	color := s.ColorEnabled() && f == FormatTable
	return &Printer{Streams: s, Format: f, Styles: NewStyles(s.Out, color)}
}

// Column is one column of a list: its header and how a cell is made from an item.
type Column[T any] struct {
	Name  string
	Value func(T) string
	// Optional leaves the column out of a table when none of its cells says anything ("" or
	// "-", the dash tables show for nothing): a column of problems that most results do not
	// have, say. CSV keeps every column, so that its shape does not depend on the data.
	Optional bool
	// WideOnly leaves the column out of a table on a terminal too narrow for the whole table
	// (Printer.TableWidth), before any cell is cut: a detail the list can do without, shown
	// with --wide and always in CSV and JSON. A note on stderr names the columns left out.
	WideOnly bool
	// Keep keeps the column's cells whole on a narrow terminal while the other columns can
	// be cut: a column that tells the rows apart (an event's type, its time).
	Keep bool
}

// keptColumns marks, in the order of header (the columns shown), those of columns that Keep.
func keptColumns[T any](columns []Column[T], header []string) []bool {
	out := make([]bool, len(header))
	for i, h := range header {
		for _, c := range columns {
			if c.Name == h && c.Keep {
				out[i] = true
			}
		}
	}
	return out
}

// List writes items. JSON and JSON Lines encode the items themselves (their json tags are the
// stable field names); table and CSV use columns. An empty list is a valid result: JSON gives
// [], JSON Lines and CSV nothing but the CSV header, a table the message empty (to stderr).
func List[T any](p *Printer, items []T, columns []Column[T], empty string) error {
	switch p.Format {
	case FormatJSON:
		if items == nil {
			items = []T{}
		}
		return writeJSON(p.Streams.Out, items, true)
	case FormatJSONL:
		for _, it := range items {
			if err := writeJSON(p.Streams.Out, it, false); err != nil {
				return err
			}
		}
		return nil
	case FormatCSV:
		return writeCSV(p.Streams.Out, p.Streams.OutTTY, columns, items)
	default:
		if len(items) == 0 {
			if empty != "" {
				fmt.Fprintln(p.Streams.ErrOut, empty)
			}
			return nil
		}
		rows := make([][]string, len(items))
		for i, it := range items {
			rows[i] = cells(columns, it)
		}
		header, rows := shownColumns(p, columns, rows)
		_, err := p.table(header, rows, keptColumns(columns, header))
		return err
	}
}

// Table renders a borderless table with a bold header (plain without colour), fitted to
// TableWidth.
func (p *Printer) Table(header []string, rows [][]string) error {
	_, err := p.table(header, rows, nil)
	return err
}

// table is Table, returning the widths the columns were shown in; keep marks the columns
// kept whole while the others can be cut (fitTable).
func (p *Printer) table(header []string, rows [][]string, keep []bool) ([]int, error) {
	color := p.Styles.Color()
	styled := make([]string, len(header))
	for i, h := range header {
		styled[i] = Printable(p.Styles.Header.Render(tableHeader(h)), color)
	}
	safeRows := make([][]string, len(rows))
	for i, r := range rows {
		safe := make([]string, len(r))
		for j, c := range r {
			safe[j] = Printable(c, color)
		}
		safeRows[i] = safe
	}
	styled, safeRows, widths := fitTable(styled, safeRows, p.TableWidth(), keep)
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(anySlice(styled)...)
	for _, r := range safeRows {
		if err := t.Append(anySlice(r)...); err != nil {
			return nil, err
		}
	}
	if err := t.Render(); err != nil {
		return nil, err
	}
	// The column padding leaves blanks at the end of every line, before the styles' closing
	// resets on a colour terminal; drop them (one reset kept), so that a fitted line is no
	// wider than it looks.
	const reset = sgrReset
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		trimmed, closed := strings.TrimRight(line, " \n"), false
		for strings.HasSuffix(trimmed, reset) {
			trimmed, closed = strings.TrimRight(strings.TrimSuffix(trimmed, reset), " "), true
		}
		if closed {
			trimmed += reset
		}
		if strings.HasSuffix(line, "\n") {
			trimmed += "\n"
		}
		if _, err := io.WriteString(p.Streams.Out, trimmed); err != nil {
			return nil, err
		}
	}
	return widths, nil
}

// Section is one block of a detail view in table format: a title and either key/value fields
// or a small table, or preformatted text.
type Section struct {
	Title  string
	Fields [][2]string
	Header []string
	Rows   [][]string
	Text   string
	// WideOnly names the columns of Header left out on a terminal too narrow for the whole
	// table, as Column.WideOnly; CSV keeps them.
	WideOnly []string
	// Optional names the columns of Header left out of the table when none of their cells
	// says anything, as Column.Optional; CSV keeps them.
	Optional []string
	// Keep names the columns of Header kept whole on a narrow terminal, as Column.Keep.
	Keep []string
}

// namedIn marks the columns of s.Header that names names.
func namedIn(s Section, names []string) []bool {
	out := make([]bool, len(s.Header))
	for i, h := range s.Header {
		out[i] = slices.Contains(names, h)
	}
	return out
}

// Object writes one result. JSON and JSON Lines encode v; table renders the sections; CSV
// renders the first section that has a table (or its fields as key,value rows).
func (p *Printer) Object(v any, sections []Section) error {
	switch p.Format {
	case FormatJSON:
		return writeJSON(p.Streams.Out, v, true)
	case FormatJSONL:
		return writeJSON(p.Streams.Out, v, false)
	case FormatCSV:
		w := csv.NewWriter(p.Streams.Out)
		for _, s := range sections {
			if len(s.Header) > 0 {
				_ = w.Write(csvHeader(s.Header))
				for _, r := range s.Rows {
					_ = w.Write(csvRow(p.Streams.OutTTY, r))
				}
				w.Flush()
				return w.Error()
			}
		}
		_ = w.Write([]string{"field", "value"})
		for _, s := range sections {
			for _, f := range s.Fields {
				_ = w.Write(csvRow(p.Streams.OutTTY, []string{f[0], f[1]}))
			}
		}
		w.Flush()
		return w.Error()
	}
	out := p.Streams.Out
	color := p.Styles.Color()
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(out)
		}
		// A title or a text wider than the terminal is wrapped to it, as every line is.
		fit := func(s string) string {
			if w := p.TableWidth(); w > 0 {
				return wrapLines(s, w)
			}
			return s
		}
		if s.Title != "" {
			fmt.Fprintln(out, fit(Printable(p.Styles.Title.Render(s.Title), color)))
		}
		if len(s.Fields) > 0 {
			width := 0
			for _, f := range s.Fields {
				width = max(width, len(printable.Escape(f[0])))
			}
			// A plain value wider than the terminal leaves is wrapped under itself, as a
			// confirmation's are, rather than by the terminal into the names' column.
			room := p.TableWidth() - width - columnGap
			for _, f := range s.Fields {
				name := p.Styles.Header.Render(fmt.Sprintf("%-*s", width, printable.Escape(f[0])))
				parts := []string{f[1]}
				if room >= 2*minCellWidth && Printable(f[1], true) == f[1] { // plain: no style, nothing to escape
					parts = Wrap(f[1], room)
				}
				fmt.Fprintf(out, "%s  %s\n", Printable(name, color), Printable(parts[0], color))
				for _, part := range parts[1:] {
					fmt.Fprintf(out, "%*s  %s\n", width, "", Printable(part, color))
				}
			}
		}
		if len(s.Header) > 0 {
			if len(s.Rows) == 0 {
				fmt.Fprintln(out, Printable(p.Styles.Dim.Render("(none)"), color))
			} else {
				header, rows := p.shownColumnsOf(s.Header, namedIn(s, s.Optional), namedIn(s, s.WideOnly), s.Rows)
				if _, err := p.table(header, rows, namedIn(Section{Header: header}, s.Keep)); err != nil {
					return err
				}
			}
		}
		if s.Text != "" {
			fmt.Fprintln(out, fit(Printable(strings.TrimRight(s.Text, "\n"), color)))
		}
	}
	return nil
}

// writeJSON encodes v as one JSON value and a newline, with escapeJSON: JSON output never
// carries a control character, whatever the data.
func writeJSON(w io.Writer, v any, indent bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeJSON(normalizeJSONTimes(buf.Bytes())))
	return err
}

// tableHeader is how a column's name heads a table: in capitals, its words apart, however
// the name joins them ("event_id" and "event id" are both EVENT ID), so that every table
// spells a column one way. csvHeader names CSV columns as the JSON fields are named: words
// joined by underscores (event_id, dead-letter topic as dead_letter_topic).
func tableHeader(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "_", " ")) }

func csvHeader(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.NewReplacer(" ", "_", "-", "_").Replace(n)
	}
	return out
}

// csvRow is a CSV row as written: escaped by Printable when stdout is a terminal (CSV read
// there is read by a person; a file or a pipe gets the data as it is).
func csvRow(tty bool, row []string) []string {
	if !tty {
		return row
	}
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = printable.Escape(c)
	}
	return out
}

func writeCSV[T any](w io.Writer, tty bool, columns []Column[T], items []T) error {
	cw := csv.NewWriter(w)
	header := make([]string, len(columns))
	for i, c := range columns {
		header[i] = c.Name
	}
	if err := cw.Write(csvHeader(header)); err != nil {
		return err
	}
	for _, it := range items {
		row := make([]string, len(columns))
		for j, c := range columns {
			row[j] = c.Value(it)
		}
		if err := cw.Write(csvRow(tty, row)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
