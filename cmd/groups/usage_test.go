package groups_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestGroupsUsage: what groups skip, describe and journal refuse before they connect.
func TestGroupsUsage(t *testing.T) {
	skip := []string{"groups", "skip", "billing", "--topic", "orders", "--partition", "0"}
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"groups", "skip"}, Want: "name the consumer group"},
		{Args: []string{"groups", "skip", "billing"}, Want: "--topic and --partition are required"},
		{Args: []string{"groups", "skip", "billing", "--topic", "orders"}, Want: "--topic and --partition are required"},
		{Args: append(skip, "--reason", "x"), Want: "--reason justifies an action"},
		{Args: append(skip, "--execute"), Want: "--execute needs --reason"},
		{Args: append(skip, "--execute", "--reason", "  "), Want: "--execute needs --reason"},
		{Args: append(skip, "--count", "2", "--to-offset", "9"), Want: "give one"},
		{Args: append(skip, "--to-time", "1h", "--to-offset", "9"), Want: "give one"},
		{Args: append(skip, "--count", "0"), Want: "--count"},
		{Args: append(skip, "--to-offset", "-1"), Want: "--to-offset -1"},
		{Args: append(skip, "--partition", "-1"), Want: "--partition -1"},
		{Args: append(skip, "--to-time", "yesterday-ish"), Want: "--to-time"},
		{Args: []string{"groups", "skip", "--undo", "r1", "--topic", "orders"}, Want: "--topic does not go with it"},
		{Args: []string{"groups", "skip", "billing", "--undo", "r1"}, Want: "drop the argument"},
		{Args: []string{"groups", "skip", "--undo", "r1", "--execute", "--yes"}, Want: "--execute needs --reason"},
		{Args: []string{"groups", "describe"}, Want: "one consumer group"},
		{Args: []string{"groups", "describe", "g", "--watch", "--interval", "0"}, Want: "must be more than 0 with --watch"},
		{Args: []string{"groups", "journal", "--limit", "-1"}, Want: `invalid argument "-1" for "--limit" flag: must be 0 (no limit) or more`},
		{Args: []string{"groups", "lsit"}, Want: "list"},
		{Args: []string{"inspect", "topic", "t", "--watch", "--interval", "0"}, Want: "must be more than 0 with --watch"},
		{Args: []string{"dlq", "list", "--follow", "--until", "1h"}, Want: "--follow prints dead letters as they arrive"},
	})
}
