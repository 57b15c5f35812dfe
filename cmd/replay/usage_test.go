package replay_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestReplayReasonIsNeverAFilter: through the whole command tree, a --reason named like a
// dead letter's reason gets a note that names --dlq-reason (a dry run takes --reason: here it
// then stops at the missing broker); a subcommand without filters (resume keeps its run's
// reason) gets cobra's plain unknown flag, not the hint.
func TestReplayReasonIsNeverAFilter(t *testing.T) {
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"replay", "--from", "tasks.dlq", "--reason", "rejected"}, Want: "the filter of dead letters by their reason is --dlq-reason rejected"},
		{Args: []string{"replay", "--from", "tasks.dlq", "--no-status"}, Want: "unknown flag: --no-status"},
	})
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"replay", "resume", "20250102-150405-3f9a1c", "--reason", "x"}, Want: "unknown flag: --reason"},
	}, "dlq-reason")
}
