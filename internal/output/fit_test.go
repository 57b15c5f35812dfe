package output

import (
	"github.com/charmbracelet/x/ansi"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a little too long", 10, "a little …"},
		{"日本語のメッセージ", 7, "日本語…"}, // wide runes count two columns
		{"whole", 0, "whole"},
	} {
		got := Truncate(c.in, c.width)
		if got != c.want || (c.width > 0 && twwidth.Width(got) > c.width) {
			t.Errorf("Truncate(%q, %d) = %q (%d columns), want %q", c.in, c.width, got, twwidth.Width(got), c.want)
		}
	}
}

// TestTableFitsItsWidth: a table wider than TableWidth is cut to it, the narrow columns kept
// whole; Wide keeps every cell; a table that fits is left as it is.
func TestTableFitsItsWidth(t *testing.T) {
	header := []string{"id", "status", "message"}
	rows := [][]string{{"1", "pending", strings.Repeat("a long message ", 10)}, {"2", "resolved", "short"}}
	render := func(width int, wide bool) string {
		s, _, out, _ := Test()
		s.OutTTY, s.Width = true, width
		p := NewPrinter(s, FormatTable)
		p.Wide = wide
		if err := p.Table(header, rows); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	got := render(40, false)
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if w := twwidth.Width(line); w > 40 {
			t.Errorf("line %q is %d columns wide, want at most 40", line, w)
		}
	}
	if !strings.Contains(got, "1   pending   a long message a long mes…\n") || !strings.Contains(got, "resolved") {
		t.Errorf("fitted table:\n%s", got)
	}
	if got := render(40, true); !strings.Contains(got, strings.TrimSpace(rows[0][2])) {
		t.Errorf("--wide cut a cell:\n%s", got)
	}
	if a, b := render(0, false), render(400, false); a != b || !strings.Contains(a, strings.TrimSpace(rows[0][2])) {
		t.Errorf("unlimited and wide enough differ or cut:\n%s\n%s", a, b)
	}
}

// TestWideOnlyColumns: a WideOnly column is left out of a table too wide for the terminal,
// kept when the table fits, with Wide, and in CSV.
func TestWideOnlyColumns(t *testing.T) {
	type item struct{ id, detail string }
	cols := []Column[item]{
		{Name: "id", Value: func(i item) string { return i.id }},
		{Name: "detail", WideOnly: true, Value: func(i item) string { return i.detail }},
	}
	items := []item{{"a-1", strings.Repeat("x", 50)}}
	render := func(width int, wide bool, f Format) string {
		s, _, out, _ := Test()
		s.OutTTY, s.Width = true, width
		p := NewPrinter(s, f)
		p.Wide = wide
		if err := List(p, items, cols, ""); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := render(40, false, FormatTable); strings.Contains(got, "DETAIL") || !strings.Contains(got, "a-1") {
		t.Errorf("narrow:\n%s", got)
	}
	for _, got := range []string{render(100, false, FormatTable), render(40, true, FormatTable), render(40, false, FormatCSV)} {
		if !strings.Contains(strings.ToUpper(got), "DETAIL") || !strings.Contains(got, items[0].detail) {
			t.Errorf("want the column whole:\n%s", got)
		}
	}
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
		want  []string
	}{
		{"a short line", 0, []string{"a short line"}},
		{"a short line", 20, []string{"a short line"}},
		{"send 10 records from orders.dlq", 12, []string{"send 10", "records from", "orders.dlq"}},
		{"postgres://u:xxxxx@host/db x", 10, []string{"postgres:/", "/u:xxxxx@h", "ost/db x"}},
		{"拒否されました ok", 6, []string{"拒否さ", "れまし", "た ok"}},
	} {
		got := Wrap(c.s, c.width)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
		for _, l := range got {
			if c.width > 0 && twwidth.Width(l) > c.width {
				t.Errorf("Wrap(%q, %d): line %q is wider", c.s, c.width, l)
			}
		}
	}
}

