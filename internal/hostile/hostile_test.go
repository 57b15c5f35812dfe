// Package hostile runs records an operator would rather not meet through the real fieldwork
// binary, against the real broker and PostgreSQL: values of a mebibyte and more, empty values,
// null keys, tombstones, keys and headers that are not UTF-8, terminal escape sequences and
// other control bytes in keys, values and headers, a thousand headers on one record. Each
// command must give every such record a clear result and a defined exit code, lose nothing,
// never panic or hang, print valid JSON with -o json, and let no raw control byte or escape
// sequence reach a terminal with -o table.
//
// The package holds tests only.
package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// bin is the fieldwork binary, built once for the package by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fieldwork-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin = filepath.Join(dir, "fieldwork")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot is the directory of the go.mod this package belongs to.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// commandTimeout bounds one command. The slowest, a consumer that waits for its group and
// then for 3 s without records, takes some seconds; a busy machine gets ample room, and a
// command that hangs fails the test instead of stalling it.
const commandTimeout = 3 * time.Minute

// result is what one fieldwork command did.
type result struct {
	args   []string
	code   int
	stdout []byte
	stderr []byte
}

func (r result) String() string {
	return fmt.Sprintf("fieldwork %s: exit %d\nstdout:\n%s\nstderr:\n%s", cmdline(r.args), r.code,
		clip(r.stdout), clip(r.stderr))
}

// cmdline writes a command's arguments for a failure message, quoted where they hold
// something a terminal would act on: the test's own output must not carry escape sequences.
func cmdline(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if terminalUnsafe([]byte(a)) != "" || strings.ContainsAny(a, " \"") {
			out[i] = strconv.Quote(a)
		}
	}
	return strings.Join(out, " ")
}

