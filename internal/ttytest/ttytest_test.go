// Package ttytest runs the fieldwork binary on pseudo-terminals, as an operator meets it,
// against the real broker and PostgreSQL: the confirmation prompts of an executed replay,
// forget and groups skip, the progress line of a rate-capped replay, dlq list fitted to 80
// columns, and shell completion typed into interactive bash, zsh and fish.
//
// The package holds tests only.
package ttytest

import (
	"bytes"
	"context"
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
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// within bounds every wait for the terminal: ample on a loaded machine; a program that hangs
// fails the test instead of stalling it.
const within = time.Minute

// environ is a command's environment: the test's, less every FIELDWORK_* variable, its home
// and its terminal settings, and then the test's services and a home of its own.
func environ(t *testing.T) []string {
	t.Helper()
	return testenv.CleanEnviron(t.TempDir(), "FIELDWORK_BROKERS="+testenv.Brokers(t), "FIELDWORK_DSN="+testenv.DSN(t),
		"USER=tester", "NO_COLOR=1")
}

// fieldwork runs the binary with pipes (no terminal) and returns its exit code and outputs.
func fieldwork(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Fieldwork(t), args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ctx.Err() == nil {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("fieldwork %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// store is a migrated schema of its own on the test's PostgreSQL.
func store(t *testing.T, env []string) string {
	t.Helper()
	sch := testenv.PGSchema(t, "fwtty_")
	if code, _, stderr := fieldwork(t, env, "db", "migrate", "--schema", sch); code != 0 {
		t.Fatalf("db migrate: exit %d: %s", code, stderr)
	}
	return sch
}

// deadLetters writes n dead letters of records of src (a topic of its own, left empty) to a
// dead-letter topic of its own, and returns both names.
func deadLetters(t *testing.T, n int) (src, dlqTopic string) {
	t.Helper()
	src, dlqTopic = testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		orig := &kgo.Record{Topic: src, Offset: int64(i), Key: fmt.Appendf(nil, "task-%d", i), Value: fmt.Appendf(nil, `{"i":%d}`, i)}
		dl := dlq.NewDeadLetter(orig, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonExhausted, Error: "db down", Group: "billing", EventID: fmt.Sprintf("evt-%d", i)})
		recs[i] = dl
	}
	testenv.Produce(t, testenv.Client(t), recs...)
	return src, dlqTopic
}

// endOffset is the sum of topic's partitions' end offsets.
func endOffset(t *testing.T, topic string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(testenv.Client(t)).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// answerPrompt runs fieldwork with args on a terminal 80 columns wide, waits for its
// confirmation prompt, answers key and Enter, and returns the exit code, the whole output and
// what the terminal showed before the answer.
func answerPrompt(t *testing.T, env []string, args []string, key string) (code int, out, shown string) {
	t.Helper()
	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Env: env, Stdin: true}, testenv.Fieldwork(t), args...)
	shown = term.WaitForText(within, "[y/N] ")
	term.Type(key + "\r")
	code, out = term.Wait()
	return code, out, shown
}

// TestReplayPromptOnATerminal: on a terminal 80 columns wide, an executed replay asks after
// the plan, which names the context, the cluster, the store, the counts per target and the
// reason, and draws no line wider than the terminal; n prints "cancelled", exits 6 and sends
// nothing; y sends the records.
func TestReplayPromptOnATerminal(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := deadLetters(t, 10)
	args := []string{"replay", "--schema", sch, "--topic", dlqTopic, "--execute", "--reason", "r"}
	question := fmt.Sprintf("Send 10 records from %s (10 to %s)? [y/N] ", dlqTopic, src)

	code, out, shown := answerPrompt(t, env, args, "n")
	if !strings.Contains(strings.ReplaceAll(shown, "\r\n", " "), question) {
		t.Errorf("the prompt does not ask %q:\n%s", question, shown)
	}
	for _, want := range []string{"  context  none (flags and environment)\r\n", "  cluster  " + testenv.Brokers(t) + "\r\n",
		"  store    ", `"` + sch + `"."processed_events"`, fmt.Sprintf("  plan     10 to %s\r\n", src), "  reason   r\r\n"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, shown)
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(shown, "\r\n", "\n"), "\n") {
		if w := twwidth.Width(line); w > 80 {
			t.Errorf("at 80 columns, a prompt line %d columns wide wraps: %q", w, line)
		}
	}
	if code != 6 || !strings.Contains(out, "cancelled") {
		t.Fatalf("answered n: exit %d, want 6 and \"cancelled\":\n%s", code, out)
	}
	if n := endOffset(t, src); n != 0 {
		t.Fatalf("answered n: %s holds %d records, want none sent", src, n)
	}

	if code, out, _ := answerPrompt(t, env, args, "y"); code != 0 {
		t.Fatalf("answered y: exit %d:\n%s", code, out)
	}
	if n := endOffset(t, src); n != 10 {
		t.Fatalf("answered y: %s holds %d records, want 10", src, n)
	}
}

