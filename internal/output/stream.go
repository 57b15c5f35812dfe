package output

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Stream writes a result row by row, as a command produces it, in the printer's format. It is
// List for results that arrive over time (a scan of a topic): the same bytes for the same
// values, written as they come instead of at the end.
//
//   - jsonl: each value on its own line, at once.
//   - json: one indented array, written element by element ("[\n  {…},\n  {…}\n]\n"). Close
//     ends it, so the output is valid JSON with no rows ("[]") and when the command stops early
//     after an error; the exit code says that it stopped early.
//   - csv: the header at once, before the first row (and also when there is none), then each
//     row at once.
//   - table: see tableStream. In short: rows are kept until TableChunk of them have been
//     written, so that a short result (the usual case: commands that stream have a --limit)
//     is one table sized to its content, exactly as List renders it; a longer one is printed
//     in that first chunk's column widths and then row by row.
//
// JSON and JSON Lines encode the values themselves: their json tags are the stable
// snake_case field names. CSV and the table use the columns.
//
// The usual call, from a command whose domain function takes a callback:
//
//	s := output.NewStream(p, columns, output.StreamOptions[dlq.Entry]{Noun: "dead letters"})
//	res, err := dlq.List(ctx, scan, opts, s.Write)
//	if res.More {
//		s.Truncated(opts.Limit)
//	}
//	if cerr := s.Close(); err == nil {
//		err = cerr
//	}
//
// A Stream is safe for use by several goroutines; rows are written in the order Write is
// called.
//
// When stdout is not a terminal (a pipe, a file), jsonl, json and csv rows go through a
// buffer: written when it fills, FlushDelay after the first row it holds (so that a reader of
// a slow scan still sees each row soon), at Flush and at Close. A scan of a million rows then
// makes a few thousand writes instead of a million. On a terminal every row is written at once.
// A command that returns early without Close calls Flush.
type Stream[T any] struct {
	p    *Printer
	cols []Column[T]
	opts StreamOptions[T]

	mu     sync.Mutex
	n      int64 // rows written
	err    error // the first write error; every later call returns it
	closed bool
	csv    *csv.Writer
	buf    bytes.Buffer // one JSON element at a time
	line   []byte       // one JSON value at a time, of a value that appends its own JSON
	w      *bufio.Writer
	timer  *time.Timer // pending while w holds rows
	table  *tableStream
	trunc  *Truncation
}

// FlushDelay is the longest a buffered stream keeps a row before writing it.
const FlushDelay = 100 * time.Millisecond

// streamBuffer is the size of a buffered stream's buffer.
const streamBuffer = 64 << 10

// StreamOptions tune a Stream. The zero value is fine.
type StreamOptions[T any] struct {
	// CSV are the CSV columns when they are not the table's: a CSV row carries every field,
	// raw, for a program; a table what fits on a screen, for a person. Default: the table's.
	CSV []Column[T]
	// Empty is told on stderr when a table closes without a row (as List's empty); the other
	// formats say "nothing" in their own way ([], no line, the header alone).
	Empty string
	// Noun names the rows in the truncation note, in the plural ("dead letters"). Default
	// "rows".
	Noun string
	// MoreHint ends the truncation note on stderr: how to see the rest ("raise --limit, 0 for
	// no limit, or narrow the filters").
	MoreHint string
	// MarkTruncated writes the truncation into the output itself, not only on stderr (see
	// Truncated). A command sets it from the --mark-truncated flag (MarkTruncatedFlag).
	MarkTruncated bool
	// TableChunk is how many rows a table keeps to size its columns before it starts printing
	// (DefaultTableChunk when 0).
	TableChunk int
	// JSON, when set, writes a row's JSON for json and jsonl: it appends to dst, compact, the
	// bytes the stream's encoder writes for the row (HTML characters as they are; for a type
	// with a MarshalJSON method, what that returns). A row type that marshals itself (dlq.Entry) is written faster so: encoding/json
	// validates and compacts again whatever a MarshalJSON method returns. It writes its times
	// as the other rows' are rewritten (timespec.TimeLayout, see normalizeJSONTimes): the
	// stream does not pass over its bytes again.
	JSON func(v T, dst []byte) ([]byte, error)
	// Progress, when set, is cleared before rows are written while stdout and stderr are both
	// terminals (so, most likely, one screen), so that a row never lands on the progress
	// line; the progress draws itself again below the row at its next tick.
	Progress *Progress
}

// MarkTruncatedFlag is the name of the flag that sets StreamOptions.MarkTruncated: one name
// for every command that streams with a --limit.
const MarkTruncatedFlag = "mark-truncated"

// Truncation is what a stream cut at a limit says about itself.
type Truncation struct {
	// Limit is the limit the command stopped at.
	Limit int `json:"limit"`
	// Written is how many rows the stream wrote.
	Written int64 `json:"written"`
}

