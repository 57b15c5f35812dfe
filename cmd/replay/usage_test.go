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
		{Args: []string{"replay", "--topic", "tasks.dlq", "--reason", "rejected"}, Want: "the filter of dead letters by their reason is --dlq-reason rejected"},
		{Args: []string{"replay", "--topic", "tasks.dlq", "--no-status"}, Want: "unknown flag: --no-status"},
		// The topic a command reads is --topic: replay's old --from is answered with it elsewhere.
		{Args: []string{"dlq", "list", "--from", "tasks.dlq"}, Want: "unknown flag: --from\n\nDid you mean this?\n\t--topic\n"},
		// A value outside a fixed set is answered with the close ones.
		{Args: []string{"replay", "--topic", "tasks.dlq", "--dlq-reason", "Rejected"}, Want: "\nDid you mean this?\n\trejected\n"},
		{Args: []string{"dlq", "list", "--status", "resolve", "--consumer", "c"}, Want: "\nDid you mean this?\n\tresolved\n"},
	})
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"replay", "resume", "20250102-150405-3f9a1c", "--reason", "x"}, Want: "unknown flag: --reason"},
	}, "dlq-reason")
}
