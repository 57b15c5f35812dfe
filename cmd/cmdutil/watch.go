package cmdutil

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// WatchFlags are --watch and --interval, the same in every command that can read its report
// again and again (inspect topic, groups describe): --watch reads it every --interval until
// interrupted.
type WatchFlags struct {
	Watch    bool
	Interval time.Duration
}

// Register adds the flags; interval is --interval's default, what it means (intervalHelp)
// says the command.
func (w *WatchFlags) Register(fs *pflag.FlagSet, interval time.Duration, intervalHelp string) {
	fs.BoolVar(&w.Watch, "watch", false, "read again every --interval and print each report, until interrupted (json: one array, jsonl: a line per report)")
	fs.Var(timespec.NewDurationValue(&w.Interval, interval).AllowZero(), "interval", intervalHelp)
}

// Check refuses a --watch without an interval to wait.
func (w *WatchFlags) Check() error {
	if w.Interval < 0 || (w.Watch && w.Interval == 0) {
		return fwerr.Usagef("--interval %s: must be more than 0 with --watch", timespec.Format(w.Interval))
	}
	return nil
}

// Watch calls read, prints what it returns, waits interval, and again, until ctx is done
// (an interruption ends the watch; it is not an error). Every report is printed in p's
// format: a line each in JSON Lines, one array in JSON (closed at the end), and in a table
// or CSV the report again under a line that says when it was read. A read that fails ends
// the watch with its error.
func Watch[T any](ctx context.Context, p *output.Printer, interval time.Duration, now func() time.Time,
	read func(context.Context) (T, error), sections func(T) []output.Section) error {
	var stream *output.Stream[T]
	if p.Format == output.FormatJSON || p.Format == output.FormatJSONL {
		stream = output.NewStream[T](p, nil, output.StreamOptions[T]{Noun: "reports"})
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var err error
	for n := 0; ; n++ {
		var v T
		v, err = read(ctx)
		if err != nil {
			break
		}
		if stream != nil {
			err = stream.Write(v)
			if err == nil {
				err = stream.Flush()
			}
		} else {
			if n > 0 {
				fmt.Fprintln(p.Streams.Out)
			}
			if p.Format == output.FormatTable {
				fmt.Fprintln(p.Streams.Out, output.Printable(p.Styles.Dim.Render("── read at "+FormatTime(now())+", every "+timespec.Format(interval)+" until interrupted"), p.Styles.Color()))
			}
			err = p.Object(v, sections(v))
		}
		if err != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-t.C:
			continue
		}
		break
	}
	if ctx.Err() != nil {
		err = nil // interrupted: the end of a watch
	}
	if stream != nil {
		if cerr := stream.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
