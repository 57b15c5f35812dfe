package root_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/output"
)

// helpPages are the argument lists that print every page of help: each command's --help and
// each help topic through `fieldwork help`.
func helpPages(t *testing.T) [][]string {
	t.Helper()
	s, _, _, _ := output.Test()
	tree := root.NewCmdRoot(&cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }})
	tree.InitDefaultHelpCmd()
	tree.InitDefaultCompletionCmd()
	var pages [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		switch {
		case c.IsAdditionalHelpTopicCommand():
			pages = append(pages, append([]string{"help"}, path...))
		case c.IsAvailableCommand() || c == tree:
			pages = append(pages, append(slices.Clone(path), "--help"))
		default:
			return
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	walk(tree, nil)
	return pages
}

// TestHelpFitsEightyColumns: off a terminal every page of help is wrapped to 80 columns, and
// none lists the connection flags, which `fieldwork help environment` lists once.
func TestHelpFitsEightyColumns(t *testing.T) {
	pages := helpPages(t)
	if len(pages) < 60 {
		t.Fatalf("only %d help pages", len(pages))
	}
	for _, args := range pages {
		r := roottest.Run(t, map[string]string{}, args...)
		if r.Code != 0 || r.Stdout == "" {
			t.Errorf("fieldwork %s: exit %d, %d bytes\n%s", strings.Join(args, " "), r.Code, len(r.Stdout), r.Stderr)
			continue
		}
		for i, line := range strings.Split(r.Stdout, "\n") {
			if w := ansi.StringWidth(line); w > root.HelpWidth {
				t.Errorf("fieldwork %s: line %d is %d columns wide: %q", strings.Join(args, " "), i+1, w, line)
			}
		}
		environment := slices.Equal(args, []string{"help", "environment"})
		for _, flag := range []string{"--tls-ca", "--sasl-mechanism", "--schema-registry-username", "--column-event-id"} {
			if strings.Contains(r.Stdout, flag+" ") != environment {
				t.Errorf("fieldwork %s: lists %s: %v", strings.Join(args, " "), flag, !environment)
			}
		}
	}
	top := roottest.Run(t, map[string]string{}, "--help").Stdout
	for _, want := range []string{"\nExamples:\n", "  fieldwork demo\n", "  fieldwork dev\n", "fieldwork help environment"} {
		if !strings.Contains(top, want) {
			t.Errorf("fieldwork --help has no %q:\n%s", want, top)
		}
	}
}

// TestHelpOnAWideTerminal: help is wrapped to the terminal, up to 100 columns.
func TestHelpOnAWideTerminal(t *testing.T) {
	for _, width := range []int{60, 120} {
		s, _, out, _ := output.Test()
		s.OutTTY, s.Width, s.NoColor = true, width, true
		c := root.NewCmdRoot(&cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }})
		c.SetArgs([]string{"replay", "--help"})
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		widest := 0
		for _, line := range strings.Split(out.String(), "\n") {
			widest = max(widest, ansi.StringWidth(line))
		}
		if want := min(width, 100); widest > want || widest < want-15 {
			t.Errorf("replay --help on a %d-column terminal: widest line %d, want at most %d and near it", width, widest, want)
		}
	}
}

// helpExamples are the command lines of every Example of the tree that invoke fieldwork:
// lines continued with a backslash joined, comments and what follows a pipe left out.
func helpExamples(t *testing.T) (lines []string) {
	t.Helper()
	s, _, _, _ := output.Test()
	tree := root.NewCmdRoot(&cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(strings.ReplaceAll(c.Example, "\\\n", " "), "\n") {
			line = strings.TrimSpace(line)
			if i := strings.Index(line, "| fieldwork "); i >= 0 {
				line = line[i+2:] // the fieldwork a pipe feeds
			}
			if !strings.HasPrefix(line, "fieldwork ") {
				continue
			}
			if i := strings.Index(line, " | "); i >= 0 {
				line = line[:i]
			}
			if i := strings.Index(line, " > "); i >= 0 {
				line = line[:i] // a redirection: the test reads stdout itself
			}
			lines = append(lines, line)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree)
	return lines
}

// TestHelpExamplesRun runs every help example against `fieldwork dev` (on a terminal that
// answers no to a confirmation, so that no example acts unasked; the names they give need not
// exist there) and fails on one that the command line refuses: an exit 2 (usage) names a flag,
// an argument or a value that no longer exists or is spelled otherwise.
func TestHelpExamplesRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	t.Chdir(dir) // where the examples' files are (ids.txt, ./fieldwork.db)
	dsn := "sqlite:" + filepath.Join(dir, "dev.db")
	addr, _, _, _ := roottest.StartDev(t, ctx, "--dsn", dsn)
	env := map[string]string{"FIELDWORK_BROKERS": addr, "FIELDWORK_DSN": dsn, "USER": "tester", "EDITOR": "true"}
	subst := exampleNames(t, env, dir)
	lines := helpExamples(t)
	if len(lines) < 80 {
		t.Fatalf("only %d examples", len(lines))
	}
	// What an example cannot run here: another server on a fixed port, a console, files
	// written into the checkout.
	skip := []string{"fieldwork dev", "fieldwork demo", "fieldwork triage", "fieldwork docs", "fieldwork completion"}
	ran := 0
	for _, line := range lines {
		if slices.ContainsFunc(skip, func(p string) bool { return line == p || strings.HasPrefix(line, p+" ") }) {
			continue
		}
		for from, to := range subst {
			line = strings.ReplaceAll(line, from, to)
		}
		line = prepareExample(t, env, line)
		args, err := splitShell(line)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		code, stderr := roottest.RunFor(t, env, "n\n", 5*time.Second, args[1:]...)
		if !slices.Contains([]int{root.ExitOK, root.ExitCheckFailed, root.ExitCancelled, root.ExitInterrupted}, code) {
			t.Errorf("%s: exit %d\n%s", line, code, stderr)
		}
		ran++
	}
	t.Logf("ran %d of %d examples", ran, len(lines))
}

