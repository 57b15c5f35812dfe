package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// tableStream is a Stream's table. A table needs its column widths before its first line,
// and a stream does not know its rows before they come; there are two ways out, and it takes
// both, one after the other:
//
//   - Up to TableChunk rows (500 by default) are kept, as strings, and rendered at Close with
//     tablewriter, exactly as List renders them. The commands that stream on a terminal have a
//     --limit (dlq list: 100), so this is the usual case: one table sized to its content,
//     while the progress line on stderr shows that the scan goes on.
//   - When the chunk fills, it is printed with tablewriter, its widths become the table's,
//     and every later row is printed at once, padded to them. A later cell wider than its
//     column is cut to it when the table is fitted to a terminal (Printer.TableWidth), else
//     written whole, pushing the rest of its row to the right: the table may lose its
//     alignment on that row, never a character of a cell. The memory held is one
//     chunk, whatever the length of the stream, and an operator who ran --limit 0 sees rows
//     after the first chunk instead of nothing until the end.
//
// Rendering every row at once with widths from the header alone would cut or misalign
// nearly every row; rendering everything at Close would hold a long stream in memory and
// show nothing until it ends.
//
// An Optional column is left out only when the whole table was kept: a chunked table cannot
// know whether a later row fills it, so it shows every column. A WideOnly column is left out
// of a chunked table too, when the first chunk does not fit the terminal: it is a detail the
// table can do without, and the rows after the chunk keep the chunk's columns.
type tableStream struct {
	p        *Printer
	names    []string
	opt      []bool
	wideOnly []bool
	keep     []bool
	chunk    int
	rows     [][]string
	widths   []int  // set once the first chunk is printed
	kept     []int  // the columns shown, set with widths
	before   func() // called before anything is printed
}

func newTableStream[T any](p *Printer, cols []Column[T], chunk int, before func()) *tableStream {
	t := &tableStream{p: p, chunk: chunk, before: before}
	for _, c := range cols {
		t.names = append(t.names, c.Name)
		t.opt = append(t.opt, c.Optional)
		t.wideOnly = append(t.wideOnly, c.WideOnly)
		t.keep = append(t.keep, c.Keep)
	}
	return t
}

func (t *tableStream) add(row []string) error {
	if t.widths != nil {
		t.before()
		return t.line(row)
	}
	t.rows = append(t.rows, row)
	if len(t.rows) < t.chunk {
		return nil
	}
	return t.fix()
}

// fix prints the kept rows with tablewriter and makes their widths the table's.
func (t *tableStream) fix() error {
	t.before()
	t.kept = t.p.shownColumnIndexes(t.names, make([]bool, len(t.names)), t.wideOnly, t.rows)
	header, rows := selectColumns(t.names, t.rows, t.kept)
	widths, err := t.p.table(header, rows, t.keepOf(header))
	t.widths, t.rows = widths, nil
	return err
}

// line prints one row in the widths of the first chunk, as Printer.Table pads its cells:
// each followed by two blanks, none at the end of the line.
func (t *tableStream) line(row []string) error {
	var b strings.Builder
	color := t.p.Styles.Color()
	row = pick(row, t.kept)
	for i, c := range row {
		c = Printable(c, color)
		if t.p.TableWidth() > 0 {
			c = Truncate(c, t.widths[i])
		}
		b.WriteString(c)
		if i < len(row)-1 {
			b.WriteString(strings.Repeat(" ", max(0, t.widths[i]-ansi.StringWidth(c))+2))
		}
	}
	_, err := io.WriteString(t.p.Streams.Out, strings.TrimRight(b.String(), " ")+"\n")
	return err
}

// release prints the kept rows and fixes the widths to them; with none kept, the next row
// is the chunk.
func (t *tableStream) release() error {
	if t.widths != nil {
		return nil
	}
	if len(t.rows) == 0 {
		t.chunk = 1
		return nil
	}
	return t.fix()
}

func (t *tableStream) close() error {
	if t.widths != nil || len(t.rows) == 0 {
		return nil
	}
	header, rows := t.p.shownColumnsOf(t.names, t.opt, t.wideOnly, t.rows)
	_, err := t.p.table(header, rows, t.keepOf(header))
	return err
}

// keepOf marks the columns of header (those shown) that Keep.
func (t *tableStream) keepOf(header []string) []bool {
	out := make([]bool, len(header))
	for i, h := range header {
		for j, n := range t.names {
			if n == h && t.keep[j] {
				out[i] = true
			}
		}
	}
	return out
}

// shownColumns is the header and rows of a table without its Optional columns that say
// nothing, and without its WideOnly columns when it does not fit the terminal.
func shownColumns[T any](p *Printer, cols []Column[T], rows [][]string) ([]string, [][]string) {
	names, opt, wideOnly := make([]string, len(cols)), make([]bool, len(cols)), make([]bool, len(cols))
	for i, c := range cols {
		names[i], opt[i], wideOnly[i] = c.Name, c.Optional, c.WideOnly
	}
	return p.shownColumnsOf(names, opt, wideOnly, rows)
}

func (p *Printer) shownColumnsOf(names []string, opt, wideOnly []bool, rows [][]string) ([]string, [][]string) {
	return selectColumns(names, rows, p.shownColumnIndexes(names, opt, wideOnly, rows))
}

// shownColumnIndexes is which columns shownColumnsOf keeps, in order.
func (p *Printer) shownColumnIndexes(names []string, opt, wideOnly []bool, rows [][]string) []int {
	says := make([]bool, len(names))
	for i := range names {
		says[i] = !opt[i] || !emptyColumn(rows, i)
	}
	narrow := false
	if limit := p.TableWidth(); limit > 0 {
		total, color := 0, p.Styles.Color()
		for i, n := range names {
			if !says[i] {
				continue
			}
			w := ansi.StringWidth(tableHeader(n))
			for _, r := range rows {
				w = max(w, ansi.StringWidth(Printable(r[i], color)))
			}
			total += w + columnGap
		}
		narrow = total-columnGap > limit
	}
	kept := make([]int, 0, len(names))
	var dropped []string
	for i := range names {
		switch {
		case says[i] && !(narrow && wideOnly[i]):
			kept = append(kept, i)
		case says[i]:
			dropped = append(dropped, tableHeader(names[i]))
		}
	}
	p.noteDropped(dropped)
	return kept
}

// noteDropped says on stderr, in one line fitted to it, which columns a table too wide for
// the terminal left out: a table never drops a column silently.
func (p *Printer) noteDropped(columns []string) {
	if len(columns) == 0 {
		return
	}
	s := p.Streams
	line := s.ErrStyles().Dim.Render("note: ") + "--wide shows the columns left out to fit: " + strings.Join(columns, ", ")
	if s.ErrTTY && s.ErrWidth > 0 {
		line = Truncate(line, s.ErrWidth)
	}
	fmt.Fprintln(s.ErrOut, line)
}

// selectColumns is names and rows with only the columns kept (indexes, in order).
func selectColumns(names []string, rows [][]string, kept []int) ([]string, [][]string) {
	if len(kept) == len(names) {
		return names, rows
	}
	out := make([][]string, len(rows))
	for r, row := range rows {
		out[r] = pick(row, kept)
	}
	return pick(names, kept), out
}

// pick is the cells of row at the indexes kept.
func pick(row []string, kept []int) []string {
	out := make([]string, len(kept))
	for j, i := range kept {
		out[j] = row[i]
	}
	return out
}

func emptyColumn(rows [][]string, i int) bool {
	for _, r := range rows {
		if r[i] != "" && r[i] != "-" {
			return false
		}
	}
	return true
}
