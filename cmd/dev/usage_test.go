package dev_test

import (
	"testing"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
)

// TestDevAndDemoUsage: what dev and demo refuse before they start a broker; --port is one
// flag in both (cmdutil.PortVar).
func TestDevAndDemoUsage(t *testing.T) {
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"dev", "--port", "70000"}, Want: `invalid argument "70000" for "--port" flag: must be between 0 (any free port) and 65535`},
		{Args: []string{"demo", "--port", "-1"}, Want: `invalid argument "-1" for "--port" flag: must be between 0 (any free port) and 65535`},
		{Args: []string{"dev", "--port", "x"}, Want: `invalid argument "x" for "--port" flag: want a whole number`},
		{Args: []string{"dev", "--partitions", "0"}, Want: "--partitions 0: must be between 1 and 1000"},
		{Args: []string{"demo", "--dir", "/no/such/dir"}, Want: "--dir /no/such/dir: not an existing directory"},
	})
}