// exampleNames maps what the examples name that the sandbox lacks (a server elsewhere, run
// ids, an event id, a cursor) to what the sandbox has, making it first: a replay run, a
// group reset (which also gives the skip examples records to skip), a webhook, a file of ids.
func exampleNames(t *testing.T, env map[string]string, dir string) map[string]string {
	t.Helper()
	jsonOf := func(args ...string) map[string]any {
		t.Helper()
		r := roottest.RunCode(t, copyEnv(env), 0, append(args, "-o", "json")...)
		var v map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r.Stdout)
		}
		return v
	}
	shown := jsonOf("dlq", "show", "tasks.dlq/0/0")
	replayed := jsonOf("replay", "tasks.dlq/0/1", "--execute", "--yes", "--reason", "example run")
	page := roottest.RunCode(t, copyEnv(env), 0, "processed", "list", "--limit", "1")
	cursor := regexp.MustCompile(`next cursor: (\S+)`).FindStringSubmatch(page.Stderr)
	if cursor == nil {
		t.Fatalf("processed list --limit 1 printed no cursor:\n%s", page.Stderr)
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	if err := os.WriteFile(filepath.Join(dir, "ids.txt"), []byte(shown["event_id"].(string)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"postgres://app@db/app":           env["FIELDWORK_DSN"],
		"postgres://…":                    env["FIELDWORK_DSN"],
		"https://hooks.example.com/tasks": hook.URL,
		"evt-7":                           shown["event_id"].(string),
		"eyJ0Ijoi…":                       cursor[1],
		"20250102-150405-3f9a1c":          replayed["run_id"].(string),
	}
}

// prepareExample makes what one example needs, just before it runs, and returns the line to
// run: a group with records to skip (task-projection moved back to the start of tasks, which
// the examples before may have consumed) and an action an undo can undo (that very move); the
// SQLite store an example names, created as `fieldwork db migrate` creates it.
func prepareExample(t *testing.T, env map[string]string, line string) string {
	t.Helper()
	const groupActionID = "20261201-101500-3f9a1c"
	if strings.Contains(line, "groups skip task-projection") || strings.Contains(line, groupActionID) {
		roottest.RunCode(t, copyEnv(env), 0, "groups", "reset", "task-projection", "--topic", "tasks", "--to-latest",
			"--execute", "--yes", "--reason", "example run")
		r := roottest.RunCode(t, copyEnv(env), 0, "groups", "reset", "task-projection", "--topic", "tasks", "--to-earliest",
			"--execute", "--yes", "--reason", "example run", "-o", "json")
		var reset struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &reset); err != nil || reset.RunID == "" {
			t.Fatalf("groups reset: %v\n%s", err, r.Stdout)
		}
		line = strings.ReplaceAll(line, groupActionID, reset.RunID)
	}
	if strings.Contains(line, "sqlite:./fieldwork.db") {
		roottest.RunCode(t, copyEnv(env), 0, "db", "migrate", "--dsn", "sqlite:./fieldwork.db")
	}
	return line
}