// TruncationMark is the value a json or jsonl stream ends with when it was cut at a limit and
// StreamOptions.MarkTruncated is set: {"_truncated":{"limit":100,"written":100}}. The leading
// underscore keeps it apart from every row's fields (a row may well have a field named
// truncated); a reader tells it from a row by that one key. A CSV stream ends with one field
// instead, "# truncated at limit 100: more rows remain", which a reader that skips comments
// (Go's csv.Reader with Comment '#', pandas' comment='#') drops, and a strict one rejects
// rather than taking it for a row.
type TruncationMark struct {
	Truncated Truncation `json:"_truncated"`
}

// DefaultTableChunk is how many rows a streamed table keeps before it fixes its column widths
// and starts printing: a screenful or ten, enough that the widths fit nearly every row, and
// few enough that the rows of a long stream start to show soon and are not all held in
// memory.
const DefaultTableChunk = 500

// NewStream returns a stream of values of T in p's format. It writes nothing yet: the csv
// header and the json opening bracket come with the first row, or at Close.
func NewStream[T any](p *Printer, cols []Column[T], opts StreamOptions[T]) *Stream[T] {
	if opts.CSV == nil {
		opts.CSV = cols
	}
	if opts.Noun == "" {
		opts.Noun = "rows"
	}
	if opts.TableChunk <= 0 {
		opts.TableChunk = DefaultTableChunk
	}
	s := &Stream[T]{p: p, cols: cols, opts: opts}
	if p.Format != FormatTable && !p.Streams.OutTTY {
		s.w = bufio.NewWriterSize(p.Streams.Out, streamBuffer)
	}
	return s
}

// out is where rows go: the buffer when there is one, else stdout.
func (s *Stream[T]) out() io.Writer {
	if s.w != nil {
		return s.w
	}
	return s.p.Streams.Out
}

// Flush writes the rows the buffer holds. It returns the first write error, as Write does.
func (s *Stream[T]) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush()
}

func (s *Stream[T]) flush() error {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.w == nil || s.err != nil {
		return s.err
	}
	s.err = s.w.Flush()
	return s.err
}

// flushLater arms the timer that writes a buffer's rows FlushDelay after the first of them.
func (s *Stream[T]) flushLater() {
	if s.w == nil || s.timer != nil || s.w.Buffered() == 0 {
		return
	}
	s.timer = time.AfterFunc(FlushDelay, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.timer = nil
		if s.err == nil && s.w.Buffered() > 0 {
			s.err = s.w.Flush()
		}
	})
}

// ErrStreamClosed is returned by a Write after Close.
var ErrStreamClosed = errors.New("output: write to a closed stream")

// Write writes one row: at once in jsonl, json and csv; in a table, when its widths are known.
// After a write error (stdout closed by the reader of a pipe, say) every call returns that
// error.
func (s *Stream[T]) Write(v T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStreamClosed
	}
	if s.err != nil {
		return s.err
	}
	s.err = s.write(v)
	if s.err == nil {
		s.flushLater()
	}
	return s.err
}

func (s *Stream[T]) write(v T) error {
	out := s.out()
	s.n++
	if s.p.Format != FormatTable {
		s.clearProgress()
	}
	switch s.p.Format {
	case FormatJSONL:
		if s.opts.JSON != nil {
			b, err := s.opts.JSON(v, s.line[:0])
			if err != nil {
				return err
			}
			s.line = append(b, '\n')
			_, err = out.Write(escapeJSON(s.line))
			return err
		}
		return writeJSON(out, v, false)
	case FormatJSON:
		if s.opts.JSON != nil {
			// What an Encoder with the element's indent writes: the compact value, indented.
			b, err := s.opts.JSON(v, s.line[:0])
			if err != nil {
				return err
			}
			s.line = b
			return s.element(json.RawMessage(b), s.n == 1)
		}
		return s.element(v, s.n == 1)
	case FormatCSV:
		if err := s.csvHeader(); err != nil {
			return err
		}
		if err := s.csv.Write(csvRow(s.p.Streams.OutTTY, cells(s.opts.CSV, v))); err != nil {
			return err
		}
		s.csv.Flush()
		return s.csv.Error()
	}
	if s.table == nil {
		s.table = newTableStream(s.p, s.cols, s.opts.TableChunk, s.clearProgress)
	}
	return s.table.add(cells(s.cols, v))
}

