package cmdutil

import (
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/output"
)

// TruncationFlag is --mark-truncated (output.MarkTruncatedFlag), for a command that streams
// with a --limit: whether output cut at the limit ends with a mark that says so
// (output.TruncationMark: {"_truncated":{"limit":…,"written":…}} in json and jsonl, a
// "# truncated at limit …" line in csv; a table says it on stderr only).
//
// Unless given, it is on when stdout is not a terminal: a script reading a partial answer
// must be able to tell it from a whole one without parsing stderr, while a person at a
// terminal reads the note on stderr. --mark-truncated=false turns it off for a reader that
// takes every line for a row.
type TruncationFlag struct {
	value   bool
	fs      *pflag.FlagSet
	streams *output.Streams
}

// Register adds --mark-truncated to fs; s tells whether stdout is a terminal.
func (t *TruncationFlag) Register(fs *pflag.FlagSet, s *output.Streams) {
	t.fs, t.streams = fs, s
	fs.BoolVar(&t.value, output.MarkTruncatedFlag, false,
		"end json, jsonl and csv output cut at --limit with a mark that says so (default: on when stdout is not a terminal)")
}

// On reports whether the mark is written: the flag when given, else whether stdout is not a
// terminal.
func (t *TruncationFlag) On() bool {
	if t.fs != nil && t.fs.Changed(output.MarkTruncatedFlag) {
		return t.value
	}
	return t.streams != nil && !t.streams.OutTTY
}

// ReadLimit is what a listing with --limit limit reads: one more than it shows, so that
// WriteAtMost can tell a cut listing from a whole one (0, no limit, reads every row).
func ReadLimit(limit int) int {
	if limit <= 0 {
		return 0
	}
	return limit + 1
}

// WriteAtMost writes the rows of a listing read with ReadLimit(limit): at most limit of them
// and, when more were read, the truncation note on stderr ("showing the first 50 runs: more
// remain (raise --limit, 0 for no limit)") and, with mark on, the mark in the output, the
// same as dlq list's (output.Stream.Truncated). noun names the rows.
func WriteAtMost[T any](p *output.Printer, rows []T, limit int, mark *TruncationFlag, cols []output.Column[T], noun, empty string) error {
	s := output.NewStream(p, cols, output.StreamOptions[T]{Noun: noun, Empty: empty,
		MoreHint: "raise --limit, 0 for no limit", MarkTruncated: mark.On()})
	cut := limit > 0 && len(rows) > limit
	if cut {
		rows = rows[:limit]
	}
	for _, r := range rows {
		if err := s.Write(r); err != nil {
			return err
		}
	}
	if cut {
		s.Truncated(limit)
	}
	return s.Close()
}
