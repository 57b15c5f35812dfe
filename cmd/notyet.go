package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// notYet lists the command groups of DESIGN.md section 4. Those that no file registers (see
// register in root.go) answer with a clear error and exit code 1, never a silent no-op, and
// are listed as not available in --help.
var notYet = []struct{ name, short string }{
	{"dlq", "List, show and summarise dead-letter topics"},
	{"replay", "Plan and execute replays of records back into their source topics"},
	{"processed", "Query and manage processed-event markers"},
	{"consume", "Run the reference idempotent consumer"},
	{"db", "Migrate and report on the dedup store's schema"},
	{"demo", "Run the whole story in one process with no setup"},
	{"inspect", "Inspect topics, records and aggregates; lint an event stream"},
	{"dev", "Serve an embedded broker and store seeded with sample events"},
}

func newCmdNotYet(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              short + " (not available yet)",
		GroupID:            "later",
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("fieldwork %s is not available yet in this build", name)
		},
	}
}
