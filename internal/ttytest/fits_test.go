package ttytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// fitCols is the terminal every command is run on.
const fitCols = 80

// fitCase is how TestEveryCommandFits runs one command: its arguments after its path, the
// exit codes it may end with, and how it is driven (typed keys, Ctrl-C once it serves); or
// why it is not run.
type fitCase struct {
	args  []string
	codes []int // 0 when nil
	// until, when set, is what the command prints once it serves or shows its screen: then
	// keys are typed (Ctrl-C when keys is "").
	until, keys string
	skip        string
}

// TestEveryCommandFits runs every command of the tree (walked from cmd/root, so that a new
// command cannot be forgotten) on a pseudo-terminal 80 columns wide, over a `fieldwork dev`
// sandbox, and fails on any line wider than the terminal: the tables, the notes and warnings
// on stderr, every redraw of a progress line, the triage console's screen. A command that
// cannot be run meaningfully here is listed with the reason.
func TestEveryCommandFits(t *testing.T) {
	w := newFitWorld(t)
	cases := w.cases()
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		if c.Runnable() && c.HasParent() {
			paths = append(paths, strings.TrimPrefix(c.CommandPath(), "fieldwork "))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root.NewCmdRoot(cmdutil.NewFactory()))
	for _, p := range paths {
		t.Run(strings.ReplaceAll(p, " ", "_"), func(t *testing.T) {
			c, ok := cases[p]
			switch {
			case !ok:
				t.Fatalf("fieldwork %s has no case in TestEveryCommandFits: give it one, or the reason it cannot run here", p)
			case c.skip != "":
				t.Logf("not run: %s", c.skip)
				return
			}
			args := append(strings.Fields(p), c.args...)
			term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: fitCols, Env: w.env, Stdin: c.until != "", Dir: w.dir},
				testenv.Fieldwork(t), args...)
			if c.until != "" {
				term.WaitForText(within, c.until)
				term.Type(cmpOr(c.keys, "\x03"))
			}
			code, out := term.Wait()
			if !slices.Contains(cmpOrSlice(c.codes, []int{0}), code) {
				t.Errorf("fieldwork %s: exit %d, want one of %v:\n%s", strings.Join(args, " "), code, cmpOrSlice(c.codes, []int{0}), out)
			}
			for _, l := range wideLines(out, fitCols) {
				t.Errorf("fieldwork %s: a line %s", strings.Join(args, " "), l)
			}
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cmpOrSlice(s, def []int) []int {
	if len(s) == 0 {
		return def
	}
	return s
}

// csiMove is a cursor movement: to a row and column (H), a row (d), a column (G).
var csiMove = regexp.MustCompile(`\x1b\[(\d*)(?:;(\d*))?([HdG])`)

// wideLines are the lines of a terminal's output wider than cols: each line, each redraw of a
// line after a carriage return or an erase, each text drawn after a cursor movement (from
// the column it moved to), escape sequences left out; described for the error.
func wideLines(out string, cols int) []string {
	var wide []string
	for _, line := range strings.Split(out, "\n") {
		// Every move starts a new stretch of text, at its column.
		idx := csiMove.FindAllStringSubmatchIndex(line, -1)
		type stretch struct {
			col  int
			text string
		}
		var parts []stretch
		start, col := 0, 1
		for _, m := range idx {
			parts = append(parts, stretch{col, line[start:m[0]]})
			next := 1
			switch line[m[6]:m[7]] {
			case "H":
				if m[4] >= 0 && m[5] > m[4] {
					next, _ = strconv.Atoi(line[m[4]:m[5]])
				}
			case "G":
				if m[3] > m[2] {
					next, _ = strconv.Atoi(line[m[2]:m[3]])
				}
			}
			start, col = m[1], max(next, 1)
		}
		parts = append(parts, stretch{col, line[start:]})
		for _, p := range parts {
			for _, redraw := range regexp.MustCompile(`\r|\x1b\[K`).Split(p.text, -1) {
				text := ansi.Strip(redraw)
				if w := p.col - 1 + ansi.StringWidth(text); w > cols && !oneToken(text, cols) {
					wide = append(wide, fmt.Sprintf("%d columns wide: %q", w, text))
				}
			}
		}
	}
	return wide
}

// oneToken says whether text is a label and one token that no wrapping can fit (no blank in
// it, wider than the terminal less the label): processed list's "next cursor: TOKEN", which is
// copied whole.
func oneToken(text string, cols int) bool {
	f := strings.Fields(text)
	return len(f) > 0 && len(f) <= 3 && ansi.StringWidth(f[len(f)-1]) > cols-20
}

// TestWideLines: the measure itself: a line, a redraw after \r, and a text drawn at a column.
func TestWideLines(t *testing.T) {
	long := strings.Repeat("x ", 41)
	for _, c := range []struct {
		out  string
		wide int
	}{
		{strings.Repeat("x", 80) + "\n", 0},
		{long + "\n", 1},
		{"short\r" + long, 1},
		{"\x1b[1;70Hstatus: all", 0},
		{"\x1b[1;75Hstatus: all", 1},
		{"\x1b[1mbold\x1b[0m " + strings.Repeat("y", 70), 0},
		{"next cursor: " + strings.Repeat("z", 100), 0},
	} {
		if got := wideLines(c.out, 80); len(got) != c.wide {
			t.Errorf("%q: %v, want %d wide", c.out, got, c.wide)
		}
	}
}

// fitWorld is the sandbox the commands run over: a `fieldwork dev` (in-process broker, SQLite
// store, schema registry), a config file with a context naming it, a replay run journaled.
type fitWorld struct {
	env        []string
	dir, runID string
}

func newFitWorld(t *testing.T) *fitWorld {
	t.Helper()
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "dev.db")
	dev := exec.Command(testenv.Fieldwork(t), "dev", "--port", "0", "--dsn", dsn)
	dev.Env = testenv.CleanEnviron(dir, "NO_COLOR=1")
	stderr, err := dev.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Process.Signal(os.Interrupt); _ = dev.Wait() })
	var brokers, registry string
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "brokers":
				brokers = f[1]
			case len(f) == 3 && f[0] == "schema" && f[1] == "registry":
				registry = f[2]
			case strings.Contains(sc.Text(), "press Ctrl-C to stop"):
				close(found)
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(within):
		t.Fatal("fieldwork dev did not serve within a minute")
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "contexts:\n  dev80:\n    brokers: [%s]\n    dsn: %s\n", brokers, dsn), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &fitWorld{dir: dir, env: append(testenv.CleanEnviron(dir, "FIELDWORK_BROKERS="+brokers, "FIELDWORK_DSN="+dsn,
		"FIELDWORK_SCHEMA_REGISTRY="+registry, "USER=tester", "NO_COLOR=1"), "FIELDWORK_CONFIG="+cfg)}
	// A replay run in the journal, for replay show and resume.
	run := exec.Command(testenv.Fieldwork(t), "replay", "--topic", "tasks.dlq", "--dlq-reason", "rejected", "--execute", "--yes", "--reason", "r80", "-o", "json")
	run.Env = w.env
	out, err := run.Output()
	var sum struct {
		RunID string `json:"run_id"`
	}
	if err != nil || json.Unmarshal(out, &sum) != nil || sum.RunID == "" {
		t.Fatalf("a replay run for the sandbox: %v\n%s", err, out)
	}
	w.runID = sum.RunID
	return w
}

