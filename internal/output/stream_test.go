package output

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func streamAll(t *testing.T, p *Printer, items []row, opts StreamOptions[row]) {
	t.Helper()
	s := NewStream(p, cols, opts)
	for _, it := range items {
		if err := s.Write(it); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamIsList pins that a stream writes, format by format, the bytes List writes for the
// same items, from no item to a few: one rendering rule, whether a command has its result
// at once or row by row.
func TestStreamIsList(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatCSV, FormatTable} {
		for _, n := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("%s/%d", f, n), func(t *testing.T) {
				items := []row{{"a", 1}, {"bb <&>", 22}, {"ccc", 333}}[:n]
				for _, tty := range []bool{false, true} {
					s, _, want, wantErr := Test()
					s.OutTTY = tty
					if err := List(NewPrinter(s, f), items, cols, "nothing"); err != nil {
						t.Fatal(err)
					}
					s, _, got, gotErr := Test()
					s.OutTTY = tty
					streamAll(t, NewPrinter(s, f), items, StreamOptions[row]{Empty: "nothing"})
					if got.String() != want.String() || gotErr.String() != wantErr.String() {
						t.Errorf("tty %v: stream wrote\n%q %q\nList\n%q %q", tty, got, gotErr, want, wantErr)
					}
				}
			})
		}
	}
}

// TestStreamWritesAtOnce checks that on a terminal json, jsonl and csv rows are on stdout
// when Write returns, the csv header with the first, and that a json stream closed after any
// number of rows (an error stopped the command) is one valid array.
func TestStreamWritesAtOnce(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatCSV} {
		t.Run(string(f), func(t *testing.T) {
			s, _, out, _ := Test()
			s.OutTTY = true
			st := NewStream(NewPrinter(s, f), cols, StreamOptions[row]{})
			if out.Len() != 0 {
				t.Fatalf("wrote %q before the first row", out)
			}
			for i, it := range []row{{"a", 1}, {"b", 2}} {
				if err := st.Write(it); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), `"`+it.Name+`"`) && !strings.Contains(out.String(), "\n"+it.Name+",") {
					t.Fatalf("row %d not written at once: %q", i, out)
				}
			}
			if f == FormatCSV && !strings.HasPrefix(out.String(), "name,count\n") {
				t.Fatalf("csv without its header first: %q", out)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if f == FormatJSON && !json.Valid(out.Bytes()) {
				t.Fatalf("invalid json: %q", out)
			}
		})
	}
	for n := range 3 {
		s, _, out, _ := Test()
		st := NewStream(NewPrinter(s, FormatJSON), cols, StreamOptions[row]{})
		for i := range n {
			_ = st.Write(row{fmt.Sprint(i), i})
		}
		_ = st.Close()
		var got []row
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != n {
			t.Errorf("%d rows, then closed: %v, %d values in %q", n, err, len(got), out)
		}
	}
}

func TestStreamCSVHeaderWithoutRows(t *testing.T) {
	s, _, out, _ := Test()
	st := NewStream(NewPrinter(s, FormatCSV), cols, StreamOptions[row]{})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "name,count\n" {
		t.Fatalf("csv of no rows = %q", out)
	}
}

// TestStreamCSVColumns checks that CSV uses its own columns when given, the table the others.
func TestStreamCSVColumns(t *testing.T) {
	csvCols := []Column[row]{
		{Name: "name", Value: func(r row) string { return r.Name }},
		{Name: "count", Value: func(r row) string { return fmt.Sprint(r.Count) }},
		{Name: "double", Value: func(r row) string { return fmt.Sprint(2 * r.Count) }},
	}
	s, _, out, _ := Test()
	streamAll(t, NewPrinter(s, FormatCSV), []row{{"a", 1}}, StreamOptions[row]{CSV: csvCols})
	if out.String() != "name,count,double\na,1,2\n" {
		t.Errorf("csv = %q", out)
	}
	s, _, out, _ = Test()
	streamAll(t, NewPrinter(s, FormatTable), []row{{"a", 1}}, StreamOptions[row]{CSV: csvCols})
	if trimLines(out.String()) != "NAME  COUNT\na     1\n" {
		t.Errorf("table = %q", out)
	}
}

func TestStreamClose(t *testing.T) {
	s, _, out, _ := Test()
	st := NewStream(NewPrinter(s, FormatJSON), cols, StreamOptions[row]{})
	_ = st.Write(row{"a", 1})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := out.String()
	if err := st.Close(); err != nil || out.String() != before {
		t.Fatalf("second Close: %v, wrote %q", err, strings.TrimPrefix(out.String(), before))
	}
	if err := st.Write(row{"b", 2}); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if st.Written() != 1 {
		t.Fatalf("Written = %d", st.Written())
	}
}

