package replay_test

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestReplayReasonIsNeverAFilter: through the whole command tree, --reason without --execute
// is a usage error that names --dlq-reason; a subcommand without filters (resume keeps its
// run's reason) gets cobra's plain unknown flag, not the hint.
func TestReplayReasonIsNeverAFilter(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"replay", "--from", "tasks.dlq", "--reason", "rejected"}, "the filter is --dlq-reason (--dlq-reason rejected)", ""},
		{[]string{"replay", "resume", "20250102-150405-3f9a1c", "--reason", "x"}, "unknown flag: --reason", "dlq-reason"},
		{[]string{"replay", "--from", "tasks.dlq", "--no-status"}, "unknown flag: --no-status", ""},
	} {
		r := roottest.Run(t, map[string]string{}, tc.args...)
		if r.Code != root.ExitUsage || !strings.Contains(r.Stderr, tc.want) || (tc.not != "" && strings.Contains(r.Stderr, tc.not)) || r.Stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}