// element writes v as the next element of the json array, the first one when first.
func (s *Stream[T]) element(v any, first bool) error {
	sep := ",\n  "
	if first {
		sep = "[\n  "
	}
	s.buf.Reset()
	s.buf.WriteString(sep)
	if raw, ok := v.(json.RawMessage); ok {
		if err := json.Indent(&s.buf, raw, "  ", "  "); err != nil {
			return err
		}
	} else {
		enc := json.NewEncoder(&s.buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("  ", "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	b := bytes.TrimSuffix(s.buf.Bytes(), []byte("\n"))
	if _, raw := v.(json.RawMessage); !raw {
		b = normalizeJSONTimes(b)
	}
	_, err := s.out().Write(escapeJSON(b))
	return err
}

func (s *Stream[T]) csvHeader() error {
	if s.csv != nil {
		return nil
	}
	// Hidden behind an interface, or the csv writer would take the buffer for its own and
	// flush it at every row.
	s.csv = csv.NewWriter(struct{ io.Writer }{s.out()})
	header := make([]string, len(s.opts.CSV))
	for i, c := range s.opts.CSV {
		header[i] = c.Name
	}
	return s.csv.Write(csvHeader(header))
}

// Release writes what the stream holds back, so that every later row is written as it comes:
// for a stream that goes on after its first part (dlq list --follow). A table prints the rows
// it kept and fixes its widths to them; with none kept, the next row is printed at once, in
// its own widths. A buffered stream writes its buffer (later rows still go out within
// FlushDelay).
func (s *Stream[T]) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil || s.closed {
		return s.err
	}
	if s.p.Format == FormatTable {
		if s.table == nil {
			s.table = newTableStream(s.p, s.cols, s.opts.TableChunk, s.clearProgress)
		}
		if s.err = s.table.release(); s.err != nil {
			return s.err
		}
	}
	return s.flush()
}

// Truncated records that the command stopped at limit while more rows were left. Close then
// says so on stderr, in every format ("showing the first 100 dead letters: more remain
// (MoreHint)"), and, with MarkTruncated, in the output too: a json or jsonl stream ends with a
// TruncationMark, a csv stream with a comment line. A table says it on stderr only: it is
// read by a person, who sees stderr too. Call it before Close; a stream without it claims to
// be complete.
func (s *Stream[T]) Truncated(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trunc = &Truncation{Limit: limit}
}

// Written is how many rows have been written.
func (s *Stream[T]) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Close ends the output: the closing bracket of a json array ("[]" with no rows), the csv
// header of a stream with no rows, the table's last rows (or the Empty note), then the
// truncation note and mark. It is safe to call more than once (later calls do nothing and
// return nil) and after a failed Write (it returns that error and writes nothing more).
func (s *Stream[T]) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err != nil {
		return s.err
	}
	s.clearProgress()
	s.err = s.close()
	return s.err
}

func (s *Stream[T]) close() error {
	out := s.out()
	if s.trunc != nil {
		s.trunc.Written = s.n
	}
	mark := s.trunc != nil && s.opts.MarkTruncated
	switch s.p.Format {
	case FormatJSONL:
		if mark {
			if err := writeJSON(out, TruncationMark{*s.trunc}, false); err != nil {
				return err
			}
		}
	case FormatJSON:
		if mark {
			if err := s.element(TruncationMark{*s.trunc}, s.n == 0); err != nil {
				return err
			}
		}
		end := "\n]\n"
		if s.n == 0 && !mark {
			end = "[]\n"
		}
		if _, err := io.WriteString(out, end); err != nil {
			return err
		}
	case FormatCSV:
		if err := s.csvHeader(); err != nil {
			return err
		}
		if mark {
			// One field, no comma or quote in it, so that the writer leaves it unquoted
			// and the line starts with the comment character.
			if err := s.csv.Write([]string{fmt.Sprintf("# truncated at limit %d: more %s remain", s.trunc.Limit, s.opts.Noun)}); err != nil {
				return err
			}
		}
		s.csv.Flush()
		if err := s.csv.Error(); err != nil {
			return err
		}
	default:
		if s.table != nil {
			if err := s.table.close(); err != nil {
				return err
			}
		} else if s.opts.Empty != "" {
			fmt.Fprintln(s.p.Streams.ErrOut, s.opts.Empty)
		}
	}
	// Every row out before a note on stderr, which may be the same file.
	if err := s.flush(); err != nil {
		return err
	}
	if s.trunc != nil {
		note := fmt.Sprintf("showing the first %d %s: more remain", s.n, s.opts.Noun)
		if s.opts.MoreHint != "" {
			note += " (" + s.opts.MoreHint + ")"
		}
		fmt.Fprintln(s.p.Streams.ErrText(), note)
	}
	return nil
}

// clearProgress takes the progress line off a screen that stdout shares with stderr.
func (s *Stream[T]) clearProgress() {
	if s.opts.Progress != nil && s.p.Streams.OutTTY && s.p.Streams.ErrTTY {
		s.opts.Progress.Clear()
	}
}

func cells[T any](cols []Column[T], v T) []string {
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = c.Value(v)
	}
	return row
}