// failWriter fails every write after the first ok ones.
type failWriter struct {
	ok  int
	buf bytes.Buffer
}

var errBrokenPipe = errors.New("broken pipe")

func (w *failWriter) Write(b []byte) (int, error) {
	if w.ok == 0 {
		return 0, errBrokenPipe
	}
	w.ok--
	return w.buf.Write(b)
}

func TestStreamWriteErrorSticks(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatCSV} {
		s, _, _, _ := Test()
		s.OutTTY = true
		w := &failWriter{ok: 1}
		s.Out = w
		st := NewStream(NewPrinter(s, f), cols, StreamOptions[row]{})
		var err error
		for i := 0; i < 3 && err == nil; i++ {
			err = st.Write(row{"a", i})
		}
		if !errors.Is(err, errBrokenPipe) {
			t.Fatalf("%s: no write error: %v", f, err)
		}
		written := w.buf.Len()
		if err := st.Write(row{"z", 9}); !errors.Is(err, errBrokenPipe) {
			t.Errorf("%s: Write after a failure = %v", f, err)
		}
		if err := st.Close(); !errors.Is(err, errBrokenPipe) {
			t.Errorf("%s: Close after a failure = %v", f, err)
		}
		if w.buf.Len() != written {
			t.Errorf("%s: wrote after the failure", f)
		}
	}
}

// TestStreamTruncation checks the note on stderr in every format and, with MarkTruncated,
// the mark at the end of the machine-readable output, which readers tell from a row.
func TestStreamTruncation(t *testing.T) {
	items := []row{{"a", 1}, {"b", 2}}
	opts := StreamOptions[row]{Noun: "dead letters", MoreHint: "raise --limit"}
	note := "showing the first 2 dead letters: more remain (raise --limit)\n"
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatCSV, FormatTable} {
		for _, mark := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/mark=%v", f, mark), func(t *testing.T) {
				s, _, plain, _ := Test()
				streamAll(t, NewPrinter(s, f), items, opts)

				s, _, out, errOut := Test()
				o := opts
				o.MarkTruncated = mark
				st := NewStream(NewPrinter(s, f), cols, o)
				for _, it := range items {
					_ = st.Write(it)
				}
				st.Truncated(2)
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				if errOut.String() != note {
					t.Errorf("stderr %q, want %q", errOut, note)
				}
				if !mark || f == FormatTable {
					if out.String() != plain.String() {
						t.Errorf("output %q, want it unchanged %q", out, plain)
					}
					return
				}
				checkMark(t, f, out.String(), len(items))
			})
		}
	}
}

func checkMark(t *testing.T, f Format, out string, rows int) {
	t.Helper()
	want := TruncationMark{Truncation{Limit: 2, Written: int64(rows)}}
	switch f {
	case FormatJSONL:
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		var m TruncationMark
		if len(lines) != rows+1 || json.Unmarshal([]byte(lines[rows]), &m) != nil || m != want {
			t.Fatalf("jsonl does not end with the mark: %q", out)
		}
		if lines[rows] != `{"_truncated":{"limit":2,"written":2}}` {
			t.Fatalf("mark = %s", lines[rows])
		}
	case FormatJSON:
		var vs []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &vs); err != nil || len(vs) != rows+1 {
			t.Fatalf("json: %v, %d values in %q", err, len(vs), out)
		}
		if _, ok := vs[rows]["_truncated"]; !ok {
			t.Fatalf("json does not end with the mark: %q", out)
		}
	case FormatCSV:
		if !strings.HasSuffix(out, "\n# truncated at limit 2: more dead letters remain\n") {
			t.Fatalf("csv does not end with the comment: %q", out)
		}
		r := csv.NewReader(strings.NewReader(out))
		r.Comment = '#'
		recs, err := r.ReadAll()
		if err != nil || len(recs) != rows+1 {
			t.Fatalf("csv read with comments: %v, %d records", err, len(recs))
		}
		if _, err := csv.NewReader(strings.NewReader(out)).ReadAll(); err == nil {
			t.Fatal("a strict csv reader takes the comment for a row")
		}
	}
}

func TestStreamTruncationWithoutRows(t *testing.T) {
	s, _, out, _ := Test()
	st := NewStream(NewPrinter(s, FormatJSON), cols, StreamOptions[row]{MarkTruncated: true})
	st.Truncated(0)
	_ = st.Close()
	var vs []TruncationMark
	if err := json.Unmarshal(out.Bytes(), &vs); err != nil || len(vs) != 1 {
		t.Fatalf("%v: %q", err, out)
	}
}