// sentFrame matches one drawing of the replay's progress line, and the count it shows sent.
var sentFrame = regexp.MustCompile(`replaying: (\d+) (?:of \d+ )?sent`)

// TestReplayProgressRedrawnByTime: a replay capped at 2 records a second redraws its progress
// line as records go out, long before the 256th: two frames with different counts appear
// while fewer than all 10 are sent. With stderr not a terminal there is no progress line.
func TestReplayProgressRedrawnByTime(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := deadLetters(t, 10)
	args := []string{"replay", "--schema", sch, "--topic", dlqTopic, "--execute", "--yes", "--reason", "r", "--rate", "2"}

	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Env: env}, testenv.Fieldwork(t), args...)
	term.WaitFor(within, "two progress frames with different counts below 10", func(out string) bool {
		counts := map[string]bool{}
		for _, m := range sentFrame.FindAllStringSubmatch(out, -1) {
			if m[1] != "10" {
				counts[m[1]] = true
			}
		}
		return len(counts) >= 2
	})
	if code, out := term.Wait(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if n := endOffset(t, src); n != 10 {
		t.Fatalf("%s holds %d records, want 10", src, n)
	}

	// Other dead letters, stderr a pipe.
	src, dlqTopic = deadLetters(t, 10)
	args = []string{"replay", "--schema", sch, "--topic", dlqTopic, "--execute", "--yes", "--reason", "r", "--rate", "2"}
	var stderr bytes.Buffer
	term = testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Env: env, Stderr: &stderr}, testenv.Fieldwork(t), args...)
	if code, out := term.Wait(); code != 0 {
		t.Fatalf("stderr a pipe: exit %d:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "\r") || strings.Contains(s, "\x1b[K") || sentFrame.MatchString(s) {
		t.Fatalf("stderr a pipe: a progress line was drawn:\n%q", s)
	}
	if n := endOffset(t, src); n != 10 {
		t.Fatalf("stderr a pipe: %s holds %d records, want 10", src, n)
	}
}

// shell is an interactive shell on a terminal, started without any startup file (and bash
// without the bash-completion package), with fieldwork on its PATH and its completion loaded.
type shell struct {
	*testenv.Terminal
	t     *testing.T
	marks int
}

const prompt = "fw-prompt$ "

// shells says how to start each shell bare and load fieldwork's completion into it.
var shells = map[string]struct {
	args  []string
	env   []string
	setup []string
}{
	"bash": {args: []string{"--norc", "--noprofile", "-i"}, env: []string{"PS1=" + prompt},
		setup: []string{`source <(fieldwork completion bash)`}},
	// -f: no startup file; the line editor in its emacs keymap, no marker before a prompt.
	// compinit's dump goes to the shell's own home ($HOME/zcompdump): it is written beside
	// its path and renamed over it, so it must never be a shared file.
	"zsh": {args: []string{"-f", "-i"}, env: []string{"PS1=" + prompt},
		setup: []string{`bindkey -e; unsetopt PROMPT_SP; autoload -U compinit && compinit -u -d "$HOME/zcompdump" && source <(fieldwork completion zsh)`}},
	"fish": {args: []string{"--no-config", "-i", "-C", `function fish_prompt; printf 'fw-prompt$ '; end`}, env: []string{"fish_history="},
		setup: []string{`fieldwork completion fish | source`}},
}

func startShell(t *testing.T, name string, env []string) *shell {
	t.Helper()
	kind := shells[name]
	bin := testenv.Tool(t, name)
	var path []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			path = append(path, kv)
		}
	}
	inputrc := filepath.Join(t.TempDir(), "inputrc")
	if err := os.WriteFile(inputrc, []byte("set enable-bracketed-paste off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A home of its own (environ's, made again so that no shell writes into another's) holds
	// the history and whatever else the shell keeps.
	home := t.TempDir()
	var kept []string
	for _, kv := range path {
		if !strings.HasPrefix(kv, "HOME=") {
			kept = append(kept, kv)
		}
	}
	env = append(append(kept, "HOME="+home, "HISTFILE="+filepath.Join(home, "history"),
		"PATH="+filepath.Dir(testenv.Fieldwork(t))+":"+os.Getenv("PATH"), "INPUTRC="+inputrc), kind.env...)
	sh := &shell{Terminal: testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 200, Env: env, Stdin: true}, bin, kind.args...), t: t}
	sh.WaitForText(within, prompt)
	for _, line := range kind.setup {
		sh.run(line)
	}
	if name == "bash" {
		out := sh.run(`declare -F _get_comp_words_by_ref >/dev/null && echo has-bash-completion || echo no-bash-completion`)
		if !slices.Contains(lines(out), "no-bash-completion") {
			t.Fatalf("the shell has the bash-completion package:\n%q", out)
		}
	}
	return sh
}

