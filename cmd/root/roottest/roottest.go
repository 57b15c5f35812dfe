// Package roottest runs fieldwork's whole command tree in a test, on test streams, and maps
// its error to an exit code as Main does.
package roottest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/output"
)

// Result is what a run printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
	Elapsed        time.Duration
}

// Run runs fieldwork's root command with args on test streams (not terminals) and an
// environment of env only (FIELDWORK_CONFIG, unless env names one, is a file that does not
// exist), bounded by two minutes.
func Run(t *testing.T, env map[string]string, args ...string) Result {
	t.Helper()
	s, _, out, errOut := output.Test()
	if _, ok := env["FIELDWORK_CONFIG"]; !ok {
		env["FIELDWORK_CONFIG"] = filepath.Join(t.TempDir(), "absent.yaml")
	}
	f := &cmdutil.Factory{Streams: s, Getenv: func(k string) string { return env[k] }}
	cmd := root.NewCmdRoot(f)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	ran, err := cmd.ExecuteContextC(ctx)
	code := root.ExitCode(ctx, f, ran, err)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code, Elapsed: time.Since(start)}
}

// RunOnTerminal is Run with stdin and stderr terminals (no colour), answer typed at the
// prompt: what a person sees who confirms an action, and its exit code.
func RunOnTerminal(t *testing.T, env map[string]string, answer string, args ...string) (code int, stderr string) {
	t.Helper()
	return RunFor(t, env, answer, 2*time.Minute, args...)
}

// RunFor is RunOnTerminal bounded by d: a command still running then (one that follows or
// watches) is interrupted, as Ctrl-C would, and exits as it does then.
func RunFor(t *testing.T, env map[string]string, answer string, d time.Duration, args ...string) (code int, stderr string) {
	t.Helper()
	s, in, _, errOut := output.Test()
	s.InTTY, s.ErrTTY, s.NoColor = true, true, true
	in.WriteString(answer)
	absent := filepath.Join(t.TempDir(), "absent.yaml")
	f := &cmdutil.Factory{Streams: s, Getenv: func(k string) string {
		if v, ok := env[k]; ok || k != "FIELDWORK_CONFIG" {
			return v
		}
		return absent
	}}
	cmd := root.NewCmdRoot(f)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ran, err := cmd.ExecuteContextC(ctx)
	return root.ExitCode(ctx, f, ran, err), errOut.String()
}

// RunCode is Run, and fails the test at once unless the command exits wantCode.
func RunCode(t *testing.T, env map[string]string, wantCode int, args ...string) Result {
	t.Helper()
	r := Run(t, env, args...)
	if r.Code != wantCode {
		t.Fatalf("%v: exit %d, want %d\nstderr: %s", args, r.Code, wantCode, r.Stderr)
	}
	return r
}

// Usage is a command line the tree must refuse as a usage error, and what stderr says then.
type Usage struct {
	Args []string
	Want string
}

// CheckUsage runs each command line through the whole tree with an empty environment (no
// broker, no store: a usage error comes before anything connects) and fails the test for
// each that does not exit 2 with its Want on stderr and nothing on stdout, or whose stderr
// holds one of never.
func CheckUsage(t *testing.T, cases []Usage, never ...string) {
	t.Helper()
	for _, tc := range cases {
		r := Run(t, map[string]string{}, tc.Args...)
		bad := r.Code != root.ExitUsage || !strings.Contains(r.Stderr, tc.Want) || r.Stdout != ""
		for _, n := range never {
			bad = bad || strings.Contains(r.Stderr, n)
		}
		if bad {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 with %q", tc.Args, r.Code, r.Stderr, r.Stdout, tc.Want)
		}
	}
}