// TestStreamTableChunks checks a table longer than its chunk: the first chunk rendered as
// Printer.Table renders it, the later rows in its widths, so that the whole reads as one
// table; and a later, wider cell is written whole.
func TestStreamTableChunks(t *testing.T) {
	var items []row
	for i := range 7 {
		items = append(items, row{strings.Repeat("x", 1+i%3), i * 100})
	}
	for _, tty := range []bool{false, true} {
		s, _, want, _ := Test()
		s.OutTTY = tty
		if err := List(NewPrinter(s, FormatTable), items, cols, ""); err != nil {
			t.Fatal(err)
		}
		s, _, got, _ := Test()
		s.OutTTY = tty
		st := NewStream(NewPrinter(s, FormatTable), cols, StreamOptions[row]{TableChunk: 3})
		for i, it := range items {
			_ = st.Write(it)
			if i == 2 && !strings.Contains(got.String(), "xxx") {
				t.Fatalf("first chunk not printed when full: %q", got)
			}
			if i == 5 && strings.Count(got.String(), "\n") != 7 {
				t.Fatalf("row %d not printed at once: %q", i, got)
			}
		}
		_ = st.Close()
		if got.String() != want.String() {
			t.Errorf("tty %v: chunked table\n%s\nwant\n%s", tty, got, want)
		}
	}

	s, _, out, _ := Test()
	st := NewStream(NewPrinter(s, FormatTable), cols, StreamOptions[row]{TableChunk: 1})
	_ = st.Write(row{"a", 1})
	_ = st.Write(row{"much-longer", 2})
	_ = st.Close()
	if out.String() != "NAME  COUNT\na     1\nmuch-longer  2\n" {
		t.Errorf("wider cell: %q", out)
	}
}

// TestStreamOptionalColumn checks that an optional column that says nothing is left out of a
// table kept whole (and of List's), and kept in a chunked table, which cannot know.
func TestStreamOptionalColumn(t *testing.T) {
	withProblems := append(append([]Column[row](nil), cols...), Column[row]{
		Name: "problems", Optional: true,
		Value: func(r row) string {
			if r.Count < 0 {
				return "negative"
			}
			return "-"
		},
	})
	s, _, out, _ := Test()
	_ = List(NewPrinter(s, FormatTable), []row{{"a", 1}}, withProblems, "")
	if out.String() != "NAME  COUNT\na     1\n" {
		t.Errorf("List, nothing to say: %q", out)
	}
	got := func(items []row, chunk int) string {
		s, _, out, _ := Test()
		st := NewStream(NewPrinter(s, FormatTable), withProblems, StreamOptions[row]{TableChunk: chunk})
		for _, it := range items {
			_ = st.Write(it)
		}
		_ = st.Close()
		return out.String()
	}
	if g := got([]row{{"a", 1}}, 0); g != "NAME  COUNT\na     1\n" {
		t.Errorf("optional column shown with nothing in it: %q", g)
	}
	if g := got([]row{{"a", 1}, {"b", -1}}, 0); g != "NAME  COUNT  PROBLEMS\na     1      -\nb     -1     negative\n" {
		t.Errorf("optional column with something in it: %q", g)
	}
	if g := got([]row{{"a", 1}, {"b", 2}}, 1); g != "NAME  COUNT  PROBLEMS\na     1      -\nb     2      -\n" {
		t.Errorf("chunked table without its optional column: %q", g)
	}
	s, _, out, _ = Test()
	st := NewStream(NewPrinter(s, FormatCSV), withProblems, StreamOptions[row]{})
	_ = st.Write(row{"a", 1})
	_ = st.Close()
	if out.String() != "name,count,problems\na,1,-\n" {
		t.Errorf("csv without its optional column: %q", out)
	}
}

func TestStreamTableEmpty(t *testing.T) {
	s, _, out, errOut := Test()
	streamAll(t, NewPrinter(s, FormatTable), nil, StreamOptions[row]{Empty: "no rows"})
	if out.Len() != 0 || errOut.String() != "no rows\n" {
		t.Errorf("out %q, err %q", out, errOut)
	}
}

