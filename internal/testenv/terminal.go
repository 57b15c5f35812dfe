package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TerminalOptions says how StartTerminal runs a program on a pseudo-terminal.
type TerminalOptions struct {
	// Cols and Rows are the terminal's size (80×50 when 0).
	Cols, Rows uint16
	// Env is the program's whole environment (TERM is set to xterm-256color after it).
	Env []string
	// Dir is the working directory ("" is the test's).
	Dir string
	// Stdin makes the terminal the program's stdin too, so that it may ask and be answered
	// with Type; otherwise stdin is empty and not a terminal.
	Stdin bool
	// Stderr, when set, receives stderr instead of the terminal (stderr is then not a terminal).
	Stderr io.Writer
	// Timeout bounds the program's run (3 minutes when 0): it is killed past it.
	Timeout time.Duration
}

// Terminal is a program running on a pseudo-terminal, what it wrote to the terminal read as
// it comes (docs/design.md §Output: tables, prompts and progress lines are for terminals).
type Terminal struct {
	t    testing.TB
	args []string
	ptmx *os.File
	cmd  *exec.Cmd
	ctx  context.Context

	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{} // closed and replaced at every read, and when reading ends

	read   chan struct{} // closed once the terminal has been read to its end
	waited chan struct{} // closed once the program has exited
	code   int
	err    error
}

// StartTerminal starts bin with args on a new pseudo-terminal as opts says. The program is
// killed and the terminal closed at the test's end.
func StartTerminal(t testing.TB, opts TerminalOptions, bin string, args ...string) *Terminal {
	t.Helper()
	if opts.Cols == 0 {
		opts.Cols = 80
	}
	if opts.Rows == 0 {
		opts.Rows = 50
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: opts.Rows, Cols: opts.Cols}); err != nil {
		ptmx.Close()
		tty.Close()
		t.Fatalf("size the pseudo-terminal: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = opts.Dir
	cmd.Env = append(append([]string(nil), opts.Env...), "TERM=xterm-256color")
	cmd.Stdout, cmd.Stderr = tty, tty
	if opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	}
	if opts.Stdin {
		cmd.Stdin = tty
		// The terminal is the program's controlling terminal, as in a shell.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	if err := cmd.Start(); err != nil {
		cancel()
		ptmx.Close()
		tty.Close()
		t.Fatalf("start %s %s: %v", bin, strings.Join(args, " "), err)
	}
	tty.Close()
	term := &Terminal{t: t, args: args, ptmx: ptmx, cmd: cmd, ctx: ctx, more: make(chan struct{}),
		read: make(chan struct{}), waited: make(chan struct{})}
	go term.readAll()
	go func() {
		defer close(term.waited)
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			term.code = ee.ExitCode()
		case err != nil:
			term.err = err
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-term.waited
		ptmx.Close()
		<-term.read
	})
	return term
}

func (term *Terminal) readAll() {
	defer close(term.read)
	buf := make([]byte, 4096)
	for {
		n, err := term.ptmx.Read(buf)
		term.mu.Lock()
		term.out.Write(buf[:n])
		close(term.more)
		term.more = make(chan struct{})
		term.mu.Unlock()
		if err != nil { // EIO once every holder of the terminal has closed it
			return
		}
	}
}

// Output is all the program wrote to the terminal so far, line ends as the terminal gives
// them ("\r\n").
func (term *Terminal) Output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// Type writes s to the terminal, as keys typed on it ("\r" is Enter, "\t" Tab).
func (term *Terminal) Type(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.ptmx, s); err != nil {
		term.t.Fatalf("type %q: %v", s, err)
	}
}

// WaitFor waits, at most within, until cond holds for the output so far, and returns that
// output; it fails the test when the time is up or the program's output ended first.
func (term *Terminal) WaitFor(within time.Duration, what string, cond func(out string) bool) string {
	term.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		term.mu.Lock()
		out, more := term.out.String(), term.more
		term.mu.Unlock()
		if cond(out) {
			return out
		}
		select {
		case <-more:
		case <-term.read:
			if out := term.Output(); cond(out) {
				return out
			}
			term.t.Fatalf("%s: the terminal closed before %s; it shows:\n%q", strings.Join(term.args, " "), what, term.Output())
		case <-deadline.C:
			term.t.Fatalf("%s: no %s within %s; the terminal shows:\n%q", strings.Join(term.args, " "), what, within, term.Output())
		}
	}
}

// WaitForText waits, at most within, until the output holds s.
func (term *Terminal) WaitForText(within time.Duration, s string) string {
	term.t.Helper()
	return term.WaitFor(within, strconv.Quote(s), func(out string) bool { return strings.Contains(out, s) })
}

// Wait waits for the program to exit and the terminal to be read to its end, and returns its
// exit code and all it wrote, "\r\n" made "\n". It fails the test if the program was killed
// or did not run.
func (term *Terminal) Wait() (code int, out string) {
	term.t.Helper()
	<-term.waited
	<-term.read
	if term.ctx.Err() != nil {
		term.t.Fatalf("%s did not finish in time (killed); the terminal shows:\n%q", strings.Join(term.args, " "), term.Output())
	}
	if term.err != nil {
		term.t.Fatalf("%s: %v", strings.Join(term.args, " "), term.err)
	}
	return term.code, strings.ReplaceAll(term.Output(), "\r\n", "\n")
}