// clip keeps a failure message readable when an output holds a mebibyte: its start and its
// end, where an error usually is.
func clip(b []byte) string {
	const n = 2 << 10
	if len(b) > 2*n {
		return fmt.Sprintf("%q … %q (%d bytes)", b[:n], b[len(b)-n:], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// env is the environment every command runs in: the test's services, no config file, no
// FIELDWORK_* variable of the caller's.
type env struct {
	brokers, dsn string
	home         string
}

// environ is the environment of a command: the test's, less every FIELDWORK_* variable, its
// home and its colour settings, and then the test's services.
func (e env) environ() []string {
	return testenv.CleanEnviron(e.home, "FIELDWORK_BROKERS="+e.brokers, "FIELDWORK_DSN="+e.dsn)
}

// fieldwork runs the binary with args, stdout and stderr pipes (not a terminal), bounded by
// commandTimeout.
func (e env) fieldwork(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = e.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	r.exited(t, ctx, err, r.stderr)
	return r
}

// exited sets r.code from what running the command returned, and fails the test when it
// was killed, did not run, or panicked (out is where it wrote its errors).
func (r *result) exited(t *testing.T, ctx context.Context, err error, out []byte) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("fieldwork %s did not finish within %s (killed)\n%s", cmdline(r.args), commandTimeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fieldwork %s: %v", cmdline(r.args), err)
	}
	if bytes.Contains(out, []byte("panic:")) || bytes.Contains(out, []byte("goroutine ")) {
		t.Fatalf("panic\n%s", r)
	}
}

// expect runs a command and fails the test unless it exits with code.
func (e env) expect(t *testing.T, code int, args ...string) result {
	t.Helper()
	r := e.fieldwork(t, args...)
	if r.code != code {
		t.Fatalf("want exit %d\n%s", code, r)
	}
	return r
}

// terminalUnsafe describes the lines of b that hold something a terminal would not show as
// text, at most five: bytes that are not UTF-8 (a raw 0x9b is a C1 CSI to some terminals), C0
// control characters but tab and newline (ESC starts every escape sequence, CR overwrites a
// line, BS erases), DEL, the C1 controls U+0080–U+009F, and the bidirectional controls that
// show text in another order than it is stored. "" when there is none.
func terminalUnsafe(b []byte) string {
	var found []string
	lines := bytes.SplitAfter(b, []byte("\n"))
	for n, line := range lines {
		for i := 0; i < len(line); {
			r, size := utf8.DecodeRune(line[i:])
			what := ""
			switch {
			case r == utf8.RuneError && size == 1:
				what = fmt.Sprintf("byte 0x%02x (not UTF-8)", line[i])
			case r < 0x20 && r != '\t' && r != '\n', r == 0x7f, r >= 0x80 && r <= 0x9f:
				what = fmt.Sprintf("control character %U", r)
			case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
				what = fmt.Sprintf("bidirectional control %U", r)
			}
			if what != "" {
				found = append(found, fmt.Sprintf("line %d: %s in %s", n+1, what, clip(line)))
				break
			}
			i += size
		}
	}
	if len(found) > 5 {
		found = append(found[:5], fmt.Sprintf("and %d more lines", len(found)-5))
	}
	return strings.Join(found, "\n\t")
}

// onTerminal runs the binary as fieldwork runs on an operator's colour terminal: stdout and
// stderr are one pseudo-terminal (so tables are drawn with colour and a progress line may be
// drawn), stdin is not a terminal (nothing asks). The output is what the terminal received,
// its line ends as the program wrote them.
func (e env) onTerminal(t *testing.T, code int, args ...string) result {
	t.Helper()
	return e.onTerminalSized(t, 200, code, args...)
}

// onTerminalSized is onTerminal on a terminal cols columns wide.
func (e env) onTerminalSized(t *testing.T, cols uint16, code int, args ...string) result {
	t.Helper()
	term := testenv.StartTerminal(t, testenv.TerminalOptions{Cols: cols, Env: e.environ(), Timeout: commandTimeout}, bin, args...)
	code0, out := term.Wait()
	r := result{args: args, code: code0, stdout: []byte(out)}
	r.exited(t, context.Background(), nil, r.stdout) // a panic fails the test
	if r.code != code {
		t.Fatalf("on a terminal, want exit %d\n%s", code, result{args: r.args, code: r.code, stdout: []byte(terminalText(r.stdout))})
	}
	return r
}

// ownColours are the escape sequences fieldwork's styles write on a colour terminal, the only
// ones that may reach it: each style's start and its end.
var ownColours = func() []string {
	st := output.NewStyles(io.Discard, true)
	var seqs []string
	for _, s := range []output.Style{st.Header, st.Title, st.OK, st.Warn, st.Bad, st.Dim} {
		on, off, _ := strings.Cut(output.Printable(s.Render("x"), true), "x")
		seqs = append(seqs, on, off)
	}
	return seqs
}()

// checkColourTerminal fails the test unless what a command wrote to a colour terminal was
// coloured by fieldwork (its styles' sequences are there) and, those sequences taken out,
// holds nothing a terminal would act on: a record's colour, even one spelled as fieldwork's,
// must have been escaped.
func checkColourTerminal(t *testing.T, r result) {
	t.Helper()
	coloured := false
	for _, seq := range ownColours {
		coloured = coloured || seq != "" && bytes.Contains(r.stdout, []byte(seq))
	}
	if !coloured {
		t.Errorf("fieldwork %s on a terminal wrote no colour of its own: %s", cmdline(r.args), clip(r.stdout))
	}
	checkOnTerminal(t, r)
}

// checkOnTerminal fails the test unless what a command wrote to a terminal, fieldwork's own
// colour sequences taken out, holds nothing a terminal would act on, and no escape sequence a
// record carries, whatever it looks like.
func checkOnTerminal(t *testing.T, r result) {
	t.Helper()
	if why := terminalUnsafe([]byte(terminalText(r.stdout))); why != "" {
		t.Errorf("fieldwork %s on a colour terminal: %s", cmdline(r.args), why)
	}
	// A record's sequence spelled like fieldwork's own is escaped too, not taken for colour.
	for _, seq := range []string{escRed, escClear, escTitle, titleST, ownRed} {
		if bytes.Contains(r.stdout, []byte(seq)) {
			t.Errorf("fieldwork %s on a colour terminal: a record's %q reached it", cmdline(r.args), seq)
		}
	}
}

// terminalText is out without fieldwork's own colour sequences and the progress line's
// erasures (carriage return, then erase to the end of the line: stderr is the terminal too).
func terminalText(out []byte) string {
	s := strings.ReplaceAll(string(out), "\r\x1b[K", "")
	for _, seq := range ownColours {
		if seq != "" {
			s = strings.ReplaceAll(s, seq, "")
		}
	}
	return s
}

// checkTerminal fails the test when a table-format command let a control byte through to
// stdout or stderr.
func checkTerminal(t *testing.T, r result) {
	t.Helper()
	if why := terminalUnsafe(r.stdout); why != "" {
		t.Errorf("fieldwork %s: stdout: %s", cmdline(r.args), why)
	}
	if why := terminalUnsafe(r.stderr); why != "" {
		t.Errorf("fieldwork %s: stderr: %s", cmdline(r.args), why)
	}
}
