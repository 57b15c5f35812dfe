package groups_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestGroupsUsage: what groups skip, reset, describe and journal refuse before they connect.
func TestGroupsUsage(t *testing.T) {
	skip := []string{"groups", "skip", "billing", "--topic", "orders", "--partition", "0"}
	reset := []string{"groups", "reset", "billing", "--topic", "orders"}
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"groups", "skip"}, Want: "name the consumer group"},
		{Args: []string{"groups", "skip", "billing"}, Want: "--topic and --partition are required"},
		{Args: []string{"groups", "skip", "billing", "--topic", "orders"}, Want: "--topic and --partition are required"},
		{Args: append(skip, "--execute"), Want: "--execute needs --reason"},
		{Args: append(skip, "--execute", "--reason", "  "), Want: "--execute needs --reason"},
		{Args: append(skip, "--count", "2", "--to-offset", "9"), Want: "give one"},
		{Args: append(skip, "--to-datetime", "1h", "--to-offset", "9"), Want: "give one"},
		{Args: append(skip, "--to-time", "1h", "--to-offset", "9"), Want: "give one"}, // --to-time: its old name
		{Args: append(skip, "--count", "0"), Want: "--count"},
		{Args: append(skip, "--to-offset", "-1"), Want: "--to-offset -1"},
		{Args: []string{"groups", "skip", "billing", "--topic", "orders", "--partition", "-1"}, Want: "--partition -1"},
		// A one-value flag given two values: refused, not the last one kept unseen.
		{Args: append(skip, "--partition", "1"), Want: `invalid argument "1" for "--partition" flag: the flag takes one value, and "0" came first (give it once)`},
		{Args: append(skip, "--to-time", "1h", "--to-datetime", "2h"), Want: `--to-datetime: the flag takes one value, and "1h" came first`},
		{Args: append(skip, "--to-datetime", "yesterday-ish"), Want: `--to-datetime: "yesterday-ish" is not a time`},
		{Args: append(skip, "--to-time", "yesterday-ish"), Want: `--to-datetime: "yesterday-ish" is not a time`},
		{Args: append(reset, "--to-time", "1h", "--to-offset", "3"), Want: "(got --to-offset and --to-datetime)"},
		{Args: []string{"groups", "skip", "--undo", "r1", "--topic", "orders"}, Want: "--topic does not go with it"},
		{Args: []string{"groups", "skip", "billing", "--undo", "r1"}, Want: "drop the argument"},
		{Args: []string{"groups", "skip", "--undo", "r1", "--execute", "--yes"}, Want: "--execute needs --reason"},
		{Args: []string{"groups", "reset", "--to-earliest"}, Want: "name the consumer group"},
		{Args: reset, Want: "one of --to-earliest, --to-latest, --to-offset N, --to-datetime T, --shift-by ±N (got none)"},
		{Args: append(reset, "--to-earliest", "--to-offset", "3"), Want: "(got --to-earliest and --to-offset)"},
		{Args: append(reset, "--to-latest", "--shift-by", "-3"), Want: "(got --to-latest and --shift-by)"},
		{Args: append(reset, "--to-earliest=false"), Want: "--to-earliest=false"},
		{Args: append(reset, "--to-offset", "-1"), Want: "--to-offset -1: offsets are not negative"},
		{Args: append(reset, "--to-offset", "abc"), Want: `invalid argument "abc" for "--to-offset"`},
		{Args: append(reset, "--shift-by", "back"), Want: `invalid argument "back" for "--shift-by"`},
		{Args: append(reset, "--to-datetime", "yesterday-ish"), Want: "--to-datetime"},
		{Args: append(reset, "--to-earliest", "--partition", "-1"), Want: "--partition -1"},
		{Args: []string{"groups", "reset", "billing", "--to-earliest", "--partition", "0"}, Want: "give exactly one --topic with it"},
		{Args: append(reset, "--topic", "payments", "--to-earliest", "--partition", "0"), Want: "give exactly one --topic with it"},
		{Args: append(reset, "--topic", "bad/name", "--to-earliest"), Want: "bad/name"},
		{Args: append(reset, "--to-earliest", "--execute"), Want: "--execute needs --reason"},
		{Args: []string{"groups", "reset", "--undo", "r1", "--to-earliest"}, Want: "--to-earliest does not go with it"},
		{Args: []string{"groups", "reset", "billing", "--undo", "r1"}, Want: "drop the argument"},
		{Args: []string{"groups", "reset", "--undo", "r1", "--execute", "--yes"}, Want: "--execute needs --reason"},
		{Args: []string{"groups", "describe"}, Want: "one consumer group"},
		{Args: []string{"groups", "describe", ""}, Want: "the consumer group name is empty"},
		{Args: []string{"groups", "reset", " ", "--to-earliest"}, Want: "the consumer group name is empty"},
		{Args: []string{"groups", "skip", "", "--topic", "orders", "--partition", "0"}, Want: "the consumer group name is empty"},
		{Args: []string{"groups", "describe", "g", "--watch", "--interval", "0"}, Want: "must be more than 0 with --watch"},
		{Args: []string{"groups", "journal", "--limit", "-1"}, Want: `invalid argument "-1" for "-n, --limit" flag: must be 0 (no limit) or more`},
		{Args: []string{"groups", "lsit"}, Want: "list"},
		{Args: []string{"inspect", "topic", "t", "--watch", "--interval", "0"}, Want: "must be more than 0 with --watch"},
		{Args: []string{"dlq", "list", "--follow", "--until", "1h"}, Want: "--follow prints dead letters as they arrive"},
	})
}