// run types line and Enter after whatever is on the line, and waits for it to end: an echo
// of a mark of its own comes after it. It returns the output since the line was typed.
func (sh *shell) run(line string) string {
	sh.t.Helper()
	before := len(sh.Output())
	sh.marks++
	mark := fmt.Sprintf("done-%d", sh.marks)
	sh.Type(line + "\r")
	// The next line is typed only at the next prompt, once the line editor reads the terminal
	// key by key: typed ahead, the terminal's own line editing would take Tab and Ctrl-U.
	sh.WaitFor(within, "a prompt after "+strconv.Quote(line), func(out string) bool { return atPrompt(out[before:]) })
	sh.Type("echo " + mark[:4] + "''" + mark[4:] + "\r") // the echoed input is not the mark
	out := sh.WaitFor(within, strconv.Quote(mark)+" and a prompt", func(out string) bool {
		return slices.Contains(lines(out[before:]), mark) && atPrompt(out[before:])
	})
	return plain(out[before:])
}

// plain is a shell's output without control sequences and bells, and with each backspace
// taking back the character before it.
func plain(out string) string {
	out = strings.ReplaceAll(ansi.Strip(out), "\a", "")
	var b []rune
	for _, r := range out {
		if r == '\b' {
			if len(b) > 0 && b[len(b)-1] != '\n' {
				b = b[:len(b)-1]
			}
			continue
		}
		b = append(b, r)
	}
	return string(b)
}

// lines is out as the lines a terminal shows: a carriage return writes the rest of the line
// over its start, as line editors redraw; trailing blanks are dropped.
func lines(out string) []string {
	var l []string
	for _, line := range strings.Split(plain(out), "\n") {
		var shown []rune
		for _, part := range strings.Split(line, "\r") {
			p := []rune(part)
			if len(p) > len(shown) {
				shown = append(shown, p[len(shown):]...)
			}
			copy(shown, p)
		}
		l = append(l, strings.TrimRight(string(shown), " "))
	}
	return l
}

// atPrompt reports whether out ends at a prompt on a line of its own.
func atPrompt(out string) bool {
	l := lines(out)
	return len(l) > 1 && strings.HasPrefix(l[len(l)-1], strings.TrimSpace(prompt))
}

// completesTo types line, Tab, and then Ctrl-A and "echo " so that the shell prints the
// completed line, and reports what it printed.
func (sh *shell) completesTo(line, want string) bool {
	sh.t.Helper()
	out := sh.run(line + "\t\x01echo ")
	if !slices.Contains(lines(out), want) {
		sh.t.Errorf("%s<Tab> did not complete to %q:\n%q", line, want, out)
		return false
	}
	return true
}

// offers types line and three Tabs, then Ctrl-U to drop the line, and returns what the shell
// listed.
func (sh *shell) offers(line string) string {
	sh.t.Helper()
	return sh.run(line + "\t\t\t\x15")
}

