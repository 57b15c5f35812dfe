package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fieldwork/fieldwork/cmd"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script when a cmp fails")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"fieldwork": func() { os.Exit(cmd.Main()) },
		// fieldwork-exit WANT ARGS... runs fieldwork and fails unless it exits with WANT, so
		// scripts can pin exact exit codes (testscript's `! exec` only knows "non-zero").
		"fieldwork-exit": func() {
			want, err := strconv.Atoi(os.Args[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, "fieldwork-exit: first argument must be the expected exit code")
				os.Exit(2)
			}
			os.Args = append([]string{"fieldwork"}, os.Args[2:]...)
			if got := cmd.Main(); got != want {
				fmt.Fprintf(os.Stderr, "fieldwork-exit: exit code %d, want %d\n", got, want)
				os.Exit(1)
			}
			os.Exit(0)
		},
	})
}

// TestScripts runs the end-to-end CLI scripts under testdata/script. Scripts that need the
// real services start with `[!env:FIELDWORK_TEST_BROKERS] skip` only outside CI: in CI the
// variables are always set by .ci/run, so those scripts run.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			for _, k := range []string{
				"FIELDWORK_TEST_BROKERS", "FIELDWORK_TEST_SASL_BROKERS", "FIELDWORK_TEST_SASL_USER",
				"FIELDWORK_TEST_SASL_PASSWORD", "FIELDWORK_TEST_DSN", "CI",
			} {
				e.Setenv(k, os.Getenv(k))
			}
			// A clean, isolated home: no user config leaks into the scripts.
			e.Setenv("XDG_CONFIG_HOME", e.WorkDir+"/.config")
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
	})
}
