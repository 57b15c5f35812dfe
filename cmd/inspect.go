package cmd

import "github.com/spf13/cobra"

// NewCmdInspect is the inspect group. Placeholder until internal/inspect lands.
func NewCmdInspect(f *Factory) *cobra.Command {
	return newCmdNotYet("inspect", "Inspect topics, records and aggregates; lint an event stream")
}