// TestCompletionOnATerminal: in an interactive bash without the bash-completion package, zsh
// and fish, each without a startup file, Tab completes an enum flag's value (dlq list
// --status pen → pending, --dlq-reason rej → rejected), a topic name (an argument of inspect
// topic and records, none for inspect aggregate's id after --topic; only dead-letter topics
// for the dlq commands and replay) and a consumer group's
// name (groups describe's argument, dlq list --group) from the broker, and
// Tab after replay resume lists the runs that can be resumed and no other, or nothing when
// there are none.
func TestCompletionOnATerminal(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	empty := store(t, env)
	st, err := dedup.Open(context.Background(), testenv.DSN(t), dedup.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, status := range map[string]string{"run-done": dedup.RunCompleted, "run-cut": dedup.RunInterrupted, "run-bad": dedup.RunFailed, "run-now": dedup.RunRunning} {
		if err := st.CreateReplayRun(context.Background(), dedup.ReplayRun{ID: id, Operator: "tester", Reason: "r", Selection: "{}",
			Sources: []string{"src"}, Target: "dst", Status: status, Owner: "o"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	topic := testenv.Topic(t, 1, nil)
	dlqTopic := topic + ".dlq" // a dead-letter topic by the default pattern, beside its source
	testenv.CreateTopic(t, dlqTopic, 1, nil)
	group := testenv.Name(t, "grp")
	adm := kadm.NewClient(testenv.Client(t))
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(context.Background(), group, commit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteGroup(context.Background(), group) })

	for _, name := range []string{"bash", "zsh", "fish"} {
		t.Run(name, func(t *testing.T) {
			sh := startShell(t, name, env)
			sh.completesTo("fieldwork dlq list --status pen", "fieldwork dlq list --status pending")
			sh.completesTo("fieldwork replay --topic x --dlq-reason rej", "fieldwork replay --topic x --dlq-reason rejected")
			sh.completesTo("fieldwork inspect topic "+topic[:len(topic)-3], "fieldwork inspect topic "+topic)
			sh.completesTo("fieldwork inspect records "+topic[:len(topic)-3], "fieldwork inspect records "+topic)
			// The dlq commands and replay read dead-letter topics: the source is not offered.
			sh.completesTo("fieldwork dlq list --topic "+topic[:len(topic)-3], "fieldwork dlq list --topic "+dlqTopic)
			sh.completesTo("fieldwork replay "+topic[:len(topic)-3], "fieldwork replay "+dlqTopic)
			// --topic named, the argument is the aggregate's id: no topic offered for it.
			if out := sh.offers("fieldwork inspect aggregate --topic " + topic + " " + topic[:len(topic)-3]); strings.Contains(out, "--topic "+topic+" "+topic) {
				t.Errorf("inspect aggregate --topic T <Tab> offers a topic for the aggregate id:\n%q", out)
			}
			sh.completesTo("fieldwork groups describe "+group[:len(group)-3], "fieldwork groups describe "+group)
			sh.completesTo("fieldwork dlq list --group "+group[:len(group)-3], "fieldwork dlq list --group "+group)

			out := sh.offers("fieldwork replay resume --schema " + sch + " ")
			if !strings.Contains(out, "run-cut") || !strings.Contains(out, "run-bad") {
				t.Errorf("replay resume <Tab> does not offer the interrupted and the failed run:\n%q", out)
			}
			if strings.Contains(out, "run-done") || strings.Contains(out, "run-now") {
				t.Errorf("replay resume <Tab> offers a run that cannot be resumed:\n%q", out)
			}
			// replay show offers every run: the same store, the same shell, another answer.
			if out := sh.offers("fieldwork replay show --schema " + sch + " "); !strings.Contains(out, "run-done") || !strings.Contains(out, "run-now") {
				t.Errorf("replay show <Tab> does not offer every run:\n%q", out)
			}
			if out := sh.offers("fieldwork replay resume --schema " + empty + " "); strings.Contains(out, "run-") {
				t.Errorf("replay resume <Tab> over a store without runs offers something:\n%q", out)
			}
			sh.Type("exit\r")
			if code, _ := sh.Wait(); code != 0 {
				t.Errorf("%s exited %d", name, code)
			}
		})
	}
}

// TestDLQListFitsTheTerminal: on a terminal 80 columns wide, dlq list draws no line wider
// than the terminal (secondary columns left out, long messages cut with an ellipsis), and
// --wide, CSV and JSON show every message whole.
func TestDLQListFitsTheTerminal(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	msg := "POST https://hooks.example/tasks: 422 Unprocessable Entity: " + strings.Repeat("the task's project does not exist; ", 4) + "end"
	var recs []*kgo.Record
	for i := range 3 {
		orig := &kgo.Record{Topic: src, Offset: int64(i), Key: fmt.Appendf(nil, "task-%d", i), Value: []byte(`{}`)}
		recs = append(recs, dlq.NewDeadLetter(orig, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonRejected, Error: msg, Group: "billing",
			EventID: fmt.Sprintf("evt-%d", i)}))
	}
	testenv.Produce(t, testenv.Client(t), recs...)

	show := func(args ...string) string {
		t.Helper()
		term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: 80, Env: env}, testenv.Fieldwork(t), append([]string{"dlq", "list", "--topic", dlqTopic, "--schema", sch}, args...)...)
		code, out := term.Wait()
		if code != 0 {
			t.Fatalf("dlq list %v: exit %d:\n%s", args, code, out)
		}
		return out
	}
	out := show()
	rows := 0
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if w := twwidth.Width(ansi.Strip(line)); w > 80 {
			t.Errorf("at 80 columns, a line %d columns wide wraps: %q", w, line)
		}
		if strings.HasSuffix(strings.TrimSpace(ansi.Strip(line)), "pending") {
			rows++
			if !strings.Contains(line, "…") || strings.Contains(line, "; end") {
				t.Errorf("a long message is not cut with an ellipsis: %q", line)
			}
		}
	}
	if rows != 3 {
		t.Errorf("%d rows, want 3:\n%s", rows, out)
	}
	for _, args := range [][]string{{"--wide"}, {"-o", "csv"}, {"-o", "jsonl"}} {
		if out := show(args...); strings.Count(out, "does not exist; end") < 3 {
			t.Errorf("dlq list %v at 80 columns: want the 3 messages whole:\n%s", args, out)
		}
	}
}

