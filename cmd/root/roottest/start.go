package roottest

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/output"
)

// SyncBuffer is a buffer the command writes from its goroutine while the test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Exit is how a command started by Start ended.
type Exit struct {
	Ran  *cobra.Command
	Err  error
	Code int
}

// Start runs `fieldwork <args>` in the background on non-terminal streams.
func Start(ctx context.Context, args ...string) (out, errOut *SyncBuffer, done <-chan Exit) {
	out, errOut = &SyncBuffer{}, &SyncBuffer{}
	f := &cmdutil.Factory{Streams: &output.Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, Getenv: func(string) string { return "" }}
	cmd := root.NewCmdRoot(f)
	cmd.SetArgs(args)
	ch := make(chan Exit, 1)
	go func() {
		ran, err := cmd.ExecuteContextC(ctx)
		ch <- Exit{Ran: ran, Err: err, Code: root.ExitCode(ctx, f, ran, err)}
	}()
	return out, errOut, ch
}

// DevBrokers finds the address `fieldwork dev` serves on in its banner.
var DevBrokers = regexp.MustCompile(`brokers\s+(127\.0\.0\.1:\d+)`)

// StartDev starts `fieldwork dev <args>` (on a free port, --port 0, unless args give one)
// and waits until it serves: its brokers' address, and its streams.
func StartDev(t *testing.T, ctx context.Context, args ...string) (addr string, out, errOut *SyncBuffer, done <-chan Exit) {
	t.Helper()
	out, errOut, done = Start(ctx, append([]string{"dev", "--port", "0"}, args...)...)
	WaitFor(t, errOut, servesLine, done)
	if m := DevBrokers.FindStringSubmatch(errOut.String()); m != nil {
		addr = m[1]
	}
	return addr, out, errOut, done
}

// servesLine is the banner's last line: the sandbox serves.
var servesLine = regexp.MustCompile(`press Ctrl-C to stop`)

// WaitFor waits, up to 30s, for re to match what buf holds and returns the match; it fails
// the test if the command ends first.
func WaitFor(t *testing.T, buf *SyncBuffer, re *regexp.Regexp, done <-chan Exit) []string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m
		}
		select {
		case r := <-done:
			t.Fatalf("the command exited early (code %d, err %v):\n%s", r.Code, r.Err, buf.String())
		case <-deadline:
			t.Fatalf("no %v within 30s:\n%s", re, buf.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
