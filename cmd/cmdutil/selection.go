package cmdutil

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// TimeHelp is how every --since and --until describes what it takes.
const TimeHelp = "RFC 3339 (2026-12-01T15:04:05Z), a local time and its zone (\"2026-12-01 15:04 Europe/Paris\"), epoch milliseconds, a date (2026-12-01, midnight UTC) or a duration ago (2h, 7d)"

// WindowFlags are --since and --until, read by timespec: a bad value is refused while the
// flags are parsed (exit 2), and help shows both as a time.
type WindowFlags struct {
	since, until time.Time
	sinceValue   *timespec.TimeValue
	untilValue   *timespec.TimeValue
}

// Register adds --since and --until to fs with the given descriptions of what they bound
// ("read records from this time"); TimeHelp is appended to the first.
func (w *WindowFlags) Register(fs *pflag.FlagSet, since, until string) {
	w.sinceValue = timespec.NewTimeValue(&w.since, nil)
	w.untilValue = timespec.NewTimeValue(&w.until, nil)
	fs.Var(w.sinceValue, "since", since+": "+TimeHelp)
	fs.Var(w.untilValue, "until", until+": the same forms")
}

// Window is the window the flags give, zero times for the bounds not given: durations count
// back from now (the command's clock, so that both bounds share one), and --until must be
// after --since.
func (w *WindowFlags) Window(now time.Time) (since, until time.Time, err error) {
	if w.sinceValue == nil {
		return time.Time{}, time.Time{}, nil
	}
	return ParseWindow(w.sinceValue.String(), w.untilValue.String(), now)
}

// Given reports whether --since or --until was given.
func (w *WindowFlags) Given() bool {
	return w.sinceValue != nil && (w.sinceValue.String() != "" || w.untilValue.String() != "")
}

// ParseWindow reads --since and --until as timespec.ParseTime does ("" is no bound) and
// checks that the window they make is not empty.
func ParseWindow(since, until string, now time.Time) (from, to time.Time, err error) {
	if from, err = parseBound("--since", since, now); err != nil {
		return from, to, err
	}
	if to, err = parseBound("--until", until, now); err != nil {
		return from, to, err
	}
	return from, to, kafka.CheckWindow(from, to)
}

func parseBound(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := timespec.ParseTime(v, now)
	if err != nil {
		return t, fwerr.Usagef("%s: %v", flag, err)
	}
	return t, nil
}

// SelectionFlags are the flags that choose which records a scan reads: partitions, and either
// an inclusive offset range or a time window.
type SelectionFlags struct {
	Partitions  []int32
	StartOffset int64
	EndOffset   int64
	WindowFlags
}

// Register adds --partition, --start-offset, --end-offset, --since and --until to cmd.
func (s *SelectionFlags) Register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int32SliceVar(&s.Partitions, "partition", nil, "read only partition `N` (repeatable, or comma-separated; default all)")
	fl.Lookup("partition").DefValue = "" // all, said above; not "(default [])"
	fl.Int64Var(&s.StartOffset, "start-offset", 0, "first offset to read, inclusive (in every selected partition)")
	fl.Int64Var(&s.EndOffset, "end-offset", 0, "last offset to read, inclusive")
	s.WindowFlags.Register(fl, "read records from this time", "read records before this time")
}

// Selection validates the flags and turns them into a kafka.Selection; now anchors durations.
func (s *SelectionFlags) Selection(cmd *cobra.Command, now time.Time) (kafka.Selection, error) {
	sel := kafka.Selection{Partitions: s.Partitions}
	if cmd.Flags().Changed("start-offset") {
		v := s.StartOffset
		sel.StartOffset = &v
	}
	if cmd.Flags().Changed("end-offset") {
		v := s.EndOffset
		sel.EndOffset = &v
	}
	var err error
	if sel.Since, sel.Until, err = s.Window(now); err != nil {
		return sel, err
	}
	return sel, sel.Check()
}
