package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a process a test runs (the fieldwork binary, usually) with its output kept. At
// cleanup a process still running is killed, and when the test failed the end of its stderr
// is logged; with FIELDWORK_TEST_KEEP naming a directory, its whole stderr is written there.
type Proc struct {
	Name string
	cmd  *exec.Cmd

	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer

	done chan struct{}
	err  error // Wait's, once done is closed
}

// StartProc starts bin with args. env is added to the test's environment, with NO_COLOR set
// and FIELDWORK_CONFIG pointing at a file that does not exist, so that no configuration of
// the machine's applies.
func StartProc(t testing.TB, name string, env []string, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "NO_COLOR=1", "FIELDWORK_CONFIG="+filepath.Join(os.TempDir(), "fieldwork-test-no-config.yaml"))
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if dir := os.Getenv("FIELDWORK_TEST_KEEP"); dir != "" {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, p.cmd.Process.Pid)), []byte(p.Stderr()), 0o644)
			}
		}
		if t.Failed() {
			t.Logf("%s (pid %d), last lines of stderr:\n%s", name, p.cmd.Process.Pid, p.Tail(40))
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Signal sends sig unless the process has exited.
func (p *Proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s has exited", p.Name)
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits up to within for the process to exit and returns its exit code (-1 when a
// signal ended it), or an error when it is still running.
func (p *Proc) Wait(within time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(within):
		return 0, fmt.Errorf("%s still runs after %s", p.Name, within)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0, nil
	case errors.As(p.err, &ee):
		return ee.ExitCode(), nil
	default:
		return 0, p.err
	}
}

// Stdout and Stderr return what the process wrote so far.
func (p *Proc) Stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Tail returns the last n lines of stderr.
func (p *Proc) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Stderr(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Lines returns the lines of stderr that contain substr.
func (p *Proc) Lines(substr string) []string {
	var out []string
	for _, l := range strings.Split(p.Stderr(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}