// TestStreamConcurrentWrites writes from several goroutines: every line is one whole row.
func TestStreamConcurrentWrites(t *testing.T) {
	s, _, out, _ := Test()
	st := NewStream(NewPrinter(s, FormatJSONL), cols, StreamOptions[row]{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := st.Write(row{fmt.Sprintf("g%d", g), i}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	_ = st.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
	}
}

// TestStreamClearsProgress checks that rows never land on the progress line of a screen that
// stdout shares with stderr, and that a progress on another screen is left alone.
func TestStreamClearsProgress(t *testing.T) {
	for _, outTTY := range []bool{false, true} {
		r := newProgressRig(t, ProgressOptions{Label: "scanning"})
		r.s.OutTTY = outTTY
		r.tick(DefaultProgressInterval)
		st := NewStream(NewPrinter(r.s, FormatJSONL), cols, StreamOptions[row]{Progress: r.p})
		before := r.errOut.String()
		_ = st.Write(row{"a", 1})
		cleared := strings.TrimPrefix(r.errOut.String(), before) == "\r\x1b[K"
		if cleared != outTTY {
			t.Errorf("stdout a terminal %v: progress cleared %v (%q)", outTTY, cleared, r.errOut)
		}
		_ = st.Close()
		r.p.Stop()
	}
}

// TestStreamTableKeepsProgress checks that a table kept for Close leaves the progress line
// alone while it keeps rows, and clears it before it prints.
func TestStreamTableKeepsProgress(t *testing.T) {
	r := newProgressRig(t, ProgressOptions{Label: "scanning"})
	r.s.OutTTY = true
	r.tick(DefaultProgressInterval)
	st := NewStream(NewPrinter(r.s, FormatTable), cols, StreamOptions[row]{Progress: r.p})
	before := r.errOut.String()
	_ = st.Write(row{"a", 1})
	if r.errOut.String() != before {
		t.Fatalf("a kept row cleared the progress: %q", r.errOut)
	}
	_ = st.Close()
	if r.line() != "" {
		t.Fatalf("the table was printed after the progress line %q", r.line())
	}
}

// lockedBuffer is stdout written by a stream's flush timer while the test reads it.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) read() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.writes
}

// TestStreamBuffersWhenPiped checks that off a terminal json, jsonl and csv rows go out in few
// writes, the same bytes as on a terminal: a row is on stdout after Flush, and without one
// within FlushDelay; Close writes everything.
func TestStreamBuffersWhenPiped(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatJSONL, FormatCSV} {
		t.Run(string(f), func(t *testing.T) {
			items := make([]row, 1000)
			for i := range items {
				items[i] = row{fmt.Sprintf("row-%d", i), i}
			}
			tty, _, want, _ := Test()
			tty.OutTTY = true
			streamAll(t, NewPrinter(tty, f), append(items, row{"late", 1}), StreamOptions[row]{})

			s, _, _, _ := Test()
			out := &lockedBuffer{}
			s.Out = out
			st := NewStream(NewPrinter(s, f), cols, StreamOptions[row]{})
			for _, it := range items {
				if err := st.Write(it); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
			if got, _ := out.read(); !strings.Contains(got, "row-999") {
				t.Fatalf("last row not out after Flush: %q", got[max(0, len(got)-100):])
			}
			if err := st.Write(row{"late", 1}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for got, _ := out.read(); !strings.Contains(got, "late"); got, _ = out.read() {
				if time.Now().After(deadline) {
					t.Fatal("a row held past FlushDelay")
				}
				time.Sleep(FlushDelay / 10)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			got, writes := out.read()
			if got != want.String() {
				t.Fatalf("buffered bytes differ from the terminal's:\n%q\n%q", got[max(0, len(got)-200):], want.String()[max(0, want.Len()-200):])
			}
			if writes > 50 {
				t.Errorf("%d writes for %d rows", writes, len(items)+1)
			}
		})
	}
}

// TestStreamBufferedWriteErrorSticks: off a terminal a write error shows at the flush, and
// every later call returns it.
func TestStreamBufferedWriteErrorSticks(t *testing.T) {
	s, _, _, _ := Test()
	s.Out = &failWriter{}
	st := NewStream(NewPrinter(s, FormatJSONL), cols, StreamOptions[row]{})
	if err := st.Write(row{"a", 1}); err != nil {
		t.Fatalf("buffered Write = %v", err)
	}
	if err := st.Flush(); !errors.Is(err, errBrokenPipe) {
		t.Fatalf("Flush = %v", err)
	}
	if err := st.Write(row{"b", 2}); !errors.Is(err, errBrokenPipe) {
		t.Errorf("Write after a failed flush = %v", err)
	}
	if err := st.Close(); !errors.Is(err, errBrokenPipe) {
		t.Errorf("Close after a failed flush = %v", err)
	}
}

// TestStreamJSONOption checks that a stream whose rows write their own JSON (StreamOptions.JSON)
// writes the bytes encoding/json would, in json (indented) and jsonl, on a terminal and off one.
func TestStreamJSONOption(t *testing.T) {
	items := []row{{"a<b>&c", 1}, {"d", 2}, {"e\u2028", 3}}
	own := func(v row, dst []byte) ([]byte, error) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		err := enc.Encode(v)
		return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), err
	}
	for _, f := range []Format{FormatJSON, FormatJSONL} {
		for _, tty := range []bool{false, true} {
			s, _, want, _ := Test()
			s.OutTTY = tty
			streamAll(t, NewPrinter(s, f), items, StreamOptions[row]{})
			s2, _, got, _ := Test()
			s2.OutTTY = tty
			streamAll(t, NewPrinter(s2, f), items, StreamOptions[row]{JSON: own})
			if got.String() != want.String() {
				t.Errorf("%s, tty %v: with JSON\n%q\nwithout\n%q", f, tty, got, want)
			}
		}
	}
}

// TestStreamRelease: a table's kept rows are printed at Release, as List would print them,
// and every later row at once; released with none kept, the next row is printed at once with
// the header. A buffered jsonl stream writes what it holds.
func TestStreamRelease(t *testing.T) {
	s, _, out, _ := Test()
	st := NewStream(NewPrinter(s, FormatTable), cols, StreamOptions[row]{})
	_ = st.Write(row{"a", 1})
	_ = st.Write(row{"bb", 22})
	if out.Len() != 0 {
		t.Fatalf("a table printed before its chunk was full: %q", out.String())
	}
	if err := st.Release(); err != nil {
		t.Fatal(err)
	}
	ls, _, want, _ := Test()
	if err := List(NewPrinter(ls, FormatTable), []row{{"a", 1}, {"bb", 22}}, cols, ""); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Fatalf("released:\n%q\nwant what List prints:\n%q", out.String(), want.String())
	}
	_ = st.Write(row{"c", 3})
	if !strings.HasSuffix(out.String(), "\nc     3\n") {
		t.Fatalf("a row after Release was not printed at once in the table's widths: %q", out.String())
	}

	s, _, out, _ = Test()
	st = NewStream(NewPrinter(s, FormatTable), cols, StreamOptions[row]{})
	if err := st.Release(); err != nil || out.Len() != 0 {
		t.Fatalf("an empty release printed %q (%v)", out.String(), err)
	}
	_ = st.Write(row{"first", 1})
	if got := out.String(); !strings.Contains(got, "NAME") || !strings.Contains(got, "first") {
		t.Fatalf("the first row after an empty release was not printed at once: %q", got)
	}

	s, _, out, _ = Test()
	st = NewStream(NewPrinter(s, FormatJSONL), cols, StreamOptions[row]{})
	_ = st.Write(row{"a", 1})
	if err := st.Release(); err != nil || out.String() != "{\"name\":\"a\",\"count\":1}\n" {
		t.Fatalf("a released jsonl stream holds back %q (%v)", out.String(), err)
	}
}

