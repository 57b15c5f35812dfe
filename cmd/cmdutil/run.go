package cmdutil

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/output"
)

// Run ends a command's RunE once its flags are parsed into opts: runF when a test set it (to
// capture the options), else run, the command's own work.
func Run[O any](cmd *cobra.Command, opts O, runF, run func(context.Context, O) error) error {
	if runF != nil {
		return runF(cmd.Context(), opts)
	}
	return run(cmd.Context(), opts)
}

// WaitAndClose holds a command that serves until interrupted (dev, demo --keep) until ctx
// ends, then closes what it serves, saying so on stderr: "fieldwork NAME: stopping", then
// "stopped" once closed.
func WaitAndClose(ctx context.Context, s *output.Streams, name string, close func() error) error {
	<-ctx.Done()
	fmt.Fprintf(s.ErrOut, "fieldwork %s: stopping\n", name)
	if err := close(); err != nil {
		return err
	}
	fmt.Fprintf(s.ErrOut, "fieldwork %s: stopped\n", name)
	return nil
}

// Warn writes a warning on stderr: "warning: " (styled on a terminal), then msg, through the
// terminal rule (docs/design.md §4.1).
func Warn(s *output.Streams, msg string) {
	fmt.Fprintln(s.ErrText(), s.ErrStyles().Warn.Render("warning: ")+msg)
}

// Note writes a note on stderr: "note: " (dimmed on a terminal), then msg, through the
// terminal rule (docs/design.md §4.1).
func Note(s *output.Streams, msg string) {
	fmt.Fprintln(s.ErrText(), s.ErrStyles().Dim.Render("note: ")+msg)
}
