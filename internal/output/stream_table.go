package output

import (
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
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
// know whether a later row fills it, so it shows every column.
type tableStream struct {
	p      *Printer
	names  []string
	opt    []bool
	chunk  int
	rows   [][]string
	widths []int  // set once the first chunk is printed
	before func() // called before anything is printed
}

func newTableStream[T any](p *Printer, cols []Column[T], chunk int, before func()) *tableStream {
	t := &tableStream{p: p, chunk: chunk, before: before}
	for _, c := range cols {
		t.names = append(t.names, c.Name)
		t.opt = append(t.opt, c.Optional)
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
	t.before()
	widths, err := t.p.table(t.names, t.rows)
	t.widths, t.rows = widths, nil
	return err
}

// line prints one row in the widths of the first chunk, as Printer.Table pads its cells:
// each followed by two blanks, none at the end of the line.
func (t *tableStream) line(row []string) error {
	var b strings.Builder
	color := t.p.Styles.Color()
	for i, c := range row {
		c = Printable(c, color)
		if t.p.TableWidth() > 0 {
			c = Truncate(c, t.widths[i])
		}
		b.WriteString(c)
		if i < len(row)-1 {
			b.WriteString(strings.Repeat(" ", max(0, t.widths[i]-twwidth.Width(c))+2))
		}
	}
	_, err := io.WriteString(t.p.Streams.Out, strings.TrimRight(b.String(), " ")+"\n")
	return err
}

func (t *tableStream) close() error {
	if t.widths != nil || len(t.rows) == 0 {
		return nil
	}
	header, rows := shownColumnsOf(t.names, t.opt, t.rows)
	return t.p.Table(header, rows)
}

// shownColumns is the header and rows of a table without its Optional columns that say
// nothing.
func shownColumns[T any](cols []Column[T], rows [][]string) ([]string, [][]string) {
	names := make([]string, len(cols))
	opt := make([]bool, len(cols))
	for i, c := range cols {
		names[i], opt[i] = c.Name, c.Optional
	}
	return shownColumnsOf(names, opt, rows)
}

func shownColumnsOf(names []string, opt []bool, rows [][]string) ([]string, [][]string) {
	keep := make([]int, 0, len(names))
	for i := range names {
		if !opt[i] || !emptyColumn(rows, i) {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(names) {
		return names, rows
	}
	header := make([]string, len(keep))
	for j, i := range keep {
		header[j] = names[i]
	}
	out := make([][]string, len(rows))
	for r, row := range rows {
		out[r] = make([]string, len(keep))
		for j, i := range keep {
			out[r][j] = row[i]
		}
	}
	return header, out
}

func emptyColumn(rows [][]string, i int) bool {
	for _, r := range rows {
		if r[i] != "" && r[i] != "-" {
			return false
		}
	}
	return true
}
