package cmdutil

import (
	"context"

	"github.com/spf13/cobra"
)

// Run ends a command's RunE once its flags are parsed into opts: runF when a test set it (to
// capture the options), else run, the command's own work.
func Run[O any](cmd *cobra.Command, opts O, runF, run func(context.Context, O) error) error {
	if runF != nil {
		return runF(cmd.Context(), opts)
	}
	return run(cmd.Context(), opts)
}
