package output

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/fieldwork/fieldwork/internal/look"
)

// Ellipsis ends every cell cut to fit.
const Ellipsis = look.Ellipsis

// minCellWidth is the narrowest a column is cut to: a few characters and the ellipsis.
const minCellWidth = 4

// columnGap is the blanks between two columns of a table.
const columnGap = 2

// Truncate cuts s to at most width terminal columns, ending it with Ellipsis when cut. The
// width is the display width (a wide rune counts two, an escape sequence none), so a cut
// cell lines up with the others. A width of 0 or less leaves s whole.
func Truncate(s string, width int) string {
	if width <= 0 || ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, Ellipsis) // the width includes the ellipsis
}

// Wrap breaks s into lines of at most width terminal columns (display width, as Truncate):
// at blanks where it can, inside a word longer than a line where it must, so that nothing is
// lost, as a confirmation must show it whole. A width of 0 or less leaves s one line.
func Wrap(s string, width int) []string {
	if width <= 0 || ansi.StringWidth(s) <= width {
		return []string{s}
	}
	var lines []string
	line, lineW := "", 0
	flush := func() {
		lines = append(lines, line)
		line, lineW = "", 0
	}
	for _, word := range strings.Fields(s) {
		w := ansi.StringWidth(word)
		if lineW > 0 && lineW+1+w > width {
			flush()
		}
		if lineW > 0 {
			line, lineW = line+" ", lineW+1
		}
		for _, r := range word {
			rw := ansi.StringWidth(string(r))
			if lineW > 0 && lineW+rw > width {
				flush()
			}
			line, lineW = line+string(r), lineW+rw
		}
	}
	if lineW > 0 {
		flush()
	}
	return lines
}

// fitWidths returns the width each column of a table is shown in, so that a line (each cell
// but the last followed by columnGap blanks) is at most limit columns wide: the columns that
// fit keep their width, the widest share what is left, each cut to no less than its floor
// (floors[i]: its header's width, so that the cells are cut and never a header) nor than
// minCellWidth (or its own width). When the floors alone do not fit, the headers are cut too,
// to minCellWidth: a line wider than the terminal wraps and garbles every row. widths are the
// columns' natural widths; a limit of 0 or less keeps them. A table too wide even then is
// shown at the minimum widths.
func fitWidths(widths, floors []int, limit int) []int {
	out := append([]int(nil), widths...)
	if limit <= 0 || len(widths) == 0 {
		return out
	}
	room := limit - columnGap*(len(widths)-1)
	total := 0
	for _, w := range widths {
		total += w
	}
	if total <= room {
		return out
	}
	floorsFit := 0
	for i, w := range widths {
		if i < len(floors) {
			floorsFit += min(w, max(minCellWidth, floors[i]))
		}
	}
	floor := func(i int) int {
		if i < len(floors) && floorsFit <= room {
			return max(minCellWidth, floors[i])
		}
		return minCellWidth
	}
	// The largest cap c such that sum(min(w, max(c, floor))) fits: binary search.
	capped := func(c int) int {
		sum := 0
		for i, w := range widths {
			sum += min(w, max(c, floor(i)))
		}
		return sum
	}
	lo, hi := minCellWidth, 0
	for _, w := range widths {
		hi = max(hi, w)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if capped(mid) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for i, w := range widths {
		out[i] = min(w, max(lo, floor(i)))
	}
	return out
}

// fitTable cuts the cells of header and rows (already made printable) to the widths that let
// the table fit limit columns, and returns them with those widths. The columns that identify
// or tell the rows apart keep their width: those keep names (Column.Keep), even before the
// others' headers, else the first column, while the others' headers fit beside it.
func fitTable(header []string, rows [][]string, limit int, keep []bool) ([]string, [][]string, []int) {
	natural := make([]int, len(header))
	for i, h := range header {
		natural[i] = ansi.StringWidth(h)
	}
	headers := append([]int(nil), natural...)
	for _, r := range rows {
		for i, c := range r {
			if i < len(natural) {
				natural[i] = max(natural[i], ansi.StringWidth(c))
			}
		}
	}
	widths := fitWidths(natural, headers, limit)
	// The kept columns tell rows apart (an event's type and time): they keep their width.
	// Without them, the first column names the row (a topic, a dead letter's coordinates): it
	// keeps its width when the others' headers still fit beside it.
	keepFirst := make([]bool, len(headers))
	if len(headers) > 0 {
		keepFirst[0] = true
	}
	keepAll := make([]bool, len(headers))
	for i := range keepAll {
		keepAll[i] = i < len(keep) && keep[i]
	}
	// The kept columns before the others' headers: a header cut to "PAR…" is read from the
	// overview; a type cut to "task.co…" reads completed and reopened alike.
	short := make([]int, len(headers))
	for i := range short {
		short[i] = min(headers[i], minCellWidth)
	}
	if w, ok := fitKeeping(natural, headers, limit, keepAll); ok && slices.Contains(keep, true) {
		widths = w
	} else if w, ok := fitKeeping(natural, short, limit, keepAll); ok && slices.Contains(keep, true) {
		widths = w
	} else if len(headers) > 0 && widths[0] < natural[0] {
		if w, ok := fitKeeping(natural, headers, limit, keepFirst); ok {
			widths = w
		}
	}
	cut := func(r []string) []string {
		out := make([]string, len(r))
		for i, c := range r {
			out[i] = c
			if i < len(widths) && widths[i] < natural[i] {
				out[i] = Truncate(c, widths[i])
			}
		}
		return out
	}
	fitted := make([][]string, len(rows))
	for i, r := range rows {
		fitted[i] = cut(r)
	}
	return cut(header), fitted, widths
}

// fitKeeping is fitWidths with the kept columns at their natural width and the others at least
// as wide as floors (their headers, or less); ok is false when they do not fit so.
func fitKeeping(natural, headers []int, limit int, keep []bool) ([]int, bool) {
	floors := append([]int(nil), headers...)
	for i, k := range keep {
		if k {
			floors[i] = natural[i]
		}
	}
	widths := fitWidths(natural, floors, limit)
	for i, w := range widths {
		if w < min(natural[i], max(minCellWidth, floors[i])) {
			return widths, false
		}
	}
	return widths, true
}