// splitShell splits a command line as a shell does its words: blanks outside quotes
// separate, single and double quotes group, a backslash escapes the next character outside
// single quotes.
func splitShell(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errUnclosedQuote
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var errUnclosedQuote = &quoteError{}

type quoteError struct{}

func (*quoteError) Error() string { return "unclosed quote" }

// TestShortFlagsAreOneVocabulary: the one-letter flags mean one thing in every command: each
// flag of a name cmdutil gives a shorthand has it (-t --topic, -g --group, -n --limit,
// --count, --last), and no other flag takes a letter but -o (--output), -h (--help) and -f
// (--follow).
func TestShortFlagsAreOneVocabulary(t *testing.T) {
	s, _, _, _ := output.Test()
	tree := root.NewCmdRoot(&cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }})
	others := map[string]string{"output": "o", "help": "h", "follow": "f"}
	seen := map[string]int{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		check := func(f *pflag.Flag) {
			want := cmdutil.Shorthand(f.Name)
			if want == "" {
				want = others[f.Name]
			}
			if f.Shorthand != want {
				t.Errorf("%s --%s: shorthand %q, want %q", c.CommandPath(), f.Name, f.Shorthand, want)
			}
			seen[f.Name]++
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree)
	for _, name := range []string{"topic", "group", "limit", "count", "last"} {
		if seen[name] == 0 {
			t.Errorf("no command has --%s", name)
		}
	}
	r := roottest.Run(t, map[string]string{}, "dlq", "list", "-t", "a.dlq", "-n", "0", "-g", "billing", "--pattern", "x")
	if r.Code != root.ExitUsage || !strings.Contains(r.Stderr, "choose either --topic or --pattern") {
		t.Errorf("dlq list -t … --pattern: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestFlagTypesAreOneVocabulary: a flag name takes the same kind of value in every command
// (help names it: time, duration, string, …), so that --since of dlq list reads and shows as
// --since of inspect records does. One value or several of the kind is the command's choice
// (--topic names one topic to processed check, several to consume).
func TestFlagTypesAreOneVocabulary(t *testing.T) {
	s, _, _, _ := output.Test()
	tree := root.NewCmdRoot(&cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }})
	types := map[string]map[string][]string{} // name → type → commands
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			kind := strings.TrimSuffix(strings.TrimSuffix(f.Value.Type(), "Slice"), "Array")
			if kind == "strings" {
				kind = "string"
			}
			if types[f.Name] == nil {
				types[f.Name] = map[string][]string{}
			}
			types[f.Name][kind] = append(types[f.Name][kind], c.CommandPath())
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree)
	for name, byType := range types {
		if len(byType) > 1 {
			t.Errorf("--%s takes different kinds of value: %v", name, byType)
		}
	}
	if len(types["since"]) != 1 || types["since"]["time"] == nil {
		t.Errorf("--since is not a time everywhere: %v", types["since"])
	}
}

// TestEmptySelectionsAreRefused: a flag that narrows what a command reads or acts on, given
// empty (--event-id "$ID" with ID unset), is a usage error in every command that has it, not
// a filter that selects everything: replay --event-id ” --execute would send a whole topic.
func TestEmptySelectionsAreRefused(t *testing.T) {
	s, _, _, _ := output.Test()
	tree := root.NewCmdRoot(&cmdutil.Factory{Streams: s, Getenv: func(string) string { return "" }})
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Name {
			case "group", "for-group", "event-id", "fingerprint", "dlq-reason", "status", "aggregate", "error", "pattern", "from-file", "value-file", "cursor", "undo":
				seen++
				if err := f.Value.Set(""); err == nil || !strings.Contains(err.Error(), "empty: name ") {
					t.Errorf("%s --%s '': %v", c.CommandPath(), f.Name, err)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree)
	if seen < 20 {
		t.Errorf("only %d selecting flags seen", seen)
	}
	roottest.CheckUsage(t, []roottest.Usage{
		{Args: []string{"replay", "-t", "tasks.dlq", "--event-id", "", "--execute", "--yes", "--reason", "r"}, Want: `invalid argument "" for "--event-id" flag: empty: name an event id, or leave the flag out`},
		{Args: []string{"replay", "-t", "tasks.dlq", "--dlq-reason", "rejected,"}, Want: `for "--dlq-reason" flag: empty: name a reason`},
		{Args: []string{"dlq", "list", "-g", " "}, Want: `for "-g, --group" flag: empty: name a consumer group`},
		{Args: []string{"dlq", "stats", "--pattern", ""}, Want: `for "--pattern" flag: empty: name a regular expression`},
		{Args: []string{"processed", "list", "--aggregate", ""}, Want: `for "--aggregate" flag: empty: name an aggregate id`},
		{Args: []string{"replay", "-t", "tasks.dlq", "--from-file", "", "--execute", "--yes", "--reason", "r"}, Want: `for "--from-file" flag: empty: name a file (- for stdin)`},
		{Args: []string{"replay", "tasks.dlq/0/7", "--value-file", "", "--execute", "--yes", "--reason", "r"}, Want: `for "--value-file" flag: empty: name the file of the record's new value`},
		{Args: []string{"processed", "list", "--cursor", ""}, Want: `for "--cursor" flag: empty`},
		{Args: []string{"groups", "reset", "--undo", "", "--execute", "--yes", "--reason", "r"}, Want: `for "--undo" flag: empty`},
	})
	// --key '' is a selection of its own: the records whose key is empty.
	rc, _, err := tree.Find([]string{"replay"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Flags().Lookup("key").Value.Set(""); err != nil {
		t.Errorf("replay --key '': %v", err)
	}
}