// TestStreamWideOnlyColumn: a streamed table leaves a WideOnly column out on a terminal too
// narrow for it, kept whole or in chunks (every row after the first chunk in the chunk's
// columns), and keeps it with Wide, on a wide enough terminal and in CSV.
func TestStreamWideOnlyColumn(t *testing.T) {
	type item struct{ id, detail string }
	wcols := []Column[item]{
		{Name: "id", Value: func(i item) string { return i.id }},
		{Name: "detail", WideOnly: true, Value: func(i item) string { return i.detail }},
	}
	var items []item
	for i := range 5 {
		items = append(items, item{fmt.Sprintf("a-%d", i), strings.Repeat("x", 50)})
	}
	render := func(width, chunk int, wide bool, f Format) string {
		s, _, out, _ := Test()
		s.OutTTY, s.Width = true, width
		p := NewPrinter(s, f)
		p.Wide = wide
		st := NewStream(p, wcols, StreamOptions[item]{TableChunk: chunk})
		for _, it := range items {
			if err := st.Write(it); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for _, chunk := range []int{0, 2} {
		got := render(40, chunk, false, FormatTable)
		if strings.Contains(got, "DETAIL") || strings.Contains(got, "x") || strings.Count(got, "a-") != len(items) {
			t.Errorf("chunk %d, narrow: want every id and no detail:\n%s", chunk, got)
		}
		for name, got := range map[string]string{"wide": render(40, chunk, true, FormatTable), "100 columns": render(100, chunk, false, FormatTable),
			"csv": render(40, chunk, false, FormatCSV)} {
			if !strings.Contains(strings.ToUpper(got), "DETAIL") || strings.Count(got, items[0].detail) != len(items) {
				t.Errorf("chunk %d, %s: want the column whole on every row:\n%s", chunk, name, got)
			}
		}
	}
}