// cases are the commands' runs, by path.
func (w *fitWorld) cases() map[string]fitCase {
	help := "a group of commands: it prints its help, whose every line TestHelpFitsEightyColumns (cmd/root) checks"
	shell := "a script for a shell to load, not read on a terminal (completion typed on one is TestCompletionOnATerminal's)"
	return map[string]fitCase{
		"completion bash":       {skip: shell},
		"completion fish":       {skip: shell},
		"completion powershell": {skip: shell},
		"completion zsh":        {skip: shell},
		"context":               {skip: help},
		"db":                    {skip: help},
		"dlq":                   {skip: help},
		"groups":                {skip: help},
		"inspect":               {skip: help},
		"processed":             {skip: help},
		"consume":               {args: []string{"--topic", "tasks", "--group", "fit80", "--handler", "projection", "--stop-when-idle", "2s", "--metrics-addr", ""}},
		"context current":       {args: []string{"--context", "dev80"}},
		"context list":          {},
		"context show":          {args: []string{"dev80"}},
		"context use":           {args: []string{"dev80"}},
		"db migrate":            {},
		"db status":             {},
		"demo":                  {},
		"dev":                   {args: []string{"--port", "0", "--dsn", "sqlite:" + filepath.Join(w.dir, "dev2.db")}, until: "press Ctrl-C to stop", codes: []int{130}},
		"dlq list":              {args: []string{"--consumer", "task-projection"}},
		"dlq show":              {args: []string{"tasks.dlq/0/0"}},
		"dlq stats":             {},
		"docs":                  {args: []string{"--markdown-dir", filepath.Join(w.dir, "md"), "--man-dir", filepath.Join(w.dir, "man")}},
		"groups check":          {args: []string{"task-workers"}, codes: []int{3}},
		"groups describe":       {args: []string{"task-projection"}},
		"groups journal":        {},
		"groups list":           {},
		"groups reset":          {args: []string{"task-projection", "--to-earliest", "--reason", "rebuild the projection"}},
		"groups skip":           {args: []string{"task-projection", "--topic", "tasks", "--partition", "0", "--reason", "INC-80"}},
		"inspect aggregate":     {args: []string{"tasks", "task-0016"}},
		"inspect record":        {args: []string{"tasks/0/14"}},
		"inspect records":       {args: []string{"tasks", "--last", "3"}},
		"inspect topic":         {args: []string{"tasks"}},
		"inspect validate":      {args: []string{"tasks"}, codes: []int{3}},
		"processed check":       {args: []string{"--topic", "tasks", "--consumer", "task-projection"}, codes: []int{0, 3}},
		"processed forget":      {args: []string{"no-such-event", "--consumer", "task-projection", "--reason", "fixed"}},
		"processed get":         {args: []string{"no-such-event"}},
		"processed journal":     {},
		"processed list":        {},
		"processed prune":       {args: []string{"--older-than", "30d", "--force"}},
		"processed stats":       {},
		"replay":                {args: []string{"--topic", "tasks.dlq", "--dlq-reason", "malformed", "--to", "tasks", "--reason", "r80"}},
		"replay resume":         {args: []string{w.runID}},
		"replay runs":           {},
		"replay show":           {args: []string{w.runID}},
		"triage":                {until: "fieldwork triage", keys: "q"},
		"version":               {},
	}
}