// TestHeadersNeverCut: a table narrower than its cells cuts the cells, never a header; only
// when the headers alone are wider than the terminal are they cut too, so that no line wraps.
func TestHeadersNeverCut(t *testing.T) {
	header := []string{"TOPIC", "ORIGIN_GROUP", "REPLAYABLE_RECORDS", "REASON"}
	rows := [][]string{{strings.Repeat("t", 30), strings.Repeat("g", 30), "12", strings.Repeat("r", 40)}}
	for _, width := range []int{60, 50, 30} {
		h, r, widths := fitTable(header, rows, width, nil)
		line := 0
		for i, w := range widths {
			line += w
			if i > 0 {
				line += columnGap
			}
			if h[i] != header[i] && width >= 47 { // the headers and their gaps: 47 columns
				t.Errorf("width %d: header %q cut to %q", width, header[i], h[i])
			}
		}
		if line > width {
			t.Errorf("width %d: the table is %d wide: %v", width, line, widths)
		}
		if !strings.HasSuffix(r[0][0], Ellipsis) || !strings.HasSuffix(r[0][3], Ellipsis) {
			t.Errorf("width %d: the wide cells are not cut: %q", width, r[0])
		}
	}
}

// TestFirstColumnKept: the first column, which names the row, keeps its width when the other
// headers still fit beside it; the other cells are cut first.
func TestFirstColumnKept(t *testing.T) {
	header := []string{"TOPIC", "MESSAGE", "AGE"}
	rows := [][]string{{"orders.payments.dlq", strings.Repeat("m", 80), "3s"}}
	h, r, _ := fitTable(header, rows, 40, nil)
	if r[0][0] != rows[0][0] || !strings.HasSuffix(r[0][1], Ellipsis) || strings.Join(h, " ") != "TOPIC MESSAGE AGE" {
		t.Errorf("at 40 columns: %q %q", h, r)
	}
}

// TestLongFieldWrapped: a plain field value wider than the terminal leaves is wrapped under
// itself, never past the terminal's edge; --wide and a pipe keep it on one line.
func TestLongFieldWrapped(t *testing.T) {
	value := "3 (not recognisable as events: a consumer dead-letters them, never marks them)"
	render := func(tty, wide bool) string {
		s, _, out, _ := Test()
		s.OutTTY, s.Width = tty, 60
		if !tty {
			s.Width = 0
		}
		p := NewPrinter(s, FormatTable)
		p.Wide = wide
		if err := p.Object(nil, []Section{{Fields: [][2]string{{"records", "238"}, {"malformed", value}}}}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	got := render(true, false)
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[2], strings.Repeat(" ", len("malformed")+columnGap)) {
		t.Errorf("at 60 columns, want the value wrapped under itself:\n%s", got)
	}
	for _, l := range lines {
		if w := twwidth.Width(ansi.Strip(l)); w > 60 {
			t.Errorf("a line %d columns wide at 60: %q", w, l)
		}
	}
	for _, got := range []string{render(true, true), render(false, false)} {
		if !strings.Contains(got, value) {
			t.Errorf("wide or piped, want the value on one line:\n%s", got)
		}
	}
}

// TestKeptColumnsWhole: the columns that tell rows apart (an event's time and type) keep
// their width while the others are cut, headers whole; when they cannot, the first column
// alone keeps its width, as without them.
func TestKeptColumnsWhole(t *testing.T) {
	header := []string{"PARTITION", "OFFSET", "TIMESTAMP", "TYPE", "NOTE"}
	rows := [][]string{{"0", "19", "2026-12-02T08:24:50.488Z", "task.completed", strings.Repeat("n", 40)}}
	keep := []bool{false, false, true, true, false}
	h, r, widths := fitTable(header, rows, 70, keep)
	if r[0][2] != rows[0][2] || r[0][3] != rows[0][3] || !strings.HasSuffix(r[0][4], Ellipsis) || strings.Join(h, " ") != strings.Join(header, " ") {
		t.Errorf("at 70 columns: %q %q", h, r)
	}
	line := columnGap * (len(widths) - 1)
	for _, w := range widths {
		line += w
	}
	if line > 70 {
		t.Errorf("at 70 columns the table is %d wide", line)
	}
	_, plain, _ := fitTable(header, rows, 60, nil)
	if plain[0][2] == rows[0][2] && plain[0][3] == rows[0][3] {
		t.Errorf("without kept columns nothing tells the test apart: %q", plain)
	}
	if _, r, _ := fitTable(header, rows, 60, keep); r[0][2] != rows[0][2] || r[0][3] != rows[0][3] {
		t.Errorf("at 60 columns the kept cells are cut: %q", r)
	}
}