// TestForgetPromptOnATerminal: an executed processed forget asks on a terminal after its
// plan, with the context, the store and the reason; n prints "cancelled", exits 6 and
// removes nothing; y removes the marker and journals it.
func TestForgetPromptOnATerminal(t *testing.T) {
	env := environ(t)
	sch := store(t, env)
	st, err := dedup.Open(context.Background(), testenv.DSN(t), dedup.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.InTx(context.Background(), func(tx *dedup.Tx) error {
		_, err := st.Claim(context.Background(), tx, "billing", []dedup.Marker{{EventID: "evt-1", Topic: "tasks", ProcessedAt: time.Now()}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	args := []string{"processed", "forget", "evt-1", "--consumer", "billing", "--schema", sch, "--execute", "--reason", "fix deployed"}
	code, out, shown := answerPrompt(t, env, args, "n")
	for _, want := range []string{"context", "store", `"` + sch + `"`, "fix deployed"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, shown)
		}
	}
	if code != 6 || !strings.Contains(out, "cancelled") {
		t.Fatalf("answered n: exit %d, want 6 and \"cancelled\":\n%s", code, out)
	}
	if code, out, _ := fieldwork(t, env, "processed", "get", "evt-1", "--consumer", "billing", "--schema", sch, "-o", "json"); code != 0 || !strings.Contains(out, `"processed": true`) {
		t.Fatalf("answered n: the marker is gone (exit %d):\n%s", code, out)
	}
	if code, out, _ := answerPrompt(t, env, args, "y"); code != 0 {
		t.Fatalf("answered y: exit %d:\n%s", code, out)
	}
	if code, out, _ := fieldwork(t, env, "processed", "journal", "--schema", sch, "-o", "json"); code != 0 || !strings.Contains(out, `"fix deployed"`) {
		t.Fatalf("answered y: no journaled forget (exit %d):\n%s", code, out)
	}
}
