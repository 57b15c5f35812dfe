package processed_test

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestProcessedUsageErrors runs the root command: usage errors exit 2 before any store is
// opened (none is configured, and the DSN given points nowhere).
func TestProcessedUsageErrors(t *testing.T) {
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"processed", "get"}, Want: "takes one event id (got 0 arguments)"},
		{Args: []string{"processed", "get", "a", "b"}, Want: "takes one event id (got 2 arguments)"},
		{Args: []string{"processed", "get", "e1", "--consumer", ""}, Want: "--consumer: invalid consumer"},
		{Args: []string{"processed", "list", "extra"}, Want: `unknown command "extra"`},
		{Args: []string{"processed", "list", "--limit", "0"}, Want: `invalid argument "0" for "-n, --limit" flag: must be between 1 and 100000: this listing is read a page at a time (read on with --cursor)`},
		{Args: []string{"processed", "list", "--since", "yesterday"}, Want: `--since: "yesterday" is not a time`},
		{Args: []string{"processed", "list", "--since", "1h", "--until", "2h"}, Want: "is not after --since"},
		{Args: []string{"processed", "list", "--cursor", "nope"}, Want: "is not a cursor printed by fieldwork processed list"},
		{Args: []string{"processed", "stats", "--window", "0s"}, Want: `invalid argument "0s" for "--window" flag: "0s": must be more than 0`},
		{Args: []string{"processed", "stats", "--window", "a week"}, Want: `invalid argument "a week" for "--window"`},
		{Args: []string{"processed", "check", "--consumer", "c"}, Want: "--topic is required"},
		{Args: []string{"processed", "check", "tasks", "--consumer", "c"}, Want: "fieldwork processed check takes no arguments: name the topic with --topic tasks"},
		{Args: []string{"processed", "check", "--topic", "t"}, Want: "--consumer is required"},
		{Args: []string{"processed", "check", "-t", "a", "--topic", "b", "--consumer", "c"}, Want: `invalid argument "b" for "-t, --topic" flag: the flag takes one value, and "a" came first (give it once)`},
		{Args: []string{"processed", "check", "-t", "a", "--consumer", "c", "--consumer", "d"}, Want: `invalid argument "d" for "--consumer" flag: the flag takes one value, and "c" came first`},
		{Args: []string{"processed", "check", "--topic", "t", "--consumer", "c", "--start-offset", "1", "--since", "1h"}, Want: "not both"},
		{Args: []string{"processed", "check", "--topic", "t", "--consumer", "c", "--max-missing", "-1"}, Want: "--max-missing -1"},
		{Args: []string{"processed", "check", "--topic", "t", "--consumer", "c", "--max-malformed-share", "1.5"}, Want: `invalid argument "1.5" for "--max-malformed-share" flag: must be from 0 and at most 1`},
		{Args: []string{"processed", "check", "--topic", "t", "--consumer", "c", "--max-malformed-share", "NaN"}, Want: `invalid argument "NaN" for "--max-malformed-share" flag: must be from 0 and at most 1`},
		{Args: []string{"processed", "prune"}, Want: "--older-than is required"},
		{Args: []string{"processed", "prune", "--older-than", "-3d"}, Want: `invalid argument "-3d"`},
		{Args: []string{"processed", "prune", "--older-than", "1d", "--batch-size", "0"}, Want: `"0" for "--batch-size" flag: must be at least 1`},
		{Args: []string{"processed", "forget", "e1"}, Want: "--consumer is required: refusing to forget the events for every consumer unless --all-consumers"},
		{Args: []string{"processed", "forget", "e1", "--consumer", "c", "--all-consumers"}, Want: "exclude each other"},
		{Args: []string{"processed", "forget", "--consumer", "c"}, Want: "no event ids"},
		{Args: []string{"processed", "forget", "e1", "--from-file", "x", "--consumer", "c"}, Want: "not both"},
		{Args: []string{"processed", "forget", "--from-file", "-", "--consumer", "c", "--execute"}, Want: "pass --yes"},
		{Args: []string{"processed", "forget", "--from-file", "/no/such/file", "--consumer", "c"}, Want: "--from-file: open /no/such/file"},
		{Args: []string{"processed", "list", "--dsn", "postgres://u:s3cret@127.0.0.1:1/x", "--table", "a-b"}, Want: `invalid table name "a-b"`},
		{Args: []string{"processed", "list", "--dsn", "postgres://u:s3cret@127.0.0.1:notaport/x"}, Want: `invalid DSN "<unparseable DSN>": invalid port`},
		{Args: []string{"processed", "list"}, Want: "no dedup store configured"},
		{Args: []string{"db", "migrate", "--column-offset", "off"}, Want: "the --column-* flags are for querying an existing table"},
		{Args: []string{"db", "status", "extra"}, Want: `unknown command "extra"`},
	}, "s3cret")
}

func TestProcessedHelp(t *testing.T) {
	r := roottest.Run(t, map[string]string{}, "processed")
	for _, want := range []string{"\n  check ", "Commands:", "marker table flags (--schema, --table,"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) && !strings.Contains(strings.Join(strings.Fields(r.Stdout), " "), want) {
			t.Errorf("processed help lacks %q (exit %d):\n%s%s", want, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = roottest.Run(t, map[string]string{}, "help", "details", "processed")
	for _, want := range []string{"processed check --topic T", "pass --execute --yes in scripts"} {
		if r.Code != 0 || !strings.Contains(strings.Join(strings.Fields(r.Stdout), " "), want) {
			t.Errorf("help details processed lacks %q (exit %d):\n%s%s", want, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = roottest.Run(t, map[string]string{}, "help", "environment")
	for _, want := range []string{"--schema", "--column-event-id"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("help environment lacks %q (exit %d):\n%s%s", want, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = roottest.Run(t, map[string]string{}, "--help")
	if strings.Contains(r.Stdout, "processed   Query and manage processed-event markers (not available yet)") || !strings.Contains(r.Stdout, "db ") {
		t.Errorf("root help:\n%s", r.Stdout)
	}
}
