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
