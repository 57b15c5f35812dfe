package processed_test

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestProcessedUsageErrors runs the root command: usage errors exit 2 before any store is
// opened (none is configured, and the DSN given points nowhere).
func TestProcessedUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"processed", "get"}, "takes one event id (got 0 argument(s))"},
		{[]string{"processed", "get", "a", "b"}, "takes one event id (got 2 argument(s))"},
		{[]string{"processed", "get", "e1", "--consumer", ""}, "--consumer: invalid consumer"},
		{[]string{"processed", "list", "extra"}, `unknown command "extra"`},
		{[]string{"processed", "list", "--limit", "0"}, "--limit 0: must be between 1 and 100000"},
		{[]string{"processed", "list", "--since", "yesterday"}, `invalid argument "yesterday" for "--since" flag: "yesterday" is not a time`},
		{[]string{"processed", "list", "--since", "1h", "--until", "2h"}, "is not after --since"},
		{[]string{"processed", "list", "--cursor", "nope"}, "is not a cursor printed by fieldwork processed list"},
		{[]string{"processed", "stats", "--window", "0s"}, `invalid argument "0s" for "--window" flag: "0s": must be more than 0`},
		{[]string{"processed", "stats", "--window", "a week"}, `invalid argument "a week" for "--window"`},
		{[]string{"processed", "check", "--consumer", "c"}, "--topic is required"},
		{[]string{"processed", "check", "--topic", "t"}, "--consumer is required"},
		{[]string{"processed", "check", "--topic", "t", "--consumer", "c", "--start-offset", "1", "--since", "1h"}, "not both"},
		{[]string{"processed", "check", "--topic", "t", "--consumer", "c", "--max-missing", "-1"}, "--max-missing -1"},
		{[]string{"processed", "prune"}, "--older-than is required"},
		{[]string{"processed", "prune", "--older-than", "-3d"}, `invalid argument "-3d"`},
		{[]string{"processed", "prune", "--older-than", "1d", "--batch-size", "0"}, "--batch-size 0"},
		{[]string{"processed", "forget", "e1"}, "--consumer is required: refusing to forget the events for every consumer unless --all-consumers"},
		{[]string{"processed", "forget", "e1", "--consumer", "c", "--all-consumers"}, "exclude each other"},
		{[]string{"processed", "forget", "--consumer", "c"}, "no event ids"},
		{[]string{"processed", "forget", "e1", "--from-file", "x", "--consumer", "c"}, "not both"},
		{[]string{"processed", "forget", "--from-file", "-", "--consumer", "c"}, "pass --yes"},
		{[]string{"processed", "forget", "--from-file", "/no/such/file", "--consumer", "c"}, "--from-file: open /no/such/file"},
		{[]string{"processed", "list", "--dsn", "postgres://u:s3cret@127.0.0.1:1/x", "--table", "a-b"}, `invalid table name "a-b"`},
		{[]string{"processed", "list", "--dsn", "postgres://u:s3cret@127.0.0.1:notaport/x"}, `invalid DSN "postgres://u:xxxxx@127.0.0.1:notaport/x"`},
		{[]string{"processed", "list"}, "no dedup store configured"},
		{[]string{"db", "migrate", "--column-offset", "off"}, "the --column-* flags are for querying an existing table"},
		{[]string{"db", "status", "extra"}, `unknown command "extra"`},
	}
	for _, tc := range cases {
		r := roottest.Run(t, map[string]string{}, tc.args...)
		if r.Code != root.ExitUsage || !strings.Contains(r.Stderr, tc.want) || r.Stdout != "" || strings.Contains(r.Stderr, "s3cret") {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 with %q", tc.args, r.Code, r.Stderr, r.Stdout, tc.want)
		}
	}
}

func TestProcessedHelp(t *testing.T) {
	r := roottest.Run(t, map[string]string{}, "processed")
	for _, want := range []string{"processed check --topic T", "Available Commands", "--schema", "--column-event-id", "pass --yes in scripts"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("processed help lacks %q (exit %d):\n%s%s", want, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = roottest.Run(t, map[string]string{}, "--help")
	if strings.Contains(r.Stdout, "processed   Query and manage processed-event markers (not available yet)") || !strings.Contains(r.Stdout, "db ") {
		t.Errorf("root help:\n%s", r.Stdout)
	}
}
