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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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

// fieldwork runs the binary with args, stdout and stderr pipes (not a terminal), bounded by
// commandTimeout.
func (e env) fieldwork(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 10 * time.Second
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FIELDWORK_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"FIELDWORK_BROKERS="+e.brokers, "FIELDWORK_DSN="+e.dsn,
		"FIELDWORK_CONFIG="+filepath.Join(e.home, "absent.yaml"),
		"HOME="+e.home, "XDG_CONFIG_HOME="+filepath.Join(e.home, ".config"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("fieldwork %s did not finish within %s (killed)\n%s", cmdline(args), commandTimeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fieldwork %s: %v", cmdline(args), err)
	}
	if bytes.Contains(r.stderr, []byte("panic:")) || bytes.Contains(r.stderr, []byte("goroutine ")) {
		t.Fatalf("panic\n%s", r)
	}
	return r
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
// line, BS erases), DEL, and the C1 controls U+0080–U+009F. "" when there is none.
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
