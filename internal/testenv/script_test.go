package testenv_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestMain runs the harness's own scripts with a stand-in for fieldwork's main (testenv
// cannot import the commands, which import it): `fieldwork say WORDS...` prints the words,
// `fieldwork exit CODE` exits with CODE after a line on stderr.
func TestMain(m *testing.M) {
	testenv.ScriptMain(m, func() int {
		switch {
		case len(os.Args) >= 2 && os.Args[1] == "say":
			fmt.Println(os.Args[2:])
			return 0
		case len(os.Args) == 3 && os.Args[1] == "exit":
			code, _ := strconv.Atoi(os.Args[2])
			fmt.Fprintln(os.Stderr, "exiting", code)
			return code
		}
		fmt.Fprintln(os.Stderr, "usage: fieldwork say WORDS... | exit CODE")
		return 2
	})
}

// TestScriptHarness runs testdata/script: the shared setup, condition and commands, with
// the real broker and database where a script needs them.
func TestScriptHarness(t *testing.T) {
	p := testenv.ScriptParams("testdata/script")
	p.Cmds["fw-test-cmd"] = func(ts *testscript.TestScript, neg bool, args []string) {
		fmt.Fprintln(ts.Stdout(), "own command")
	}
	testscript.Run(t, p)
}
