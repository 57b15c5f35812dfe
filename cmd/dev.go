package cmd

import "github.com/spf13/cobra"

// NewCmdDev is the embedded sandbox. Placeholder until internal/devstack lands.
func NewCmdDev(f *Factory) *cobra.Command {
	return newCmdNotYet("dev", "Serve an embedded broker and store seeded with sample events")
}
