package cmdutil

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// SelectionFlags are the flags that choose which records a scan reads: partitions, and either
// an inclusive offset range or a time window.
type SelectionFlags struct {
	Partitions  []int32
	StartOffset int64
	EndOffset   int64
	Since       string
	Until       string

	startSet, endSet bool
}

// Register adds --partition, --start-offset, --end-offset, --since and --until to cmd.
func (s *SelectionFlags) Register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int32SliceVar(&s.Partitions, "partition", nil, "read only this partition (repeatable, or comma-separated; default all)")
	fl.Int64Var(&s.StartOffset, "start-offset", 0, "first offset to read, inclusive (in every selected partition)")
	fl.Int64Var(&s.EndOffset, "end-offset", 0, "last offset to read, inclusive")
	fl.StringVar(&s.Since, "since", "", "read records from this time: RFC 3339 (2025-01-02T15:04:05Z) or a duration ago (2h, 30m)")
	fl.StringVar(&s.Until, "until", "", "read records before this time: RFC 3339 or a duration ago")
}

// Selection validates the flags and turns them into a kafka.Selection; now anchors durations.
func (s *SelectionFlags) Selection(cmd *cobra.Command, now time.Time) (kafka.Selection, error) {
	s.startSet, s.endSet = cmd.Flags().Changed("start-offset"), cmd.Flags().Changed("end-offset")
	var sel kafka.Selection
	for _, p := range s.Partitions {
		if p < 0 {
			return sel, fwerr.Usagef("--partition %d: partitions are numbered from 0", p)
		}
	}
	sel.Partitions = s.Partitions
	if (s.startSet || s.endSet) && (s.Since != "" || s.Until != "") {
		return sel, fwerr.Usagef("choose either an offset range (--start-offset/--end-offset) or a time window (--since/--until), not both")
	}
	if s.startSet {
		if s.StartOffset < 0 {
			return sel, fwerr.Usagef("--start-offset %d: offsets are not negative", s.StartOffset)
		}
		v := s.StartOffset
		sel.StartOffset = &v
	}
	if s.endSet {
		if s.EndOffset < 0 {
			return sel, fwerr.Usagef("--end-offset %d: offsets are not negative", s.EndOffset)
		}
		v := s.EndOffset
		sel.EndOffset = &v
	}
	if s.startSet && s.endSet && s.EndOffset < s.StartOffset {
		return sel, fwerr.Usagef("--end-offset %d is before --start-offset %d", s.EndOffset, s.StartOffset)
	}
	var err error
	if sel.Since, sel.Until, err = ParseWindow(s.Since, s.Until, now); err != nil {
		return sel, err
	}
	return sel, nil
}

// ParseWindow reads --since and --until (each as ParseWhen does) and checks that the window
// they make is not empty.
func ParseWindow(since, until string, now time.Time) (from, to time.Time, err error) {
	if from, err = ParseWhen("--since", since, now); err != nil {
		return from, to, err
	}
	if to, err = ParseWhen("--until", until, now); err != nil {
		return from, to, err
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		return from, to, fwerr.Usagef("--until %s is not after --since %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return from, to, nil
}

// ParseWhen reads an RFC 3339 time, or a Go duration meaning that long before now.
func ParseWhen(flag, v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, fwerr.Usagef("%s %s: a duration means that long ago and must be positive", flag, v)
		}
		return now.Add(-d), nil
	}
	return time.Time{}, fwerr.Usagef("%s %q is neither an RFC 3339 time (2025-01-02T15:04:05Z) nor a duration (2h, 30m)", flag, v)
}
